//! `bash` approval as a call that waits: with nobody to ask the run pauses with the command
//! waiting, kept beside the session file; the session continued (in this process or by
//! `pi -c`) shows it, asks, and goes on. Through `CodingAgent` and through the `pi` binary.

use std::process::{Command, Stdio};
use std::sync::Arc;

use pi_coder::{CodingAgent, DEFAULT_TOOL_NAMES, Renderer, Session, Workspace, coding_tools};
use pi_runtime::{AssistantContent, AssistantMessage, Message, ScriptedModel, StopReason};
use pi_tool::{CancellationToken, ToolRegistry};
use serde_json::json;

mod support;
use support::{FakeServer, Script, pi_against, rpc_output};

fn call(id: &str, command: &str) -> AssistantMessage {
    AssistantMessage::new(
        vec![AssistantContent::tool_call(
            id,
            "bash",
            json!({"command": command}),
        )],
        StopReason::ToolUse,
    )
}

fn answer(text: &str) -> AssistantMessage {
    AssistantMessage::new(vec![AssistantContent::text(text)], StopReason::Stop)
}

fn tools(dir: &std::path::Path) -> ToolRegistry {
    coding_tools(Workspace::new(dir).confined(true).with_temp_dir(dir))
        .subset(DEFAULT_TOOL_NAMES)
        .expect("default tools")
}

fn results(messages: &[Arc<Message>]) -> Vec<(bool, String)> {
    messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| (r.is_error, r.text()))
        .collect()
}

/// Pauses a run on `touch <marker>` in a session saved at `file`; returns the agent.
async fn paused(dir: &std::path::Path, file: &std::path::Path, marker: &str) -> CodingAgent {
    let model = Arc::new(ScriptedModel::new([
        call("c1", &format!("touch {marker}")),
        answer("done"),
    ]));
    let session = Session::create(file, dir).expect("a new session");
    let mut agent = CodingAgent::new(model, tools(dir), dir).with_session(session, Vec::new());
    let (mut out, mut log) = (Vec::new(), Vec::new());
    let mut renderer = Renderer::new(&mut out, &mut log);
    let outcome = agent
        .prompt("Make the file.", CancellationToken::new(), &mut renderer)
        .await;
    assert!(outcome.approval_refused);
    agent
}

#[tokio::test]
async fn a_paused_command_is_kept_beside_the_session_and_resumed_when_it_is_continued() {
    let project = tempfile::tempdir().unwrap();
    let file = project.path().join("s.jsonl");
    let agent = paused(project.path(), &file, "approved").await;
    assert_eq!(agent.waiting_calls().len(), 1);
    assert!(!project.path().join("approved").exists(), "nothing ran");
    let kept = project.path().join("s.jsonl.waiting.json");
    assert!(kept.exists(), "the paused run is kept beside the session");
    drop(agent);

    // Continued later: the waiting call comes back with the session; approved, it runs and
    // the model is asked again.
    let (session, earlier) = Session::open_or_create(&file, project.path()).expect("reopens");
    let model = Arc::new(ScriptedModel::new([answer("made it")]));
    let mut agent = CodingAgent::new(model, tools(project.path()), project.path())
        .with_session(session, earlier);
    let waiting = agent.waiting_calls().to_vec();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].arguments["command"], "touch approved");
    let (mut out, mut log) = (Vec::new(), Vec::new());
    let mut renderer = Renderer::new(&mut out, &mut log);
    let outcome = agent
        .resume_waiting(|_| true, CancellationToken::new(), &mut renderer)
        .await
        .expect("something waited")
        .expect("resumed");
    assert!(!outcome.approval_refused);
    assert!(project.path().join("approved").exists(), "the command ran");
    assert_eq!(agent.last_assistant_text().as_deref(), Some("made it"));
    assert!(agent.waiting_calls().is_empty());
    assert!(!kept.exists(), "settled: the kept run is gone");
    assert_eq!(results(agent.transcript()).len(), 1);
}

