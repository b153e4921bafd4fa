//! Validation: each lossless normalization, and each error message, byte for byte.

use pi_tool::{
    AgentTool, ArgumentValidator, BoxFuture, ToolContext, ToolError, ToolResult, ToolSpec, tool,
};
use serde_json::{Value, json};

fn echo_spec() -> ToolSpec {
    // The `echo` tool of pi's benchmark (bench/pi/README.md), as plain JSON Schema.
    ToolSpec {
        name: "echo".into(),
        description: "Echo text.".into(),
        parameters: json!({
            "type": "object",
            "required": ["text", "count"],
            "properties": {
                "text": {"type": "string"},
                "count": {"type": "integer"},
                "mode": {"type": "string", "enum": ["upper", "lower", "same"]},
                "ratio": {"type": "number"},
                "loud": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "meta": {"type": "object", "properties": {"depth": {"type": "integer"}}}
            }
        }),
    }
}

fn ok(args: Value) -> Value {
    ArgumentValidator::new(&echo_spec())
        .validate(args)
        .expect("valid")
}

fn err(args: Value) -> String {
    ArgumentValidator::new(&echo_spec())
        .validate(args)
        .expect_err("invalid")
        .to_string()
}

#[test]
fn valid_arguments_pass_unchanged() {
    let args = json!({"text": "t0", "count": 0, "mode": "upper"});
    assert_eq!(ok(args.clone()), args);
}

#[test]
fn numeric_strings_become_numbers() {
    assert_eq!(
        ok(json!({"text": "a", "count": "7"})),
        json!({"text": "a", "count": 7})
    );
    assert_eq!(
        ok(json!({"text": "a", "count": " -3 "})),
        json!({"text": "a", "count": -3})
    );
    assert_eq!(
        ok(json!({"text": "a", "count": 1, "ratio": "2.5"}))["ratio"],
        json!(2.5)
    );
    assert_eq!(
        ok(json!({"text": "a", "count": "1e3"}))["count"],
        json!(1000)
    );
}

#[test]
fn integral_floats_become_json_integers() {
    let normalized = ok(json!({"text": "a", "count": 5.0}));
    assert_eq!(normalized["count"], json!(5));
    assert!(normalized["count"].is_i64(), "5, not 5.0");
}

#[test]
fn a_fractional_string_is_not_truncated_to_an_integer() {
    assert_eq!(
        err(json!({"text": "a", "count": "5.5"})),
        "Validation failed for tool \"echo\":\n  - count: expected integer; got \"5.5\"\n\nReceived arguments:\n{\n  \"text\": \"a\",\n  \"count\": \"5.5\"\n}"
    );
    assert!(
        err(json!({"text": "a", "count": 1.5})).contains("  - count: expected integer; got 1.5\n")
    );
}

#[test]
fn boolean_strings_become_booleans() {
    assert_eq!(
        ok(json!({"text": "a", "count": 1, "loud": "true"}))["loud"],
        json!(true)
    );
    assert_eq!(
        ok(json!({"text": "a", "count": 1, "loud": "False"}))["loud"],
        json!(false)
    );
    assert!(
        err(json!({"text": "a", "count": 1, "loud": "yes"}))
            .contains("  - loud: expected boolean; got \"yes\"\n")
    );
}

#[test]
fn numbers_and_booleans_become_strings() {
    assert_eq!(ok(json!({"text": 42, "count": 1}))["text"], json!("42"));
    assert_eq!(ok(json!({"text": true, "count": 1}))["text"], json!("true"));
    assert_eq!(
        ok(json!({"text": "a", "count": 1, "tags": [1, false]}))["tags"],
        json!(["1", "false"])
    );
}

#[test]
fn null_for_an_optional_property_means_absent() {
    assert_eq!(
        ok(json!({"text": "a", "count": 1, "mode": null, "ratio": null})),
        json!({"text": "a", "count": 1})
    );
}

#[test]
fn null_is_never_turned_into_a_zero_value() {
    assert_eq!(
        err(json!({"text": null, "count": null})),
        "Validation failed for tool \"echo\":\n  - text: expected string; got null\n  - count: expected integer; got null\n\nReceived arguments:\n{\n  \"text\": null,\n  \"count\": null\n}"
    );
}

