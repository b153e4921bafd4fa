//! The sandbox: every escape attempt is an error result, and nothing else happens.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pi_codemode::{CodeLimits, CodeTool};
use pi_tool::{
    CancellationToken, FnTool, ToolCall, ToolCallers, ToolContext, ToolRegistry, ToolResult,
};
use serde_json::{Value, json};

/// Counts of what the host tools saw.
#[derive(Default)]
struct Seen {
    secret: AtomicUsize,
    slow_started: AtomicUsize,
    slow_dropped: AtomicUsize,
    slow_finished: AtomicUsize,
}

struct DropGuard(Arc<Seen>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.slow_dropped.fetch_add(1, Ordering::SeqCst);
    }
}

fn object() -> Value {
    json!({"type": "object"})
}

/// The tools scripts may call, a model-only `secret` tool the code tool does not offer, and a
/// code-only `internal` tool.
fn host(seen: &Arc<Seen>, limits: CodeLimits) -> ToolRegistry {
    let callable = ToolRegistry::new()
        .with(
            FnTool::builder("echo", "Echo the arguments.", object())
                .build(|args: Value, _| async move { args.to_string() })
                .unwrap(),
        )
        .with(
            FnTool::builder(
                "add",
                "Add two numbers.",
                json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
            )
            .output_schema(json!({"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}))
            .build(|args: Value, _| async move {
                if args["later"] == true {
                    // Not finished when first polled: the script's promise waits for it.
                    tokio::task::yield_now().await;
                }
                let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                ToolResult::new(vec![pi_tool::Content::text(sum.to_string())], json!({"sum": sum}))
            })
            .unwrap(),
        )
        .with({
            let seen = Arc::clone(seen);
            FnTool::builder("slow", "Wait forever.", object())
                .build(move |_: Value, _| {
                    let seen = Arc::clone(&seen);
                    async move {
                        seen.slow_started.fetch_add(1, Ordering::SeqCst);
                        let _guard = DropGuard(Arc::clone(&seen));
                        std::future::pending::<()>().await;
                        seen.slow_finished.fetch_add(1, Ordering::SeqCst);
                        "done"
                    }
                })
                .unwrap()
        })
        .with(
            FnTool::builder("nap", "Sleeps `ms` milliseconds.", object())
                .build(|args: Value, _| async move {
                    let ms = args["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    "rested"
                })
                .unwrap(),
        )
        .with(
            FnTool::builder("fail", "Always fails.", object())
                .build(|_: Value, _| async { Err::<String, _>("the disk is on fire") })
                .unwrap(),
        )
        .with(
            FnTool::builder("progress", "Reports progress, then answers.", object())
                .build(|_: Value, ctx: ToolContext| async move {
                    ctx.update(ToolResult::text("half way"));
                    "finished"
                })
                .unwrap(),
        );
    let seen = Arc::clone(seen);
    let tools = callable
        .with(
            FnTool::builder("secret", "Not for scripts.", object())
                .callers(ToolCallers::Model)
                .build(move |_: Value, _| {
                    let seen = Arc::clone(&seen);
                    async move {
                        seen.secret.fetch_add(1, Ordering::SeqCst);
                        "the secret"
                    }
                })
                .unwrap(),
        )
        .with(
            FnTool::builder("internal", "Only for scripts.", object())
                .callers(ToolCallers::Code)
                .build(|_: Value, _| async { "internal answer" })
                .unwrap(),
        );
    let code = CodeTool::new(&tools).with_limits(limits);
    tools.with(code)
}

async fn run_with(script: &str, limits: CodeLimits) -> (ToolResult, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let tools = host(&seen, limits);
    let result = tools
        .run(&ToolCall::new("c1", "code", json!({ "script": script })))
        .await;
    (result, seen)
}

async fn run(script: &str) -> (ToolResult, Arc<Seen>) {
    run_with(script, CodeLimits::default()).await
}

#[track_caller]
fn assert_error(result: &ToolResult, needle: &str) {
    assert!(result.is_error, "expected an error result, got {result:?}");
    let text = result.text_content();
    assert!(text.contains(needle), "{needle:?} not in {text:?}");
}

#[tokio::test]
async fn calls_tools_and_returns_json() {
    let (result, _) = run(
        "const [a, b] = await Promise.all([tools.add({a: 1, b: 2}), tools.echo({x: 'y'})]);
         console.log('sum is', a.sum, {k: 1});
         return {sum: a.sum, echoed: JSON.parse(b)};",
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(
        result.text_content(),
        "{\"sum\":3,\"echoed\":{\"x\":\"y\"}}\n\nconsole:\nsum is 3 {\"k\":1}"
    );
    assert_eq!(result.details["result"]["echoed"], json!({"x": "y"}));
    assert_eq!(result.details["calls"], 2);
}

#[tokio::test]
async fn a_failed_call_throws_and_an_uncaught_exception_names_the_line() {
    let (result, _) =
        run("try { await tools.fail({}); } catch (e) { return [e.message, e.tool]; }").await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.details["result"][1], "fail");
    assert!(
        result.details["result"][0]
            .as_str()
            .unwrap()
            .contains("the disk is on fire")
    );

    let (result, _) =
        run("const x = 1;\nawait tools.echo({});\nthrow new TypeError('boom');").await;
    assert_error(&result, "line 3: TypeError: boom");
    let (result, _) = run("const x = ;").await;
    assert_error(&result, "line 1: SyntaxError");
}

#[tokio::test]
async fn images_reach_the_model() {
    let (result, _) = run("attachImage('iVBORw0KGgo=', 'image/png'); return 'ok';").await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(
        result.content[1],
        pi_tool::Content::image("iVBORw0KGgo=", "image/png")
    );
    let (result, _) = run("attachImage('x', 'text/html');").await;
    assert_error(&result, "attachImage");
}

#[tokio::test]
async fn console_output_is_bounded() {
    let (result, _) = run_with(
        "for (let i = 0; i < 1000; i++) console.log('line ' + i); return 1;",
        CodeLimits::default().console_bytes(100),
    )
    .await;
    let text = result.text_content();
    assert!(text.ends_with("[console output cut]"), "{text}");
    assert!(text.len() < 200, "{text}");
}

#[tokio::test]
async fn a_childs_updates_are_progress_of_the_code_call() {
    let seen = Arc::new(Seen::default());
    let tools = host(&seen, CodeLimits::default());
    let updates = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&updates);
    let ctx = ToolContext::new("c1").with_updates(Arc::new(move |partial: ToolResult| {
        sink.lock().unwrap().push(partial);
    }));
    let call = ToolCall::new(
        "c1",
        "code",
        json!({"script": "return await tools.progress({});"}),
    );
    let result = tools.run_with(&call, ctx).await;
    assert_eq!(result.text_content(), "\"finished\"");
    let updates = updates.lock().unwrap();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].text_content(), "half way");
    assert_eq!(updates[0].details["tool"], "progress");
}

#[tokio::test]
async fn file_and_network_access_are_error_results() {
    for (script, needle) in [
        (
            "return require('fs').readFileSync('/etc/passwd', 'utf8');",
            "ReferenceError",
        ),
        ("return await fetch('http://127.0.0.1/');", "ReferenceError"),
        ("return new XMLHttpRequest();", "ReferenceError"),
        ("return std.loadFile('/etc/passwd');", "ReferenceError"),
        ("return os.open('/etc/passwd');", "ReferenceError"),
        (
            "const m = await import('os'); return m.open('/etc/passwd');",
            "the script threw",
        ),
        (
            "const m = await import('/etc/passwd'); return m;",
            "the script threw",
        ),
        ("return Deno.readTextFile('/etc/passwd');", "ReferenceError"),
        ("setTimeout(() => {}, 0);", "ReferenceError"),
    ] {
        let (result, _) = run(script).await;
        assert_error(&result, needle);
        assert!(!result.text_content().contains("root:"), "{script}");
    }
}

#[tokio::test]
async fn an_endless_loop_stops_at_the_time_cap() {
    let (result, _) = run_with(
        "while (true) {}",
        CodeLimits::default().time(Duration::from_millis(200)),
    )
    .await;
    assert_error(&result, "time cap");
    // A catch cannot keep it running: the interrupt is uncatchable.
    let (result, _) = run_with(
        "for (;;) { try { while (true) {} } catch (e) {} }",
        CodeLimits::default().time(Duration::from_millis(200)),
    )
    .await;
    assert_error(&result, "time cap");
}

/// Scripts that never end by themselves: each must be stopped at the time cap. Plain loops,
/// script code the engine runs from native code (getters, `toJSON`, Proxy traps, sort
/// comparators, a `then` getter while a result settles), regex backtracking, and scripts that
/// keep the job queue full (no job runs long, the queue never empties).
const ENDLESS: &[&str] = &[
    "while (true) {}",
    "for (;;) { try { while (true) {} } catch (e) {} }",
    "return /(a+)+$/.test('a'.repeat(100) + 'b');",
    "return { get x() { for (;;) {} } };",
    "return { toJSON() { for (;;) {} } };",
    "return new Proxy({}, { get() { for (;;) {} } }).x;",
    "await tools.echo(new Proxy({}, { ownKeys() { for (;;) {} } }));",
    "await tools.echo({ get x() { for (;;) {} } });",
    "return [3, 2, 1].sort(() => { for (;;) {} });",
    "Object.defineProperty(Object.prototype, 'then', { get() { for (;;) {} } }); await tools.add({a: 1, b: 2});",
    "async function f() { await 0; return f(); } await f();",
    "const h = () => { Promise.resolve().then(h); Promise.resolve().then(h); }; h(); await new Promise(() => {});",
    "const loop = () => Promise.resolve().then(loop); loop(); await new Promise(() => {});",
    "async function g() { for (;;) {} } for (;;) { try { await g(); } catch (e) {} }",
    "for (;;) { try { await 0; } catch (e) {} }",
    "tools.slow({}); const f = () => Promise.resolve().then(f); f(); await new Promise(() => {});",
];

#[tokio::test]
async fn every_endless_script_stops_at_the_time_cap() {
    let cap = Duration::from_millis(300);
    let runs = ENDLESS.iter().map(|script| async move {
        let started = std::time::Instant::now();
        // A bound far past the cap: a script the cap does not stop fails here, not hangs.
        let (result, _) = tokio::time::timeout(
            Duration::from_secs(60),
            run_with(script, CodeLimits::default().time(cap)),
        )
        .await
        .unwrap_or_else(|_| panic!("not stopped: {script}"));
        assert!(result.is_error, "{script}: {result:?}");
        let text = result.text_content();
        assert!(
            text.contains("time cap (0.3 s)"),
            "{script}: the error names the cap: {text}"
        );
        eprintln!("stopped after {:?}: {script}", started.elapsed());
    });
    futures_util::future::join_all(runs).await;
}

#[tokio::test]
async fn a_loop_of_long_built_in_calls_is_answered_at_the_time_cap() {
    // Each `indexOf` scans 250 KB without polling the interrupt handler, which QuickJS calls
    // every 10,000 operations: the engine looks at its caps only every few seconds. The call
    // is answered at the cap all the same (the engine stops at its next look).
    let (result, _) = tokio::time::timeout(
        Duration::from_secs(10),
        run_with(
            "const s = 'ab'.repeat(125000); let n = 0; for (;;) n += s.indexOf('zz');",
            CodeLimits::default().time(Duration::from_millis(300)),
        ),
    )
    .await
    .expect("answered at the cap");
    assert_error(&result, "time cap (0.3 s)");
}

#[tokio::test]
async fn a_flood_of_queued_jobs_stops_at_a_cap() {
    // Each job queues a thousand: the queue's memory grows until the memory cap or the time cap
    // stops it, whichever comes first.
    let (result, _) = tokio::time::timeout(
        Duration::from_secs(60),
        run_with(
            "const h = () => { for (let i = 0; i < 1000; i++) Promise.resolve().then(h); }; h(); await new Promise(() => {});",
            CodeLimits::default().time(Duration::from_millis(300)).memory_bytes(16 << 20),
        ),
    )
    .await
    .expect("stopped");
    assert!(result.is_error, "{result:?}");
    let text = result.text_content();
    assert!(
        text.contains("time cap") || text.contains("memory"),
        "{text}"
    );
}

#[tokio::test]
async fn an_aborted_scripts_engine_thread_ends() {
    for script in [
        "while (true) {}",
        "async function f() { await 0; return f(); } await f();",
        "const h = () => { Promise.resolve().then(h); Promise.resolve().then(h); }; h(); await new Promise(() => {});",
    ] {
        let seen = Arc::new(Seen::default());
        let tools = host(&seen, CodeLimits::default().time(Duration::from_secs(600)));
        let code = tools.get("code").unwrap();
        let code = (code.as_ref() as &dyn std::any::Any)
            .downcast_ref::<CodeTool>()
            .unwrap();
        let signal = CancellationToken::new();
        let ctx = ToolContext::new("c1").with_signal(signal.clone());
        let call = ToolCall::new("c1", "code", json!({ "script": script }));
        let cancel = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(code.running_engines(), 1, "{script}");
            signal.cancel();
        };
        let (result, ()) = tokio::join!(tools.run_with(&call, ctx), cancel);
        assert_error(&result, "aborted");
        // The call is answered at once; its engine thread ends soon after (bounded wait).
        let waited = tokio::time::timeout(Duration::from_secs(30), async {
            while code.running_engines() > 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(waited.is_ok(), "the engine thread still runs: {script}");
    }
}

#[tokio::test]
async fn a_huge_return_value_is_cut_and_not_kept_in_details() {
    let (result, _) = run("return 'x'.repeat(50 * 1024 * 1024);").await;
    assert!(!result.is_error, "{}", &result.text_content()[..200]);
    assert!(result.details.get("result").is_none());
    assert_eq!(result.details["result_cut"], true);
    assert_eq!(result.details["result_bytes"], (50 << 20) + 2);
    let kept = serde_json::to_string(&result.details).unwrap().len()
        + result
            .content
            .iter()
            .filter_map(|block| block.as_text())
            .map(str::len)
            .sum::<usize>();
    assert!(kept < (256 << 10) + 1024, "{kept} bytes kept");
    assert!(
        result
            .text_content()
            .contains("past the result cap of 262144 bytes")
    );
    // A value within the cap is kept whole.
    let (result, _) = run_with(
        "return {a: 'x'.repeat(100)};",
        CodeLimits::default().result_bytes(200),
    )
    .await;
    assert_eq!(
        result.details["result"]["a"].as_str().map(str::len),
        Some(100)
    );
    let (result, _) = run_with(
        "return {a: 'é'.repeat(1000)};",
        CodeLimits::default().result_bytes(1000),
    )
    .await;
    assert!(result.details.get("result").is_none(), "{result:?}");
    let text = result.text_content();
    assert!(text.len() <= 1000, "{text}");
    assert!(text.contains("past the result cap of 1000 bytes"), "{text}");
    assert!(text.contains("a slice]\n{\"a\":\"éé"), "{text}");
}

#[tokio::test]
async fn the_time_cap_covers_waiting_for_tools() {
    let (result, seen) = run_with(
        "await tools.slow({});",
        CodeLimits::default().time(Duration::from_millis(200)),
    )
    .await;
    assert_error(&result, "time cap");
    assert_eq!(seen.slow_finished.load(Ordering::SeqCst), 0);
    assert_eq!(
        seen.slow_started.load(Ordering::SeqCst),
        seen.slow_dropped.load(Ordering::SeqCst)
    );
}

#[tokio::test]
async fn a_huge_allocation_hits_the_memory_cap() {
    let (result, _) =
        run("const a = new ArrayBuffer(1024 * 1024 * 1024); return a.byteLength;").await;
    assert_error(&result, "out of memory");
    let (result, _) =
        run("const a = []; while (true) a.push('x'.repeat(1 << 20) + a.length);").await;
    assert_error(&result, "out of memory");
    let (result, _) = run("const a = []; while (true) a.push({ n: a.length });").await;
    assert_error(&result, "out of memory");
}

#[tokio::test]
async fn deep_recursion_is_an_error_result() {
    let (result, _) = run("function f(n) { return f(n + 1) + 1; } return f(0);").await;
    assert_error(&result, "RangeError");
    let (result, _) = run("const f = async (n) => (await f(n + 1)) + 1; return await f(0);").await;
    assert_error(&result, "RangeError");
}

#[tokio::test]
async fn polluting_the_bridge_changes_nothing() {
    for (script, needle) in [
        (
            "Object.prototype.secret = async () => 'pwned'; return await tools.secret({});",
            "not a function",
        ),
        (
            "tools.secret = async () => 'pwned'; return await tools.secret({});",
            "TypeError",
        ),
        (
            "tools.echo = async () => 'pwned'; return await tools.echo({});",
            "TypeError",
        ),
        (
            "Object.setPrototypeOf(tools, { secret() { return 'pwned'; } }); return tools.secret();",
            "TypeError",
        ),
        ("tools.echo.call = () => 'pwned'; return 1;", "TypeError"),
        (
            "globalThis.tools = { echo: () => 'pwned' }; return await tools.echo({});",
            "TypeError",
        ),
        ("delete globalThis.tools; return 1;", "TypeError"),
        ("return Function('return 1')();", "EvalError"),
        ("return tools.echo.constructor('return 1')();", "EvalError"),
        (
            "return (async function () {}).constructor('return 1')();",
            "EvalError",
        ),
        ("return eval('1');", "ReferenceError"),
        ("return tools.__proto__.secret({});", "TypeError"),
        (
            "return tools.constructor.constructor('return globalThis')();",
            "TypeError",
        ),
    ] {
        let (result, seen) = run(script).await;
        assert_error(&result, needle);
        assert!(
            !result.text_content().contains("pwned"),
            "{script}: {result:?}"
        );
        assert_eq!(seen.secret.load(Ordering::SeqCst), 0, "{script}");
    }
    // Polluting the script's own prototypes leaves the host's answers intact.
    let (result, _) = run(
        "Object.prototype.toJSON = function () { return 'pwned'; }; Array.prototype.map = null;
         Promise.prototype.then = function () { throw new Error('pwned'); };
         return 1;",
    )
    .await;
    assert_eq!(result.text_content(), "1", "{result:?}");
}

#[tokio::test]
async fn a_tool_the_script_may_not_call_is_not_there() {
    let seen = Arc::new(Seen::default());
    let tools = host(&seen, CodeLimits::default());
    let code = tools.get("code").unwrap();
    assert!(!code.spec().description.contains("secret"));
    assert!(code.spec().description.contains("internal(args"));
    let (result, _) = run("return await tools.internal({});").await;
    assert_eq!(result.text_content(), "\"internal answer\"", "{result:?}");
    let (result, seen) = run("return await tools.secret({});").await;
    assert_error(&result, "line 1: TypeError");
    let (result, _) = run("return await tools['code']({script: 'return 1'});").await;
    assert_error(&result, "TypeError");
    assert_eq!(seen.secret.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn calls_a_script_never_awaits_are_cancelled() {
    // Started when made (as an async function's body starts at once), cancelled when the script
    // returns without waiting for them.
    let (result, seen) = run("tools.slow({}); tools.slow({}); return 1;").await;
    assert_error(&result, "2 tool call(s) were still running (slow, slow)");
    assert_eq!(seen.slow_started.load(Ordering::SeqCst), 2);
    assert_eq!(seen.slow_dropped.load(Ordering::SeqCst), 2);
    assert_eq!(seen.slow_finished.load(Ordering::SeqCst), 0);
    // A call that finished when made is no longer running: its result is simply not used.
    let (result, _) = run("tools.echo({}); return 1;").await;
    assert_eq!(result.text_content(), "1", "{result:?}");
    // Started (with the echo the script awaits), then cancelled when the script returns.
    let (result, seen) = run("tools.slow({}); await tools.echo({}); return 1;").await;
    assert_error(&result, "1 tool call(s) were still running (slow)");
    assert_eq!(seen.slow_started.load(Ordering::SeqCst), 1);
    assert_eq!(seen.slow_finished.load(Ordering::SeqCst), 0);
    assert_eq!(
        seen.slow_started.load(Ordering::SeqCst),
        seen.slow_dropped.load(Ordering::SeqCst)
    );
    let (result, _) = run("await new Promise(() => {});").await;
    assert_error(&result, "can never settle");
}

#[tokio::test]
async fn a_cyclic_return_value_is_an_error_result() {
    let (result, _) = run("const a = {}; a.self = a; return a;").await;
    assert_error(&result, "not JSON");
    let (result, _) = run("return 10n;").await;
    assert_error(&result, "not JSON");
    let (result, _) = run("const a = []; a.push(a); return await tools.echo(a);").await;
    assert_error(&result, "TypeError");
}

#[tokio::test]
async fn an_abort_mid_script_stops_it_at_once() {
    for script in [
        "await tools.slow({});",
        "await tools.echo({}); while (true) {}",
    ] {
        let seen = Arc::new(Seen::default());
        let tools = host(&seen, CodeLimits::default().time(Duration::from_secs(600)));
        let signal = CancellationToken::new();
        let ctx = ToolContext::new("c1").with_signal(signal.clone());
        let call = ToolCall::new("c1", "code", json!({ "script": script }));
        let cancel = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            signal.cancel();
        };
        let (result, ()) = tokio::join!(tools.run_with(&call, ctx), cancel);
        assert!(result.is_error, "{result:?}");
        assert_eq!(seen.slow_finished.load(Ordering::SeqCst), 0);
    }
}

#[tokio::test]
async fn the_call_cap_rejects_calls_past_it() {
    let (result, _) = run_with(
        "return await Promise.all([1, 2, 3, 4].map(() => tools.echo({})));",
        CodeLimits::default().max_calls(3),
    )
    .await;
    assert_error(&result, "echo: the script made more than 3 tool calls");
    let (result, _) = run_with(
        "await tools.echo({}); try { await tools.echo({}); } catch (e) { return e.tool; }",
        CodeLimits::default().max_calls(1),
    )
    .await;
    assert_eq!(result.details["result"], "echo", "{result:?}");
}

#[test]
fn the_description_does_not_depend_on_registration_order() {
    let tool = |name: &str| {
        FnTool::builder(name, "A tool.", object())
            .build(|_: Value, _| async { "ok" })
            .unwrap()
    };
    let one = ToolRegistry::new()
        .with(tool("b"))
        .with(tool("a"))
        .with(tool("c"));
    let two = ToolRegistry::new()
        .with(tool("c"))
        .with(tool("a"))
        .with(tool("b"));
    let (one, two) = (CodeTool::new(&one), CodeTool::new(&two));
    use pi_tool::AgentTool;
    assert_eq!(one.spec().description, two.spec().description);
    assert_eq!(one.callable().collect::<Vec<_>>(), ["a", "b", "c"]);
}

/// The arguments are turned into JSON by the script's own code where it has a say (a getter,
/// `toJSON`): that code may log, attach an image or call a tool itself, and the bridge takes
/// each as it would anywhere else.
#[tokio::test]
async fn arguments_whose_conversion_runs_the_bridge_are_taken_as_they_come() {
    let (result, _) = run(
        "const args = { toJSON() { console.log('converting'); return { a: 1 }; } };\n\
         return await tools.echo(args);",
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.details["result"], "{\"a\":1}");
    assert_eq!(result.details["console"], "converting");

    let (result, _) = run("let inner;\n\
         const args = { get b() { inner = tools.echo({ c: 2 }); return 3; } };\n\
         const outer = await tools.echo(args);\n\
         return [outer, await inner];")
    .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.details["result"], json!(["{\"b\":3}", "{\"c\":2}"]));
}

/// Settling a call's promise may run the script's code (a `then` getter on `Object.prototype`
/// is asked for when a structured result is resolved), which may call tools itself: that works
/// both for a call that finishes when made and for one settled after a wait.
#[tokio::test]
async fn a_then_getter_that_calls_tools_while_a_result_settles_is_taken_as_it_comes() {
    let (result, _) = run("let calls = 0; const inner = [];\n\
         Object.defineProperty(Object.prototype, 'then', { configurable: true,\n\
           get() { if (calls++ < 4) inner.push(tools.echo({ n: calls })); return undefined; } });\n\
         const now = await tools.add({ a: 1, b: 2 });\n\
         const [later] = await Promise.all([tools.add({ a: 3, b: 4, later: true }), tools.progress({})]);\n\
         delete Object.prototype.then;\n\
         return [now.sum, later.sum, await Promise.all(inner)];")
    .await;
    assert!(!result.is_error, "{result:?}");
    // The getter ran while `now` (settled when made), `later` (settled after a wait) and the
    // array `Promise.all` resolves to were resolved.
    assert_eq!(
        result.details["result"],
        json!([3, 7, ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}"]])
    );
}

/// Arguments no host could take are refused at the call, with the reason, and the script may
/// catch it; a string with an unpaired surrogate reaches the tool with U+FFFD for it.
#[tokio::test]
async fn arguments_that_cannot_be_json_reject_the_call_with_the_reason() {
    let (result, _) = run("let v = 0; for (let i = 0; i < 200; i++) v = [v];\n\
         try { await tools.echo(v); return 'sent'; } catch (e) { return [e.message, e.tool]; }")
    .await;
    assert!(!result.is_error, "{result:?}");
    // A refused call names its tool as a failed one does.
    assert_eq!(result.details["result"][1], "echo");
    let message = result.details["result"][0]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.starts_with("echo: the arguments are not JSON"),
        "{message}"
    );
    assert!(message.contains("deeper than 128 levels"), "{message}");

    let (result, _) = run("return await tools.echo({ s: 'a\\ud800b' });").await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.details["result"], "{\"s\":\"a\u{fffd}b\"}");
}

#[tokio::test]
async fn the_globals_are_ecmascripts_and_the_bridge() {
    let (result, _) = run("return Object.getOwnPropertyNames(globalThis).sort();").await;
    let globals: Vec<String> = serde_json::from_value(result.details["result"].clone()).unwrap();
    let expected = [
        "AggregateError",
        "Array",
        "ArrayBuffer",
        "AsyncDisposableStack",
        "Atomics",
        "BigInt",
        "BigInt64Array",
        "BigUint64Array",
        "Boolean",
        "DataView",
        "Date",
        "DisposableStack",
        "Error",
        "EvalError",
        "FinalizationRegistry",
        "Float16Array",
        "Float32Array",
        "Float64Array",
        "Function",
        "Infinity",
        "Int16Array",
        "Int32Array",
        "Int8Array",
        // Not ECMAScript: the engine's own errors (out of memory, the time cap) are of this class.
        "InternalError",
        "Iterator",
        "JSON",
        "Map",
        "Math",
        "NaN",
        "Number",
        "Object",
        "Promise",
        "Proxy",
        "RangeError",
        "ReferenceError",
        "Reflect",
        "RegExp",
        "Set",
        "SharedArrayBuffer",
        "String",
        "SuppressedError",
        "Symbol",
        "SyntaxError",
        "TypeError",
        "URIError",
        "Uint16Array",
        "Uint32Array",
        "Uint8Array",
        "Uint8ClampedArray",
        "WeakMap",
        "WeakRef",
        "WeakSet",
        // The bridge.
        "attachImage",
        "console",
        "decodeURI",
        "decodeURIComponent",
        "describeTool",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "globalThis",
        "isFinite",
        "isNaN",
        "parseFloat",
        "parseInt",
        "searchTools",
        "tools",
        "undefined",
        "unescape",
    ];
    assert_eq!(globals, expected);
    let (result, _) = run(
        "return [typeof queueMicrotask, typeof performance, typeof atob, typeof btoa, typeof DOMException, typeof eval];",
    )
    .await;
    assert_eq!(
        result.details["result"],
        json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined"
        ])
    );
}

