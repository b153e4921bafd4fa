//! Running tools through the single-call runner: every return type, failures, updates,
//! cancellation and shared state.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_tool::{
    AgentTool, CancellationToken, Content, ExecutionMode, Json, State, ToolCall, ToolContext,
    ToolError, ToolRegistry, ToolResult, tool,
};
use serde_json::{Value, json};

/// Returns a `String`.
#[tool]
async fn greet(name: String) -> String {
    format!("hello {name}")
}

/// Returns a `&'static str`.
#[tool]
async fn ping() -> &'static str {
    "pong"
}

/// Returns one block.
#[tool]
async fn picture() -> Content {
    Content::image("aGk=", "image/png")
}

/// Returns several blocks.
#[tool]
async fn blocks() -> Vec<Content> {
    vec![Content::text("a"), Content::text("b")]
}

#[derive(serde::Serialize)]
struct Stats {
    exit_code: i32,
}

/// Returns typed details.
#[tool(label = "Run", sequential)]
async fn run(command: String) -> ToolResult<Stats> {
    ToolResult::new(vec![Content::text(command)], Stats { exit_code: 3 }).with_terminate(true)
}

/// Returns JSON.
#[tool]
async fn lookup(id: u32) -> Json<Value> {
    Json(json!({"id": id, "name": "Ada"}))
}

#[derive(Debug, thiserror::Error)]
#[error("no such city: {0}")]
struct NoCity(String);

/// Fails with an error.
#[tool]
async fn fails(city: String) -> Result<String, NoCity> {
    Err(NoCity(city))
}

/// Uses `?` on a std error and reports through `ToolError`.
#[tool]
async fn parse_number(text: String) -> Result<String, ToolError> {
    let n: i64 = text.parse()?;
    Ok((n * 2).to_string())
}

/// Panics.
#[tool]
async fn explodes() -> String {
    panic!("kaboom")
}

/// Reports an error without failing.
#[tool]
async fn soft_error() -> ToolResult {
    ToolResult::text("disk almost full").with_is_error(true)
}

/// Streams progress.
#[tool]
async fn progress(steps: u32, ctx: ToolContext) -> String {
    for i in 1..=steps {
        ctx.update(ToolResult::text(format!("step {i}")));
    }
    format!("{steps} steps")
}

/// Waits until aborted.
#[tool]
async fn wait_for_abort(ctx: ToolContext) -> Result<String, ToolError> {
    tokio::select! {
        () = ctx.signal().cancelled() => Err(ToolError::new("Operation aborted")),
        () = tokio::time::sleep(Duration::from_secs(30)) => Ok("timed out".into()),
    }
}

struct Counter(Mutex<u32>);

/// Counts calls in shared state.
#[tool]
async fn count(counter: State<Counter>) -> String {
    let mut n = counter.0.lock().expect("not poisoned");
    *n += 1;
    n.to_string()
}

fn upgrade(mut args: Value) -> Result<Value, ToolError> {
    if let Some(old) = args.get_mut("text").map(Value::take) {
        args["value"] = old;
        args.as_object_mut().expect("an object").remove("text");
    }
    if args.get("value") == Some(&json!("forbidden")) {
        return Err(ToolError::new("bad shim"));
    }
    Ok(args)
}

/// Takes `value`; old callers send `text`.
#[tool(prepare_arguments = upgrade)]
async fn legacy(value: String) -> String {
    format!("echoed: {value}")
}

fn registry() -> ToolRegistry {
    ToolRegistry::discover()
        .expect("unique names")
        .with_state(Counter(Mutex::new(0)))
}

async fn call(name: &str, args: Value) -> ToolResult {
    registry().run(&ToolCall::new("call_1", name, args)).await
}

