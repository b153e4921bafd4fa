//! Arguments come from an untrusted model: malformed, mistyped, oversized and hostile inputs
//! get an error result the model can act on, never a panic or a hang.

use pi_tool::{
    ArgumentLimits, MAX_SUPPORTED_ARGUMENT_DEPTH, ToolCall, ToolRegistry, ToolResult, tool,
};
use serde_json::{Value, json};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Item {
    name: String,
    tags: Option<Vec<String>>,
}

/// Store items.
#[tool]
async fn store(
    /// Items to store
    items: Vec<Item>,
    /// A small count
    #[schemars(range(max = 10))]
    count: Option<u8>,
    ratio: Option<f64>,
) -> String {
    let characters: usize = items
        .iter()
        .map(|item| item.name.len() + item.tags.iter().flatten().map(String::len).sum::<usize>())
        .sum();
    format!(
        "{} items ({characters} bytes), {count:?}, {ratio:?}",
        items.len()
    )
}

/// Runs `store` with limits far above the defaults, so these cases reach the validator (the
/// limits themselves are tested in `limits.rs`).
async fn run(arguments: Value) -> ToolResult {
    let generous = ArgumentLimits::DEFAULT
        .max_bytes(64 * 1024 * 1024)
        .max_depth(MAX_SUPPORTED_ARGUMENT_DEPTH);
    let tools = ToolRegistry::new()
        .with(StoreTool)
        .with_argument_limits(generous);
    tools.run(&ToolCall::new("c1", "store", arguments)).await
}

fn error_text(result: &ToolResult) -> String {
    assert!(
        result.is_error,
        "expected an error, got {}",
        result.text_content()
    );
    result.text_content()
}

#[tokio::test]
async fn json_nested_deeper_than_the_parser_allows_is_an_error() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let text = error_text(&run(Value::String(format!("{{\"items\": {deep}}}"))).await);
    assert_eq!(
        text,
        "Arguments for tool \"store\" are nested deeper than the limit of 128 levels; send flatter arguments"
    );
}

#[tokio::test]
async fn a_deep_value_built_in_memory_is_rejected_without_overflowing() {
    let mut value = json!("leaf");
    for _ in 0..100 {
        value = json!([value]);
    }
    let text = error_text(&run(json!({"items": [{"name": "a", "tags": value}]})).await);
    assert!(
        text.contains("  - items.0.tags.0: expected string; got an array of 1 item\n"),
        "{text}"
    );
}

#[tokio::test]
async fn huge_arguments_are_handled_and_not_echoed_in_full() {
    let big = "x".repeat(5_000_000);
    let ok = run(json!({"items": [{"name": big}]})).await;
    assert_eq!(ok.text_content(), "1 items (5000000 bytes), None, None");
    let text = error_text(&run(json!({"items": [{"name": 1, "tags": [big]}], "count": big})).await);
    assert!(text.len() < 2_000, "{} bytes", text.len());
}

#[tokio::test]
async fn many_items_are_validated_in_linear_time() {
    let items: Vec<Value> = (0..100_000).map(|i| json!({"name": i})).collect();
    let result = run(json!({"items": items})).await;
    assert_eq!(
        result.text_content(),
        "100000 items (488890 bytes), None, None",
        "numbers became strings"
    );
}

#[tokio::test]
async fn out_of_range_and_odd_numbers_are_errors() {
    assert!(
        error_text(&run(json!({"items": [], "count": 300})).await)
            .contains("  - count: expected at most 10; got 300\n")
    );
    assert!(
        error_text(&run(json!({"items": [], "count": -1})).await)
            .contains("  - count: expected at least 0; got -1\n")
    );
    assert!(
        error_text(&run(json!({"items": [], "count": "1e400"})).await)
            .contains("  - count: expected integer or null; got \"1e400\"\n")
    );
    assert!(
        error_text(&run(json!({"items": [], "ratio": "NaN"})).await)
            .contains("  - ratio: expected number or null; got \"NaN\"\n")
    );
    assert!(
        error_text(&run(json!({"items": [], "ratio": "inf"})).await)
            .contains("  - ratio: expected number or null; got \"inf\"\n")
    );
    assert!(
        error_text(&run(json!({"items": [], "count": "99999999999999999999999"})).await)
            .contains("  - count:")
    );
}

