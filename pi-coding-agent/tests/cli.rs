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
        "--mcp",
        "--no-mcp-config",
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

/// A local OpenAI-compatible server: the first request of a turn gets a `bash` call running
/// `command`, a request answering a tool result gets `Saw: <the tool's output>`.
fn fake_openai(command: &'static str) -> String {
    use std::io::{BufRead, BufReader, Read, Write};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = format!("http://{}/v1", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let last = request["messages"]
                .as_array()
                .and_then(|m| m.last())
                .cloned()
                .unwrap_or_default();
            let chunk = |delta: serde_json::Value, finish: Option<&str>| {
                let event = serde_json::json!({"id": "r1", "object": "chat.completion.chunk", "model": "fake",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                format!("data: {event}\n\n")
            };
            let mut events = String::new();
            if last["role"] == "tool" {
                let output = match &last["content"] {
                    serde_json::Value::String(text) => text.clone(),
                    other => other
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|p| p["text"].as_str())
                        .collect(),
                };
                events += &chunk(
                    serde_json::json!({"role": "assistant", "content": format!("Saw: {output}")}),
                    None,
                );
                events += &chunk(serde_json::json!({}), Some("stop"));
            } else {
                let call = serde_json::json!({"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "bash", "arguments": serde_json::json!({"command": command}).to_string()}});
                events += &chunk(
                    serde_json::json!({"role": "assistant", "tool_calls": [call]}),
                    None,
                );
                events += &chunk(serde_json::json!({}), Some("tool_calls"));
            }
            events += "data: [DONE]\n\n";
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(events.as_bytes());
        }
    });
    address
}

#[test]
fn one_shot_runs_a_tool_against_a_local_server_and_shows_it() {
    let server = fake_openai("echo one; echo two");
    let dir = tempfile::tempdir().unwrap();
    let output = pi_without_keys()
        .args([
            "--base-url",
            &server,
            "--model",
            "fake",
            "--yes",
            "--no-session",
            "-p",
            "run it",
            "--cwd",
        ])
        .arg(dir.path())
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Saw: one\ntwo\n");
    assert!(
        stderr.contains("● bash $ echo one; echo two\n  one\n  two\n  ✓ bash ("),
        "{stderr}"
    );
}

#[test]
fn without_yes_and_without_a_terminal_commands_are_refused() {
    let server = fake_openai("touch created-by-pi");
    let dir = tempfile::tempdir().unwrap();
    let output = pi_without_keys()
        .args([
            "--base-url",
            &server,
            "--model",
            "fake",
            "--no-session",
            "-p",
            "run it",
            "--cwd",
        ])
        .arg(dir.path())
        .output()
        .expect("run pi");
    assert!(output.status.success());
    assert!(!dir.path().join("created-by-pi").exists());
    assert!(
        String::from_utf8_lossy(&output.stdout)
            .starts_with("Saw: Running commands needs the user's approval")
    );
}

#[test]
fn ctrl_c_aborts_the_running_command_and_exits_130_in_one_shot_mode() {
    use std::io::{BufRead, BufReader, Read};

    // `sta'rted'` keeps the needle out of the echoed command line: only the output has it.
    let server = fake_openai("echo sta'rted'; sleep 30");
    let dir = tempfile::tempdir().unwrap();
    let mut child = pi_without_keys()
        .args([
            "--base-url",
            &server,
            "--model",
            "fake",
            "--yes",
            "--no-session",
            "-p",
            "run it",
            "--cwd",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pi");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    while !seen.contains("started") {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).expect("read") > 0,
            "pi ended early: {seen}"
        );
        seen.push_str(&line);
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    stderr.read_to_string(&mut seen).expect("read the rest");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{seen}");
    // The tool reports `Command aborted`, unless the loop stopped waiting for it first
    // (`Operation aborted`); either way the command's process group is killed.
    let aborted = seen.contains("Command aborted") || seen.contains("Operation aborted");
    assert!(
        aborted && seen.contains("✗ bash failed") && seen.contains("(aborted)"),
        "{seen}"
    );
}

#[test]
fn ctrl_c_in_the_interactive_mode_aborts_the_turn_and_the_session_goes_on() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::sync::mpsc;
    use std::time::Duration;

    // `sta'rted'` keeps the needle out of the echoed command line: only the output has it.
    let server = fake_openai("echo sta'rted'; sleep 4");
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("session.jsonl");
    let mut child = pi_without_keys()
        .args([
            "--base-url",
            &server,
            "--model",
            "fake",
            "--yes",
            "--session",
        ])
        .arg(&session)
        .arg("--cwd")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pi");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"run the slow command\n").expect("prompt");
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let (lines_tx, lines) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut seen = String::new();
    let wait_for = |needle: &str, timeout: Duration, seen: &mut String| loop {
        match lines.recv_timeout(timeout) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
                if line.contains(needle) {
                    return true;
                }
            }
            Err(_) => return false,
        }
    };
    assert!(
        wait_for("started", Duration::from_secs(60), &mut seen),
        "{seen}"
    );
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    // Every press is seen: pi keeps one SIGINT listener for its whole life (a listener per
    // wait once lost about one press in thirty).
    assert!(
        wait_for("(aborting", Duration::from_secs(60), &mut seen),
        "{seen}"
    );
    assert!(
        wait_for("(aborted)", Duration::from_secs(60), &mut seen),
        "{seen}"
    );
    // The session is still there: a second prompt gets an answer, then /exit ends pi normally.
    stdin
        .write_all(b"and now?\n/exit\n")
        .expect("second prompt");
    drop(stdin);
    let status = child.wait().expect("wait");
    reader.join().expect("reader");
    seen.extend(lines.try_iter().map(|line| line + "\n"));
    assert!(status.success(), "{seen}");
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("stdout");
    // The second prompt ran its own command and the model answered with its output.
    assert!(stdout.contains("Saw: started"), "{stdout}\n{seen}");
    let saved = std::fs::read_to_string(&session).unwrap();
    assert!(saved.lines().count() >= 7, "{saved}");
}

