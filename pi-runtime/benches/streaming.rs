//! Streaming a tool call whose arguments are 1 MB, in 10,000 deltas, against one whole-buffer
//! parse of the same arguments.
//!
//! Run: `cargo bench -p pi-runtime --bench streaming`.
//!
//! - `decode_openai_sse`: the whole OpenAI Chat Completions path, SSE bytes in (one push per
//!   event, as chunks arrive), events out, final arguments parsed once.
//! - `partial_json_push`: the incremental scanner alone, fed the 10,000 deltas, then `finish`.
//! - `whole_buffer_parse`: one `serde_json::from_str` of the complete 1 MB arguments.
//! - `reparse_every_delta_100kb`: what pi does (parse the whole buffer after every delta), at a
//!   tenth of the size (100 KB in 1,000 deltas), to show the quadratic cost; next to it the same
//!   100 KB through `decode_openai_sse_100kb` and `partial_json_push_100kb` (a tenth of the
//!   1 MB figures: linear).
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_runtime::AssistantEvent;
use pi_runtime::providers::{OpenAiCompletions, PartialJson};
use serde_json::{Value, json};

/// Tool-call arguments of about `size` bytes: a file write with escapes and non-ASCII text.
fn arguments(size: usize) -> String {
    let mut content = String::with_capacity(size);
    let mut line = 0;
    while content.len() < size {
        content.push_str(&format!(
            "line {line}: fn main() {{ println!(\"héllo wörld\\t{line}\"); }}\n"
        ));
        line += 1;
    }
    json!({"path": "src/generated.rs", "content": content, "overwrite": true}).to_string()
}

/// Splits text into `count` pieces of about equal size, on character boundaries.
fn split(text: &str, count: usize) -> Vec<&str> {
    let mut pieces = Vec::with_capacity(count);
    let mut start = 0;
    for i in 1..=count {
        let mut end = i * text.len() / count;
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

/// The SSE events of a Chat Completions stream carrying one call with these argument deltas.
fn sse_events(deltas: &[&str]) -> Vec<Vec<u8>> {
    let mut events = Vec::with_capacity(deltas.len() + 3);
    let first = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "write", "arguments": ""}}]}}]});
    events.push(format!("data: {first}\n\n").into_bytes());
    for delta in deltas {
        let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": delta}}]}}]});
        events.push(format!("data: {chunk}\n\n").into_bytes());
    }
    events.push(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
            .to_vec(),
    );
    events.push(b"data: [DONE]\n\n".to_vec());
    events
}

/// Decodes a whole stream, one push per event; returns the event count and the number of calls.
fn decode(model: &OpenAiCompletions, events: &[Vec<u8>]) -> (usize, usize) {
    let mut decoder = model.decoder();
    let mut count = 0;
    let mut last = None;
    for event in events {
        let produced = decoder.push(black_box(event));
        count += produced.len();
        last = produced.into_iter().last().or(last);
    }
    last = decoder.finish().into_iter().last().or(last);
    let Some(AssistantEvent::Done { message, .. }) = last else {
        panic!("no Done: {last:?}")
    };
    black_box((count, message.tool_calls().count()))
}

fn bench(c: &mut Criterion) {
    let args = arguments(1 << 20);
    let deltas = split(&args, 10_000);
    assert_eq!(deltas.len(), 10_000);
    let events = sse_events(&deltas);
    let model = OpenAiCompletions::new("bench");

    let mut group = c.benchmark_group("tool_call_1mb_10k_deltas");
    group.throughput(Throughput::Bytes(args.len() as u64));
    group.sample_size(20);
    group.bench_function("decode_openai_sse", |b| b.iter(|| decode(&model, &events)));
    group.bench_function("partial_json_push", |b| {
        b.iter(|| {
            let mut parser = PartialJson::new();
            for delta in &deltas {
                parser.push(black_box(delta));
            }
            black_box(parser.finish())
        })
    });
    group.bench_function("whole_buffer_parse", |b| {
        b.iter(|| black_box(serde_json::from_str::<Value>(black_box(&args)).map(|v| v.is_object())))
    });
    group.finish();

    let small = arguments(100 << 10);
    let small_deltas = split(&small, 1_000);
    let small_events = sse_events(&small_deltas);
    let mut group = c.benchmark_group("tool_call_100kb_1k_deltas");
    group.throughput(Throughput::Bytes(small.len() as u64));
    group.sample_size(10);
    group.bench_function("reparse_every_delta_100kb", |b| {
        b.iter(|| {
            let mut buffer = String::new();
            let mut last = Value::Null;
            for delta in &small_deltas {
                buffer.push_str(delta);
                let mut parser = PartialJson::new();
                parser.push(&buffer);
                last = parser.partial();
            }
            black_box(last)
        })
    });
    group.bench_function("decode_openai_sse_100kb", |b| {
        b.iter(|| decode(&model, &small_events))
    });
    group.bench_function("partial_json_push_100kb", |b| {
        b.iter(|| {
            let mut parser = PartialJson::new();
            for delta in &small_deltas {
                parser.push(black_box(delta));
            }
            black_box(parser.finish())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
