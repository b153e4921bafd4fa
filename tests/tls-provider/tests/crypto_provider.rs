//! Issue 11 item 3: pi-runtime enables reqwest's `rustls-no-provider`; Cargo unifies features,
//! so a user crate's own `reqwest::Client::new()` (reqwest without its `rustls` feature) found
//! no crypto provider and panicked. Each case runs `src/main.rs` as its own process, because
//! the process default provider is set once per process and the failure is a panic.

use std::process::{Command, Output};

fn run(mode: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_user-reqwest"))
        .arg(mode)
        .output()
        .expect("the user-reqwest binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_user_client_built_after_pi_runtime_made_a_request_works() {
    let out = run("client-after-pi-runtime");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    // pi-runtime really built its client and tried to connect.
    assert!(stdout.contains("pi-runtime: Connection error"), "{stdout}");
    assert!(stdout.contains("user client built"), "{stdout}");
}

#[test]
fn a_user_client_built_after_a_model_was_made_works() {
    let out = run("client-after-model-made");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("model: m\nuser client built"), "{stdout}");
}

#[test]
fn a_user_client_built_before_pi_runtime_needs_ensure_crypto_provider() {
    // The documented line first: works.
    let out = run("client-after-ensure");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("user client built"));

    // Without it, reqwest's own panic: what the README tells the user to avoid.
    let out = run("client-first");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("No rustls crypto provider is configured"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_provider_the_user_installed_first_stays_the_default() {
    let out = run("own-provider-kept");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("pi-runtime: Connection error"), "{stdout}");
    assert!(
        stdout.contains("default provider cipher suites: Some(1)"),
        "{stdout}"
    );
    assert!(stdout.contains("user client built"), "{stdout}");
}