#[test]
fn json_strings_are_parsed_where_an_object_or_array_is_expected() {
    let normalized = ok(
        json!({"text": "a", "count": 1, "tags": "[\"x\", \"y\"]", "meta": "{\"depth\": \"2\"}"}),
    );
    assert_eq!(normalized["tags"], json!(["x", "y"]));
    assert_eq!(
        normalized["meta"],
        json!({"depth": 2}),
        "the parsed value is normalized too"
    );
}

#[test]
fn arguments_sent_as_a_json_string_are_parsed() {
    assert_eq!(
        ok(json!("{\"text\": \"a\", \"count\": 2}")),
        json!({"text": "a", "count": 2})
    );
    assert!(
        err(json!("")).contains("  - text: missing required property\n"),
        "empty means {{}}"
    );
    assert!(
        err(Value::Null).contains("  - text: missing required property\n"),
        "null means {{}}"
    );
}

#[test]
fn invalid_json_arguments_are_reported() {
    assert_eq!(
        err(json!("{\"text\": ")),
        "Validation failed for tool \"echo\":\n  - root: arguments are not valid JSON (EOF while parsing a value at line 1 column 9)\n\nReceived arguments:\n\"{\\\"text\\\": \""
    );
}

#[test]
fn pi_benchmark_w4_message() {
    assert_eq!(
        err(json!({"text": ["not", "a", "string"], "count": "three"})),
        "Validation failed for tool \"echo\":\n  - text: expected string; got [\"not\",\"a\",\"string\"]\n  - count: expected integer; got \"three\"\n\nReceived arguments:\n{\n  \"text\": [\n    \"not\",\n    \"a\",\n    \"string\"\n  ],\n  \"count\": \"three\"\n}"
    );
}

#[test]
fn missing_properties_are_reported_at_their_own_path() {
    assert_eq!(
        err(json!({})),
        "Validation failed for tool \"echo\":\n  - text: missing required property\n  - count: missing required property\n\nReceived arguments:\n{}"
    );
}

#[test]
fn enum_messages_list_the_allowed_values() {
    assert!(
        err(json!({"text": "a", "count": 1, "mode": "UPPER"}))
            .contains("  - mode: expected one of \"upper\", \"lower\", \"same\"; got \"UPPER\"\n")
    );
}

#[test]
fn root_must_be_an_object() {
    assert!(err(json!([1, 2])).contains("  - root: expected object; got [1,2]\n"));
}

#[test]
fn nested_paths_are_dotted() {
    assert!(
        err(json!({"text": "a", "count": 1, "meta": {"depth": "deep"}}))
            .contains("  - meta.depth: expected integer; got \"deep\"\n")
    );
    assert!(
        err(json!({"text": "a", "count": 1, "tags": ["a", {"b": 1}]}))
            .contains("  - tags.1: expected string; got {\"b\":1}\n")
    );
}

#[test]
fn huge_values_are_shortened_in_messages_and_received_arguments() {
    let text = err(json!({"text": "a", "count": "x".repeat(10_000)}));
    assert!(text.contains("  - count: expected integer; got \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…\" (10000 characters)\n"));
    assert!(text.contains("… (10000 characters)\""));
    assert!(
        text.len() < 1_000,
        "the model is not sent 10 KB back: {} bytes",
        text.len()
    );
}

fn closed_spec() -> ToolSpec {
    ToolSpec {
        name: "edit".into(),
        description: "Edit a file.".into(),
        parameters: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["path", "edits"],
            "properties": {
                "path": {"type": "string"},
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["oldText", "newText"],
                        "properties": {"oldText": {"type": "string"}, "newText": {"type": "string", "minLength": 1}}
                    }
                }
            }
        }),
    }
}

