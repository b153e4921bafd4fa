use std::time::Duration;

use pi_coder::{Workspace, coding_tools};
use pi_tool::CancellationToken;
use serde_json::json;

use crate::{call, call_streaming, err_text, ok_text, project};

#[tokio::test]
async fn output_texts_match_pi() {
    let (_dir, tools) = project();
    let result = call(&tools, "bash", json!({"command": "echo out; exit 3"})).await;
    assert_eq!(err_text(&result), "out\n\n\nCommand exited with code 3");
    let result = call(&tools, "bash", json!({"command": "echo hi; echo err 1>&2"})).await;
    assert_eq!(ok_text(&result), "hi\nerr\n");
    let result = call(&tools, "bash", json!({"command": "true"})).await;
    assert_eq!(ok_text(&result), "(no output)");
    // pi (bash.ts:345-394): a failed command with no output says so before its exit status.
    let result = call(&tools, "bash", json!({"command": "exit 7"})).await;
    assert_eq!(
        err_text(&result),
        "(no output)\n\nCommand exited with code 7"
    );
}

#[tokio::test]
async fn commands_run_in_the_working_directory() {
    let (dir, tools) = project();
    let result = call(&tools, "bash", json!({"command": "pwd -P"})).await;
    let real = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(ok_text(&result), format!("{}\n", real.display()));
}

#[tokio::test]
async fn stderr_and_stdout_keep_arrival_order() {
    let (_dir, tools) = project();
    let result = call(
        &tools,
        "bash",
        json!({"command": "for i in 1 2 3; do echo o$i; echo e$i >&2; done"}),
    )
    .await;
    assert_eq!(ok_text(&result), "o1\ne1\no2\ne2\no3\ne3\n");
}

#[tokio::test]
async fn long_output_keeps_the_tail_and_saves_everything() {
    let (dir, tools) = project();
    let result = call(&tools, "bash", json!({"command": "seq 1 3000"})).await;
    let out = ok_text(&result);
    assert!(out.starts_with("1002\n1003\n"), "{}", &out[..20]);
    let path = result.details["fullOutputPath"]
        .as_str()
        .expect("fullOutputPath")
        .to_owned();
    assert!(
        out.ends_with(&format!(
            "3000\n\n\n[Showing lines 1002-3001 of 3001. Full output: {path}]"
        )),
        "{}",
        &out[out.len() - 200..]
    );
    let name = std::path::Path::new(&path)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(path.starts_with(&dir.path().display().to_string()));
    assert!(
        name.starts_with("pi-bash-")
            && name.ends_with(".log")
            && name.len() == "pi-bash-.log".len() + 16,
        "{name}"
    );
    let full = std::fs::read_to_string(&path).unwrap();
    let expected: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    assert_eq!(full, expected);
    assert_eq!(result.details["truncation"]["totalLines"], 3001);
}

