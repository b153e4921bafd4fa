//! End-to-end: a `CodingAgent` on a `ScriptedModel` reads, edits and runs a file in a
//! temporary project, with approval, abort, and the session saved and resumed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pi_coder::{
    Approval, CodingAgent, DEFAULT_TOOL_NAMES, Renderer, Session, Workspace, coding_tools,
};
use pi_runtime::{
    AssistantContent, AssistantMessage, Message, ScriptedModel, ScriptedStreaming, StopReason,
};
use pi_tool::{CancellationToken, ToolRegistry};
use serde_json::json;

fn call(id: &str, name: &str, args: serde_json::Value) -> AssistantMessage {
    AssistantMessage::new(
        vec![AssistantContent::tool_call(id, name, args)],
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

fn tool_results(messages: &[Arc<Message>]) -> Vec<(String, bool, String)> {
    messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| (r.tool_name.clone(), r.is_error, r.text()))
        .collect()
}

#[tokio::test]
async fn reads_edits_and_runs_a_file_then_resumes() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("greet.sh"),
        "#!/bin/sh\necho \"hello from the script\"\n",
    )
    .unwrap();
    let model = Arc::new(
        ScriptedModel::recording([
            call("c1", "read", json!({"path": "greet.sh"})),
            call(
                "c2",
                "edit",
                json!({"path": "greet.sh", "edits": [{"oldText": "hello from the script", "newText": "edited by pi"}]}),
            ),
            call("c3", "bash", json!({"command": "sh greet.sh"})),
            answer("The script now prints `edited by pi`."),
            answer("Still here."),
        ])
        .streaming(ScriptedStreaming::Deltas),
    );
    let session_path = project.path().join(".sessions/one.jsonl");
    let (session, earlier) = Session::open_or_create(&session_path, project.path()).unwrap();
    let mut agent = CodingAgent::new(model.clone(), tools(project.path()), project.path())
        .with_approval(Approval::Always)
        .with_session(session, earlier);

    let (mut out, mut log) = (Vec::new(), Vec::new());
    let outcome = {
        let mut renderer = Renderer::new(&mut out, &mut log);
        agent
            .prompt(
                "Make the script say 'edited by pi' and run it.",
                CancellationToken::new(),
                &mut renderer,
            )
            .await
    };
    assert_eq!(outcome.stop_reason, StopReason::Stop);
    assert_eq!(
        std::fs::read_to_string(project.path().join("greet.sh")).unwrap(),
        "#!/bin/sh\necho \"edited by pi\"\n"
    );
    let results = tool_results(agent.transcript());
    assert_eq!(
        results,
        vec![
            (
                "read".to_owned(),
                false,
                "#!/bin/sh\necho \"hello from the script\"\n".to_owned()
            ),
            (
                "edit".to_owned(),
                false,
                "Successfully replaced 1 block(s) in greet.sh.".to_owned()
            ),
            ("bash".to_owned(), false, "edited by pi\n".to_owned()),
        ]
    );
    let roles: Vec<&str> = agent.transcript().iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );

    // What the user saw: the answer on `out`, each tool call and its outcome on `log`.
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "The script now prints `edited by pi`.\n"
    );
    let log = String::from_utf8(log).unwrap();
    assert!(log.contains("● read greet.sh\n"), "{log}");
    assert!(
        log.contains("● bash $ sh greet.sh\n  edited by pi\n  ✓ bash $ sh greet.sh ("),
        "{log}"
    );

    // The model was offered pi's default tools, in pi's order, and a system prompt naming the
    // directory.
    let first = &model.requests()[0];
    assert_eq!(first.tool_names(), ["read", "bash", "edit", "write"]);
    assert!(first.system_prompt.ends_with(&format!(
        "Current working directory: {}",
        project.path().display()
    )));

    // The session file holds every message; reopening it resumes the conversation.
    drop(agent);
    let (session, earlier) = Session::open_or_create(&session_path, project.path()).unwrap();
    assert_eq!(earlier.len(), 8);
    let mut resumed = CodingAgent::new(model.clone(), tools(project.path()), project.path())
        .with_approval(Approval::Always)
        .with_session(session, earlier);
    let (mut out, mut log) = (Vec::new(), Vec::new());
    let mut renderer = Renderer::new(&mut out, &mut log);
    resumed
        .prompt("Are you there?", CancellationToken::new(), &mut renderer)
        .await;
    let last_request = model.requests().last().cloned().unwrap();
    assert_eq!(
        last_request.messages.len(),
        9,
        "the resumed request carries the old transcript"
    );
    assert_eq!(
        Session::open_or_create(&session_path, project.path())
            .unwrap()
            .1
            .len(),
        10
    );
}

