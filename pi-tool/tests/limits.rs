//! The per-call limits through `ToolRegistry::run` (`pi_tool`'s single-call pipeline): a 50 MB
//! argument and 100,000-deep input, as text and as a parsed value, get an error result naming
//! the limit, without a stack overflow or a copy; and the `timeout` / `blocking` keys reach
//! `AgentTool`.

use std::time::Duration;

use pi_tool::{
    AgentTool, ArgumentLimits, FnTool, ToolCall, ToolRegistry, ToolResult, tool, validate_arguments,
};
use serde_json::{Map, Value, json};

/// Store a note.
#[tool]
async fn note(text: String, tags: Option<Vec<Value>>) -> String {
    format!("{} bytes, {} tags", text.len(), tags.map_or(0, |t| t.len()))
}

/// Count the lines of a text (a sync fn: it runs on the blocking pool).
#[tool(blocking, timeout = "5m")]
fn count_lines(text: String) -> String {
    text.lines().count().to_string()
}

/// Look something up, within half a second.
#[tool(timeout = "500ms")]
async fn quick(key: String) -> String {
    key
}

async fn run(tools: &ToolRegistry, arguments: Value) -> ToolResult {
    let call = ToolCall::new("c1", "note", arguments);
    let result = tools.run(&call).await;
    dismantle(call.arguments);
    result
}

fn error_text(result: &ToolResult) -> String {
    assert!(
        result.is_error,
        "expected an error, got {}",
        result.text_content()
    );
    result.text_content()
}