#[tokio::test]
async fn unusual_keys_and_strings_are_fine() {
    let result =
        run(json!({"items": [{"name": "名前 🦀 \u{0}", "tags": ["\u{202e}rtl"]}], "💥": 1})).await;
    assert_eq!(result.text_content(), "1 items (19 bytes), None, None");
    let text = error_text(&run(json!({"itemz": [], "ïtems": 2})).await);
    assert!(
        text.contains("  - items: missing required property (got \""),
        "{text}"
    );
}

#[tokio::test]
async fn wrong_shapes_at_every_level_are_reported() {
    for (arguments, expected) in [
        (json!(42), "  - root: expected object; got 42\n"),
        (json!([]), "  - root: expected object; got []\n"),
        (json!(true), "  - root: expected object; got true\n"),
        (
            json!({"items": {"name": "a"}}),
            "  - items: expected array; got {\"name\":\"a\"}\n",
        ),
        (
            json!({"items": ["a"]}),
            "  - items.0: expected object; got \"a\"\n",
        ),
        (
            json!({"items": [{"tags": "not json"}]}),
            "  - items.0.name: missing required property\n",
        ),
        (
            json!({"items": "[{\"name\": 5"}),
            "  - items: expected array; got \"[{\\\"name\\\": 5\"\n",
        ),
    ] {
        let text = error_text(&run(arguments).await);
        assert!(
            text.contains(expected),
            "{text}\n---expected---\n{expected}"
        );
    }
}

#[tokio::test]
async fn a_flood_of_errors_is_summarised_not_listed() {
    let items: Vec<Value> = (0..100_000).map(|i| json!({"nam": i})).collect();
    let text = error_text(&run(json!({"items": items})).await);
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("  - "))
        .collect();
    assert_eq!(lines.len(), 21, "{text}");
    assert_eq!(
        lines[0],
        "  - items.0.name: missing required property (got \"nam\"; is it misspelled?)"
    );
    assert_eq!(lines[20], "  - … 99980 more problems not shown");
    assert!(text.len() < 10_000, "{} bytes", text.len());
}

/// A tool schema from elsewhere (an MCP server's `inputSchema`) whose `$ref`s chain ten
/// thousand definitions deep: compiling it would recurse once per link and overflow the stack,
/// so it is refused before anything compiles it, and every call says why.
#[test]
fn a_schema_with_a_chain_of_ten_thousand_references_is_refused_not_compiled() {
    let mut defs = serde_json::Map::new();
    for i in 0..10_000 {
        defs.insert(
            format!("D{i}"),
            json!({"$ref": format!("#/$defs/D{}", i + 1)}),
        );
    }
    defs.insert("D10000".to_owned(), json!({"type": "string"}));
    let spec = pi_tool::ToolSpec {
        name: "remote".into(),
        description: "A tool from a server.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/D0"}},
            "$defs": defs
        }),
    };
    // On a 2 MiB stack, as on a test or tokio worker thread.
    let outcome = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let validator = pi_tool::ArgumentValidator::new(&spec);
            assert!(!validator.accepts_as_is(&json!({"a": "x"}), &ArgumentLimits::DEFAULT));
            validator
                .validate(json!({"a": "x"}))
                .map_err(|err| err.to_string())
        })
        .expect("a thread")
        .join()
        .expect("no overflow");
    let text = outcome.expect_err("refused");
    assert!(
        text.contains("the tool's schema does not compile: its references nest")
            && text.contains("more than the 512 levels a schema may reach"),
        "{text}"
    );
}
