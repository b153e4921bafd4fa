//! Soak run: 1,000,000 tool calls through `Agent` with mixed failures (errors, panics, invalid
//! arguments, unknown tools, error results), printing peak and current RSS as it goes.
//!
//! `cargo run -p pi-fuzz --release --bin soak [calls]` (default 1,000,000). Each prompt makes
//! one model response with ten calls and a final text answer; the transcript is reset between
//! prompts (`Agent::reset`), so what is measured is the machinery, not a transcript that grows
//! by design with every call.

use std::sync::Arc;
use std::time::Instant;

use pi_fuzz::faults::silence_fault_panics;
use pi_runtime::{Agent, AssistantContent, AssistantMessage, FnModel, Message, StopReason};
use pi_tool::{ToolRegistry, ToolResult, tool};
use serde_json::json;

/// Succeed.
#[tool]
async fn fine(n: u32) -> String {
    format!("fine {n}")
}

/// Fail with an error.
#[tool]
async fn failing(n: u32) -> Result<String, String> {
    Err(format!("failed {n}"))
}

/// Panic.
#[tool]
async fn panicking(n: u32) -> String {
    if n < u32::MAX {
        panic!("{}", pi_fuzz::faults::FAULT_PANIC);
    }
    String::new()
}

/// Return a result marked as an error.
#[tool]
async fn error_result(n: u32) -> ToolResult {
    let mut result = ToolResult::text(format!("bad {n}"));
    result.is_error = true;
    result
}

const CALLS_PER_TURN: usize = 10;

/// The ten calls of one response: every kind of outcome.
fn calls(prompt: usize) -> AssistantMessage {
    let content = (0..CALLS_PER_TURN)
        .map(|i| {
            let id = format!("p{prompt}-c{i}");
            let n = json!(i);
            match i {
                0..=3 => AssistantContent::tool_call(id, "fine", json!({ "n": n })),
                4 => AssistantContent::tool_call(id, "failing", json!({ "n": n })),
                5 => AssistantContent::tool_call(id, "panicking", json!({ "n": n })),
                6 => AssistantContent::tool_call(id, "error_result", json!({ "n": n })),
                7 => AssistantContent::tool_call(id, "fine", json!({ "n": "not a number" })),
                8 => AssistantContent::tool_call(id, "fine", json!({ "n": "7" })),
                _ => AssistantContent::tool_call(id, "missing", json!({})),
            }
        })
        .collect();
    AssistantMessage::new(content, StopReason::ToolUse)
}

/// `(VmHWM, VmRSS)` in KiB, from `/proc/self/status`.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

fn main() {
    silence_fault_panics();
    let total: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|err| panic!("a runtime: {err}"));
    runtime.block_on(async {
        let model = Arc::new(FnModel::new(|request| async move {
            match request.messages.last().map(|m| m.role()) {
                Some("user") => calls(request.index),
                _ => AssistantMessage::new(vec![AssistantContent::text("done")], StopReason::Stop),
            }
        }));
        let tools = ToolRegistry::new()
            .with(FineTool)
            .with(FailingTool)
            .with(PanickingTool)
            .with(ErrorResultTool);
        let agent = Agent::new(model).with_tools(tools);
        let checkpoints = [10_000, 100_000, 250_000, 500_000, 1_000_000];
        let (hwm, rss) = memory();
        println!("calls        VmHWM KiB   VmRSS KiB   calls/s");
        println!("{:>9}   {hwm:>9}   {rss:>9}", 0);
        let started = Instant::now();
        let mut done = 0;
        let mut errors = 0;
        while done < total {
            if let Err(err) = agent.prompt("go").await {
                panic!("prompt failed: {err}");
            }
            let messages = agent.messages();
            let results: Vec<_> = messages.iter().filter_map(|m| m.as_tool_result()).collect();
            assert_eq!(results.len(), CALLS_PER_TURN, "one result per call");
            errors += results.iter().filter(|r| r.is_error).count();
            assert!(matches!(
                messages.last().map(|m| &**m),
                Some(Message::Assistant(_))
            ));
            agent.reset();
            done += CALLS_PER_TURN;
            if checkpoints.contains(&done) || done == total {
                let (hwm, rss) = memory();
                let rate = done as f64 / started.elapsed().as_secs_f64();
                println!("{done:>9}   {hwm:>9}   {rss:>9}   {rate:>8.0}");
            }
        }
        println!("{errors} of {done} calls ended in an error result");
    });
}