/// `[[[ ... ]]]` `depth` levels deep, built without recursion.
fn deep_array(depth: usize) -> Value {
    let mut value = Value::Null;
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

/// Takes a deep value apart without recursion: serde_json's own drop would recurse once per
/// level and overflow the test's stack, which is a property of the test's input, not of the
/// code under test.
fn dismantle(value: Value) {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items),
            Value::Object(members) => pending.extend(members.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

const DEPTH_ERROR: &str = "Arguments for tool \"note\" are nested deeper than the limit of 128 levels; send flatter arguments";
const SIZE_ERROR: &str = "Arguments for tool \"note\" are larger than the limit of 1048576 bytes. \
                          Send smaller arguments (split the work into several calls)";

#[tokio::test]
async fn a_50_mb_argument_text_is_refused_by_its_length() {
    let tools = ToolRegistry::new().with(NoteTool);
    let text = format!("{{\"text\": \"{}\"}}", "x".repeat(50 * 1024 * 1024));
    assert_eq!(
        error_text(&run(&tools, Value::String(text)).await),
        SIZE_ERROR
    );
}

#[tokio::test]
async fn a_50_mb_parsed_argument_is_refused() {
    let tools = ToolRegistry::new().with(NoteTool);
    let arguments = json!({"text": "x".repeat(50 * 1024 * 1024)});
    assert_eq!(error_text(&run(&tools, arguments).await), SIZE_ERROR);
    // Many small members add up the same way.
    let tags: Vec<Value> = (0..200_000).map(|i| json!(format!("tag {i}"))).collect();
    let arguments = json!({"text": "t", "tags": tags});
    assert_eq!(error_text(&run(&tools, arguments).await), SIZE_ERROR);
}

#[tokio::test]
async fn a_100000_deep_argument_text_is_refused_before_parsing() {
    let tools = ToolRegistry::new().with(NoteTool);
    for deep in [
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
        "{\"a\":".repeat(100_000),
        format!("{{\"text\": \"t\", \"tags\": {}", "[".repeat(100_000)),
    ] {
        assert_eq!(
            error_text(&run(&tools, Value::String(deep)).await),
            DEPTH_ERROR
        );
    }
    // Brackets inside strings do not count.
    let quoted = json!({"text": "[".repeat(100_000)}).to_string();
    assert_eq!(
        run(&tools, Value::String(quoted)).await.text_content(),
        "100000 bytes, 0 tags"
    );
}

/// `{"text": "t", "tags": [[[ ... ]]]}`, 100,000 levels deep.
fn deep_arguments() -> Value {
    let mut members = Map::new();
    members.insert("text".into(), json!("t"));
    members.insert("tags".into(), deep_array(100_000));
    Value::Object(members)
}

#[tokio::test]
async fn a_100000_deep_parsed_argument_is_refused_without_overflowing() {
    let tools = ToolRegistry::new().with(NoteTool);
    let arguments = deep_arguments();
    assert_eq!(error_text(&run(&tools, arguments).await), DEPTH_ERROR);
    // The validation step alone refuses it too, before it clones or walks it.
    let arguments = deep_arguments();
    let err = validate_arguments(&NoteTool, &arguments).unwrap_err();
    assert_eq!(err.to_string(), DEPTH_ERROR);
    dismantle(arguments);
}

#[tokio::test]
async fn limits_are_configurable_per_registry() {
    let tight = ToolRegistry::new()
        .with(NoteTool)
        .with_argument_limits(ArgumentLimits::DEFAULT.max_bytes(32).max_depth(2));
    assert_eq!(
        run(&tight, json!({"text": "short"})).await.text_content(),
        "5 bytes, 0 tags"
    );
    assert_eq!(
        error_text(&run(&tight, json!({"text": "x".repeat(40)})).await),
        "Arguments for tool \"note\" are larger than the limit of 32 bytes. Send smaller \
         arguments (split the work into several calls)"
    );
    assert_eq!(
        error_text(&run(&tight, json!({"text": "t", "tags": [[1]]})).await),
        "Arguments for tool \"note\" are nested deeper than the limit of 2 levels; send flatter arguments"
    );
    // Raised limits let large arguments through.
    let roomy = ToolRegistry::new()
        .with(NoteTool)
        .with_argument_limits(ArgumentLimits::DEFAULT.max_bytes(8 * 1024 * 1024));
    assert_eq!(
        run(&roomy, json!({"text": "x".repeat(4 * 1024 * 1024)}))
            .await
            .text_content(),
        "4194304 bytes, 0 tags"
    );
}

#[tokio::test]
async fn the_timeout_and_blocking_keys_reach_the_tool() {
    assert_eq!(QuickTool.timeout(), Some(Duration::from_millis(500)));
    assert!(!QuickTool.blocking());
    assert_eq!(CountLinesTool.timeout(), Some(Duration::from_secs(300)));
    assert!(CountLinesTool.blocking());
    assert_eq!(NoteTool.timeout(), None);
    assert!(!NoteTool.blocking());
    // Outside the agent loop a sync tool simply runs in place.
    let tools = ToolRegistry::new().with(CountLinesTool);
    let result = tools
        .run(&ToolCall::new(
            "c1",
            "count_lines",
            json!({"text": "a\nb\nc"}),
        ))
        .await;
    assert_eq!(result.text_content(), "3");
}

#[test]
fn fn_tools_take_a_timeout_and_the_blocking_flag() {
    let schema = json!({"type": "object"});
    let plain = FnTool::builder("plain", "Plain.", schema.clone())
        .build(|_args, _ctx| async { "ok" })
        .unwrap();
    assert_eq!((plain.timeout(), plain.blocking()), (None, false));
    let bounded = FnTool::builder("bounded", "Bounded.", schema)
        .timeout(Duration::from_secs(2))
        .blocking()
        .build(|_args, _ctx| async { "ok" })
        .unwrap();
    assert_eq!(
        (bounded.timeout(), bounded.blocking()),
        (Some(Duration::from_secs(2)), true)
    );
}

/// A section of an outline: a recursive type, two JSON levels per section.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Section {
    title: String,
    children: Vec<Section>,
}

/// Count an outline's levels, and name its first leaf.
#[tool]
async fn outline(root: Section) -> String {
    let mut levels = 1;
    let mut section = &root;
    while let Some(child) = section.children.first() {
        levels += 1;
        section = child;
    }
    format!("{levels} levels down to {}", section.title)
}

#[tokio::test]
async fn a_recursive_argument_serde_reads_is_not_refused_by_default() {
    // 50 sections: 101 JSON levels with the arguments' own object.
    let mut tree = json!({"title": "leaf", "children": []});
    for _ in 1..50 {
        tree = json!({"title": "section", "children": [tree]});
    }
    let tools = ToolRegistry::new().with(OutlineTool);
    for arguments in [
        json!({ "root": tree }),
        Value::String(json!({ "root": tree }).to_string()),
    ] {
        let result = tools.run(&ToolCall::new("c1", "outline", arguments)).await;
        assert!(!result.is_error, "{}", result.text_content());
        assert_eq!(result.text_content(), "50 levels down to leaf");
    }
}

#[test]
fn no_argument_serde_json_reads_is_refused_by_the_default_limits() {
    // serde_json reads text at most 127 levels deep; the default limit must take all of it.
    let mut deepest_read = 0;
    for depth in 120..=140 {
        let text = format!(
            "{{\"v\": {}{}}}",
            "[".repeat(depth - 1),
            "]".repeat(depth - 1)
        );
        let Ok(parsed) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        deepest_read = depth;
        let limits = ArgumentLimits::DEFAULT;
        assert!(limits.check("t", &Value::String(text)).is_ok(), "{depth}");
        assert!(limits.check("t", &parsed).is_ok(), "{depth}");
        dismantle(parsed);
    }
    assert_eq!(deepest_read, 127, "serde_json's recursion limit moved");
}
