//! A tool calling another tool of its host (`ToolContext::call_tool`) goes through every stage of
//! the pipeline a model's call goes through, and never fails: each stage's refusal comes back as
//! the error result the model would get. Run here through `ToolRegistry::run`; the agent loop's
//! own nested calls (with its hooks) are tested in pi-runtime's `nested_calls.rs`, and every
//! host side by side in pi-restate's `host_matrix.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_tool::{
    CallLimits, CancellationToken, State, ToolCall, ToolContext, ToolRegistry, ToolResult, tool,
};
use serde_json::{Value, json};

/// Add two numbers.
#[tool]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// Call a tool by name with the given arguments, and return what it returned (the error too).
#[tool]
async fn relay(tool: String, arguments: Value, ctx: ToolContext) -> ToolResult {
    ctx.call_tool(tool, arguments).await
}

/// Call `lookup` with a word too long for the limits.
#[tool]
async fn inflate(ctx: ToolContext) -> ToolResult {
    ctx.call_tool("lookup", json!({"word": "x".repeat(100)}))
        .await
}

/// Panic.
#[tool]
async fn explode() -> String {
    panic!("the child blew up")
}

/// Never finish, unless aborted: then say so.
#[tool(timeout = "100ms")]
async fn slow(ctx: ToolContext) -> String {
    ctx.signal().cancelled().await;
    "stopped when told".to_owned()
}

/// Wait for the abort signal (no timeout of its own), then say so.
#[tool]
async fn patient(ctx: ToolContext) -> String {
    ctx.signal().cancelled().await;
    "the parent was aborted".to_owned()
}

/// Call yourself, without end.
#[tool]
async fn recurse(ctx: ToolContext) -> ToolResult {
    let mut result = ctx.call_tool("recurse", json!({})).await;
    let depth = ctx.nesting_depth();
    let text = format!("depth {depth} <- {}", result.text_content());
    result.content = vec![pi_tool::Content::text(text)];
    result
}

/// Counts how many calls of `one_at_a_time` run at once, and the most ever.
#[derive(Default)]
struct Overlap {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// Hold the floor for a moment.
#[tool(sequential)]
async fn one_at_a_time(overlap: State<Overlap>) -> String {
    let now = overlap.now.fetch_add(1, Ordering::SeqCst) + 1;
    overlap.most.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(20)).await;
    overlap.now.fetch_sub(1, Ordering::SeqCst);
    "done".to_owned()
}

/// Call `one_at_a_time` four times at once.
#[tool]
async fn fan_out(ctx: ToolContext) -> String {
    let calls = (0..4).map(|_| ctx.call_tool("one_at_a_time", json!({})).into_future());
    let results = futures_util::future::join_all(calls).await;
    results
        .iter()
        .map(ToolResult::text_content)
        .collect::<Vec<_>>()
        .join(",")
}

/// Say which thread this ran on.
#[tool(blocking)]
fn which_thread() -> String {
    format!("{:?}", std::thread::current().id())
}

/// Say which thread this ran on (not blocking: on the caller's).
#[tool]
async fn which_thread_async() -> String {
    format!("{:?}", std::thread::current().id())
}

/// Report the ids, idempotency key and depth a nested call sees, and the state.
#[tool]
async fn introspect(ctx: ToolContext, greeting: State<String>) -> String {
    format!(
        "{} {:?} {} {} {}",
        ctx.tool_call_id(),
        ctx.idempotency_key(),
        ctx.nesting_depth(),
        ctx.nested_call().map_or("-", |call| call.name.as_str()),
        greeting.as_str()
    )
}

/// Call `introspect` twice.
#[tool]
async fn introspect_twice(ctx: ToolContext) -> String {
    let first = ctx.call_tool("introspect", json!({})).await.text_content();
    let second = ctx.call_tool("introspect", json!({})).await.text_content();
    format!("{first} | {second}")
}

/// Send two progress lines, then finish.
#[tool]
async fn chatty(ctx: ToolContext) -> String {
    ctx.update(ToolResult::text("one"));
    ctx.update(ToolResult::text("two"));
    "said it".to_owned()
}

/// Charge a card: the model alone may ask for it.
#[tool(callers = "model")]
async fn charge(cents: u64) -> String {
    format!("charged {cents}")
}

/// Look a word up: only from code.
#[tool(callers = "code")]
async fn lookup(word: String) -> String {
    format!("{word}: found")
}

