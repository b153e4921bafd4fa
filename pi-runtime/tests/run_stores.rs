//! Paused runs in stores (JSON files; SQLite with the `sqlite` feature): saved by one process
//! and resumed by another, exactly once across a kill -9 between approval and completion (a
//! real child process, 20 trials per store); a run is claimed by one process at a time; bad
//! stored states (unknown id, newer format, tampered or cut files, a stale state) are refused
//! with clear errors and change nothing; a save appends the new messages and never rewrites the
//! transcript.

mod child_process;
use child_process::{claim_and_finish, wait};
mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{call, calls};
use pi_runtime::{
    AgentContext, AgentLoopConfig, JsonFileStore, Message, RunState, RunStore, ScriptedModel,
    StoreError, agent_loop,
};
use pi_tool::{AgentTool, CancellationToken, FnTool, Replay};
use serde_json::{Value, json};

/// The environment variable that makes `child_process_entry` act (else it returns at once).
const CHILD: &str = "PI_RUN_STORE_CHILD";

fn store_at(kind: &str, dir: &Path) -> Box<dyn RunStore> {
    match kind {
        "json" => Box::new(JsonFileStore::open(dir.join("runs")).unwrap()),
        #[cfg(feature = "sqlite")]
        "sqlite" => Box::new(pi_runtime::SqliteRunStore::open(dir.join("runs.sqlite")).unwrap()),
        // Commits not synced to disk: a killed process still loses nothing.
        #[cfg(feature = "sqlite")]
        "sqlite-unsynced" => Box::new(
            pi_runtime::SqliteRunStore::open(dir.join("runs.sqlite"))
                .unwrap()
                .without_sync()
                .unwrap(),
        ),
        other => panic!("no store {other}"),
    }
}

fn kinds() -> Vec<&'static str> {
    let mut kinds = vec!["json"];
    if cfg!(feature = "sqlite") {
        kinds.push("sqlite");
    }
    kinds
}

/// Appends a line to `path` and syncs it: the tool's visible effect.
fn effect(path: &Path, line: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(file, "{line}").unwrap();
    file.sync_all().unwrap();
}

fn count(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

/// `charge` (must not run twice: its effect, then 20 ms of work) and `note` (safe to run again:
/// 20 ms of work, then its effect); both need approval.
fn tools(dir: &Path) -> Vec<Arc<dyn AgentTool>> {
    let charges = dir.join("charges");
    let notes = dir.join("notes");
    let charge = FnTool::builder("charge", "Charge a card.", json!({"type": "object"}))
        .approval()
        .replay(Replay::Never)
        .build(move |_args: Value, _ctx| {
            let charges = charges.clone();
            async move {
                effect(&charges, "charged");
                tokio::time::sleep(Duration::from_millis(20)).await;
                "charged"
            }
        })
        .unwrap();
    let note = FnTool::builder("note", "Write a note.", json!({"type": "object"}))
        .approval()
        .replay(Replay::Safe)
        .build(move |_args: Value, _ctx| {
            let notes = notes.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                effect(&notes, "noted");
                "noted"
            }
        })
        .unwrap();
    vec![Arc::new(charge), Arc::new(note)]
}

fn context(dir: &Path) -> AgentContext {
    AgentContext::new("test").with_tools(tools(dir))
}

/// A run paused on `charge` and `note`, as the first process leaves it.
async fn paused_run(dir: &Path) -> RunState {
    let model = Arc::new(ScriptedModel::new([calls(vec![
        call("c1", "charge", json!({})),
        call("c2", "note", json!({})),
    ])]));
    let stream = agent_loop(
        vec![Message::user("charge and note")],
        context(dir),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    );
    stream.outcome().await.1.expect("paused")
}

/// What a resuming process does: load, approve what is undecided, claim, resume to the end.
/// Exit codes: 0 done, 3 busy, 4 nothing to resume.
async fn resume_in_this_process(kind: &str, dir: &Path, run: &str) -> i32 {
    let store = store_at(kind, dir);
    let mut state = store.load(run).unwrap();
    if state.waiting().is_empty() {
        return 4;
    }
    let undecided: Vec<String> = state.undecided().map(|w| w.id.clone()).collect();
    for id in undecided {
        state.approve(&id).unwrap();
    }
    claim_and_finish(&*store, run, state, context(dir)).await
}

/// The child process's side: resumes the run named by the environment, and exits.
#[test]
fn child_process_entry() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let mut parts = spec.splitn(3, '|');
    let (kind, dir, run) = (
        parts.next().unwrap().to_owned(),
        PathBuf::from(parts.next().unwrap()),
        parts.next().unwrap().to_owned(),
    );
    let code = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(resume_in_this_process(&kind, &dir, &run));
    std::process::exit(code);
}

fn child(kind: &str, dir: &Path, run: &str) -> std::process::Child {
    child_process::spawn(CHILD, format!("{kind}|{}|{run}", dir.display()))
}