#[tokio::test]
async fn every_return_type_becomes_a_result() {
    let greet = call("greet", json!({"name": "Ada"})).await;
    assert_eq!(
        (greet.content, greet.details, greet.is_error),
        (vec![Content::text("hello Ada")], Value::Null, false)
    );
    assert_eq!(call("ping", json!({})).await.text_content(), "pong");
    assert_eq!(
        call("picture", json!({})).await.content,
        [Content::image("aGk=", "image/png")]
    );
    assert_eq!(
        call("blocks", json!({})).await.content,
        [Content::text("a"), Content::text("b")]
    );
    let run = call("run", json!({"command": "ls"})).await;
    assert_eq!(
        (run.details, run.terminate),
        (json!({"exit_code": 3}), true)
    );
    let lookup = call("lookup", json!({"id": "7"})).await;
    assert_eq!(lookup.text_content(), r#"{"id":7,"name":"Ada"}"#);
    assert_eq!(lookup.details, json!({"id": 7, "name": "Ada"}));
}

#[tokio::test]
async fn an_err_becomes_an_error_result_with_its_display_text() {
    let result = call("fails", json!({"city": "Atlantis"})).await;
    assert_eq!(result, ToolResult::error("no such city: Atlantis"));
    assert_eq!(result.details, json!({}));
    let parsed = call("parse_number", json!({"text": "x"})).await;
    assert_eq!(parsed.text_content(), "invalid digit found in string");
    assert!(parsed.is_error);
    assert_eq!(
        call("parse_number", json!({"text": "21"}))
            .await
            .text_content(),
        "42"
    );
}

#[tokio::test]
async fn a_panic_becomes_an_error_result() {
    assert_eq!(
        call("explodes", json!({})).await,
        ToolResult::error("Tool explodes panicked: kaboom")
    );
}

#[tokio::test]
async fn a_returned_is_error_counts_as_an_error() {
    let result = call("soft_error", json!({})).await;
    assert!(result.is_error);
    assert_eq!(result.text_content(), "disk almost full");
}

#[tokio::test]
async fn unknown_tools_and_invalid_arguments_never_run() {
    assert_eq!(
        call("gret", json!({})).await,
        ToolResult::error("Tool gret not found (did you mean \"greet\"?)")
    );
    assert_eq!(
        call("zzzzzz", json!({})).await,
        ToolResult::error("Tool zzzzzz not found")
    );
    assert_eq!(
        call("greet", json!({})).await,
        ToolResult::error(
            "Validation failed for tool \"greet\":\n  - name: missing required property\n\nReceived arguments:\n{}"
        )
    );
}

#[tokio::test]
async fn updates_reach_the_sink_and_stop_when_the_tool_ends() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let tools = registry();
    let ctx = tools
        .context("call_1")
        .with_updates(Arc::new(move |partial: ToolResult| {
            sink.lock()
                .expect("not poisoned")
                .push(partial.text_content())
        }));
    let result = tools
        .run_with(
            &ToolCall::new("call_1", "progress", json!({"steps": 2})),
            ctx.clone(),
        )
        .await;
    assert_eq!(result.text_content(), "2 steps");
    ctx.update(ToolResult::text("too late"));
    assert_eq!(*seen.lock().expect("not poisoned"), ["step 1", "step 2"]);
}

#[tokio::test]
async fn the_tool_sees_cancellation() {
    let tools = registry();
    let signal = CancellationToken::new();
    let ctx = tools.context("call_1").with_signal(signal.clone());
    let call = ToolCall::new("call_1", "wait_for_abort", json!({}));
    let (result, ()) = tokio::join!(tools.run_with(&call, ctx), async {
        tokio::time::sleep(Duration::from_millis(5)).await;
        signal.cancel();
    });
    assert_eq!(result, ToolResult::error("Operation aborted"));
}

#[tokio::test]
async fn state_is_shared_and_missing_state_is_reported() {
    let tools = registry();
    let counting = ToolCall::new("c", "count", json!({}));
    assert_eq!(tools.run(&counting).await.text_content(), "1");
    assert_eq!(tools.run(&counting).await.text_content(), "2");
    let without_state = ToolRegistry::new().with(CountTool);
    let result = without_state.run(&counting).await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "the tool needs shared state of type `execution::Counter`, but none was provided (no shared state was stored); add it with `with_state(value)`, or `with_state(Arc<execution::Counter>)`"
    );
}

#[tokio::test]
async fn prepare_arguments_runs_before_validation() {
    assert_eq!(
        call("legacy", json!({"text": "old"})).await.text_content(),
        "echoed: old"
    );
    assert_eq!(
        call("legacy", json!({"value": "new"})).await.text_content(),
        "echoed: new"
    );
    assert_eq!(
        call("legacy", json!({"text": "forbidden"})).await,
        ToolResult::error("bad shim")
    );
}

#[test]
fn keys_set_label_and_mode() {
    assert_eq!(
        (RunTool.label(), RunTool.execution_mode()),
        ("Run", Some(ExecutionMode::Sequential))
    );
    assert_eq!(
        (GreetTool.label(), GreetTool.execution_mode()),
        ("greet", None)
    );
}

#[tokio::test]
async fn the_fn_stays_callable() {
    assert_eq!(greet("Bo".into()).await, "hello Bo");
}

/// An email address, checked by its own `TryFrom` after schema validation.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(try_from = "String")]
struct Email(String);

impl TryFrom<String> for Email {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        if text.contains('@') {
            Ok(Email(text))
        } else {
            Err(format!("{text:?} is not an email address"))
        }
    }
}

/// Sends a message.
#[tool]
async fn send(to: Email) -> String {
    format!("sent to {}", to.0)
}

#[tokio::test]
async fn a_deserialization_error_after_validation_is_an_error_result() {
    assert_eq!(
        call("send", json!({"to": "ada@example.com"}))
            .await
            .text_content(),
        "sent to ada@example.com"
    );
    assert_eq!(
        call("send", json!({"to": "ada"})).await,
        ToolResult::error("Invalid arguments for tool \"send\": \"ada\" is not an email address")
    );
}
