//! Cost of one call through the single-call runner, and proof that the schema and the compiled
//! validator are paid once per tool, not per call.
//!
//! Run: `cargo bench -p pi-tool --bench call`

// criterion_group! generates an undocumented `pub fn benches`.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;
use pi_tool::{AgentTool, ArgumentValidator, ToolCall, ToolRegistry, schema_for, tool};
use serde_json::json;
use std::hint::black_box;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Upper,
    Lower,
    Same,
}

/// Echo the text back, `count` times.
#[tool]
async fn echo(
    /// The text to echo
    text: String,
    /// How many times
    count: u32,
    /// Letter case
    mode: Option<Mode>,
) -> String {
    let _ = (count, mode);
    text
}

fn runner(c: &mut Criterion) {
    let tools = ToolRegistry::new().with(EchoTool);
    let valid = ToolCall::new(
        "call_1",
        "echo",
        json!({"text": "t1", "count": 1, "mode": "upper"}),
    );
    let coerced = ToolCall::new("call_2", "echo", json!({"text": 42, "count": "7"}));
    let invalid = ToolCall::new(
        "call_3",
        "echo",
        json!({"text": ["not", "a", "string"], "count": "three"}),
    );
    let mut group = c.benchmark_group("run one call");
    group.bench_function("valid arguments", |b| {
        b.iter(|| {
            tools
                .run(black_box(&valid))
                .now_or_never()
                .expect("the tool never waits")
        });
    });
    group.bench_function("arguments needing normalization", |b| {
        b.iter(|| {
            tools
                .run(black_box(&coerced))
                .now_or_never()
                .expect("the tool never waits")
        });
    });
    group.bench_function("invalid arguments", |b| {
        b.iter(|| {
            tools
                .run(black_box(&invalid))
                .now_or_never()
                .expect("the tool never waits")
        });
    });
    group.bench_function("unknown tool", |b| {
        let unknown = ToolCall::new("call_4", "ecko", json!({}));
        b.iter(|| {
            tools
                .run(black_box(&unknown))
                .now_or_never()
                .expect("nothing to wait for")
        });
    });
    group.finish();
}

fn paid_once(c: &mut Criterion) {
    let mut group = c.benchmark_group("schema and validator");
    group.bench_function(
        "build schema + compile validator (what a naive runtime pays per call)",
        |b| {
            b.iter(|| {
                let spec = pi_tool::ToolSpec {
                    name: "echo".into(),
                    description: "Echo".into(),
                    parameters: schema_for::<EchoParams>(),
                };
                ArgumentValidator::new(black_box(&spec))
            });
        },
    );
    group.bench_function(
        "spec() + validator() of a #[tool] (what every call pays)",
        |b| {
            b.iter(|| {
                let tool = black_box(&EchoTool);
                (tool.spec(), tool.validator())
            });
        },
    );
    group.finish();
}

criterion_group!(benches, runner, paid_once);
criterion_main!(benches);