#[test]
fn unknown_properties_suggest_the_closest_name() {
    let text = ArgumentValidator::new(&closed_spec())
        .validate(
            json!({"path": "a", "edits": [{"oldtext": "a", "newText": "b"}], "edit": 1, "zzz": 2}),
        )
        .expect_err("invalid")
        .to_string();
    assert_eq!(
        text.lines().take(5).collect::<Vec<_>>(),
        [
            "Validation failed for tool \"edit\":",
            "  - edits.0.oldText: missing required property",
            "  - edits.0.oldtext: unknown property (did you mean \"oldText\"?)",
            "  - edit: unknown property (did you mean \"edits\"?)",
            "  - zzz: unknown property (allowed: \"path\", \"edits\")",
        ]
    );
}

#[test]
fn string_length_limits_are_explained() {
    let text = ArgumentValidator::new(&closed_spec())
        .validate(json!({"path": "a", "edits": [{"oldText": "a", "newText": ""}]}))
        .expect_err("invalid")
        .to_string();
    assert!(
        text.contains("  - edits.0.newText: expected at least 1 character; got \"\"\n"),
        "{text}"
    );
}

/// Get the weather.
#[tool]
async fn weather(
    /// City
    city: String,
    #[schemars(range(min = 1, max = 7))] days: Option<u8>,
    unit: Option<Unit>,
) -> String {
    format!("{city} {days:?} {unit:?}")
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

#[test]
fn generated_tools_validate_ranges_and_optional_enums() {
    let text = pi_tool::validate_arguments(
        &WeatherTool,
        &json!({"city": "Oslo", "days": 9, "unit": "kelvin"}),
    )
    .expect_err("invalid")
    .to_string();
    assert_eq!(
        text,
        "Validation failed for tool \"weather\":\n  - days: expected at most 7; got 9\n  - unit: expected one of \"celsius\", \"fahrenheit\"; got \"kelvin\"\n\nReceived arguments:\n{\n  \"city\": \"Oslo\",\n  \"days\": 9,\n  \"unit\": \"kelvin\"\n}"
    );
    assert_eq!(
        pi_tool::validate_arguments(
            &WeatherTool,
            &json!({"city": "Oslo", "days": "3", "unit": null})
        )
        .expect("valid"),
        json!({"city": "Oslo", "days": 3})
    );
}

/// A hand-written tool without its own validator uses the process-wide cache.
struct Plain(ToolSpec);

impl AgentTool for Plain {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn label(&self) -> &str {
        "plain"
    }
    fn execute(
        &self,
        _args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        Box::pin(async { Ok(ToolResult::text("ran")) })
    }
}

#[test]
fn hand_written_tools_validate_through_the_cache() {
    let tool = Plain(echo_spec());
    assert_eq!(
        pi_tool::validate_arguments(&tool, &json!({"text": "a", "count": "2"})).expect("valid")["count"],
        json!(2)
    );
    let changed = Plain(ToolSpec {
        parameters: json!({"type": "object", "required": ["other"]}),
        ..echo_spec()
    });
    assert!(
        pi_tool::validate_arguments(&changed, &json!({"text": "a", "count": 2}))
            .expect_err("a different schema under the same name is not confused with the first")
            .to_string()
            .contains("  - other: missing required property\n")
    );
}

#[test]
fn a_missing_property_points_at_a_misspelled_key() {
    assert_eq!(
        err(json!({"txt": "a", "count": 1})),
        "Validation failed for tool \"echo\":\n  - text: missing required property (got \"txt\"; is it misspelled?)\n\nReceived arguments:\n{\n  \"txt\": \"a\",\n  \"count\": 1\n}"
    );
}

/// Rename a file.
#[tool(deny_unknown_fields)]
async fn rename(
    /// Current path
    from: String,
    /// New path
    to: String,
) -> String {
    format!("{from} -> {to}")
}

#[test]
fn deny_unknown_fields_closes_the_schema_and_names_the_stray_key() {
    assert_eq!(
        RenameTool.spec().parameters["additionalProperties"],
        json!(false)
    );
    assert_eq!(
        pi_tool::validate_arguments(&RenameTool, &json!({"from": "a", "to": "b", "too": "c"}))
            .expect_err("unknown key")
            .to_string(),
        "Validation failed for tool \"rename\":\n  - too: unknown property (did you mean \"to\"?)\n\nReceived arguments:\n{\n  \"from\": \"a\",\n  \"to\": \"b\",\n  \"too\": \"c\"\n}"
    );
}