fn registry() -> ToolRegistry {
    ToolRegistry::new()
        .with(AddTool)
        .with(RelayTool)
        .with(ExplodeTool)
        .with(SlowTool)
        .with(PatientTool)
        .with(RecurseTool)
        .with(OneAtATimeTool)
        .with(FanOutTool)
        .with(WhichThreadTool)
        .with(WhichThreadAsyncTool)
        .with(IntrospectTool)
        .with(IntrospectTwiceTool)
        .with(ChattyTool)
        .with(ChargeTool)
        .with(LookupTool)
        .with(InflateTool)
        .with_state(Overlap::default())
        .with_state("hello".to_owned())
        .with_call_limits(CallLimits::DEFAULT.abort_grace(Duration::from_millis(50)))
}

/// What `relay` returns when it calls `tool` with `arguments`.
async fn relayed(tools: &ToolRegistry, tool: &str, arguments: Value) -> (bool, String) {
    let call = ToolCall::new("c1", "relay", json!({"tool": tool, "arguments": arguments}));
    let result = tools.run(&call).await;
    (result.is_error, result.text_content())
}

/// What the model would get for the same call made directly.
async fn direct(tools: &ToolRegistry, tool: &str, arguments: Value) -> (bool, String) {
    let result = tools.run(&ToolCall::new("c1", tool, arguments)).await;
    (result.is_error, result.text_content())
}

#[tokio::test]
async fn a_nested_call_runs_the_tool_and_returns_its_result() {
    let tools = registry();
    assert_eq!(
        relayed(&tools, "add", json!({"a": 2, "b": 3})).await,
        (false, "5".to_owned())
    );
    // Normalization applies as for the model: "3" is coerced to 3.
    assert_eq!(
        relayed(&tools, "add", json!({"a": 2, "b": "3"})).await,
        (false, "5".to_owned())
    );
}

#[tokio::test]
async fn each_refusal_is_the_error_the_model_would_get() {
    let tools = registry();
    for (tool, arguments) in [
        ("add", json!({"a": 2})),
        ("add", json!({"a": "two", "b": 3})),
        ("ad", json!({"a": 1, "b": 2})),
        ("explode", json!({})),
        ("slow", json!({})),
    ] {
        let nested = relayed(&tools, tool, arguments.clone()).await;
        assert!(nested.0, "{tool} {arguments}: {nested:?}");
        assert_eq!(nested, direct(&tools, tool, arguments).await, "{tool}");
    }
    assert_eq!(
        relayed(&tools, "ad", json!({})).await.1,
        "Tool ad not found (did you mean \"add\"?)"
    );
    assert_eq!(
        relayed(&tools, "explode", json!({})).await.1,
        "Tool explode panicked: the child blew up"
    );
    assert_eq!(
        relayed(&tools, "slow", json!({})).await.1,
        "stopped when told\nTool slow timed out after 100ms",
        "the child's own timeout applies, and its grace"
    );
}

#[tokio::test]
async fn arguments_over_the_limits_are_refused_before_the_child_sees_them() {
    let tools = registry().with_call_limits(
        CallLimits::DEFAULT.arguments(pi_tool::ArgumentLimits::DEFAULT.max_bytes(64)),
    );
    let result = tools.run(&ToolCall::new("c1", "inflate", json!({}))).await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "Arguments for tool \"lookup\" are larger than the limit of 64 bytes. Send smaller \
         arguments (split the work into several calls)"
    );
}

#[tokio::test]
async fn a_parents_abort_reaches_its_child() {
    let tools = registry();
    let parent = CancellationToken::new();
    let ctx = tools.context("c1").with_parent_signal(parent.clone());
    let call = ToolCall::new("c1", "relay", json!({"tool": "patient", "arguments": {}}));
    let run = tools.run_with(&call, ctx);
    let abort = async {
        tokio::time::sleep(Duration::from_millis(30)).await;
        parent.cancel();
    };
    let (result, ()) = tokio::join!(run, abort);
    assert_eq!(result.text_content(), "the parent was aborted");
}

#[tokio::test]
async fn recursion_past_the_depth_limit_is_stopped_with_a_clear_error() {
    let tools = registry().with_call_limits(CallLimits::DEFAULT.max_nesting_depth(3));
    let result = tools.run(&ToolCall::new("c1", "recurse", json!({}))).await;
    assert_eq!(
        result.text_content(),
        "depth 0 <- depth 1 <- depth 2 <- depth 3 <- Nested call of tool recurse refused: calls \
         may nest at most 3 levels deep (does a tool call itself without end?)"
    );
    assert!(
        result.is_error,
        "the refusal's error flag comes up through every level"
    );
}

