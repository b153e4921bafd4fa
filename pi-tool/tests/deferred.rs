//! Deferred tools: the `AgentTool::deferred` default, `FnToolBuilder::deferred`, and the
//! registry-level choices (`defer_all`, `defer_when_more_than`) with a wrapper that changes
//! nothing else about the tool.

use std::time::Duration;

use pi_tool::{AgentTool, Deferred, FnTool, ToolCall, ToolRegistry, tool};
use serde_json::{Value, json};

fn echo(name: &str) -> FnTool {
    FnTool::builder(
        name,
        "Echo the text back.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    )
    .timeout(Duration::from_secs(3))
    .sequential()
    .build(|args: Value, _ctx| async move { args["text"].as_str().unwrap_or_default().to_owned() })
    .unwrap()
}

/// Add two numbers.
#[tool]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

#[test]
fn tools_are_sent_unless_deferred() {
    assert!(!AddTool.deferred());
    assert!(!echo("echo").deferred());
    let deferred = FnTool::builder("late", "Loaded late.", json!({"type": "object"}))
        .deferred()
        .build(|_, _| async { "ok" })
        .unwrap();
    assert!(deferred.deferred());
    assert!(format!("{deferred:?}").contains("deferred: true"));
}

#[tokio::test]
async fn defer_all_changes_only_deferred() {
    let tools = ToolRegistry::new()
        .with(echo("echo"))
        .with(AddTool)
        .defer_all();
    assert_eq!(tools.names().collect::<Vec<_>>(), ["add", "echo"]);
    let echo_tool = tools.get("echo").unwrap();
    assert!(echo_tool.deferred());
    assert_eq!(echo_tool.timeout(), Some(Duration::from_secs(3)));
    assert_eq!(
        echo_tool.execution_mode(),
        Some(pi_tool::ExecutionMode::Sequential)
    );
    assert!(echo_tool.validator().is_some());
    assert!(tools.get("add").unwrap().deferred());
    // Validated and run as before.
    let ok = tools
        .run(&ToolCall::new("c1", "add", json!({"a": 2, "b": "3"})))
        .await;
    assert_eq!(ok.text_content(), "5");
    let bad = tools.run(&ToolCall::new("c2", "echo", json!({}))).await;
    assert!(bad.is_error);
    assert!(
        bad.text_content()
            .contains("text: missing required property")
    );
}

#[test]
fn wrapping_twice_keeps_one_wrapper() {
    let once = Deferred::wrap(std::sync::Arc::new(echo("echo")));
    let twice = Deferred::wrap(std::sync::Arc::clone(&once));
    assert!(std::sync::Arc::ptr_eq(&once, &twice));
}

#[test]
fn defer_when_more_than_is_a_threshold() {
    let small = ToolRegistry::new()
        .with(echo("a"))
        .with(echo("b"))
        .defer_when_more_than(2);
    assert!(small.tools().all(|tool| !tool.deferred()));
    let large = ToolRegistry::new()
        .with(echo("a"))
        .with(echo("b"))
        .with(echo("c"))
        .defer_when_more_than(2);
    assert!(large.tools().all(|tool| tool.deferred()));
}
