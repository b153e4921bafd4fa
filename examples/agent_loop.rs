//! A multi-turn agent loop on a scripted model, printed as it runs.
//!
//! Four `#[tool]`s: `search_docs` is slow and streams progress, `write_note` is sequential (it
//! writes to shared state), `fetch_url` always fails, and the model also calls a tool that
//! does not exist and passes bad arguments once. No network: `ScriptedModel` plays the model.
//!
//! ```text
//! cargo run -p pi-examples --example agent_loop
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, AssistantContent, AssistantEvent, AssistantMessage,
    Message, ScriptedModel, ScriptedStreaming, StopReason, agent_loop,
};
use pi_tool::{CancellationToken, State, ToolContext, ToolRegistry, ToolResult, tool};
use serde_json::json;

/// An in-memory notebook the `write_note` tool writes to.
#[derive(Default)]
struct Notebook(Mutex<BTreeMap<String, String>>);

/// Search the documentation. Slow: it streams its progress.
#[tool(label = "Search docs")]
async fn search_docs(
    /// What to look for
    query: String,
    ctx: ToolContext,
) -> String {
    for step in 1..=2 {
        ctx.update(ToolResult::text(format!(
            "searching for {query:?} ({step}/2)"
        )));
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    format!("3 pages mention {query:?}")
}

/// Write a note. Sequential: notes are written one at a time.
#[tool(label = "Write note", sequential)]
async fn write_note(
    /// The note's title
    title: String,
    /// The note's text
    text: String,
    notebook: State<Notebook>,
) -> String {
    let mut notes = notebook.0.lock().unwrap_or_else(|p| p.into_inner());
    notes.insert(title.clone(), text);
    format!("saved {title:?} ({} notes)", notes.len())
}

/// Fetch a web page. This example has no network, so it always fails.
#[tool(label = "Fetch URL")]
async fn fetch_url(
    /// The page's address
    url: String,
) -> Result<String, std::io::Error> {
    Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        format!("cannot reach {url}: this example runs offline"),
    ))
}

fn call(id: &str, name: &str, args: serde_json::Value) -> AssistantContent {
    AssistantContent::tool_call(id, name, args)
}

/// What the scripted model answers, turn by turn.
fn script() -> Vec<AssistantMessage> {
    vec![
        AssistantMessage::new(
            vec![
                AssistantContent::thinking("I should search first, and try the web page too."),
                AssistantContent::text("Let me look around."),
                call("c1", "search_docs", json!({"query": "agent loop"})),
                call(
                    "c2",
                    "fetch_url",
                    json!({"url": "https://example.invalid/loop"}),
                ),
                call("c3", "search_docs", json!({"query": "tools"})),
            ],
            StopReason::ToolUse,
        ),
        AssistantMessage::new(
            vec![
                AssistantContent::text("The page is unreachable; I'll note what I found."),
                call(
                    "c4",
                    "write_note",
                    json!({"title": "loop", "text": "3 pages"}),
                ),
                call("c5", "write_note", json!({"title": "tools"})),
                call("c6", "delete_everything", json!({})),
            ],
            StopReason::ToolUse,
        ),
        AssistantMessage::new(
            vec![call(
                "c7",
                "write_note",
                json!({"title": "tools", "text": "3 pages"}),
            )],
            StopReason::ToolUse,
        ),
        AssistantMessage::new(
            vec![AssistantContent::text(
                "Done: two notes saved; the web page was unreachable.",
            )],
            StopReason::Stop,
        ),
    ]
}

/// A result's text without the echo of the arguments a validation error ends with.
fn summary(text: &str) -> String {
    let text = text
        .split("\n\nReceived arguments")
        .next()
        .unwrap_or_default();
    text.replace('\n', "\n      ")
}

/// Prints one event the way a person wants to read it.
fn print_event(event: &AgentEvent, turn: &mut usize) {
    match event {
        AgentEvent::AgentStart => println!("▶ run started"),
        AgentEvent::TurnStart => {
            *turn += 1;
            println!("\n── turn {turn} ──");
        }
        AgentEvent::MessageStart { message } => match &**message {
            Message::User(_) | Message::Custom(_) => {}
            Message::Assistant(_) => println!("assistant:"),
            Message::ToolResult(_) => {}
        },
        AgentEvent::MessageUpdate { event } => match &**event {
            AssistantEvent::ThinkingStart { .. } => print!("  (thinking) "),
            AssistantEvent::TextStart { .. } => print!("  "),
            AssistantEvent::ThinkingDelta { delta, .. }
            | AssistantEvent::TextDelta { delta, .. } => {
                print!("{delta}");
            }
            AssistantEvent::ThinkingEnd { .. } | AssistantEvent::TextEnd { .. } => println!(),
            AssistantEvent::ToolCallEnd { tool_call, .. } => {
                println!("  → {}({})", tool_call.call.name, tool_call.call.arguments);
            }
            _ => {}
        },
        AgentEvent::MessageEnd { message } => match &**message {
            Message::User(user) => {
                let text = user
                    .content
                    .first()
                    .and_then(|c| c.as_text())
                    .unwrap_or_default();
                println!("user: {text}");
            }
            Message::Assistant(_) => {}
            Message::ToolResult(result) => {
                let mark = if result.is_error { "✗" } else { "✓" };
                println!(
                    "  {mark} result for {}: {}",
                    result.tool_call_id,
                    summary(&result.text())
                );
            }
            Message::Custom(_) => {}
        },
        AgentEvent::ToolExecutionStart { call } => {
            println!("  ⚙ {} [{}] started", call.name(), call.id())
        }
        AgentEvent::ToolExecutionUpdate {
            call,
            partial_result,
        } => {
            println!(
                "  … {} [{}] {}",
                call.name(),
                call.id(),
                partial_result.text_content()
            );
        }
        AgentEvent::ToolExecutionEnd {
            call,
            is_error,
            duration_ms,
            ..
        } => {
            let outcome = if *is_error { "failed" } else { "finished" };
            println!(
                "  ⚑ {} [{}] {outcome} after {duration_ms} ms",
                call.name(),
                call.id()
            );
        }
        AgentEvent::TurnEnd { tool_results, .. } => {
            println!(
                "turn {turn} ended with {} tool result(s)",
                tool_results.len()
            );
        }
        AgentEvent::AgentEnd { messages } => {
            println!("\n■ run finished: {} new messages", messages.len())
        }
        // Events added in later versions: nothing to print for them here.
        _ => {}
    }
}

#[tokio::main]
async fn main() {
    let tools = ToolRegistry::new()
        .with(SearchDocsTool)
        .with(WriteNoteTool)
        .with(FetchUrlTool)
        .with_state(Notebook::default());
    let context = AgentContext::new("You keep notes.").with_registry(tools);
    let model = Arc::new(ScriptedModel::new(script()).streaming(ScriptedStreaming::Deltas));

    let mut events = agent_loop(
        vec![Message::user(
            "Find out how the agent loop works and take notes.",
        )],
        context,
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    );
    let mut turn = 0;
    while let Some(event) = events.next_event().await {
        print_event(&event, &mut turn);
    }
}