#[tokio::test]
async fn memory_so_short_that_no_error_can_be_made_is_named() {
    for script in [
        "const a = []; while (true) a.push(a.length + 'x');",
        "const a = []; for (;;) a.push([a.length]);",
        "const o = {}; for (let i = 0;; i++) o['k' + i] = i;",
    ] {
        let (result, _) = run_with(script, CodeLimits::default().memory_bytes(8 << 20)).await;
        assert_error(&result, "the script ran out of memory (the cap is 8 MiB)");
    }
    // Out of memory in a promise job: the job is dropped and the script's promise never
    // settles.
    let (result, _) = run_with(
        "async function f() { await 0; return f(); } await f();",
        CodeLimits::default().memory_bytes(8 << 20),
    )
    .await;
    assert_error(&result, "the script ran out of memory (the cap is 8 MiB)");
    // A script that throws null itself is told what it threw, and what else it may mean.
    let (result, _) = run("throw null;").await;
    assert_error(&result, "the script threw null");
}

#[tokio::test]
async fn the_cpu_cap_stops_a_busy_script_and_waits_for_tools_do_not_count() {
    let limits = CodeLimits::default().cpu_time(Duration::from_millis(200));
    let (result, _) = run_with("while (true) {}", limits.clone()).await;
    assert_error(&result, "CPU time cap (0.2 s)");
    let (result, _) = run_with(
        "const h = () => { Promise.resolve().then(h); Promise.resolve().then(h); }; h(); await new Promise(() => {});",
        limits.clone(),
    )
    .await;
    assert_error(&result, "CPU time cap (0.2 s)");
    // Twice the CPU cap spent waiting for a tool: the wall time cap counts it, this one not.
    let (result, _) = run_with("return await tools.nap({ms: 400});", limits).await;
    assert_eq!(result.text_content(), "\"rested\"", "{result:?}");
}

