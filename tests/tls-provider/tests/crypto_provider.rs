//! Issue 11 item 3 and issue 19 item 9: pi-runtime enabled reqwest's `rustls-no-provider`; Cargo
//! unifies features, so a user crate's own `reqwest::Client::new()` (reqwest without its
//! `rustls` feature) found no crypto provider and panicked unless pi-runtime (or the user) had
//! installed a process default first. pi-runtime now builds reqwest with `rustls` (aws-lc-rs):
//! the user's client has a provider with no call of ours. Each case runs `src/main.rs` as its own
//! process, because the process default provider is set once per process and the failure is a
//! panic.

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
fn a_user_client_built_before_anything_of_pi_runtime_works() {
    let out = run("client-first");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("user client built"), "{stdout}");
    // Not because something installed a default behind the user's back.
    assert!(
        stdout.contains("default provider installed: false"),
        "{stdout}"
    );
}

#[test]
fn a_user_rustls_config_built_before_anything_of_pi_runtime_works() {
    // One crypto provider compiled into rustls, so `ClientConfig::builder()` picks it.
    let out = run("rustls-config-first");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("user rustls config built"), "{stdout}");
}

#[test]
fn ensure_crypto_provider_still_works() {
    let out = run("client-after-ensure");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("user client built"));
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
