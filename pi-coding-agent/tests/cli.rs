//! The `pi` binary as a user runs it: help, and the message when no provider is configured.

use std::process::{Command, Stdio};

/// `pi` with every provider variable removed from its environment.
fn pi_without_keys() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pi"));
    for name in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OPENAI_BASE_URL",
        "PI_MODEL",
        "PI_PROVIDER",
    ] {
        command.env_remove(name);
    }
    command.stdin(Stdio::null());
    command
}

#[test]
fn help_lists_the_modes_and_options() {
    let output = pi_without_keys().arg("--help").output().expect("run pi");
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for option in [
        "--print",
        "--provider",
        "--model",
        "--base-url",
        "--yes",
        "--cwd",
        "--confine",
        "--session",
        "--resume",
    ] {
        assert!(help.contains(option), "{option} missing from:\n{help}");
    }
}

#[test]
fn without_an_api_key_pi_says_what_to_set_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let output = pi_without_keys()
        .args(["-p", "hello", "--no-session", "--cwd"])
        .arg(dir.path())
        .output()
        .expect("run pi");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    for variable in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"] {
        assert!(
            stderr.contains(variable),
            "{variable} missing from:\n{stderr}"
        );
    }
    assert!(output.stdout.is_empty());
}

#[test]
fn a_provider_without_its_key_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let output = pi_without_keys()
        .args([
            "-p",
            "hello",
            "--no-session",
            "--provider",
            "anthropic",
            "--cwd",
        ])
        .arg(dir.path())
        .env("OPENAI_API_KEY", "sk-test-not-used")
        .output()
        .expect("run pi");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("--provider anthropic needs ANTHROPIC_API_KEY, which is not set.\n"),
        "{stderr}"
    );

    let output = pi_without_keys()
        .args(["-p", "hello", "--provider", "nope"])
        .output()
        .expect("run pi");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let expected =
        "unknown provider \"nope\": use one of openai, anthropic, google, openai-compatible";
    assert!(stderr.contains(expected), "{stderr}");
}

#[test]
fn a_missing_working_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = pi_without_keys()
        .args(["-p", "hello", "--cwd"])
        .arg(dir.path().join("nope"))
        .output()
        .expect("run pi");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("working directory"));
}
