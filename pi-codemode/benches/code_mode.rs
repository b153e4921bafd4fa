//! Code mode against plain tool calls, on a scripted model (issue 21):
//! - a task of 50 tool calls (a fan-out and a reduce) done as 50 model turns and as one `code`
//!   call: model requests, request bytes in total (each provider's own request body) and wall
//!   time (median);
//! - engine start-up per `code` call (a script that calls nothing);
//! - a nested call from a script (500 in one script, less the start-up) against a direct `ToolRegistry::run` of the same tool.
//!
//! Run: `cargo bench -p pi-codemode --bench code_mode` (options: `--runs N`, default 30;
//! `--only-nested` runs only the 500-at-once script, `--only-sequential` only the 500-in-turn
//! one, `--only-empty` only the script `return 1;` (the start-up), `--only-direct` only 500
//! direct calls, `--only-rust` only 500 nested calls from a Rust tool, for a profiler; e.g.
//! instructions per call from `valgrind --tool=callgrind` runs of two `--runs` counts).
//! `--only-endless` runs each endless script of issue 31 alone under a 300 ms time cap, three
//! times, and prints the longest time from the call to its answer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pi_codemode::CodeTool;
use pi_runtime::providers::{AnthropicMessages, OpenAiResponses};
use pi_runtime::{
    Agent, AssistantContent, AssistantMessage, Context, ModelRequest, ScriptedModel, StopReason,
    StreamOptions,
};
use pi_tool::{FnTool, ToolCall, ToolRegistry, ToolResult};
use serde_json::{Value, json};

const CALLS: usize = 50;
/// Nested calls per script for the per-call figure (start-up is subtracted).
const NESTED: u32 = 500;
/// The per-call scripts: 500 calls awaited one after the other, and 500 at once.
const IN_TURN: &str = "for (let i = 0; i < 500; i++) await tools.noop({}); return 1;";
const AT_ONCE: &str =
    "await Promise.all(Array.from({length: 500}, () => tools.noop({}))); return 1;";
const AT_ONCE_NO_TOOLS: &str =
    "await Promise.all(Array.from({length: 500}, () => Promise.resolve('ok'))); return 1;";
const PROMPT: &str = "Look up the 50 items 0..49 and tell me the total of their values.";

/// `lookup(id)`: an item's value (structured), and `noop` for the per-call figure.
fn tools() -> ToolRegistry {
    let tools = ToolRegistry::new()
        .with(
            FnTool::builder(
                "lookup",
                "Look up one item of the catalogue by id: its name, value and tags.",
                json!({"type": "object", "properties": {"id": {"type": "integer", "description": "The item's id."}}, "required": ["id"]}),
            )
            .output_schema(json!({"type": "object", "properties": {
                "id": {"type": "integer"}, "name": {"type": "string"}, "value": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}}
            }, "required": ["id", "name", "value", "tags"]}))
            .build(|args: Value, _| async move {
                let id = args["id"].as_u64().unwrap_or(0);
                let details = json!({"id": id, "name": format!("item number {id} of the catalogue"), "value": id * 3, "tags": ["catalogue", "stock", "warehouse-a"]});
                ToolResult::new(vec![pi_tool::Content::text(details.to_string())], details)
            })
            .unwrap(),
        )
        .with(
            FnTool::builder("noop", "Does nothing.", json!({"type": "object"}))
                .build(|_: Value, _| async { "ok" })
                .unwrap(),
        )
        .with(
            FnTool::builder("noop_500", "Calls noop 500 times from Rust.", json!({"type": "object"}))
                .callers(pi_tool::ToolCallers::Model)
                .build(|_: Value, ctx: pi_tool::ToolContext| async move {
                    for _ in 0..NESTED {
                        assert!(!ctx.call_tool("noop", json!({})).await.is_error);
                    }
                    "ok"
                })
                .unwrap(),
        );
    tools.clone().with(CodeTool::new(&tools))
}

fn turns_script() -> Vec<AssistantMessage> {
    let mut turns: Vec<AssistantMessage> = (0..CALLS)
        .map(|i| {
            AssistantMessage::new(
                vec![AssistantContent::tool_call(
                    format!("t{i}"),
                    "lookup",
                    json!({"id": i}),
                )],
                StopReason::ToolUse,
            )
        })
        .collect();
    turns.push(AssistantMessage::new(
        vec![AssistantContent::text("The total is 3675.")],
        StopReason::Stop,
    ));
    turns
}