#[tokio::test]
async fn a_script_past_the_source_cap_is_refused() {
    let script = format!("return {};", "1".repeat(90));
    assert_eq!(script.len(), 98);
    let (result, _) = run_with(&script, CodeLimits::default().source_bytes(98)).await;
    assert!(!result.is_error, "{result:?}");
    let (result, _) = run_with(&script, CodeLimits::default().source_bytes(97)).await;
    assert_error(
        &result,
        "the script is 98 bytes, past the cap of 97 bytes for a script (source_bytes)",
    );
}

#[tokio::test]
async fn a_call_past_the_argument_or_result_cap_rejects() {
    let script = "try { await tools.echo({s: 'x'.repeat(2000)}); } catch (e) { return [e.tool, e.message]; }";
    let (result, _) = run_with(script, CodeLimits::default().call_argument_bytes(1000)).await;
    let message = result.details["result"][1].as_str().unwrap_or_default();
    assert_eq!(result.details["result"][0], "echo", "{result:?}");
    assert!(
        message.contains(
            "larger than 1000 bytes as JSON, the cap for one call's arguments (call_argument_bytes)"
        ),
        "{message}"
    );
    let (result, _) = run_with(script, CodeLimits::default().call_argument_bytes(3000)).await;
    assert_eq!(
        result.details["result"],
        Value::Null,
        "within the cap: {result:?}"
    );

    let (result, _) = run_with(script, CodeLimits::default().call_result_bytes(1000)).await;
    let message = result.details["result"][1].as_str().unwrap_or_default();
    assert!(
        message
            .contains("larger than 1000 bytes, the cap for one call's result (call_result_bytes)"),
        "{message}"
    );
    // A structured result counts as its JSON: `{"sum":3.0}` is 11 bytes.
    let script = "return await tools.add({a: 1, b: 2});";
    let (result, _) = run_with(script, CodeLimits::default().call_result_bytes(10)).await;
    assert_error(&result, "add: the result is larger than 10 bytes");
    let (result, _) = run_with(script, CodeLimits::default().call_result_bytes(11)).await;
    assert_eq!(result.details["result"]["sum"], 3.0, "{result:?}");
}

