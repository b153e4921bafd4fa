//! How many heap allocations one tool call costs the loop, counted by dhat's global allocator
//! (this test binary only). DESIGN.md's budget is "no per-call schema builds, validator
//! compiles or transcript copies"; this pins the rest down to a number, so a change that adds
//! an allocation to every call fails here rather than showing up later as a slower W1.
//!
//! `DHAT_HEAP=/tmp/heap.json cargo test -p pi-runtime --test allocations -- --nocapture` writes
//! where each allocation comes from.
//!
//! The workload is W1's (`cargo bench -p pi-runtime --bench loop_workloads`): one assistant
//! message with 1,000 calls of a three-parameter `#[tool]`, run in parallel, every event taken
//! from the stream. The script is built before counting starts, as W1 builds it before its
//! timer starts.

use std::sync::Arc;

use futures_util::StreamExt;
use pi_runtime::{
    AgentContext, AgentLoopConfig, AssistantContent, AssistantMessage, Message, ScriptedModel,
    StopReason, ToolExecution, agent_loop,
};
use pi_tool::{AgentTool, CancellationToken, tool};
use serde_json::json;

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Echo the text back.
#[tool]
async fn echo(text: String, count: i64, loud: Option<bool>) -> String {
    let _ = (count, loud);
    text
}

const CALLS: usize = 1000;

/// What a whole run allocates beyond its calls: the stream, the run's future, the turn's
/// vectors and event queue, the final message (a fixed amount, spread over the 1,000 calls).
const PER_RUN_SLACK: f64 = 0.1;

fn script(mode: ToolExecution) -> (Vec<AssistantMessage>, AgentLoopConfig) {
    let calls = (0..CALLS)
        .map(|i| {
            let args = if i % 2 == 0 {
                json!({"text": format!("t{i}"), "count": i, "loud": true})
            } else {
                json!({"text": format!("t{i}"), "count": i})
            };
            AssistantContent::tool_call(format!("call_{i}"), "echo", args)
        })
        .collect();
    let script = vec![
        AssistantMessage::new(calls, StopReason::ToolUse),
        AssistantMessage::new(vec![AssistantContent::text("done")], StopReason::Stop),
    ];
    (script, AgentLoopConfig::new().tool_execution(mode))
}

/// Allocations and bytes allocated per call of one run (the script and the model exist before
/// counting starts).
async fn allocations_per_call(mode: ToolExecution) -> (f64, f64) {
    let (script, config) = script(mode);
    let model = Arc::new(ScriptedModel::new(script).without_recording());
    let echo: Arc<dyn AgentTool> = Arc::new(EchoTool);
    let context = AgentContext::new("You are a benchmark.").with_tools([echo]);
    let prompt = Message::user("go");
    let before = dhat::HeapStats::get();
    let mut stream = agent_loop(
        vec![prompt],
        context,
        config,
        model,
        CancellationToken::new(),
    );
    let mut results = 0;
    while let Some(event) = stream.next().await {
        if let pi_runtime::AgentEvent::ToolExecutionEnd { is_error, .. } = event {
            assert!(!is_error);
            results += 1;
        }
    }
    let after = dhat::HeapStats::get();
    assert_eq!(results, CALLS);
    let per_call = |count: u64| count as f64 / CALLS as f64;
    (
        per_call(after.total_blocks - before.total_blocks),
        per_call(after.total_bytes - before.total_bytes),
    )
}

/// One test, because dhat counts for the whole process: the modes run one after the other.
#[test]
fn a_call_through_the_loop_costs_a_fixed_small_number_of_allocations() {
    // `DHAT_HEAP=<file>` writes a full heap profile there (for `dh_view.html`) instead.
    let _profiler = match std::env::var_os("DHAT_HEAP") {
        Some(file) => dhat::Profiler::builder().file_name(file).build(),
        None => dhat::Profiler::builder().testing().build(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    // Per call, what the contract needs: the tool's boxed future, the deserialized `text`, the
    // result's content vector, and the result message with its own copies of the call id and
    // tool name (`ToolResultMessage` owns them). The call's context allocates nothing (its
    // batch keeps its slot). Bytes: those, plus the batch's slot of the call (parallel); the
    // result message is a `Message`, allocated at the size of its largest kind (the assistant
    // message, whose `provider_fields` map added 24 bytes).
    for (mode, budget, bytes_budget) in [
        (ToolExecution::Parallel, 6.0, 672.0),
        (ToolExecution::Sequential, 6.0, 672.0),
    ] {
        // The first run fills the tool's lazily built statics (spec, validator).
        runtime.block_on(allocations_per_call(mode));
        let (per_call, bytes) = runtime.block_on(allocations_per_call(mode));
        println!("{mode:?}: {per_call:.2} allocations, {bytes:.0} bytes per call");
        assert!(
            per_call <= budget + PER_RUN_SLACK,
            "{mode:?}: {per_call:.2} allocations per call, over the budget of {budget}"
        );
        assert!(
            bytes <= bytes_budget,
            "{mode:?}: {bytes:.0} bytes allocated per call, over the budget of {bytes_budget}"
        );
    }
}
