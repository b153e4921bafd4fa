//! `ToolRegistry::run` runs the whole pipeline every host runs: the tool's timeout (or the
//! registry's), `blocking` tools on tokio's blocking pool, sequential tools alone, the abort
//! grace, and the result-size limit. (The host matrix in pi-mcp's tests, `host_matrix.rs`, runs
//! the same calls through every host.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use pi_tool::{
    CallGate, CallLimits, CancellationToken, State, ToolCall, ToolContext, ToolRegistry, tool,
    tool_fn,
};
use serde_json::json;

/// Never finish, and ignore the abort signal.
#[tool(timeout = "100ms")]
async fn stubborn() -> String {
    std::future::pending::<()>().await;
    String::new()
}

/// Wait for the abort signal, then say how far it got.
#[tool(timeout = "100ms")]
async fn polite(ctx: ToolContext) -> String {
    ctx.signal().cancelled().await;
    "stopped half way".to_owned()
}

/// Never finish (bounded only by the registry's timeout).
#[tool]
async fn endless() -> String {
    std::future::pending::<()>().await;
    String::new()
}

fn call(name: &str) -> ToolCall {
    ToolCall::new("c1", name, json!({}))
}

fn texts(result: &pi_tool::ToolResult) -> (bool, Vec<String>) {
    let texts = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(str::to_owned))
        .collect();
    (result.is_error, texts)
}

#[tokio::test]
async fn a_tool_past_its_timeout_is_cancelled_and_answered() {
    let tools = ToolRegistry::new()
        .with(StubbornTool)
        .with(PoliteTool)
        .with(EndlessTool)
        .with_call_limits(CallLimits::DEFAULT.abort_grace(Duration::from_millis(50)));
    assert_eq!(
        texts(&tools.run(&call("stubborn")).await),
        (true, vec!["Tool stubborn timed out after 100ms".to_owned()])
    );
    assert_eq!(
        texts(&tools.run(&call("polite")).await),
        (
            true,
            vec![
                "stopped half way".to_owned(),
                "Tool polite timed out after 100ms".to_owned()
            ]
        )
    );
    // The registry's timeout bounds tools without one; a tool's own wins.
    let bounded = tools.with_call_limits(
        CallLimits::DEFAULT
            .abort_grace(Duration::from_millis(50))
            .timeout(Duration::from_millis(80)),
    );
    assert_eq!(
        texts(&bounded.run(&call("endless")).await),
        (true, vec!["Tool endless timed out after 80ms".to_owned()])
    );
    assert_eq!(
        texts(&bounded.run(&call("stubborn")).await),
        (true, vec!["Tool stubborn timed out after 100ms".to_owned()])
    );
}

/// Blocks its thread until told to go on (at most 30 s).
#[tool(blocking)]
fn wait_for_release(release: State<Release>) -> String {
    let (lock, cvar) = &*release.0;
    let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
    let (_guard, timeout) = cvar
        .wait_timeout_while(guard, Duration::from_secs(30), |go| !*go)
        .unwrap_or_else(|p| p.into_inner());
    if timeout.timed_out() {
        "nobody released me".to_owned()
    } else {
        "released".to_owned()
    }
}

/// What the blocking tool waits for.
#[derive(Default)]
struct Release(Arc<(Mutex<bool>, Condvar)>);

/// Answer at once.
#[tool]
async fn quick() -> &'static str {
    "quick"
}