#[tokio::test]
async fn bash_asks_for_approval_and_a_refusal_reaches_the_model() {
    let project = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "bash", json!({"command": "touch should-not-exist"})),
        answer("Understood."),
    ]));
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let approver: pi_coder::Approver = Arc::new(move |request| {
        let counter = Arc::clone(&counter);
        Box::pin(async move {
            assert_eq!(request.command, "touch should-not-exist");
            counter.fetch_add(1, Ordering::SeqCst);
            false
        })
    });
    let mut agent = CodingAgent::new(model.clone(), tools(project.path()), project.path())
        .with_approval(Approval::Ask(approver));
    let (mut out, mut log) = (Vec::new(), Vec::new());
    let mut renderer = Renderer::new(&mut out, &mut log);
    agent
        .prompt("Create a file.", CancellationToken::new(), &mut renderer)
        .await;
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert!(!project.path().join("should-not-exist").exists());
    assert_eq!(
        tool_results(agent.transcript()),
        vec![(
            "bash".to_owned(),
            true,
            pi_coder::agent::DECLINED.to_owned()
        )]
    );

    // Without an approver the call waits: the run pauses with it, nothing runs, and no result
    // is in the transcript; a new prompt leaves it behind with an error result saying so.
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "bash", json!({"command": "touch waited"})),
        answer("ok"),
    ]));
    let mut agent = CodingAgent::new(model, tools(project.path()), project.path());
    let outcome = agent
        .prompt("Run it.", CancellationToken::new(), &mut renderer)
        .await;
    assert!(outcome.approval_refused);
    assert_eq!(agent.waiting_calls()[0].tool, "bash");
    assert!(tool_results(agent.transcript()).is_empty());
    agent
        .prompt("Never mind.", CancellationToken::new(), &mut renderer)
        .await;
    assert!(agent.waiting_calls().is_empty());
    assert!(!project.path().join("waited").exists());
    assert_eq!(
        tool_results(agent.transcript()),
        vec![(
            "bash".to_owned(),
            true,
            pi_coder::agent::LEFT_WAITING.to_owned()
        )]
    );
}

#[tokio::test]
async fn aborting_a_turn_kills_the_command_and_keeps_the_session_usable() {
    let project = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::recording([
        // `sta'rted'` keeps the needle out of the echoed command line: only the output has it.
        call("c1", "bash", json!({"command": "echo sta'rted'; sleep 30"})),
        answer("after the abort"),
    ]));
    let mut agent = CodingAgent::new(model.clone(), tools(project.path()), project.path())
        .with_approval(Approval::Always);
    // Ctrl-C as soon as the command's first output is shown.
    let signal = CancellationToken::new();
    let mut out = Vec::new();
    let mut log = CancelOnText {
        seen: Vec::new(),
        needle: "started",
        signal: signal.clone(),
    };
    let outcome = {
        let mut renderer = Renderer::new(&mut out, &mut log);
        agent
            .prompt("Run a long command.", signal.clone(), &mut renderer)
            .await
    };
    assert_eq!(outcome.stop_reason, StopReason::Aborted);
    let results = tool_results(agent.transcript());
    assert_eq!(results.len(), 1);
    // `Command aborted` from the tool, or `Operation aborted` when the loop stopped waiting first.
    let (_, is_error, text) = &results[0];
    assert!(
        *is_error && (text.ends_with("Command aborted") || text == "Operation aborted"),
        "{results:?}"
    );

    let (mut out, mut log) = (Vec::new(), Vec::new());
    let mut renderer = Renderer::new(&mut out, &mut log);
    let outcome = agent
        .prompt("Try again.", CancellationToken::new(), &mut renderer)
        .await;
    drop(renderer);
    assert_eq!(outcome.stop_reason, StopReason::Stop);
    assert_eq!(String::from_utf8(out).unwrap(), "after the abort\n");
    // The aborted turn left its assistant message (stop reason `aborted`) and the command's
    // error result in the transcript; the next prompt continues after them.
    let roles: Vec<&str> = agent.transcript().iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant"
        ]
    );
}

/// A log that cancels `signal` once `needle` has been written to it.
struct CancelOnText {
    seen: Vec<u8>,
    needle: &'static str,
    signal: CancellationToken,
}

impl std::io::Write for CancelOnText {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.seen.extend_from_slice(buf);
        if String::from_utf8_lossy(&self.seen).contains(self.needle) {
            self.signal.cancel();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn any_tool_s_oversized_output_is_saved_whole_and_shown_as_head_and_tail() {
    let project = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    // 300 KB: over pi's 50 KB and over the loop's own 256 KiB cut, which must not happen first.
    let full: String = (0..30_000).map(|i| format!("row {i:05}\n")).collect();
    let text = full.clone();
    let dump = pi_tool::tool_fn(
        "dump",
        "Dumps a table",
        json!({"type": "object", "properties": {}}),
        move |_args, _ctx| {
            let text = text.clone();
            async move { text }
        },
    )
    .unwrap();
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "dump", json!({})),
        answer("done"),
    ]));
    let registry = ToolRegistry::new().with(dump);
    let mut agent = CodingAgent::new(model, registry, project.path()).with_output_dir(logs.path());
    let (mut out, mut log) = (Vec::new(), Vec::new());
    let mut renderer = Renderer::new(&mut out, &mut log);
    agent
        .prompt("Dump it.", CancellationToken::new(), &mut renderer)
        .await;
    let result = agent
        .transcript()
        .iter()
        .find_map(|m| m.as_tool_result())
        .expect("a tool result")
        .clone();
    let shown = result.text();
    let path = result.details["fullOutputPath"]
        .as_str()
        .expect("fullOutputPath");
    assert!(
        path.starts_with(&logs.path().display().to_string()),
        "{path}"
    );
    assert_eq!(std::fs::read_to_string(path).unwrap(), full);
    assert!(shown.starts_with("row 00000\n"), "{}", &shown[..20]);
    assert!(
        shown.ends_with("row 29999\n"),
        "{}",
        &shown[shown.len() - 20..]
    );
    assert!(shown.contains(&format!("Full output: {path}]")), "{shown}");
    assert!(shown.len() < 60 * 1024, "{}", shown.len());
}