fn code_script() -> Vec<AssistantMessage> {
    let script = "const items = await Promise.all(Array.from({length: 50}, (_, id) => tools.lookup({id})));\nreturn { total: items.reduce((sum, item) => sum + item.value, 0) };";
    vec![
        AssistantMessage::new(
            vec![AssistantContent::tool_call(
                "k1",
                "code",
                json!({ "script": script }),
            )],
            StopReason::ToolUse,
        ),
        AssistantMessage::new(
            vec![AssistantContent::text("The total is 3675.")],
            StopReason::Stop,
        ),
    ]
}

/// Bytes of every request's body, per provider.
fn request_bytes(requests: &[ModelRequest]) -> (usize, usize) {
    let options = StreamOptions::default();
    let mut anthropic = 0;
    let mut openai = 0;
    for request in requests {
        let context = Context {
            system_prompt: &request.system_prompt,
            messages: &request.messages,
            tools: &request.tools,
        };
        let size = |body: Value| serde_json::to_vec(&body).unwrap().len();
        anthropic +=
            size(AnthropicMessages::new("claude-sonnet-4-5").request_body(context, &options));
        openai += size(OpenAiResponses::new("gpt-5").request_body(context, &options));
    }
    (anthropic, openai)
}

struct Task {
    requests: usize,
    anthropic: usize,
    openai: usize,
    wall: Duration,
}

