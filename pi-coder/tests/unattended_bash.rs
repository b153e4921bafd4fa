//! The model's `bash` calls in the modes with nobody to ask (`-p`, `--mode json`, `--mode rpc`),
//! through the `pi` binary against a local model server: a call that runs inside the sandbox
//! (the default, `workspace-write`) runs with no prompt and no pause; a call that would run
//! outside it (`--sandbox off`) waits for an approval nobody can give (exit 3 in `-p` and JSON
//! mode, `tool_call_waiting` and `run_paused` events in both JSON modes).

use std::process::{Command, Output};

mod support;
use support::{FakeServer, Script, pi_against, rpc_output};

/// The command the fake model runs: it writes a marker in the working directory, which the
/// sandbox allows.
const COMMAND: &str = "touch created-by-pi";

/// `pi` against `server` in `dir`, with no provider keys, no session, and `HOME` in `dir`.
fn pi(server: &str, dir: &std::path::Path) -> Command {
    let mut command = pi_against(server, dir);
    command.arg("--no-session");
    command
}

/// The JSON lines of `output`'s stdout.
fn json_lines(output: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON value a line"))
        .collect()
}

/// The `bash` call ran through to its result, unasked, and the model read it.
fn assert_ran(events: &[serde_json::Value], dir: &std::path::Path, server: &FakeServer) {
    let shown = format!("{events:#?}");
    assert!(
        !events.iter().any(|e| e["type"] == "tool_call_waiting"),
        "{shown}"
    );
    assert!(!events.iter().any(|e| e["type"] == "run_paused"), "{shown}");
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end in {shown}"));
    assert_eq!(end["toolName"], "bash");
    assert_eq!(end["isError"], false, "{shown}");
    assert!(dir.join("created-by-pi").exists(), "the command ran");
    // Asked for the call, then again with its result.
    assert_eq!(server.seen().len(), 2);
}

/// The `bash` call waits for an approval nobody can give: it did not run, the run paused.
fn assert_waits(events: &[serde_json::Value], dir: &std::path::Path, server: &FakeServer) {
    let shown = format!("{events:#?}");
    let waiting = events
        .iter()
        .find(|e| e["type"] == "tool_call_waiting")
        .unwrap_or_else(|| panic!("no tool_call_waiting in {shown}"));
    assert_eq!(waiting["args"]["command"], COMMAND);
    assert_eq!(waiting["kind"], "approval");
    assert!(events.iter().any(|e| e["type"] == "run_paused"), "{shown}");
    assert!(
        !events.iter().any(|e| e["type"] == "tool_execution_end"),
        "{shown}"
    );
    assert!(
        !dir.join("created-by-pi").exists(),
        "the command did not run"
    );
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn in_json_mode_a_sandboxed_command_runs_unasked_and_an_unsandboxed_one_waits() {
    let server = FakeServer::start(Script::new(&[COMMAND]));
    let dir = tempfile::tempdir().unwrap();
    let output = pi(&server.address, dir.path())
        .args(["--mode", "json", "-p", "run it"])
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_ran(&json_lines(&output), dir.path(), &server);

    let server = FakeServer::start(Script::new(&[COMMAND]));
    let dir = tempfile::tempdir().unwrap();
    let output = pi(&server.address, dir.path())
        .args(["--sandbox", "off", "--mode", "json", "-p", "run it"])
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert_waits(&json_lines(&output), dir.path(), &server);
}

/// `pi --mode rpc` given one `prompt` command, its input then closed (pi finishes the turn and
/// leaves).
fn rpc_prompt(command: &mut Command) -> Output {
    rpc_output(
        command,
        &[r#"{"id":"1","type":"prompt","message":"run it"}"#],
    )
}

#[test]
fn in_rpc_mode_a_sandboxed_command_runs_unasked_and_an_unsandboxed_one_waits() {
    let server = FakeServer::start(Script::new(&[COMMAND]));
    let dir = tempfile::tempdir().unwrap();
    let output = rpc_prompt(&mut pi(&server.address, dir.path()));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let events = json_lines(&output);
    assert!(
        events.iter().any(|e| e["type"] == "agent_end"),
        "{events:#?}"
    );
    assert_ran(&events, dir.path(), &server);

    let server = FakeServer::start(Script::new(&[COMMAND]));
    let dir = tempfile::tempdir().unwrap();
    let output = rpc_prompt(pi(&server.address, dir.path()).args(["--sandbox", "off"]));
    assert_waits(&json_lines(&output), dir.path(), &server);
}

#[test]
fn in_print_mode_a_sandboxed_command_runs_unasked_and_an_unsandboxed_one_waits() {
    let server = FakeServer::start(Script::new(&[COMMAND]));
    let dir = tempfile::tempdir().unwrap();
    let output = pi(&server.address, dir.path())
        .args(["-p", "run it"])
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(dir.path().join("created-by-pi").exists(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with("Saw:"),
        "{stderr}"
    );
    assert_eq!(server.seen().len(), 2);

    let server = FakeServer::start(Script::new(&[COMMAND]));
    let dir = tempfile::tempdir().unwrap();
    let output = pi(&server.address, dir.path())
        .args(["--sandbox", "off", "-p", "run it"])
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(!dir.path().join("created-by-pi").exists());
    assert_eq!(server.seen().len(), 1);
}
