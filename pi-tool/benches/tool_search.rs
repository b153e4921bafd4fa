//! `tool_search` latency over 1,000 and 10,000 generated MCP-like tools (one query of the fixed
//! list per iteration, in turn), and the index build, paid once per tool set.
//!
//! Run: `cargo bench -p pi-tool --bench tool_search`

// criterion_group! generates an undocumented `pub fn benches`.
#![allow(missing_docs)]

#[path = "../tests/support/catalog.rs"]
mod catalog;

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pi_tool::{AgentTool, FnTool, ToolSearch};
use serde_json::Value;

fn tools(servers: usize) -> Vec<Arc<dyn AgentTool>> {
    catalog::catalog(servers)
        .into_iter()
        .map(|t| {
            Arc::new(
                FnTool::builder(t.name, t.description, t.parameters)
                    .deferred()
                    .build(|_: Value, _| async { "ok" })
                    .unwrap(),
            ) as Arc<dyn AgentTool>
        })
        .collect()
}

fn search(c: &mut Criterion) {
    let mut group = c.benchmark_group("tool_search");
    for servers in [10, 100] {
        let tools = tools(servers);
        let index = ToolSearch::new(&tools);
        group.bench_with_input(
            BenchmarkId::new("query", tools.len()),
            &index,
            |b, index| {
                let mut next = 0;
                b.iter(|| {
                    let (query, _) = catalog::QUERIES[next % catalog::QUERIES.len()];
                    next += 1;
                    black_box(index.search(black_box(query), 5))
                });
            },
        );
        group.bench_with_input(
            BenchmarkId::new("build index", tools.len()),
            &tools,
            |b, tools| {
                b.iter(|| black_box(ToolSearch::new(tools)));
            },
        );
    }
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
