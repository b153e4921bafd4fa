//! The `pi` binary as a user runs it: help, and the message when no provider is configured.

use std::process::{Command, Stdio};

mod support;
use support::{FakeServer, Script, fake_openai};

/// `pi` with every provider variable removed from its environment, and a `HOME` with no
/// configuration in it (no `~/.pi/agent/models.json`).
fn pi_without_keys() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pi"));
    for name in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "MISTRAL_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "PI_MODEL",
        "PI_PROVIDER",
        "PI_CODING_AGENT_DIR",
        "PI_CODING_AGENT_SESSION_DIR",
        "PI_SESSION_DIR",
    ] {
        command.env_remove(name);
    }
    let home = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("empty-home");
    std::fs::create_dir_all(&home).unwrap();
    command.env("HOME", home);
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
        "--mcp-tools-direct",
        "--sandbox",
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
    let expected = "unknown provider \"nope\": use one of openai, anthropic, google, mistral, openai-compatible, amazon-bedrock, azure-openai-responses, google-vertex, google-vertex-anthropic";
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

#[test]
fn one_shot_runs_a_tool_against_a_local_server_and_shows_it() {
    let server = fake_openai("echo one; echo two");
    let dir = tempfile::tempdir().unwrap();
    let output = pi_on(&server, dir.path())
        .args(["--yes", "--no-session", "-p", "run it"])
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // pi prints the last answer's text and a newline.
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Saw: one\ntwo\n\n");
    assert!(
        stderr
            .contains("● bash $ echo one; echo two\n  one\n  two\n  ✓ bash $ echo one; echo two ("),
        "{stderr}"
    );
}

#[test]
fn without_yes_and_without_a_terminal_a_command_stops_pi_with_code_3() {
    let server = FakeServer::start(Script::new(&["touch created-by-pi"]));
    let dir = tempfile::tempdir().unwrap();
    let output = pi_on(&server.address, dir.path())
        .args(["--sandbox", "off", "--no-session", "-p", "run it"])
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(!dir.path().join("created-by-pi").exists());
    assert_eq!(
        stderr
            .matches("nobody can approve it here (no terminal, no --yes)")
            .count(),
        1,
        "said once: {stderr}"
    );
    assert!(stderr.contains("Rerun with --yes"), "{stderr}");
    // The run stopped at the refusal: the model was not asked again.
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn in_the_default_sandbox_commands_run_without_approval_and_stay_in_the_workspace() {
    // Outside the temporary directory (which the sandbox may write), as a user's home is.
    let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let outside = tempfile::tempdir_in(base).unwrap();
    let command = format!(
        "touch created-by-pi; touch {}/escaped; echo $ANTHROPIC_API_KEY",
        outside.path().display()
    );
    let server = FakeServer::start(Script::new(&[command.as_str()]));
    let dir = tempfile::tempdir_in(base).unwrap();
    // The sandbox may write the temporary directory too: one of its own, so that `outside`
    // stays outside wherever the target folder is (under /tmp, say).
    let temp = tempfile::tempdir_in(base).unwrap();
    let output = pi_on(&server.address, dir.path())
        .env("ANTHROPIC_API_KEY", "sk-ant-not-for-commands")
        .env("TMPDIR", temp.path())
        .args(["--no-session", "-p", "run it"])
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&output.stderr);
    // No approval was needed (no exit 3): the command ran, confined.
    assert!(output.status.success(), "{stderr}");
    assert!(dir.path().join("created-by-pi").exists(), "{stderr}");
    assert!(!outside.path().join("escaped").exists(), "{stderr}");
    assert!(!stderr.contains("sk-ant-not-for-commands"), "{stderr}");
    // A mode that is no mode is refused before anything runs.
    let output = pi_on(&server.address, dir.path())
        .args(["--sandbox", "on", "-p", "hi"])
        .output()
        .expect("run pi");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no sandbox mode"));
}

#[test]
fn ctrl_c_aborts_the_running_command_and_exits_130_in_one_shot_mode() {
    use std::io::{BufRead, BufReader, Read};

    // `sta'rted'` keeps the needle out of the echoed command line: only the output has it.
    let server = fake_openai("echo sta'rted'; sleep 30");
    let dir = tempfile::tempdir().unwrap();
    let mut child = pi_on(&server, dir.path())
        .args(["--yes", "--no-session", "-p", "run it"])
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
        aborted
            && seen.contains("✗ bash $ echo sta'rted'; sleep 30 failed (")
            && seen.contains("(aborted)"),
        "{seen}"
    );
}