#[tokio::test]
async fn a_denied_waiting_command_reaches_the_model_as_pis_declined_text() {
    let project = tempfile::tempdir().unwrap();
    let file = project.path().join("s.jsonl");
    let mut agent = paused(project.path(), &file, "denied").await;
    let (mut out, mut log) = (Vec::new(), Vec::new());
    let mut renderer = Renderer::new(&mut out, &mut log);
    agent
        .resume_waiting(|_| false, CancellationToken::new(), &mut renderer)
        .await
        .expect("something waited")
        .expect("resumed");
    assert!(!project.path().join("denied").exists());
    assert_eq!(
        results(agent.transcript()),
        vec![(true, pi_coder::agent::DECLINED.to_owned())]
    );
    assert_eq!(agent.last_assistant_text().as_deref(), Some("done"));
}

/// `pi` against the fake server, in `dir`, sessions in `sessions`, with every command needing
/// approval (`--sandbox off`).
fn pi(server: &str, dir: &std::path::Path, sessions: &std::path::Path) -> Command {
    let mut command = pi_against(server, dir);
    command
        .env("PI_SESSION_DIR", sessions)
        .args(["--sandbox", "off"]);
    command
}

#[test]
fn pi_c_shows_the_waiting_command_and_with_yes_runs_it_and_goes_on() {
    let server = FakeServer::start(Script::new(&["touch created-by-pi"]));
    let project = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let marker = project.path().join("created-by-pi");

    // No terminal, no --yes: the command waits, pi stops with 3 and says how to go on.
    let first = pi(&server.address, project.path(), sessions.path())
        .args(["-p", "run it"])
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("Continue with `pi -c`"), "{stderr}");
    assert!(!marker.exists());
    let kept: Vec<_> = std::fs::read_dir(sessions.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".waiting.json"))
        .collect();
    assert_eq!(kept.len(), 1, "the paused run is kept beside the session");

    // `pi -c` with nobody to ask shows it; it still waits.
    let shown = pi(&server.address, project.path(), sessions.path())
        .args(["-c", "-p"])
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&shown.stderr);
    assert_eq!(shown.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("● bash $ touch created-by-pi\n  waits for approval"),
        "{stderr}"
    );
    assert!(!marker.exists());
    assert!(kept[0].exists());

    // `pi -c --yes` approves it: it runs, the model reads its result and answers.
    let resumed = pi(&server.address, project.path(), sessions.path())
        .args(["-c", "--yes", "-p"])
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert!(marker.exists(), "the approved command ran");
    assert!(
        String::from_utf8_lossy(&resumed.stdout).starts_with("Saw:"),
        "{}",
        String::from_utf8_lossy(&resumed.stdout)
    );
    assert!(!kept[0].exists(), "settled");
    // The model was asked twice: the first run, and after the approved command.
    assert_eq!(server.seen().len(), 2);
    // The session file has the call's result and the answer after it.
    let session = std::fs::read_dir(sessions.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("the session file");
    let saved = std::fs::read_to_string(session).unwrap();
    assert!(saved.contains("\"toolResult\""), "{saved}");
    assert!(saved.contains("Saw:"), "{saved}");
}

/// The terminal's text so far, `\r` removed.
fn screen(buffer: &std::sync::Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(&buffer.lock().unwrap()).replace('\r', "")
}

fn wait_for_text(buffer: &std::sync::Mutex<Vec<u8>>, needle: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = screen(buffer);
        if text.contains(needle) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {needle:?} in:\n{text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A session whose run left `touch created-by-pi` waiting for approval (`pi -p` exited with
/// 3): the model's server, the project and the sessions folder.
fn left_waiting() -> (FakeServer, tempfile::TempDir, tempfile::TempDir) {
    let server = FakeServer::start(Script::new(&["touch created-by-pi"]));
    let project = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let first = pi(&server.address, project.path(), sessions.path())
        .args(["-p", "run it"])
        .output()
        .expect("run pi");
    assert_eq!(first.status.code(), Some(3));
    (server, project, sessions)
}

#[test]
fn pi_c_in_a_terminal_asks_and_a_no_reaches_the_model_as_declined() {
    use std::io::{Read, Write};

    let (server, project, sessions) = left_waiting();
    let marker = project.path().join("created-by-pi");

    // `pi -c` on a terminal (line mode: TERM unset).
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let slave = std::fs::File::from(pty.slave);
    let mut command = pi(&server.address, project.path(), sessions.path());
    command
        .env_remove("TERM")
        .arg("-c")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    let mut child = command.spawn().expect("run pi");
    let mut master = std::fs::File::from(pty.master);
    let mut input = master.try_clone().unwrap();
    let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&buffer);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = master.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });
    let shown = wait_for_text(&buffer, "Run `touch created-by-pi`? [y]es / [N]o: ");
    assert!(
        shown.contains("● bash $ touch created-by-pi\n  waits for approval"),
        "{shown}"
    );
    input.write_all(b"n\n").unwrap();
    // The paused run goes on: the model reads pi's declined text.
    wait_for_text(&buffer, "Saw: The user declined to run this command.");
    input.write_all(b"/exit\n").unwrap();
    let status = child.wait().expect("wait");
    assert!(status.success(), "{}", screen(&buffer));
    assert!(!marker.exists(), "a declined command does not run");
    assert_eq!(server.seen().len(), 2);
}

