//! Exactly once for calls made from code, across a kill -9 (issue 32 part 4): a tool's nested
//! call (`ctx.call_tool`) paused the run and was approved; a real child process resuming it
//! from SQLite is killed (SIGKILL) at a different point in each of 20 trials, and another
//! process resumes it to the end. Each tool appends a line to a file each time it runs: no
//! nested call that completed runs again, and an approved one runs at most once unless its tool
//! allows replay (`replay = "never"` gets an error result saying it was interrupted).
#![cfg(feature = "sqlite")]

mod child_process;
use child_process::{claim_and_finish, wait};
mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{call, calls};
use pi_runtime::{
    AgentContext, AgentLoopConfig, Message, RunState, RunStore, ScriptedModel, SqliteRunStore,
    agent_loop,
};
use pi_tool::{AgentTool, CancellationToken, FnTool, Replay, ToolContext};
use serde_json::{Value, json};

/// The environment variable that makes `child_process_entry` act (else it returns at once).
const CHILD: &str = "PI_NESTED_KILL_CHILD";

fn store(dir: &Path) -> SqliteRunStore {
    SqliteRunStore::open(dir.join("runs.sqlite")).unwrap()
}

/// Appends a line to `dir/name` and syncs it: a tool's visible effect.
fn effect(dir: &Path, name: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(name))
        .unwrap();
    writeln!(file, "{name}").unwrap();
    file.sync_all().unwrap();
}