async fn task(runs: usize, script: fn() -> Vec<AssistantMessage>) -> Task {
    let tools = tools();
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs {
        let model = Arc::new(ScriptedModel::recording(script()));
        let agent = Agent::new(model.clone()).with_tools(tools.clone());
        let started = Instant::now();
        agent.prompt(PROMPT).await.unwrap();
        times.push(started.elapsed());
        last = Some(model);
    }
    let requests = last.unwrap().requests();
    let result = requests
        .last()
        .unwrap()
        .messages
        .last()
        .unwrap()
        .as_tool_result()
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    let (anthropic, openai) = request_bytes(&requests);
    Task {
        requests: requests.len(),
        anthropic,
        openai,
        wall: median(times),
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Median time of one `future` over `runs` (after a warm-up run).
async fn time<F: Future<Output = ToolResult>>(runs: usize, future: impl FnMut() -> F) -> Duration {
    time_batched(runs, 1, future).await
}

/// Median time of one call of `future`, timed over batches of `batch` calls (so that the clock
/// read, ~50 ns on some machines, is not counted in a call that takes a few hundred).
async fn time_batched<F: Future<Output = ToolResult>>(
    runs: usize,
    batch: u32,
    mut future: impl FnMut() -> F,
) -> Duration {
    assert!(!future().await.is_error);
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        for _ in 0..batch {
            let result = future().await;
            assert!(!result.is_error, "{result:?}");
        }
        times.push(started.elapsed() / batch);
    }
    median(times)
}

/// Scripts that never end by themselves (as in the sandbox tests): each must be answered within
/// the time cap plus 100 ms.
const ENDLESS: &[&str] = &[
    "while (true) {}",
    "for (;;) { try { while (true) {} } catch (e) {} }",
    "return /(a+)+$/.test('a'.repeat(100) + 'b');",
    "return { get x() { for (;;) {} } };",
    "return { toJSON() { for (;;) {} } };",
    "return new Proxy({}, { get() { for (;;) {} } }).x;",
    "return [3, 2, 1].sort(() => { for (;;) {} });",
    "async function f() { await 0; return f(); } await f();",
    "const h = () => { Promise.resolve().then(h); Promise.resolve().then(h); }; h(); await new Promise(() => {});",
    "const loop = () => Promise.resolve().then(loop); loop(); await new Promise(() => {});",
    "async function g() { for (;;) {} } for (;;) { try { await g(); } catch (e) {} }",
    "for (;;) { try { await 0; } catch (e) {} }",
];

/// Each endless script alone under a 300 ms cap: the longest of three answers.
async fn endless() {
    let cap = Duration::from_millis(300);
    let code = CodeTool::new(&tools()).with_limits(pi_codemode::CodeLimits::default().time(cap));
    let tools = tools().with(code);
    for script in ENDLESS {
        let call = ToolCall::new("c", "code", json!({ "script": script }));
        let mut longest = Duration::ZERO;
        for _ in 0..3 {
            let started = Instant::now();
            let result = tools.run(&call).await;
            longest = longest.max(started.elapsed());
            assert!(
                result.text_content().contains("time cap"),
                "{script}: {result:?}"
            );
        }
        println!(
            "{:>9.1?} (cap + {:>5.1?})  {script}",
            longest,
            longest.saturating_sub(cap)
        );
    }
}

/// What `--only-*` runs alone.
#[derive(Clone, Copy)]
enum Only {
    Script(&'static str),
    Direct,
    Rust,
}

fn main() {
    let mut runs = 30;
    let mut only = None;
    let mut only_endless = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--runs" {
            runs = args.next().and_then(|n| n.parse().ok()).expect("--runs N");
        } else if arg == "--only-nested" {
            only = Some(Only::Script(AT_ONCE));
        } else if arg == "--only-sequential" {
            only = Some(Only::Script(IN_TURN));
        } else if arg == "--only-empty" {
            only = Some(Only::Script("return 1;"));
        } else if arg == "--only-direct" {
            only = Some(Only::Direct);
        } else if arg == "--only-rust" {
            only = Some(Only::Rust);
        } else if arg == "--only-endless" {
            only_endless = true;
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        if only_endless {
            endless().await;
            return;
        }
        if let Some(only) = only {
            // For a profiler: 500 calls of one kind alone.
            let tools = tools();
            let call = match only {
                Only::Script(script) => ToolCall::new("c", "code", json!({ "script": script })),
                Only::Direct => ToolCall::new("d", "noop", json!({})),
                Only::Rust => ToolCall::new("r", "noop_500", json!({})),
            };
            let batch = if matches!(only, Only::Direct) { NESTED } else { 1 };
            let each = time_batched(runs, batch, || tools.run(&call)).await * batch;
            println!("500 calls: {each:.2?}");
            return;
        }
        let turns = task(runs, turns_script).await;
        let code = task(runs, code_script).await;
        println!("50 lookups and a sum, on a scripted model ({runs} runs, median wall time):");
        println!("{:<22} {:>9} {:>20} {:>20} {:>12}", "", "requests", "anthropic bytes", "openai-resp bytes", "wall");
        for (name, t) in [("(a) 50 model turns", &turns), ("(b) one code call", &code)] {
            println!("{name:<22} {:>9} {:>20} {:>20} {:>12.2?}", t.requests, t.anthropic, t.openai, t.wall);
        }
        println!(
            "(b)/(a): requests {:.1}%, anthropic bytes {:.1}%, openai-responses bytes {:.1}%, wall {:.1}%",
            100.0 * code.requests as f64 / turns.requests as f64,
            100.0 * code.anthropic as f64 / turns.anthropic as f64,
            100.0 * code.openai as f64 / turns.openai as f64,
            100.0 * code.wall.as_secs_f64() / turns.wall.as_secs_f64(),
        );

        let tools = tools();
        let runs = runs * 10;
        let empty = ToolCall::new("c", "code", json!({"script": "return 1;"}));
        let startup = time(runs, || tools.run(&empty)).await;
        let fifty = ToolCall::new("c", "code", json!({ "script": IN_TURN }));
        let with_calls = time(runs, || tools.run(&fifty)).await;
        let all = ToolCall::new("c", "code", json!({ "script": AT_ONCE }));
        let with_all = time(runs, || tools.run(&all)).await;
        let direct_call = ToolCall::new("d", "noop", json!({}));
        let direct = time_batched(runs, NESTED, || tools.run(&direct_call)).await;
        let parent = pi_tool::CancellationToken::new();
        let direct_ctx = time_batched(runs, NESTED, || {
            let ctx = pi_tool::ToolContext::new("d")
                .with_parent_signal(parent.clone())
                .with_updates(Arc::new(|_| {}));
            tools.run_with(&direct_call, ctx)
        })
        .await;
        println!("direct ToolRegistry::run_with, a parent signal and an update sink: {direct_ctx:.2?}");
        let rust_call = ToolCall::new("r", "noop_500", json!({}));
        let from_rust = time(runs, || tools.run(&rust_call)).await / NESTED;
        println!("a nested call from a Rust tool (ctx.call_tool, 500 in turn): {from_rust:.2?}");
        let nested = with_calls.saturating_sub(startup) / NESTED;
        println!("\nengine start-up per code call (`return 1;`, thread, runtime, context, bridge): {startup:.2?}");
        println!(
            "one call: nested from a script (500 awaited in turn) {nested:.2?}, direct ToolRegistry::run {direct:.2?} ({:.1}x)",
            nested.as_secs_f64() / direct.as_secs_f64()
        );
        let fanned = with_all.saturating_sub(startup) / NESTED;
        println!(
            "one call: nested from a script (500 at once, Promise.all) {fanned:.2?} ({:.1}x)",
            fanned.as_secs_f64() / direct.as_secs_f64()
        );
        // The script's own share of the fan-out: the same Promise.all over settled promises.
        let no_tools = ToolCall::new("c", "code", json!({ "script": AT_ONCE_NO_TOOLS }));
        let js_only = time(runs, || tools.run(&no_tools)).await.saturating_sub(startup) / NESTED;
        println!(
            "  of which the script's own Promise.all, without tools: {js_only:.2?} per element"
        );
    });
}
