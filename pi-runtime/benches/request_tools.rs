//! The cost of a request's tools: building the request body for 100 visible tools (one
//! generated MCP-like server), with each tool's lowered schema cached in [`RequestTools`] (what
//! the agent loop does: once per tool per run) against lowering every schema again for each
//! request (what a body without a `RequestTools` does, and what every request did before).
//!
//! Run: `cargo bench -p pi-runtime --bench request_tools`.
#![allow(missing_docs)]

#[path = "../../pi-tool/tests/support/catalog.rs"]
mod catalog;

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use pi_runtime::providers::{AnthropicMessages, OpenAiResponses};
use pi_runtime::{Context, Message, RequestTools, StreamOptions};
use pi_tool::{AgentTool, FnTool, ToolSpec};
use serde_json::Value;

fn tools() -> Vec<Arc<dyn AgentTool>> {
    catalog::catalog(1)
        .into_iter()
        .map(|t| {
            Arc::new(
                FnTool::builder(t.name, t.description, t.parameters)
                    .build(|_: Value, _| async { "ok" })
                    .unwrap(),
            ) as Arc<dyn AgentTool>
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let tools = tools();
    let specs: Vec<ToolSpec> = tools.iter().map(|t| t.spec().clone()).collect();
    let messages = vec![Arc::new(Message::user("hi"))];
    let context = Context {
        system_prompt: "You are a helpful assistant.",
        messages: &messages,
        tools: &specs,
    };
    let uncached = StreamOptions::default();
    let mut cached = StreamOptions::default();
    cached.tools = RequestTools::of(&tools);
    let anthropic = AnthropicMessages::new("claude-sonnet-4-5");
    let responses = OpenAiResponses::new("gpt-5");
    let mut group = c.benchmark_group("request_body_100_tools");
    group.bench_function("anthropic_cached", |b| {
        b.iter(|| black_box(anthropic.request_body(context, &cached)))
    });
    group.bench_function("anthropic_lowered_per_request", |b| {
        b.iter(|| black_box(anthropic.request_body(context, &uncached)))
    });
    group.bench_function("responses_cached", |b| {
        b.iter(|| black_box(responses.request_body(context, &cached)))
    });
    group.bench_function("responses_lowered_per_request", |b| {
        b.iter(|| black_box(responses.request_body(context, &uncached)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
