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