#[tokio::test]
async fn calls_past_the_in_flight_cap_reject() {
    let (result, seen) = run_with(
        "await Promise.all([tools.slow({}), tools.slow({}), tools.slow({})]);",
        CodeLimits::default().max_calls_in_flight(2),
    )
    .await;
    assert_error(
        &result,
        "slow: 2 tool calls are running already, the cap of calls at once (max_calls_in_flight)",
    );
    assert_eq!(seen.slow_started.load(Ordering::SeqCst), 2);
    // Calls that finish when they are made are never in flight.
    let (result, _) = run_with(
        "return (await Promise.all([1, 2, 3, 4].map(() => tools.echo({})))).length;",
        CodeLimits::default().max_calls_in_flight(1),
    )
    .await;
    assert_eq!(result.text_content(), "4", "{result:?}");
    // One waiting call at a time, in turn, is within a cap of one.
    let (result, _) = run_with(
        "for (let i = 0; i < 3; i++) await tools.add({a: i, b: 0, later: true}); return 'ok';",
        CodeLimits::default().max_calls_in_flight(1),
    )
    .await;
    assert_eq!(result.text_content(), "\"ok\"", "{result:?}");
}

/// A catalog with deferred tools: `add` is listed; `get_weather` and `create_issue` are
/// deferred; `delete_repo` is deferred and model-only.
fn catalog() -> ToolRegistry {
    let tools = ToolRegistry::new()
        .with(
            FnTool::builder("add", "Add two numbers.", json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}))
                .build(|args: Value, _| async move {
                    (args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0)).to_string()
                })
                .unwrap(),
        )
        .with(
            FnTool::builder(
                "get_weather",
                "Current weather for a city.",
                json!({"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}),
            )
            .output_schema(json!({"type": "object", "properties": {"sky": {"type": "string"}}}))
            .deferred()
            .build(|args: Value, _| async move {
                let sky = format!("sunny in {}", args["city"].as_str().unwrap_or("?"));
                ToolResult::new(vec![pi_tool::Content::text(sky.clone())], json!({"sky": sky}))
            })
            .unwrap(),
        )
        .with(
            FnTool::builder("create_issue", "Open an issue in a bug tracker.", json!({"type": "object", "properties": {"title": {"type": "string"}}}))
                .deferred()
                .build(|_: Value, _| async { "opened" })
                .unwrap(),
        )
        .with(
            FnTool::builder("delete_repo", "Delete a repository (weather station data).", object())
                .deferred()
                .callers(ToolCallers::Model)
                .build(|_: Value, _| async { "deleted" })
                .unwrap(),
        );
    let code = CodeTool::new(&tools);
    tools.with(code)
}

async fn run_in_catalog(script: &str) -> ToolResult {
    catalog()
        .run(&ToolCall::new("c1", "code", json!({ "script": script })))
        .await
}

#[test]
fn deferred_tools_are_left_out_of_the_description() {
    let tools = catalog();
    let description = tools.get("code").unwrap().spec().description.clone();
    assert!(description.contains("add(args"), "{description}");
    assert!(!description.contains("get_weather"), "{description}");
    assert!(!description.contains("delete_repo"), "{description}");
    assert!(
        description.contains(
            "2 more tools are not listed here. Find them with `searchTools(query, {limit})`"
        ),
        "{description}"
    );
}

#[tokio::test]
async fn scripts_find_deferred_tools_read_their_declaration_and_call_them() {
    let result = run_in_catalog(
        "const found = searchTools('weather in a city', {limit: 1});
         const declaration = describeTool(found[0].name);
         const answer = await tools[found[0].name]({city: 'Oslo'});
         return {found, declaration, answer, same: tools.get_weather === tools.get_weather,
                 frozen: Object.isFrozen(tools.get_weather), issue: await tools.create_issue({title: 't'})};",
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    let value = &result.details["result"];
    assert_eq!(
        value["found"],
        json!([{"name": "get_weather", "description": "Current weather for a city."}])
    );
    assert_eq!(
        value["declaration"],
        "/** Current weather for a city. */\nget_weather(args: {\n  /** City name */\n  city: string;\n}): Promise<{\n  sky?: string;\n}>;\n"
    );
    assert_eq!(value["answer"], json!({"sky": "sunny in Oslo"}));
    assert_eq!(value["same"], true);
    assert_eq!(value["frozen"], true);
    assert_eq!(value["issue"], "opened");
    // The search runs over every tool a script may call, listed or deferred, with at most
    // five matches unless asked; a model-only tool is neither found nor reachable.
    let result = run_in_catalog(
        "return [searchTools('repository weather station').map(t => t.name), typeof tools.delete_repo,
                 searchTools('add numbers').map(t => t.name)[0], describeTool('add')];",
    )
    .await;
    let value = &result.details["result"];
    assert!(
        !value[0].as_array().unwrap().contains(&json!("delete_repo")),
        "{value}"
    );
    assert_eq!(value[1], "undefined");
    assert_eq!(value[2], "add");
    assert_eq!(
        value[3],
        "/** Add two numbers. */\nadd(args: {\n  a?: number;\n  b?: number;\n}): Promise<string>;\n"
    );
}

#[tokio::test]
async fn bad_searches_and_unknown_tools_throw() {
    for (script, needle) in [
        ("searchTools('')", "TypeError: searchTools(query, {limit})"),
        ("searchTools(42)", "TypeError: searchTools(query, {limit})"),
        (
            "searchTools('weather', {limit: 0})",
            "RangeError: searchTools: limit is a whole number from 1 to 20",
        ),
        ("searchTools('weather', {limit: 21})", "RangeError"),
        ("searchTools('weather', {limit: 1.5})", "RangeError"),
        (
            "searchTools('x'.repeat(1001))",
            "RangeError: searchTools: the query is 1001 bytes",
        ),
        (
            "describeTool('nope')",
            "ReferenceError: describeTool: no tool a script may call is named \"nope\"",
        ),
        ("describeTool('delete_repo')", "ReferenceError"),
        ("Object.getPrototypeOf(tools).get_weather = 1", "TypeError"),
        ("tools.get_weather = 1", "TypeError"),
        ("Object.setPrototypeOf(tools, null)", "TypeError"),
    ] {
        let result = run_in_catalog(script).await;
        assert_error(&result, needle);
    }
    // Without deferred tools, `tools` keeps no prototype.
    let (result, _) = run("return Object.getPrototypeOf(tools) === null;").await;
    assert_eq!(result.text_content(), "true", "{result:?}");
}

#[tokio::test]
async fn scripts_search_with_the_hosts_own_search() {
    let tools = catalog();
    let all: Vec<_> = tools.tools().cloned().collect();
    // A host's ranker that puts `delete_repo` (model-only: passed over) and then
    // `create_issue` first, whatever the query.
    let search = pi_tool::ToolSearch::new(&all).with_ranker(|query: &pi_tool::RankQuery<'_>| {
        let position = |name: &str| {
            query
                .tools()
                .iter()
                .position(|t| t.spec().name == name)
                .unwrap()
        };
        vec![
            pi_tool::Ranked::new(position("delete_repo"), 2.0),
            pi_tool::Ranked::new(position("create_issue"), 1.0),
        ]
    });
    let code = CodeTool::new(&tools).with_search(search);
    let tools = tools.with(code);
    let call = ToolCall::new(
        "c1",
        "code",
        json!({ "script": "return searchTools('weather').map(t => t.name);" }),
    );
    let result = tools.run(&call).await;
    assert_eq!(
        result.details["result"],
        json!(["create_issue"]),
        "{result:?}"
    );
}

#[tokio::test]
async fn images_past_the_image_cap_throw() {
    let script = "const png = 'A'.repeat(600); attachImage(png, 'image/png');
                  try { attachImage(png, 'image/png'); } catch (e) { return e.message; }";
    let (result, _) = run_with(script, CodeLimits::default().image_bytes(1000)).await;
    assert_eq!(
        result.details["result"],
        "the images would take 1200 bytes of base64, past the cap of 1000 bytes for a script's images (image_bytes)"
    );
    assert_eq!(
        result.content.len(),
        2,
        "the first image is kept: {result:?}"
    );
    let (result, _) = run_with(script, CodeLimits::default().image_bytes(1200)).await;
    assert_eq!(result.content.len(), 3, "both images: {result:?}");
}