#[tokio::test]
async fn sequential_siblings_run_one_at_a_time() {
    let tools = registry();
    let result = tools.run(&ToolCall::new("c1", "fan_out", json!({}))).await;
    assert_eq!(result.text_content(), "done,done,done,done");
    let overlap = tools.state().get::<Overlap>().expect("stored");
    assert_eq!(overlap.most.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_blocking_child_runs_on_the_blocking_pool() {
    // One thread polls everything here: a child that runs inline reports this thread.
    let tools = registry();
    let here = format!("{:?}", std::thread::current().id());
    assert_eq!(
        relayed(&tools, "which_thread_async", json!({})).await,
        (false, here.clone()),
        "a child that does not block runs on its caller's thread"
    );
    let (is_error, there) = relayed(&tools, "which_thread", json!({})).await;
    assert!(!is_error);
    assert_ne!(here, there, "a blocking child runs on the blocking pool");
}

#[tokio::test]
async fn a_child_has_its_own_id_a_derived_key_its_depth_and_the_parents_state() {
    let tools = registry();
    let ctx = tools.context("c9").with_idempotency_key("session-1/c9");
    let call = ToolCall::new("c9", "introspect_twice", json!({}));
    let result = tools.run_with(&call, ctx).await;
    assert_eq!(
        result.text_content(),
        "c9/1 Some(\"session-1/c9/1\") 1 introspect hello | c9/2 Some(\"session-1/c9/2\") 1 introspect hello"
    );
}

#[tokio::test]
async fn a_childs_updates_reach_only_the_sink_it_was_given() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let parent_seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let parent_sink = Arc::clone(&parent_seen);
    let forwarding = pi_tool::tool_fn(
        "forward",
        "Call chatty and keep its progress.",
        json!({"type": "object"}),
        move |_args, ctx: ToolContext| {
            let sink = Arc::clone(&sink);
            async move {
                let silent = ctx.call_tool("chatty", json!({})).await;
                let heard = ctx
                    .call_tool("chatty", json!({}))
                    .on_update(Arc::new(move |partial: ToolResult| {
                        sink.lock().unwrap().push(partial.text_content());
                    }))
                    .await;
                Ok::<_, pi_tool::ToolError>(ToolResult::text(format!(
                    "{} {}",
                    silent.text_content(),
                    heard.text_content()
                )))
            }
        },
    )
    .expect("a valid tool");
    let tools = registry().with(forwarding);
    let ctx = tools
        .context("c1")
        .with_updates(Arc::new(move |partial: ToolResult| {
            parent_sink.lock().unwrap().push(partial.text_content());
        }));
    let result = tools
        .run_with(&ToolCall::new("c1", "forward", json!({})), ctx)
        .await;
    assert_eq!(result.text_content(), "said it said it");
    assert_eq!(*seen.lock().unwrap(), vec!["one", "two"]);
    assert!(
        parent_seen.lock().unwrap().is_empty(),
        "a nested call's progress is not its parent's unless forwarded"
    );
}

#[tokio::test]
async fn who_may_call_a_tool_is_kept_in_both_directions() {
    let tools = registry();
    assert_eq!(
        relayed(&tools, "charge", json!({"cents": 5})).await,
        (
            true,
            "Tool charge can be called only by the model directly, not from code or another tool"
                .to_owned()
        )
    );
    assert_eq!(
        direct(&tools, "charge", json!({"cents": 5})).await,
        (false, "charged 5".to_owned())
    );
    assert_eq!(
        relayed(&tools, "lookup", json!({"word": "pi"})).await,
        (false, "pi: found".to_owned())
    );
    assert_eq!(
        direct(&tools, "lookup", json!({"word": "pi"})).await,
        (
            true,
            "Tool lookup can be called only from code (a script of the `code` tool), not directly"
                .to_owned()
        )
    );
}

#[tokio::test]
async fn a_context_made_by_hand_refuses_nested_calls_until_given_a_host() {
    let ctx = ToolContext::new("c1");
    let result = ctx.call_tool("add", json!({"a": 1, "b": 2})).await;
    assert!(result.is_error);
    assert!(
        result
            .text_content()
            .starts_with("Tool add cannot be called from here"),
        "{result:?}"
    );
    let tools = registry();
    let ctx = ToolContext::new("c1").with_nested_host(tools.nested_host());
    let result = ctx.call_tool("add", json!({"a": 1, "b": 2})).await;
    assert_eq!(result.text_content(), "3");
}
