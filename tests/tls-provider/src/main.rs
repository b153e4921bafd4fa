//! A user's binary that builds its own `reqwest::Client` next to pi-runtime, in the order named
//! by its argument. `tests/crypto_provider.rs` runs it, since the failure it checks is a panic
//! that ends the process.
//!
//! - `client-first`: the user's client before anything of pi-runtime (issue 19 item 9: this
//!   panicked while pi-runtime enabled reqwest's `rustls-no-provider`).
//! - `rustls-config-first`: the user's own `rustls::ClientConfig::builder()` before anything of
//!   pi-runtime (it finds its provider from rustls's crate features: one provider compiled in).
//! - `client-after-ensure`: `ensure_crypto_provider()`, then the user's client.
//! - `client-after-pi-runtime`: one pi-runtime request (to a closed port on 127.0.0.1), then
//!   the user's client.
//! - `client-after-model-made`: a pi-runtime provider value is made (no request), then the
//!   user's client.
//! - `own-provider-kept`: the user installs a provider of their own, pi-runtime makes a
//!   request, and the user's provider is still the process default.

use std::sync::Arc;

use futures_util::StreamExt;
use pi_runtime::providers::{OpenAiCompletions, ensure_crypto_provider};
use pi_runtime::{AssistantEvent, Context, Model, StreamOptions};
use rustls::crypto::CryptoProvider;

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    match mode.as_str() {
        "client-first" => {
            build_user_client();
            println!(
                "default provider installed: {}",
                CryptoProvider::get_default().is_some()
            );
        }
        "rustls-config-first" => {
            let config = rustls::ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
            println!(
                "user rustls config built: {} ALPN",
                config.alpn_protocols.len()
            );
        }
        "client-after-ensure" => {
            ensure_crypto_provider();
            build_user_client();
        }
        "client-after-pi-runtime" => {
            println!("pi-runtime: {}", pi_runtime_request());
            build_user_client();
        }
        "client-after-model-made" => {
            let model = OpenAiCompletions::new("m").base_url("http://127.0.0.1:9/v1");
            println!("model: {}", model.id());
            build_user_client();
        }
        "own-provider-kept" => {
            let mut own = rustls::crypto::aws_lc_rs::default_provider();
            own.cipher_suites.truncate(1);
            if own.install_default().is_err() {
                eprintln!("a provider was installed before main");
                std::process::exit(2);
            }
            println!("pi-runtime: {}", pi_runtime_request());
            let kept = CryptoProvider::get_default().map(|p| p.cipher_suites.len());
            println!("default provider cipher suites: {kept:?}");
            build_user_client();
        }
        other => {
            eprintln!("unknown mode {other:?}");
            std::process::exit(2);
        }
    }
}

/// What the user's own code does.
fn build_user_client() {
    let _client = reqwest::Client::new();
    println!("user client built");
}

/// One request through a pi-runtime provider; the port is closed, so it ends with an error
/// after pi-runtime built its HTTP client. Returns the error text.
fn pi_runtime_request() -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let model = OpenAiCompletions::new("m")
            .base_url("http://127.0.0.1:9/v1")
            .api_key("k")
            .max_retries(0);
        let messages = [Arc::new(pi_runtime::Message::user("hi"))];
        let context = Context {
            system_prompt: "",
            messages: &messages,
            tools: &[],
        };
        let options = StreamOptions::default();
        let mut events = model.stream(context, &options);
        let mut last = String::new();
        while let Some(event) = events.next().await {
            if let AssistantEvent::Error { error, .. } = event {
                last = error.error_message.unwrap_or_default();
            }
        }
        last
    })
}
