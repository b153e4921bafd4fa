//! What building a registry costs as it grows: `collect` of prebuilt tools into a
//! `ToolRegistry`, and `defer_all` over it, for 1,000, 10,000 and 30,000 tools (issue 37: both
//! were quadratic, 2.6 s and 12.2 s for 30,000; the goal is linear, 30,000 in at most 100 ms).
//!
//! Run: `cargo bench -p pi-tool --bench registry`

// criterion_group! generates an undocumented `pub fn benches`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use pi_tool::{AgentTool, FnTool, ToolRegistry};
use serde_json::{Value, json};

/// `count` distinct tools, every tenth sequential (so the gate's bookkeeping is exercised).
fn tools(count: usize) -> Vec<Arc<dyn AgentTool>> {
    let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    (0..count)
        .map(|i| {
            let builder = FnTool::builder(format!("tool_{i}"), "A tool.", schema.clone());
            let builder = if i % 10 == 0 {
                builder.sequential()
            } else {
                builder
            };
            Arc::new(builder.build(|_: Value, _| async { "ok" }).unwrap()) as Arc<dyn AgentTool>
        })
        .collect()
}

fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("registry");
    group.sample_size(10);
    for count in [1_000, 10_000, 30_000] {
        let tools = tools(count);
        group.bench_with_input(BenchmarkId::new("collect", count), &tools, |b, tools| {
            b.iter_batched(
                || tools.clone(),
                |tools| black_box(tools.into_iter().collect::<ToolRegistry>()),
                BatchSize::LargeInput,
            );
        });
        let registry: ToolRegistry = tools.iter().cloned().collect();
        group.bench_with_input(
            BenchmarkId::new("defer_all", count),
            &registry,
            |b, registry| {
                b.iter_batched(
                    || registry.clone(),
                    |registry| black_box(registry.defer_all()),
                    BatchSize::LargeInput,
                );
            },
        );
    }
    group.finish();
}

criterion_group!(benches, build);
criterion_main!(benches);