#[test]
fn sessions_are_saved_per_directory_and_resumed() {
    let server = fake_openai("echo saved");
    let project = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        pi_on(&server, project.path())
            .args(["--yes", "-p", "go"])
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
    // pi's file: header, model_change, thinking_level_change, user, assistant (tool call),
    // tool result, assistant (answer).
    assert_eq!(saved.lines().count(), 7, "{saved}");
    let kinds: Vec<String> = saved
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds[..3],
        ["session", "model_change", "thinking_level_change"]
    );

    let resumed = run(&["--continue"]);
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        stderr.starts_with(&format!("Resumed {} (4 messages)", files[0].display())),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&files[0]).unwrap().lines().count(),
        11
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
        let mut command = pi_on(&server, dir.path());
        command
            .env("HOME", home.path())
            .args(["--sandbox", "off", "--no-session", "-p", "run it"])
            .args(["--mcp", "gone=/nonexistent/server --flag"]);
        if yes {
            command.arg("--yes");
        }
        command.output().expect("run pi")
    };

    // No terminal, no --yes: the project's servers are not started, and pi says so (and the
    // model's command is refused: exit code 3).
    let output = run(false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
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
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Saw: ok\n\n");
}

/// `pi` against the fake server `server` (model `fake`), working in `dir`.
fn pi_on(server: &str, dir: &std::path::Path) -> Command {
    let mut command = pi_without_keys();
    command
        .args(["--base-url", server, "--model", "fake", "--cwd"])
        .arg(dir);
    command
}

