//! The tool service's pipeline without a server: the same texts as the loop for unknown tools,
//! invalid arguments, failures and panics, and the idempotency key reaches the tool.

use pi_restate::{PiTools, RemoteCall};
use pi_tool::{ToolContext, ToolRegistry, tool};
use serde_json::{Value, json};

/// Returns the call's idempotency key.
#[tool]
async fn whoami(ctx: ToolContext) -> String {
    ctx.idempotency_key().unwrap_or("none").to_owned()
}

/// Divides.
#[tool]
async fn divide(a: i64, b: i64) -> Result<String, String> {
    if b == 0 {
        return Err("division by zero".into());
    }
    Ok((a / b).to_string())
}

/// Panics.
#[tool]
async fn explode() -> String {
    panic!("boom")
}

fn service() -> PiTools {
    PiTools::new(
        ToolRegistry::new()
            .with(WhoamiTool)
            .with(DivideTool)
            .with(ExplodeTool),
    )
}

fn call(tool: &str, arguments: Value) -> RemoteCall {
    RemoteCall {
        tool: tool.into(),
        tool_call_id: "c1".into(),
        arguments,
        idempotency_key: "session-1/c1".into(),
    }
}

async fn text(tool: &str, arguments: Value) -> (String, bool) {
    let result = service().run_call(call(tool, arguments)).await;
    let value = serde_json::to_value(&result).expect("serializes");
    (
        value["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        result.is_error,
    )
}

#[tokio::test]
async fn a_call_runs_through_the_loops_pipeline() {
    assert_eq!(
        text("whoami", json!({})).await,
        ("session-1/c1".into(), false)
    );
    assert_eq!(
        text("divide", json!({"a": "9", "b": 3})).await,
        ("3".into(), false)
    );
    assert_eq!(
        text("divide", json!({"a": 1, "b": 0})).await,
        ("division by zero".into(), true)
    );
    assert_eq!(
        text("explode", json!({})).await,
        ("Tool explode panicked: boom".into(), true)
    );
    assert_eq!(
        text("divde", json!({})).await,
        (
            "Tool divde not found (did you mean \"divide\"?)".into(),
            true
        )
    );
    let (invalid, is_error) = text("divide", json!({"a": "three"})).await;
    assert!(is_error);
    assert!(
        invalid.starts_with("Validation failed for tool \"divide\":\n"),
        "{invalid}"
    );
    assert!(
        invalid.contains("  - b: missing required property"),
        "{invalid}"
    );
}

#[test]
fn a_remote_call_has_a_stable_wire_shape() {
    let value = serde_json::to_value(call("divide", json!({"a": 1}))).expect("serializes");
    assert_eq!(
        value,
        json!({"tool": "divide", "toolCallId": "c1", "arguments": {"a": 1}, "idempotencyKey": "session-1/c1"})
    );
    let malformed = serde_json::from_value::<RemoteCall>(json!({"tool": 3}));
    assert!(malformed.is_err());
}