fn kill_trials(kind: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for trial in 0..20u64 {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let state = runtime.block_on(paused_run(dir));
        let run = store_at(kind, dir).create(&state).unwrap();

        // A resuming process killed (SIGKILL) at a different point in each trial.
        let mut first = child(kind, dir, &run);
        std::thread::sleep(Duration::from_millis(trial * 9));
        first.kill().ok();
        first.wait().unwrap();
        let at_kill = store_at(kind, dir).load(&run).unwrap();
        let notes_at_kill = count(&dir.join("notes"));

        // Another process resumes it to the end (the kill released the claim).
        let code = wait(child(kind, dir, &run));
        assert!(
            code == 0 || code == 4,
            "trial {trial}: the second resume exited {code}"
        );

        let charges = count(&dir.join("charges"));
        assert!(
            charges <= 1,
            "trial {trial} ({kind}): charge ran {charges} times"
        );
        let recorded_note = at_kill.finished.contains_key("c2")
            || at_kill
                .messages
                .iter()
                .any(|m| m.as_tool_result().is_some_and(|r| r.tool_call_id == "c2"));
        if recorded_note {
            assert_eq!(
                count(&dir.join("notes")),
                notes_at_kill,
                "trial {trial} ({kind}): a finished note ran again"
            );
        }
        // The run ended, with one result per call.
        let end = store_at(kind, dir).load(&run).unwrap();
        assert!(
            end.waiting().is_empty(),
            "trial {trial}: the run did not end"
        );
        let results: Vec<(String, String)> = end
            .messages
            .iter()
            .filter_map(|m| m.as_tool_result())
            .map(|r| (r.tool_call_id.clone(), text_of(r)))
            .collect();
        assert_eq!(results.len(), 2, "trial {trial}: {results:?}");
        let charge = &results.iter().find(|r| r.0 == "c1").unwrap().1;
        if charge != "charged" {
            assert!(charge.contains("was interrupted"), "{charge}");
        }
        assert_eq!(results.iter().find(|r| r.0 == "c2").unwrap().1, "noted");
        assert!(count(&dir.join("notes")) >= 1);
        assert!(end.messages.last().unwrap().as_assistant().is_some());
    }
}

fn text_of(result: &pi_runtime::ToolResultMessage) -> String {
    result
        .content
        .iter()
        .map(|c| match c {
            pi_tool::Content::Text { text } => text.clone(),
            _ => String::new(),
        })
        .collect()
}

#[test]
fn a_kill_between_approval_and_completion_never_runs_a_call_twice_json() {
    kill_trials("json");
}

#[cfg(feature = "sqlite")]
#[test]
fn a_kill_between_approval_and_completion_never_runs_a_call_twice_sqlite() {
    kill_trials("sqlite");
}

#[cfg(feature = "sqlite")]
#[test]
fn a_kill_between_approval_and_completion_never_runs_a_call_twice_sqlite_unsynced() {
    kill_trials("sqlite-unsynced");
}

#[tokio::test]
async fn a_paused_run_is_resumed_in_a_new_process() {
    for kind in kinds() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let state = paused_run(dir).await;
        let run = store_at(kind, dir).create(&state).unwrap();
        assert_eq!(store_at(kind, dir).load(&run).unwrap(), state);
        let code = tokio::task::spawn_blocking({
            let dir = dir.to_path_buf();
            let run = run.clone();
            move || wait(child(kind, &dir, &run))
        })
        .await
        .unwrap();
        assert_eq!(code, 0);
        assert_eq!(count(&dir.join("charges")), 1);
        assert_eq!(count(&dir.join("notes")), 1);
        let end = store_at(kind, dir).load(&run).unwrap();
        assert!(end.waiting().is_empty());
        let roles: Vec<&str> = end.messages.iter().map(|m| m.role()).collect();
        assert_eq!(
            roles,
            ["user", "assistant", "toolResult", "toolResult", "assistant"]
        );
        // Resuming an ended run is refused.
        assert_eq!(
            resume_in_this_process(kind, dir, &run).await,
            4,
            "{kind}: an ended run has nothing to resume"
        );
    }
}

/// Claims a run just released. Another test's child process, between its fork and its exec,
/// can hold a copy of the released lock's file for a moment: a refusal as busy is retried for
/// up to two seconds.
fn claim_soon(
    store: &dyn RunStore,
    run: &str,
    state: &RunState,
) -> Result<Box<dyn pi_runtime::RunClaim>, StoreError> {
    for _ in 0..200 {
        match store.claim(run, state) {
            Err(StoreError::Busy(_)) => std::thread::sleep(Duration::from_millis(10)),
            other => return other,
        }
    }
    store.claim(run, state)
}