/// `pi` against `server` with `--yes`, in `dir`, with `HOME` and pi's agent directory in `home`.
fn pi_at(server: &str, dir: &std::path::Path, home: &std::path::Path) -> Command {
    let mut command = pi_on(server, dir);
    command
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env_remove("PI_SESSION_DIR")
        .arg("--yes");
    command
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_pi_flags_and_the_environment_variables() {
    let output = pi_without_keys().arg("--help").output().expect("run pi");
    let help = text(&output.stdout);
    for needle in [
        "[PROMPT]...",
        "--continue",
        "--resume",
        "--api-key",
        "--session-dir",
        "--strict",
        "--append-system-prompt",
        "--no-context-files",
        "Environment variables:",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "OPENAI_BASE_URL",
        "PI_MODEL",
        "PI_SESSION_DIR",
        "PI_CODING_AGENT_DIR",
    ] {
        assert!(help.contains(needle), "{needle} missing from:\n{help}");
    }
}

#[test]
fn a_positional_prompt_runs_first_and_print_mode_exits_after_it() {
    let server = FakeServer::start(Script::new(&["echo positional"]));
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // stdin is no terminal: as pi, print mode, without `-p`.
    let output = pi_at(&server.address, dir.path(), home.path())
        .args(["--no-session", "fix the test"])
        .output()
        .expect("run pi");
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Saw: positional\n\n");
    // Print mode, pi's way: `-p` is a switch, the prompts are positional, and only the last
    // answer is printed.
    let output = pi_at(&server.address, dir.path(), home.path())
        .args(["--no-session", "first", "-p", "second"])
        .output()
        .expect("run pi");
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Saw: positional\n\n");
    let users: Vec<String> = server
        .seen()
        .iter()
        .filter_map(|s| {
            let messages = s.body["messages"].as_array()?;
            let last = messages.last()?;
            (last["role"] == "user").then(|| last["content"].to_string())
        })
        .collect();
    assert_eq!(users.len(), 3, "{users:?}");
    assert!(
        users[1].contains("first") && users[2].contains("second"),
        "{users:?}"
    );
}

#[test]
fn every_request_names_pi_and_a_compatible_server_gets_strict_only_when_asked() {
    let server = FakeServer::start(Script::new(&["true"]));
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for strict in [None, Some("on"), Some("off")] {
        let mut command = pi_at(&server.address, dir.path(), home.path());
        command.args(["--no-session", "--api-key", "sk-from-flag", "-p", "go"]);
        if let Some(strict) = strict {
            command.args(["--strict", strict]);
        }
        let output = command.output().expect("run pi");
        assert!(output.status.success(), "{}", text(&output.stderr));
    }
    let seen = server.seen();
    assert_eq!(seen.len(), 6);
    for request in &seen {
        let agent = request.header("user-agent").unwrap_or_default();
        assert!(agent.starts_with("pi-tool/"), "{agent}");
        assert_eq!(request.header("authorization"), Some("Bearer sk-from-flag"));
    }
    let strict = |i: usize| seen[i].body["tools"][0]["function"].get("strict").cloned();
    assert_eq!(
        strict(0),
        None,
        "a compatible server gets no strict by default"
    );
    assert_eq!(strict(2), Some(serde_json::json!(true)));
    assert_eq!(strict(4), None);
}

#[test]
fn the_system_prompt_is_pi_s_with_context_files_and_tools_in_pi_order() {
    let server = FakeServer::start(Script::new(&["true"]));
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("agent")).unwrap();
    std::fs::write(home.path().join("agent/AGENTS.md"), "Global rule.").unwrap();
    std::fs::write(dir.path().join("CLAUDE.md"), "Project rule.").unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let output = pi_at(&server.address, dir.path(), home.path())
        .args(["--no-session", "--tools", "ls,read,bash", "-p", "go"])
        .output()
        .expect("run pi");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let body = &server.seen()[0].body;
    let system = body["messages"][0]["content"].as_str().unwrap();
    let global = format!(
        "## {}\n\nGlobal rule.\n\n",
        home.path().join("agent/AGENTS.md").display()
    );
    let project = format!(
        "## {}\n\nProject rule.\n\n",
        cwd.join("CLAUDE.md").display()
    );
    let (at_global, at_project) = (system.find(&global), system.find(&project));
    assert!(at_global.is_some() && at_project > at_global, "{system}");
    assert!(
        system.contains(
            "Available tools:\n- ls: List directory contents\n- read: Read file contents\n- bash: "
        ),
        "{system}"
    );
    assert!(system.contains("\nCurrent date: 20"), "{system}");
    assert!(
        system.ends_with(&format!("\nCurrent working directory: {}", cwd.display())),
        "{system}"
    );
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["ls", "read", "bash"]);

    // --no-context-files leaves them out.
    let output = pi_at(&server.address, dir.path(), home.path())
        .args(["--no-session", "--no-context-files", "-p", "go"])
        .output()
        .expect("run pi");
    assert!(output.status.success());
    let last = server.seen().into_iter().rev().nth(1).unwrap();
    let system = last.body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!system.contains("# Project Context"), "{system}");
}

#[test]
fn unknown_tools_are_left_out_and_a_missing_model_says_only_what_is_wrong() {
    // As pi: a name that is no tool is dropped (here with a warning), `all` included.
    let server = FakeServer::start(Script::new(&["true"]));
    let dir = tempfile::tempdir().unwrap();
    let output = pi_on(&server.address, dir.path())
        .args(["--no-session", "--tools", "read,blah,all", "-p", "x"])
        .output()
        .expect("run pi");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("Warning: --tools: there is no tool \"blah\" (left out); the tools are read, bash, edit, write, grep, find, ls\n"),
        "{stderr}"
    );
    assert!(stderr.contains("there is no tool \"all\""), "{stderr}");
    let tools: Vec<String> = server.seen()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools, ["read"]);
    // `--tools ""` offers none: no `tools` key at all.
    let output = pi_on(&server.address, dir.path())
        .args(["--no-session", "--tools", "", "-p", "x"])
        .output()
        .expect("run pi");
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(server.seen().last().unwrap().body.get("tools").is_none());
    let output = pi_without_keys()
        .args(["-p", "x", "--base-url", "http://127.0.0.1:9/v1"])
        .output()
        .expect("run pi");
    assert!(!output.status.success());
    assert_eq!(
        text(&output.stderr),
        "pi: no model named for the server at http://127.0.0.1:9/v1: pass --model <id> (a model the server has, e.g. --model llama3.2), or set PI_MODEL.\n"
    );
}