#[tokio::test]
async fn output_far_over_the_byte_limit_stays_bounded_and_exact() {
    let (_dir, tools) = project();
    // 7 MB of numbered lines: the tail and the log must both be right.
    let result = call(&tools, "bash", json!({"command": "seq 1 1000000"})).await;
    let out = ok_text(&result);
    let path = result.details["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        out.contains("999999\n1000000\n\n\n[Showing lines 998002-1000001 of 1000001. Full output:"),
        "{}",
        &out[out.len() - 200..]
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        result.details["truncation"]["totalBytes"].as_u64().unwrap()
    );
}

#[tokio::test]
async fn one_huge_line_shows_its_end() {
    let (_dir, tools) = project();
    let result = call(
        &tools,
        "bash",
        json!({"command": "head -c 60000 /dev/zero | tr '\\0' a"}),
    )
    .await;
    let out = ok_text(&result);
    let path = result.details["fullOutputPath"].as_str().unwrap();
    assert!(
        out.ends_with(&format!(
            "\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {path}]"
        )),
        "{}",
        &out[out.len() - 150..]
    );
    assert_eq!(out.find("\n\n"), Some(50 * 1024));
}

fn pid_alive(pid: i32) -> bool {
    // A zombie (killed, waiting for its parent to reap it) counts as dead.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

async fn wait_until_dead(pid: i32) -> bool {
    for _ in 0..200 {
        if !pid_alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

#[tokio::test]
async fn timeout_kills_the_whole_group_even_when_sigterm_is_ignored() {
    let (dir, tools) = project();
    let command = "trap '' TERM; echo $$ > shell.pid; (trap '' TERM; sleep 30) & echo $! > child.pid; echo started; wait";
    let result = call(&tools, "bash", json!({"command": command, "timeout": 0.5})).await;
    assert_eq!(
        err_text(&result),
        "started\n\n\nCommand timed out after 0.5 seconds"
    );
    for file in ["shell.pid", "child.pid"] {
        let pid: i32 = std::fs::read_to_string(dir.path().join(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(wait_until_dead(pid).await, "{file} {pid} survived");
    }
    let result = call(&tools, "bash", json!({"command": "sleep 5", "timeout": 1})).await;
    assert_eq!(err_text(&result), "Command timed out after 1 seconds");
}

/// pi's bash answers a call whose signal is already aborted `Command aborted`, where the other
/// tools say `Operation aborted`; the pipeline's check before the call runs gives the tool's
/// own text. The command never runs.
#[tokio::test]
async fn a_call_aborted_before_it_runs_answers_command_aborted() {
    let (dir, tools) = project();
    let signal = CancellationToken::new();
    signal.cancel();
    let (result, _) = call_streaming(
        &tools,
        "bash",
        json!({"command": "touch ran"}),
        signal.clone(),
    )
    .await;
    assert_eq!(err_text(&result), "Command aborted");
    assert!(!dir.path().join("ran").exists(), "the command ran");
    let (result, _) = call_streaming(&tools, "ls", json!({}), signal).await;
    assert_eq!(err_text(&result), "Operation aborted");
}

#[tokio::test]
async fn abort_kills_the_group_and_reports_command_aborted() {
    let (dir, tools) = project();
    let signal = CancellationToken::new();
    let trigger = signal.clone();
    let ready = dir.path().join("child.pid");
    let watcher = tokio::spawn(async move {
        while !ready.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        trigger.cancel();
    });
    // `waiting` is in the pipe before the pid file appears (and so before the abort).
    let command = "(trap '' TERM; sleep 30) & echo waiting; echo $! > child.pid.tmp; mv child.pid.tmp child.pid; wait";
    let (result, _) = call_streaming(&tools, "bash", json!({"command": command}), signal).await;
    watcher.await.unwrap();
    assert_eq!(err_text(&result), "waiting\n\n\nCommand aborted");
    let pid: i32 = std::fs::read_to_string(dir.path().join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_until_dead(pid).await, "child {pid} survived the abort");
}

#[tokio::test]
async fn updates_stream_the_output_so_far() {
    let (_dir, tools) = project();
    let (result, updates) = call_streaming(
        &tools,
        "bash",
        json!({"command": "echo a; sleep .3; echo b"}),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(ok_text(&result), "a\nb\n");
    let texts: Vec<String> = updates
        .lock()
        .unwrap()
        .iter()
        .map(|u| u.text_content())
        .collect();
    assert!(
        updates.lock().unwrap()[0].content.is_empty(),
        "first update is empty: {texts:?}"
    );
    assert!(texts.contains(&"a\n".to_owned()), "{texts:?}");
    assert_eq!(texts.last().map(String::as_str), Some("a\nb\n"));
}

#[tokio::test]
async fn a_missing_working_directory_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let tools = coding_tools(Workspace::new(&gone));
    let result = call(&tools, "bash", json!({"command": "echo hi"})).await;
    assert_eq!(
        err_text(&result),
        format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            gone.display()
        )
    );
}

#[tokio::test]
async fn background_children_holding_the_pipe_do_not_hang_the_call() {
    let (dir, tools) = project();
    let result = call(
        &tools,
        "bash",
        json!({"command": "sleep 30 & echo $! > bg.pid; echo done"}),
    )
    .await;
    assert_eq!(ok_text(&result), "done\n");
    let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[tokio::test]
async fn dropping_a_running_call_kills_its_process_group() {
    let (dir, tools) = project();
    let command =
        "(trap '' TERM; sleep 30) & echo $! > child.pid.tmp; mv child.pid.tmp child.pid; wait";
    let running = call(&tools, "bash", json!({"command": command}));
    let ready = dir.path().join("child.pid");
    tokio::select! {
        _ = running => panic!("the command should still be running"),
        () = async { while !ready.exists() { tokio::time::sleep(Duration::from_millis(10)).await; } } => {}
    }
    // `running` is dropped here, mid-command.
    let pid: i32 = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_until_dead(pid).await,
        "child {pid} outlived the dropped call"
    );
}

/// A project whose `bash` runs in the `workspace-write` sandbox, and a folder outside it (and
/// outside the temporary directory, which the sandbox may write).
fn sandboxed_project() -> (tempfile::TempDir, tempfile::TempDir, pi_tool::ToolRegistry) {
    let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    assert!(
        !base.starts_with(std::env::temp_dir()),
        "the target folder ({}) is inside the temporary directory, which workspace-write may \
         write, so no folder of it is outside the sandbox: build elsewhere (CARGO_TARGET_DIR) \
         or set TMPDIR",
        base.display()
    );
    let dir = tempfile::tempdir_in(base).unwrap();
    let outside = tempfile::tempdir_in(base).unwrap();
    let tools = coding_tools(
        Workspace::new(dir.path())
            .with_temp_dir(dir.path())
            .sandboxed(pi_coder::SandboxMode::WorkspaceWrite),
    );
    (dir, outside, tools)
}

#[tokio::test]
async fn sandboxed_commands_write_in_the_workspace_only() {
    let (dir, outside, tools) = sandboxed_project();
    let command = format!(
        "echo in > inside.txt; echo out > {}/outside.txt; cat inside.txt",
        outside.path().display()
    );
    let result = call(&tools, "bash", json!({ "command": command })).await;
    let text = ok_text(&result);
    assert!(
        text.contains("Permission denied") && text.ends_with("in\n"),
        "{text}"
    );
    assert!(dir.path().join("inside.txt").exists());
    assert!(!outside.path().join("outside.txt").exists());
    // Control: the same command, unconfined, writes there.
    let (_plain, tools) = project();
    let result = call(&tools, "bash", json!({ "command": command })).await;
    ok_text(&result);
    assert!(outside.path().join("outside.txt").exists());
}

#[tokio::test]
async fn a_sandboxed_command_leaves_nothing_running() {
    let (dir, _outside, tools) = sandboxed_project();
    let command = "sleep 60 & echo $! > child.pid";
    let result = call(&tools, "bash", json!({ "command": command })).await;
    assert_eq!(ok_text(&result), "(no output)");
    let pid: i32 = std::fs::read_to_string(dir.path().join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_until_dead(pid).await, "child {pid} outlived the call");
}

#[tokio::test]
async fn a_sandbox_that_cannot_be_set_up_refuses_the_command() {
    let dir = tempfile::tempdir().unwrap();
    // The policy's writable root does not exist: the sandbox cannot be made.
    let policy = pi_coder::SandboxPolicy::workspace_write(dir.path().join("gone"));
    let tools = coding_tools(Workspace::new(dir.path()).with_sandbox(policy));
    let result = call(&tools, "bash", json!({"command": "touch ran"})).await;
    let text = err_text(&result);
    assert!(
        text.contains("The command was not run") && text.contains("--sandbox off"),
        "{text}"
    );
    assert!(!dir.path().join("ran").exists());
}

#[tokio::test]
async fn a_confined_read_opens_the_full_output_log_and_nothing_else_there() {
    let dir = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let tools = coding_tools(
        Workspace::new(dir.path())
            .confined(true)
            .with_temp_dir(logs.path()),
    );
    let result = call(&tools, "bash", json!({"command": "seq 1 3000"})).await;
    let path = result.details["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(path.starts_with(&logs.path().display().to_string()));
    let read = call(&tools, "read", json!({"path": path, "offset": 2999})).await;
    assert_eq!(ok_text(&read), "2999\n3000\n");
    std::fs::write(logs.path().join("other.txt"), "secret").unwrap();
    let other = logs.path().join("other.txt").display().to_string();
    let read = call(&tools, "read", json!({ "path": other })).await;
    assert!(err_text(&read).contains("outside the working directory"));
}
