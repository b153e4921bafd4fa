//! A run that waits for a person: a refund needs a manager's approval, so the first process
//! pauses the run, stores it in SQLite and exits; a second process loads it, records the
//! manager's decision and resumes it, and the refund runs there, once.
//!
//! ```text
//! cargo run -p pi-examples --example approval
//! ```
//!
//! Without arguments it runs both steps, the second as a new process. Or one at a time:
//! `approval pause <db file>` prints the run's id, `approval resume <db file> <run id>`
//! resumes it. No network: `ScriptedModel` plays the model.

use std::path::Path;
use std::sync::Arc;

use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, AssistantContent, AssistantMessage, Message, Resume,
    RunStore, ScriptedModel, SqliteRunStore, StopReason, agent_loop, agent_loop_resume,
};
use pi_tool::{CancellationToken, tool};
use serde_json::json;

/// Look an order up.
#[tool(read_only)]
async fn find_order(
    /// The order's number
    order: u32,
) -> String {
    format!("order {order}: 2 mugs, 3,450 cents, paid by card")
}

/// Refund an order. Money leaves the company: a manager approves each refund first.
#[tool(approval, destructive, replay = "never")]
async fn refund(
    /// The order's number
    order: u32,
    /// How much, in cents
    cents: u64,
) -> String {
    format!("refunded {cents} cents on order {order}")
}

fn context() -> AgentContext {
    AgentContext::new("You handle refunds for a shop.")
        .with_tool(FindOrderTool)
        .with_tool(RefundTool)
}

/// The first process: the customer asks, the model looks the order up and asks for a refund;
/// the run pauses on the refund and is stored. Returns the run's id.
async fn pause(db: &Path) -> String {
    let model = Arc::new(ScriptedModel::new([AssistantMessage::new(
        vec![
            AssistantContent::text("The mugs arrived broken; I'll refund them."),
            AssistantContent::tool_call("c1", "find_order", json!({"order": 7})),
            AssistantContent::tool_call("c2", "refund", json!({"order": 7, "cents": 3450})),
        ],
        StopReason::ToolUse,
    )]));
    let mut run = agent_loop(
        vec![Message::user("My mugs from order 7 arrived broken.")],
        context(),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    );
    while let Some(event) = run.next_event().await {
        match event {
            AgentEvent::ToolExecutionEnd { call, result, .. } => {
                let text = result
                    .as_tool_result()
                    .map(|r| r.text())
                    .unwrap_or_default();
                println!("[pause]  {} ran: {text}", call.name());
            }
            AgentEvent::ToolCallWaiting { waiting, .. } => {
                println!(
                    "[pause]  {} waits ({}): {}",
                    waiting.tool, waiting.reason, waiting.arguments
                );
            }
            _ => {}
        }
    }
    let state = run.take_paused().expect("the refund waits for approval");
    let store = SqliteRunStore::open(db).expect("the database opens");
    let id = store.create(&state).expect("the run is stored");
    println!(
        "[pause]  stored as {id} in {}; this process exits",
        db.display()
    );
    id
}

/// The second process: the manager approves, the refund runs, the model answers.
async fn resume(db: &Path, id: &str) {
    let store = SqliteRunStore::open(db).expect("the database opens");
    let mut state = store.load(id).expect("the run loads");
    for waiting in state.waiting().to_vec() {
        println!(
            "[resume] the manager approves {} {}",
            waiting.tool, waiting.arguments
        );
        state.approve(&waiting.id).expect("a waiting call");
    }
    let claim = store
        .claim(id, &state)
        .expect("no other process resumes it");
    let model = Arc::new(ScriptedModel::new([AssistantMessage::new(
        vec![AssistantContent::text(
            "Your refund of 34.50 for order 7 is on its way.",
        )],
        StopReason::Stop,
    )]));
    let mut run = agent_loop_resume(
        Resume::new(state).with_claim(claim),
        context(),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    )
    .unwrap_or_else(|refused| panic!("resume refused: {}", refused.error));
    while let Some(event) = run.next_event().await {
        match event {
            AgentEvent::ToolExecutionEnd { call, result, .. } => {
                let text = result
                    .as_tool_result()
                    .map(|r| r.text())
                    .unwrap_or_default();
                println!("[resume] {} ran: {text}", call.name());
            }
            AgentEvent::MessageEnd { message } => {
                if let Some(answer) = message.as_assistant() {
                    println!("[resume] the model: {}", answer.text());
                }
            }
            _ => {}
        }
    }
    let stored = store.load(id).expect("the run loads");
    println!(
        "[resume] stored run: {} messages, {} waiting",
        stored.messages.len(),
        stored.waiting().len()
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["pause", db] => println!("{}", pause(Path::new(db)).await),
        ["resume", db, id] => resume(Path::new(db), id).await,
        [] => {
            let dir = std::env::temp_dir().join(format!("pi-approval-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("a temporary directory");
            let db = dir.join("runs.sqlite");
            let id = pause(&db).await;
            // The second step in a new process, as after a restart.
            let status = std::process::Command::new(std::env::current_exe().expect("this program"))
                .args(["resume", &db.display().to_string(), &id])
                .status()
                .expect("the second process starts");
            std::fs::remove_dir_all(&dir).ok();
            std::process::exit(status.code().unwrap_or(1));
        }
        _ => {
            eprintln!("usage: approval [pause <db file> | resume <db file> <run id>]");
            std::process::exit(2);
        }
    }
}