#[test]
fn an_unreachable_server_is_reported_before_the_retries() {
    use std::io::{BufRead, BufReader};

    // A port nothing listens on: bind one, then close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let dir = tempfile::tempdir().unwrap();
    let mut child = pi_without_keys()
        .args([
            "--no-session",
            "--model",
            "m",
            "--base-url",
            &url,
            "-p",
            "x",
            "--cwd",
        ])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pi");
    let mut first = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The first thing said, while the request is still being retried.
    let still_running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        first.starts_with(&format!(
            "pi: cannot reach the server at {url} (127.0.0.1:{port}: "
        )),
        "{first}"
    );
    assert!(first.contains("Is it running?"), "{first}");
    assert!(still_running, "pi should still be retrying: {first}");
}

#[test]
fn sessions_go_to_session_dir_and_continue_and_the_picker_resumes_one() {
    let server = FakeServer::start(Script::new(&["echo saved"]));
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let run = |extra: &[&str], stdin: &str| {
        use std::io::Write;
        let mut child = pi_at(&server.address, dir.path(), home.path())
            .arg("--session-dir")
            .arg(sessions.path())
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run pi");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().expect("wait")
    };
    let first = run(&["-p", "first prompt"], "");
    assert!(first.status.success(), "{}", text(&first.stderr));
    let files: Vec<_> = std::fs::read_dir(sessions.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    assert!(
        !home.path().join(".pi-rs").exists() && !home.path().join("agent/sessions").exists(),
        "nothing in the default directories"
    );

    let continued = run(&["-c", "-p", "again"], "");
    let stderr = text(&continued.stderr);
    assert!(
        stderr.starts_with(&format!("Resumed {} (4 messages)", files[0].display())),
        "{stderr}"
    );

    // -r lists the sessions, numbered; Enter picks none, a number resumes that one.
    let none = run(&["-r", "-p", "x"], "\n");
    let stderr = text(&none.stderr);
    assert!(none.status.success(), "{stderr}");
    assert!(
        stderr.contains("  1. ") && stderr.contains("8 messages  first prompt"),
        "{stderr}"
    );
    assert!(stderr.ends_with("No session selected.\n"), "{stderr}");
    let picked = run(&["-r", "-p", "third"], "7\n1\n");
    let stderr = text(&picked.stderr);
    assert!(stderr.contains("Not a number from 1 to 1: 7"), "{stderr}");
    assert!(
        stderr.contains(&format!("Resumed {} (8 messages)", files[0].display())),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&files[0]).unwrap().lines().count(),
        15
    );
}

#[test]
fn continue_finds_a_pi_session_of_the_directory_and_the_model_sees_it() {
    let server = FakeServer::start(Script::new(&["true"]));
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    // pi's directory for this cwd: ~/.pi/agent/sessions/--<cwd, / as ->--/
    let encoded = cwd
        .display()
        .to_string()
        .trim_start_matches('/')
        .replace('/', "-");
    let pi_dir = home
        .path()
        .join("agent/sessions")
        .join(format!("--{encoded}--"));
    std::fs::create_dir_all(&pi_dir).unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sessions/pi-0.73.1/branched.jsonl");
    let pi_file = pi_dir.join("2026-12-01T12-31-43-800Z_01a23196.jsonl");
    std::fs::copy(&fixture, &pi_file).unwrap();
    let output = pi_at(&server.address, dir.path(), home.path())
        .args(["-c", "-p", "go on"])
        .output()
        .expect("run pi");
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.starts_with(&format!("Resumed {} (10 messages)", pi_file.display())),
        "{stderr}"
    );
    let messages = server.seen()[0].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    // system + 10 resumed + the new prompt
    assert_eq!(messages.len(), 12, "{messages:?}");
    assert_eq!(messages[1]["content"], "Fix the failing test in src/lib.rs");
    // The turn was appended to pi's own file, after pi's lines, as pi appends.
    let now = std::fs::read_to_string(&pi_file).unwrap();
    let before = std::fs::read_to_string(&fixture).unwrap();
    assert!(now.starts_with(&before) && now.len() > before.len());
    assert_eq!(std::fs::read_dir(&pi_dir).unwrap().count(), 1, "no copy");
}