#[test]
fn sessions_are_saved_per_directory_and_resumed() {
    let server = fake_openai("echo saved");
    let project = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        pi_without_keys()
            .args([
                "--base-url",
                &server,
                "--model",
                "fake",
                "--yes",
                "-p",
                "go",
                "--cwd",
            ])
            .arg(project.path())
            .args(extra)
            .env("PI_SESSION_DIR", sessions.path())
            .output()
            .expect("run pi")
    };
    let first = run(&[]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let files: Vec<_> = std::fs::read_dir(sessions.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let saved = std::fs::read_to_string(&files[0]).unwrap();
    // Header, user, assistant (tool call), tool result, assistant (answer).
    assert_eq!(saved.lines().count(), 5, "{saved}");

    let resumed = run(&["--resume"]);
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        stderr.starts_with(&format!("Resumed {} (4 messages)", files[0].display())),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&files[0]).unwrap().lines().count(),
        9
    );
    assert_eq!(std::fs::read_dir(sessions.path()).unwrap().count(), 1);
}

#[test]
fn project_mcp_servers_start_only_with_consent_and_a_failing_server_is_left_out() {
    let server = fake_openai("echo ok");
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".mcp.json"),
        r#"{"mcpServers": {"repo": {"command": "/nonexistent/repo-server"}}}"#,
    )
    .unwrap();
    let run = |yes: bool| {
        let mut command = pi_without_keys();
        command
            .env("HOME", home.path())
            .args(["--base-url", &server, "--model", "fake", "--no-session"])
            .args(["-p", "run it", "--mcp", "gone=/nonexistent/server --flag"])
            .arg("--cwd")
            .arg(dir.path());
        if yes {
            command.arg("--yes");
        }
        command.output().expect("run pi")
    };

    // No terminal, no --yes: the project's servers are not started, and pi says so.
    let output = run(false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(".mcp.json were not started: pass --yes to start them"),
        "{stderr}"
    );
    assert!(!stderr.contains("\"repo\""), "{stderr}");
    assert!(
        stderr.contains("pi: MCP server \"gone\" left out: could not start MCP server `/nonexistent/server --flag`"),
        "{stderr}"
    );

    // With --yes they are started (this one cannot be, so it is left out) and pi goes on.
    let output = run(true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("pi: MCP server \"repo\" left out: could not start MCP server `/nonexistent/repo-server`"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Saw: ok\n");
}