#[test]
fn a_blocking_tool_holds_a_pool_thread_not_the_callers_task() {
    // A current-thread runtime: were the blocking tool run on the caller's task, the quick call
    // could not finish before it, and nobody would release it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let release = Release::default();
    let go = Arc::clone(&release.0);
    let tools = ToolRegistry::new()
        .with(WaitForReleaseTool)
        .with(QuickTool)
        .with_state(release);
    runtime.block_on(async {
        let blocking_call = call("wait_for_release");
        let blocking = tools.run(&blocking_call);
        let quick = async {
            let result = tools.run(&call("quick")).await;
            let (lock, cvar) = &*go;
            *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
            cvar.notify_all();
            result
        };
        let (blocking, quick) = tokio::join!(blocking, quick);
        assert_eq!(quick.text_content(), "quick");
        assert_eq!(blocking.text_content(), "released");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequential_tool_never_runs_next_to_another_call() {
    // Each call records how many calls run at once while it runs.
    let running = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(Mutex::new(Vec::new()));
    let probe = |name: &'static str, sequential: bool| {
        let running = Arc::clone(&running);
        let log = Arc::clone(&log);
        let builder = pi_tool::FnTool::builder(name, "Probe.", json!({"type": "object"}));
        let builder = if sequential {
            builder.sequential()
        } else {
            builder
        };
        builder
            .build(move |_args, _ctx| {
                let running = Arc::clone(&running);
                let log = Arc::clone(&log);
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    log.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((name, now));
                    name
                }
            })
            .expect("a valid tool")
    };
    let tools = ToolRegistry::new()
        .with(probe("alone", true))
        .with(probe("together", false));
    let calls: Vec<_> = [
        "together", "alone", "together", "together", "alone", "together",
    ]
    .into_iter()
    .map(call)
    .collect();
    let results = futures_util::future::join_all(calls.iter().map(|c| tools.run(c))).await;
    assert!(results.iter().all(|result| !result.is_error));
    let log = log.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(log.len(), 6);
    for (name, at_once) in &log {
        if *name == "alone" {
            assert_eq!(
                *at_once, 1,
                "a sequential call ran next to another: {log:?}"
            );
        }
    }
    assert!(
        log.iter()
            .any(|(name, at_once)| *name == "together" && *at_once > 1),
        "parallel calls still run together: {log:?}"
    );
}

#[tokio::test]
async fn a_result_over_the_limit_is_cut_with_a_note() {
    let big = tool_fn(
        "big",
        "Big.",
        json!({"type": "object"}),
        |_args, _ctx| async { "0123456789abcdef\n".repeat(100) },
    )
    .expect("a valid tool");
    let tools = ToolRegistry::new()
        .with(big)
        .with_call_limits(CallLimits::DEFAULT.max_result_bytes(100));
    let (is_error, texts) = texts(&tools.run(&call("big")).await);
    assert!(!is_error);
    assert_eq!(texts[0], "0123456789abcdef\n".repeat(5));
    assert_eq!(
        texts[1],
        "[Tool output truncated: 85 of 1700 bytes shown. The rest exceeded the limit of 100 bytes for one tool result. Ask for less at a time: a narrower query, a smaller range, or an offset and limit.]"
    );
}

#[tokio::test]
async fn an_abort_answers_a_running_call_after_the_grace() {
    let tools = ToolRegistry::new()
        .with(EndlessTool)
        .with_call_limits(CallLimits::DEFAULT.abort_grace(Duration::from_millis(20)));
    let signal = CancellationToken::new();
    let ctx = tools.context("c1").with_parent_signal(signal.clone());
    let endless = call("endless");
    let running = tools.run_with(&endless, ctx);
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        signal.cancel();
    };
    let (result, ()) = tokio::join!(running, cancel);
    assert_eq!(texts(&result), (true, vec!["Operation aborted".to_owned()]));

    // Aborted before it starts: it never runs.
    let ctx = tools.context("c2").with_parent_signal(signal);
    assert_eq!(
        texts(&tools.run_with(&call("endless"), ctx).await),
        (true, vec!["Operation aborted".to_owned()])
    );
}

#[tokio::test]
async fn the_gate_admits_in_arrival_order_and_forgets_a_waiter_that_gives_up() {
    use futures_util::FutureExt;
    let gate = CallGate::new();
    let shared = gate.admit(false).await;
    // A sequential call waits for the shared one; a parallel call behind it waits too.
    let mut exclusive = Box::pin(gate.admit(true));
    assert!((&mut exclusive).now_or_never().is_none());
    let mut behind = Box::pin(gate.admit(false));
    assert!((&mut behind).now_or_never().is_none());
    // One that gives up leaves no trace.
    let mut gives_up = Box::pin(gate.admit(true));
    assert!((&mut gives_up).now_or_never().is_none());
    drop(gives_up);
    drop(shared);
    let alone = exclusive.await;
    assert!(gate.is_closed());
    assert!((&mut behind).now_or_never().is_none());
    drop(alone);
    let _together = behind.await;
    assert!(!gate.is_closed());
}

#[tokio::test]
async fn an_abort_answers_a_call_waiting_at_the_gate_and_it_never_runs() {
    use futures_util::FutureExt;
    // A sequential call holds the gate; another call waits for it and is aborted there (the
    // pipeline watches its signal only once the call is found waiting).
    let release = Arc::new(tokio::sync::Notify::new());
    let ran = Arc::new(AtomicUsize::new(0));
    let hold = {
        let release = Arc::clone(&release);
        pi_tool::FnTool::builder("hold", "Hold the gate.", json!({"type": "object"}))
            .sequential()
            .build(move |_args, _ctx| {
                let release = Arc::clone(&release);
                async move {
                    release.notified().await;
                    "released"
                }
            })
            .expect("a valid tool")
    };
    let counted = {
        let ran = Arc::clone(&ran);
        pi_tool::FnTool::builder("counted", "Count.", json!({"type": "object"}))
            .build(move |_args, _ctx| {
                ran.fetch_add(1, Ordering::SeqCst);
                async { "ran" }
            })
            .expect("a valid tool")
    };
    let tools = ToolRegistry::new().with(hold).with(counted);
    let hold_call = call("hold");
    let mut holding = Box::pin(tools.run(&hold_call));
    assert!(
        (&mut holding).now_or_never().is_none(),
        "hold takes the gate"
    );
    let signal = CancellationToken::new();
    let ctx = tools.context("c2").with_parent_signal(signal.clone());
    let counted_call = call("counted");
    let mut waiting = Box::pin(tools.run_with(&counted_call, ctx));
    assert!((&mut waiting).now_or_never().is_none(), "counted waits");
    signal.cancel();
    // A guard against a hang, not a measure: the abort answers at once.
    let aborted = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the abort answers the waiting call");
    release.notify_one();
    let held = holding.await;
    assert_eq!(texts(&held), (false, vec!["released".to_owned()]));
    assert_eq!(
        texts(&aborted),
        (true, vec!["Operation aborted".to_owned()])
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}
