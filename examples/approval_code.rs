//! A call made from code waits for a person too: the model writes one code-mode script that
//! looks an order up and refunds it; the refund needs a manager's approval. The first process
//! pauses the run inside the script, stores it in SQLite and exits; a second process loads it,
//! approves, and resumes: the script runs again from the start, the lookup is answered from the
//! run's journal (it does not run again), the refund runs once, and the run ends with a typed
//! answer (`Agent::prompt_output` / `Agent::resume_output`).
//!
//! ```text
//! cargo run -p pi-examples --example approval_code
//! ```
//!
//! Without arguments it runs both steps, the second as a new process. Or one at a time:
//! `approval_code pause <db file>` prints the run's id, `approval_code resume <db file> <run id>`
//! resumes it. No network: `ScriptedModel` plays the model.

use std::path::Path;
use std::sync::Arc;

use pi_codemode::CodeTool;
use pi_runtime::{
    Agent, AgentEvent, AssistantContent, AssistantMessage, OutputError, Resume, RunStore,
    ScriptedModel, SqliteRunStore, StopReason,
};
use pi_tool::{ToolRegistry, schemars, tool};
use serde::Deserialize;
use serde_json::json;

/// Look an order up.
#[tool(read_only)]
async fn find_order(
    /// The order's number
    order: u32,
) -> String {
    println!(
        "         (find_order runs in process {})",
        std::process::id()
    );
    format!("order {order}: 2 mugs, 3450 cents, paid by card")
}

/// Refund an order. Money leaves the company: a manager approves each refund first.
#[tool(approval, destructive, replay = "never")]
async fn refund(
    /// The order's number
    order: u32,
    /// How much, in cents
    cents: u64,
) -> String {
    println!("         (refund runs in process {})", std::process::id());
    format!("refunded {cents} cents on order {order}")
}

/// What the run ends with: the typed answer the program uses.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "pi_tool::schemars")]
struct Settled {
    order: u32,
    refunded_cents: u64,
    message: String,
}

/// The model's script: one `code` call instead of two turns of tool calls.
const SCRIPT: &str = "const found = await tools.find_order({order: 7});
const refunded = await tools.refund({order: 7, cents: 3450});
return {found, refunded};";

/// The tools: the two above, and `code`, which runs scripts that call them.
fn tools() -> ToolRegistry {
    let tools = ToolRegistry::new().with(FindOrderTool).with(RefundTool);
    tools.clone().with(CodeTool::new(&tools))
}

/// An agent over `replies`, printing what its run does.
fn agent(step: &'static str, replies: Vec<AssistantMessage>) -> Agent {
    let agent = Agent::new(Arc::new(ScriptedModel::new(replies)))
        .with_system_prompt("You handle refunds for a shop.")
        .with_tools(tools());
    agent.subscribe(move |event, _signal| async move {
        match event {
            AgentEvent::ToolExecutionEnd { call, result, .. } => {
                let text = result
                    .as_tool_result()
                    .map(|r| r.text())
                    .unwrap_or_default();
                println!("[{step}] {} returned: {text}", call.name());
            }
            AgentEvent::ToolCallWaiting { waiting, .. } => {
                println!("[{step}] {} waits: {}", waiting.tool, waiting.reason);
            }
            _ => {}
        }
    });
    agent
}

/// The first process: the model writes the script; its refund waits, so the run pauses and is
/// stored. Returns the run's id.
async fn pause(db: &Path) -> String {
    let code = AssistantContent::tool_call("k1", "code", json!({ "script": SCRIPT }));
    let agent = agent(
        "pause ",
        vec![AssistantMessage::new(vec![code], StopReason::ToolUse)],
    );
    let state = match agent
        .prompt_output::<Settled>("My mugs from order 7 arrived broken.")
        .await
    {
        Err(OutputError::Paused(state)) => state,
        Err(other) => panic!("the refund should wait: {other}"),
        Ok(_) => panic!("the refund should wait, and the run ended"),
    };
    let nested = &state.nested["k1"];
    println!(
        "[pause ] the script's call {} ({} {}) waits; its journal holds {} completed call(s)",
        nested.call.id,
        nested.call.tool,
        nested.call.arguments,
        nested.journal.len()
    );
    let store = SqliteRunStore::open(db).expect("the database opens");
    let id = store.create(&state).expect("the run is stored");
    println!(
        "[pause ] stored as {id} in {}; this process exits",
        db.display()
    );
    id
}

/// The second process: the manager approves the `code` call (the decision is its waiting
/// script call's), the script runs again, and the model gives the typed answer.
async fn resume(db: &Path, id: &str) {
    let store = SqliteRunStore::open(db).expect("the database opens");
    let mut state = store.load(id).expect("the run loads");
    for waiting in state.waiting().to_vec() {
        println!(
            "[resume] the manager approves {} ({})",
            waiting.tool, waiting.reason
        );
        state.approve(&waiting.id).expect("a waiting call");
    }
    let claim = store
        .claim(id, &state)
        .expect("no other process resumes it");
    let answer = json!({
        "order": 7,
        "refunded_cents": 3450,
        "message": "Your refund of 34.50 for order 7 is on its way."
    });
    let agent = agent(
        "resume",
        vec![AssistantMessage::new(
            vec![AssistantContent::tool_call("f1", "final_result", answer)],
            StopReason::ToolUse,
        )],
    );
    let settled: Settled = agent
        .resume_output(Resume::new(state).with_claim(claim))
        .await
        .unwrap_or_else(|err| panic!("the run did not end with an answer: {err}"));
    println!(
        "[resume] typed answer: order {}, {} cents refunded, \"{}\"",
        settled.order, settled.refunded_cents, settled.message
    );
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
            let dir = std::env::temp_dir().join(format!("pi-approval-code-{}", std::process::id()));
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
            eprintln!("usage: approval_code [pause <db file> | resume <db file> <run id>]");
            std::process::exit(2);
        }
    }
}