fn count(dir: &Path, name: &str) -> usize {
    std::fs::read_to_string(dir.join(name))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

/// A tool that appends to its file and answers its name; `approval` and `replay` as given, and
/// 20 ms of work before (`effect_first: false`) or after its effect.
fn counted(
    dir: &Path,
    name: &'static str,
    approval: bool,
    replay: Replay,
    effect_first: bool,
) -> Arc<dyn AgentTool> {
    let dir = dir.to_owned();
    let mut builder = FnTool::builder(name, "A counted tool.", json!({"type": "object"}));
    if approval {
        builder = builder.approval();
    }
    let tool = builder
        .replay(replay)
        .build(move |_: Value, _: ToolContext| {
            let dir = dir.clone();
            async move {
                if effect_first {
                    effect(&dir, name);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                if !effect_first {
                    effect(&dir, name);
                }
                name
            }
        })
        .unwrap();
    Arc::new(tool)
}

/// A tool whose code calls `nested` in order and answers what they said.
fn outer(name: &'static str, nested: &'static [&'static str]) -> Arc<dyn AgentTool> {
    let tool = FnTool::builder(name, "Calls tools from code.", json!({"type": "object"}))
        .build(move |_: Value, ctx: ToolContext| async move {
            let mut said = Vec::new();
            for tool in nested {
                let result = ctx.call_tool(*tool, json!({})).await;
                said.push(result.text_content());
            }
            said.join(" | ")
        })
        .unwrap();
    Arc::new(tool)
}

/// `settle` calls `lookup` (free), `charge` (approval) and `receipt` (free), the last two must
/// not run twice (their effect, then work); `log` calls `note` (approval, safe to run again:
/// work, then its effect).
fn context(dir: &Path) -> AgentContext {
    AgentContext::new("test").with_tools([
        outer("settle", &["lookup", "charge", "receipt"]),
        outer("log", &["note"]),
        counted(dir, "lookup", false, Replay::Safe, true),
        counted(dir, "charge", true, Replay::Never, true),
        counted(dir, "receipt", false, Replay::Never, true),
        counted(dir, "note", true, Replay::Safe, false),
    ])
}

/// The run as the first process leaves it: paused on `settle` (its nested `charge`) and `log`
/// (its nested `note`), both approved, stored in SQLite.
async fn paused_and_approved(dir: &Path) -> String {
    let model = Arc::new(ScriptedModel::new([calls(vec![
        call("c1", "settle", json!({})),
        call("c2", "log", json!({})),
    ])]));
    let stream = agent_loop(
        vec![Message::user("settle and log")],
        context(dir),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    );
    let mut state = stream.outcome().await.1.expect("paused");
    assert_eq!(state.nested["c1"].call.id, "c1/2");
    assert_eq!(state.nested["c2"].call.id, "c2/1");
    state.approve("c1").unwrap();
    state.approve("c2").unwrap();
    store(dir).create(&state).unwrap()
}

/// What a resuming process does: load, claim, resume to the end. Exit codes: 0 done, 3 busy,
/// 4 nothing to resume.
async fn resume_in_this_process(dir: &Path, run: &str) -> i32 {
    let store = store(dir);
    let state = store.load(run).unwrap();
    if state.waiting().is_empty() {
        return 4;
    }
    claim_and_finish(&store, run, state, context(dir)).await
}

/// The child process's side: resumes the run named by the environment, and exits.
#[test]
fn child_process_entry() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let (dir, run) = spec.split_once('|').unwrap();
    let code = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(resume_in_this_process(&PathBuf::from(dir), run));
    std::process::exit(code);
}

fn child(dir: &Path, run: &str) -> std::process::Child {
    child_process::spawn(CHILD, format!("{}|{run}", dir.display()))
}

/// The text of the result of the top-level call `id`.
fn result_of(state: &RunState, id: &str) -> String {
    state
        .messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .find(|r| r.tool_call_id == id)
        .map(|r| r.text())
        .unwrap_or_else(|| panic!("no result for {id}"))
}

#[test]
fn a_kill_between_a_nested_approval_and_its_completion_never_runs_a_call_twice() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Interrupted charges and receipts.
    let mut interrupted = [0, 0];
    for trial in 0..20u64 {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let run = runtime.block_on(paused_and_approved(dir));
        // The pause ran each outer call's code up to its waiting nested call.
        assert_eq!(count(dir, "lookup"), 1);
        assert_eq!((count(dir, "charge"), count(dir, "note")), (0, 0));

        // A resuming process killed at a different point in each trial.
        let mut first = child(dir, &run);
        std::thread::sleep(Duration::from_millis(trial * 7));
        first.kill().ok();
        first.wait().unwrap();
        let at_kill = store(dir).load(&run).unwrap();
        let receipts_at_kill = count(dir, "receipt");
        let notes_at_kill = count(dir, "note");

        // Another process resumes it to the end (the kill released the claim).
        let code = wait(child(dir, &run));
        assert!(
            code == 0 || code == 4,
            "trial {trial}: the second resume exited {code}"
        );

        // The journal answered `lookup`: it never ran again.
        assert_eq!(count(dir, "lookup"), 1, "trial {trial}: lookup ran again");
        let charges = count(dir, "charge");
        assert!(charges <= 1, "trial {trial}: charge ran {charges} times");
        let receipts = count(dir, "receipt");
        assert!(receipts <= 1, "trial {trial}: receipt ran {receipts} times");
        if at_kill.finished.contains_key("c1") {
            assert_eq!(receipts, receipts_at_kill, "trial {trial}");
        }
        // A finished note (recorded as such) is not run again.
        if at_kill.finished.contains_key("c2/1") || at_kill.finished.contains_key("c2") {
            assert_eq!(
                count(dir, "note"),
                notes_at_kill,
                "trial {trial}: a finished note ran again"
            );
        }

        // The run ended, with one result per outer call, and the code saw what ran.
        let end = store(dir).load(&run).unwrap();
        assert!(
            end.waiting().is_empty(),
            "trial {trial}: the run did not end"
        );
        assert!(end.nested.is_empty(), "trial {trial}");
        // What the code saw: each call's answer, or that it was interrupted and not run again.
        let settle = result_of(&end, "c1");
        let said: Vec<&str> = settle.split(" | ").collect();
        assert_eq!(said.len(), 3, "trial {trial}: {settle}");
        assert_eq!(said[0], "lookup", "trial {trial}");
        for (index, (answer, tool)) in said[1..].iter().zip(["charge", "receipt"]).enumerate() {
            if *answer != tool {
                interrupted[index] += 1;
                assert!(
                    answer.starts_with(&format!("Tool {tool} was interrupted")),
                    "trial {trial}: {settle}"
                );
                // Only the charge was approved.
                assert_eq!(
                    answer.contains("after the approved call"),
                    tool == "charge",
                    "trial {trial}: {settle}"
                );
            }
        }
        assert_eq!(result_of(&end, "c2"), "note", "trial {trial}");
        assert!(count(dir, "note") >= 1);
        assert!(end.messages.last().unwrap().as_assistant().is_some());
    }
    // Not asserted (where a kill lands depends on the machine's load); shown with --nocapture.
    println!(
        "interrupted in 20 trials: {} charges, {} receipts",
        interrupted[0], interrupted[1]
    );
}