#[tokio::test]
async fn a_run_is_claimed_by_one_process_at_a_time() {
    for kind in kinds() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let state = paused_run(dir).await;
        let store = store_at(kind, dir);
        let run = store.create(&state).unwrap();
        let first = store.claim(&run, &state).unwrap();
        assert!(matches!(
            store.claim(&run, &state),
            Err(StoreError::Busy(_))
        ));
        // Another process is refused too.
        assert_eq!(wait(child(kind, dir, &run)), 3);
        drop(first);
        let again = claim_soon(store.as_ref(), &run, &state).unwrap();
        // A state loaded before the run changed is stale.
        let mut decided = state.clone();
        decided.approve("c1").unwrap();
        again.record_decisions(&decided).unwrap();
        drop(again);
        assert!(matches!(
            claim_soon(store.as_ref(), &run, &state),
            Err(StoreError::Stale {
                loaded: 0,
                stored: 1,
                ..
            })
        ));
        let reloaded = store.load(&run).unwrap();
        assert_eq!(reloaded.decisions, decided.decisions);
        claim_soon(store.as_ref(), &run, &reloaded).unwrap();
    }
}

#[tokio::test]
async fn bad_stored_runs_are_refused_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let state = paused_run(dir).await;
    let store = JsonFileStore::open(dir.join("runs")).unwrap();
    assert!(matches!(store.load("nope"), Err(StoreError::NotFound(_))));
    assert!(matches!(store.load("../etc"), Err(StoreError::BadRunId(_))));

    let damaged = |edit: &dyn Fn(&Path)| {
        let run = store.create(&state).unwrap();
        let run_dir = dir.join("runs").join(&run);
        edit(&run_dir);
        store.load(&run).unwrap_err()
    };
    // A transcript byte changed.
    let err = damaged(&|run| {
        let path = run.join("messages.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replacen("charge and note", "charge and NOTE", 1),
        )
        .unwrap();
    });
    assert!(
        matches!(&err, StoreError::Damaged { what, .. } if what.contains("checksum")),
        "{err}"
    );
    // The transcript cut short.
    let err = damaged(&|run| {
        let path = run.join("messages.jsonl");
        let text = std::fs::read(&path).unwrap();
        std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    });
    assert!(
        matches!(&err, StoreError::Damaged { what, .. } if what.contains("cut")),
        "{err}"
    );
    // The header edited.
    let err = damaged(&|run| {
        let path = run.join("header");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replacen("refund", "refunD", 1)
                .replacen("charge", "chargE", 1),
        )
        .unwrap();
    });
    assert!(
        matches!(&err, StoreError::Damaged { what, .. } if what.contains("header")),
        "{err}"
    );
    // The header cut.
    let err = damaged(&|run| {
        let path = run.join("header");
        let text = std::fs::read(&path).unwrap();
        std::fs::write(&path, &text[..6]).unwrap();
    });
    assert!(matches!(err, StoreError::Damaged { .. }), "{err}");
    // A newer format (its checksum made right).
    let err = damaged(&|run| {
        let path = run.join("header");
        let text = std::fs::read_to_string(&path).unwrap();
        let json = text
            .split_once('\n')
            .unwrap()
            .1
            .replacen("\"format\":1", "\"format\":7", 1);
        std::fs::write(&path, format!("{:08x}\n{json}", crc32(&json))).unwrap();
    });
    assert!(
        matches!(err, StoreError::UnsupportedFormat { found: 7, .. }),
        "{err}"
    );
    // Bytes after the recorded end (an append cut by a crash) are not part of the run.
    let run = store.create(&state).unwrap();
    let path = dir.join("runs").join(&run).join("messages.jsonl");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"role\":\"user\",\"conte");
    std::fs::write(&path, bytes).unwrap();
    assert_eq!(store.load(&run).unwrap(), state);
}

/// The stores' header checksum (CRC-32, as the `crc32fast` crate computes it).
fn crc32(text: &str) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for byte in text.bytes() {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_damaged_sqlite_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let state = paused_run(dir).await;
    let path = dir.join("runs.sqlite");
    let run = {
        let store = pi_runtime::SqliteRunStore::open(&path).unwrap();
        store.create(&state).unwrap()
    };
    // Cut the database file (and its write-ahead log) in half.
    for file in [path.clone(), dir.join("runs.sqlite-wal")] {
        if let Ok(bytes) = std::fs::read(&file) {
            std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
        }
    }
    let opened = pi_runtime::SqliteRunStore::open(&path);
    let loaded = opened.and_then(|store| store.load(&run));
    assert!(loaded.is_err(), "a cut database gave {loaded:?}");
}

#[tokio::test]
async fn a_save_appends_and_never_rewrites_the_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let state = paused_run(dir).await;
    let store = JsonFileStore::open(dir.join("runs")).unwrap();
    let run = store.create(&state).unwrap();
    let path = dir.join("runs").join(&run).join("messages.jsonl");
    let before = std::fs::read(&path).unwrap();
    assert_eq!(resume_in_this_process("json", dir, &run).await, 0);
    let after = std::fs::read(&path).unwrap();
    assert!(after.len() > before.len());
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "the stored prefix changed"
    );
}