#[test]
fn in_json_mode_the_waiting_command_and_the_pause_are_events() {
    let server = FakeServer::start(Script::new(&["touch created-by-pi"]));
    let project = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let output = pi(&server.address, project.path(), sessions.path())
        .args(["--mode", "json", "-p", "run it"])
        .output()
        .expect("run pi");
    assert_eq!(output.status.code(), Some(3));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON value a line"))
        .collect();
    let waiting = events
        .iter()
        .find(|e| e["type"] == "tool_call_waiting")
        .expect("a tool_call_waiting event");
    assert_eq!(waiting["toolName"], "bash");
    assert_eq!(waiting["args"]["command"], "touch created-by-pi");
    assert_eq!(waiting["kind"], "approval");
    let paused = events
        .iter()
        .find(|e| e["type"] == "run_paused")
        .expect("a run_paused event");
    assert_eq!(paused["waiting"][0]["toolCallId"], waiting["toolCallId"]);
    assert!(!events.iter().any(|e| e["type"] == "tool_execution_end"));
    assert!(!project.path().join("created-by-pi").exists());
}

/// The JSON lines of a `pi --mode json` run's stdout.
fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"))
        })
        .collect()
}

#[test]
fn in_json_mode_pi_c_gives_the_resumed_run_s_events_as_json_on_stdout() {
    let server = FakeServer::start(Script::new(&["touch created-by-pi"]));
    let project = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let marker = project.path().join("created-by-pi");
    let first = pi(&server.address, project.path(), sessions.path())
        .args(["--mode", "json", "-p", "run it"])
        .output()
        .expect("run pi");
    assert_eq!(first.status.code(), Some(3));

    // `pi -c --yes` in JSON mode: the header, then the resumed run's events, as every run's.
    let resumed = pi(&server.address, project.path(), sessions.path())
        .args(["-c", "--yes", "--mode", "json"])
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert!(marker.exists(), "the approved command ran");
    let events = json_lines(&resumed.stdout);
    let shown = format!("{events:#?}");
    assert_eq!(events[0]["type"], "session", "{shown}");
    assert_eq!(
        events.iter().filter(|e| e["type"] == "session").count(),
        1,
        "{shown}"
    );
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end in {shown}"));
    assert_eq!(end["toolName"], "bash");
    assert_eq!(end["isError"], false, "{shown}");
    assert!(
        events.iter().any(|e| e["type"] == "message_end"
            && e["message"]["role"] == "assistant"
            && e["message"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Saw:"))),
        "{shown}"
    );
    assert!(events.iter().any(|e| e["type"] == "agent_end"), "{shown}");
    // Nothing of the run went to the text renderer on stderr.
    assert!(!stderr.contains("✓ bash"), "{stderr}");
    assert_eq!(server.seen().len(), 2);
}

/// `pi --mode rpc` (with `extra` arguments) given `commands`, one JSON line each, its input
/// then closed: pi finishes what runs and leaves. Its stdout's JSON lines.
fn rpc(
    mut command: Command,
    extra: &[&str],
    commands: &[serde_json::Value],
) -> Vec<serde_json::Value> {
    let lines: Vec<String> = commands.iter().map(ToString::to_string).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let output = rpc_output(command.args(extra), &lines);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    json_lines(&output.stdout)
}

/// The response to the command with `id`, and where it is among `lines`.
fn response<'a>(lines: &'a [serde_json::Value], id: &str) -> (usize, &'a serde_json::Value) {
    lines
        .iter()
        .enumerate()
        .find(|(_, line)| line["type"] == "response" && line["id"] == id)
        .unwrap_or_else(|| panic!("no response to {id} in {lines:#?}"))
}

#[test]
fn pi_c_in_rpc_mode_lists_the_waiting_command_and_resume_waiting_settles_it() {
    let (server, project, sessions) = left_waiting();
    let marker = project.path().join("created-by-pi");

    let lines = rpc(
        pi(&server.address, project.path(), sessions.path()),
        &["-c"],
        &[
            json!({"id": "state", "type": "get_state"}),
            json!({"id": "list", "type": "get_waiting_calls"}),
            json!({"id": "unknown", "type": "resume_waiting", "decisions": {"call_9": true}}),
            json!({"id": "undecided", "type": "resume_waiting", "decisions": {}}),
            json!({"id": "neither", "type": "resume_waiting"}),
            json!({"id": "settle", "type": "resume_waiting", "decisions": {"call_1": true}}),
            json!({"id": "again", "type": "resume_waiting", "approve": true}),
            json!({"id": "after", "type": "get_waiting_calls"}),
        ],
    );
    let shown = format!("{lines:#?}");
    assert_eq!(
        response(&lines, "state").1["data"]["waitingCallCount"],
        1,
        "{shown}"
    );
    let listed = &response(&lines, "list").1["data"]["waiting"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{shown}");
    assert_eq!(listed[0]["toolCallId"], "call_1");
    assert_eq!(listed[0]["toolName"], "bash");
    assert_eq!(listed[0]["args"]["command"], "touch created-by-pi");
    assert_eq!(listed[0]["kind"], "approval");
    for (id, error) in [
        ("unknown", "No call call_9 is waiting (waiting: call_1)"),
        ("undecided", "No decision for call_1"),
        ("neither", "Either \"approve\": true|false"),
        ("again", "No calls are waiting"),
    ] {
        let refused = response(&lines, id).1;
        assert_eq!(refused["success"], false, "{shown}");
        let text = refused["error"].as_str().unwrap_or_default();
        assert!(text.contains(error), "{id}: {text}");
    }
    // Settled: the response first, then the resumed run's events; the command ran and the
    // model read its result.
    let (at, settled) = response(&lines, "settle");
    assert_eq!(settled["success"], true, "{shown}");
    let end = lines
        .iter()
        .position(|e| e["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end in {shown}"));
    assert!(at < end, "{shown}");
    assert_eq!(lines[end]["toolName"], "bash");
    assert_eq!(lines[end]["isError"], false, "{shown}");
    assert!(marker.exists(), "the approved command ran");
    assert_eq!(server.seen().len(), 2);
    let after = &response(&lines, "after").1["data"]["waiting"];
    assert_eq!(after.as_array().map(Vec::len), Some(0), "{shown}");
}

#[test]
fn in_rpc_mode_resume_waiting_declines_and_the_model_reads_pis_declined_text() {
    let server = FakeServer::start(Script::new(&["touch created-by-pi"]));
    let project = tempfile::tempdir().unwrap();
    let mut command = pi_against(&server.address, project.path());
    command.args(["--no-session", "--sandbox", "off"]);
    let lines = rpc(
        command,
        &[],
        &[
            json!({"id": "run", "type": "prompt", "message": "run it"}),
            json!({"id": "decline", "type": "resume_waiting", "approve": false}),
        ],
    );
    let shown = format!("{lines:#?}");
    assert!(lines.iter().any(|e| e["type"] == "run_paused"), "{shown}");
    assert_eq!(response(&lines, "decline").1["success"], true, "{shown}");
    let end = lines
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end in {shown}"));
    assert_eq!(end["isError"], true, "{shown}");
    assert_eq!(
        end["result"]["content"][0]["text"],
        pi_coder::agent::DECLINED,
        "{shown}"
    );
    assert!(!project.path().join("created-by-pi").exists());
    assert_eq!(
        server.seen().len(),
        2,
        "the model was asked again with the denial"
    );
}
