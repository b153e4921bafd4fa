//! Runs that wait, on SQLite with a 1,000-message transcript: what pausing, persisting,
//! loading and resuming cost, in time and in bytes written (all `write` calls of the process,
//! from `/proc/self/io` on Linux: the database file and its write-ahead log).
//!
//! ```text
//! cargo bench -p pi-runtime --features sqlite --bench run_store
//! ```
//!
//! Two steps, each timed over 30 runs (median and slowest printed):
//! - pause and first save: a run over a 1,000-message transcript pauses on a call that needs
//!   approval, and `SqliteRunStore::create` stores it (the whole transcript, once);
//! - resume and save again: load the stored run, approve, claim, resume (the approved call
//!   runs, the model makes another call that waits), and the claim appends what is new.
//!   Goal: at most 5 ms, and bytes written independent of the transcript's length. The load
//!   alone is printed too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pi_runtime::{
    AgentContext, AgentLoopConfig, AssistantContent, AssistantMessage, Message, Resume, RunState,
    RunStore, ScriptedModel, SqliteRunStore, StopReason, ToolResultMessage, agent_loop,
    agent_loop_resume,
};
use pi_tool::{CancellationToken, Content, tool};
use serde_json::json;

/// Refund an order.
#[tool(approval)]
async fn refund(order: u32, cents: u64) -> String {
    format!("refunded {cents} cents on order {order}")
}

const MESSAGES: usize = 1_000;
const RUNS: usize = 30;

/// A transcript of `MESSAGES` messages: user, assistant with a call, its result, ...
fn transcript() -> Vec<Message> {
    let mut messages = Vec::with_capacity(MESSAGES);
    let mut turn = 0;
    while messages.len() < MESSAGES {
        messages.push(Message::user(format!(
            "Turn {turn}: please look at order {turn} and tell me whether the customer paid by card, \
             and what the parcel held."
        )));
        messages.push(Message::Assistant(AssistantMessage::new(
            vec![
                AssistantContent::text("Let me look that order up for you."),
                AssistantContent::tool_call(
                    format!("old{turn}"),
                    "find_order",
                    json!({"order": turn, "fields": ["payment", "items", "shipping"]}),
                ),
            ],
            StopReason::ToolUse,
        )));
        messages.push(Message::ToolResult(ToolResultMessage::new(
            format!("old{turn}"),
            "find_order",
            vec![Content::text(format!(
                "order {turn}: 2 mugs, 1 teapot; 3,450 cents paid by card ending 4242; shipped \
                 with tracking number 00{turn}1234567"
            ))],
        )));
        turn += 1;
    }
    messages.truncate(MESSAGES);
    messages
}

fn waiting_call(id: &str) -> AssistantMessage {
    AssistantMessage::new(
        vec![AssistantContent::tool_call(
            id,
            "refund",
            json!({"order": 7, "cents": 3450}),
        )],
        StopReason::ToolUse,
    )
}

fn context(messages: &[Arc<Message>]) -> AgentContext {
    let mut context = AgentContext::new("You handle refunds for a shop.").with_tool(RefundTool);
    context.messages = messages.to_vec();
    context
}

/// Bytes this process has handed to `write` so far (Linux's `/proc/self/io`, `wchar`; 0
/// elsewhere): what the store writes, whatever SQLite's page and log layout makes of it.
fn written() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|line| line.strip_prefix("wchar: ").map(str::to_owned))
        })
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

async fn pause(messages: &[Arc<Message>]) -> RunState {
    let model = Arc::new(ScriptedModel::new([waiting_call("c1")]).without_recording());
    let run = agent_loop(
        Vec::new(),
        context(messages),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    );
    run.outcome().await.1.expect("paused")
}

fn report(name: &str, mut times: Vec<Duration>, bytes: &[u64]) {
    times.sort();
    let median = times[times.len() / 2];
    let slowest = times[times.len() - 1];
    let mut bytes = bytes.to_vec();
    bytes.sort_unstable();
    println!(
        "{name:<28} median {:>8.3} ms  slowest {:>8.3} ms  bytes written (median) {:>9}",
        median.as_secs_f64() * 1e3,
        slowest.as_secs_f64() * 1e3,
        bytes[bytes.len() / 2]
    );
}

fn main() {
    if std::env::args().any(|arg| arg == "--test" || arg == "--list") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let messages: Vec<Arc<Message>> = transcript().into_iter().map(Arc::new).collect();
    let transcript_bytes: usize = messages
        .iter()
        .map(|m| serde_json::to_string(m).unwrap().len() + 1)
        .sum();
    println!("transcript: {MESSAGES} messages, {transcript_bytes} bytes as JSON lines");
    for synced in [true, false] {
        measure(&runtime, &messages, synced);
    }
}

/// Times both steps on a fresh database, its commits synced to disk or not.
fn measure(runtime: &tokio::runtime::Runtime, messages: &[Arc<Message>], synced: bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let store = SqliteRunStore::open(&db).unwrap();
    let store = if synced {
        store
    } else {
        store.without_sync().unwrap()
    };
    println!(
        "{}",
        if synced {
            "commits synced (the default):"
        } else {
            "SqliteRunStore::without_sync:"
        }
    );

    let (mut pause_times, mut pause_bytes) = (Vec::new(), Vec::new());
    let (mut resume_times, mut resume_bytes) = (Vec::new(), Vec::new());
    let mut load_times = Vec::new();
    for _ in 0..RUNS {
        // Pause, and the first save.
        let before = written();
        let started = Instant::now();
        let state = runtime.block_on(pause(messages));
        let run = store.create(&state).unwrap();
        pause_times.push(started.elapsed());
        pause_bytes.push(written() - before);

        // Load, decide, claim, resume until the next pause, saved by appending.
        let before = written();
        let started = Instant::now();
        let mut state = store.load(&run).unwrap();
        load_times.push(started.elapsed());
        state.approve("c1").unwrap();
        let claim = store.claim(&run, &state).unwrap();
        let model = Arc::new(ScriptedModel::new([waiting_call("c2")]).without_recording());
        let resumed = agent_loop_resume(
            Resume::new(state).with_claim(claim),
            context(&[]),
            AgentLoopConfig::new(),
            model,
            CancellationToken::new(),
        )
        .map_err(|refused| refused.error)
        .unwrap();
        let (_, paused) = runtime.block_on(resumed.outcome());
        resume_times.push(started.elapsed());
        resume_bytes.push(written() - before);
        assert_eq!(paused.expect("paused again").messages.len(), MESSAGES + 3);
    }
    report("pause + first save", pause_times, &pause_bytes);
    report("load + resume + save", resume_times, &resume_bytes);
    report("  of which load", load_times, &[0]);
}
