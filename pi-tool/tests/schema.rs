//! The schema a model sees, for a representative set of parameter types.

use std::collections::BTreeMap;

use pi_tool::{AgentTool, ToolContext, tool};
use serde_json::{Value, json};

fn parameters(tool: &dyn AgentTool) -> Value {
    tool.spec().parameters.clone()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
/// A temperature unit.
pub enum Unit {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

/// Strings, integers with ranges, enums and optionals.
#[tool]
async fn forecast(
    /// City name, e.g. "Paris"
    city: String,
    /// Temperature unit
    unit: Option<Unit>,
    /// Days ahead
    #[schemars(range(min = 1, max = 7))]
    days: Option<u8>,
    ratio: f64,
    ctx: ToolContext,
) -> String {
    let _ = (city, unit, days, ratio, ctx);
    String::new()
}

#[test]
fn scalars_enums_and_optionals() {
    assert_eq!(
        parameters(&ForecastTool),
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {
                    "anyOf": [
                        {
                            "oneOf": [
                                {"type": "string", "const": "celsius", "description": "Degrees Celsius."},
                                {"type": "string", "const": "fahrenheit", "description": "Degrees Fahrenheit."}
                            ],
                            "description": "A temperature unit."
                        },
                        {"type": "null"}
                    ],
                    "description": "Temperature unit"
                },
                "days": {
                    "description": "Days ahead",
                    "type": ["integer", "null"],
                    "minimum": 1,
                    "maximum": 7
                },
                "ratio": {"type": "number"}
            },
            "required": ["city", "ratio"]
        })
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
/// One replacement.
pub struct Edit {
    /// Text to find.
    #[serde(rename = "oldText")]
    pub old_text: String,
    /// Replacement.
    #[serde(rename = "newText")]
    pub new_text: String,
}

/// Nested structs, vectors, maps, renames and defaults.
#[tool]
async fn apply(
    /// Where
    path: String,
    /// What
    edits: Vec<Edit>,
    labels: BTreeMap<String, i64>,
    #[serde(rename = "ignoreCase", default)] ignore_case: bool,
    #[serde(default = "default_limit")] limit: u32,
    tags: Option<Vec<String>>,
) -> String {
    let _ = (path, edits, labels, ignore_case, limit, tags);
    String::new()
}

fn default_limit() -> u32 {
    100
}

#[test]
fn nested_structs_are_inlined_and_renames_kept() {
    assert_eq!(
        parameters(&ApplyTool),
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Where"},
                "edits": {
                    "type": "array",
                    "items": {
                        "description": "One replacement.",
                        "type": "object",
                        "properties": {
                            "oldText": {"type": "string", "description": "Text to find."},
                            "newText": {"type": "string", "description": "Replacement."}
                        },
                        "required": ["oldText", "newText"]
                    },
                    "description": "What"
                },
                "labels": {"type": "object", "additionalProperties": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX}},
                "ignoreCase": {"type": "boolean", "default": false},
                "limit": {"type": "integer", "minimum": 0, "default": 100, "maximum": u32::MAX},
                "tags": {"type": ["array", "null"], "items": {"type": "string"}}
            },
            "required": ["path", "edits", "labels"]
        })
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
/// A tree of notes.
pub struct Node {
    /// The note.
    pub note: String,
    /// Children.
    pub children: Vec<Node>,
}

/// A recursive type keeps its `$defs`.
#[tool]
async fn outline(root: Node) -> String {
    root.note
}

#[test]
fn recursive_types_keep_their_definitions() {
    let schema = parameters(&OutlineTool);
    assert_eq!(
        schema["properties"]["root"],
        json!({"$ref": "#/$defs/Node"})
    );
    assert_eq!(
        schema["$defs"]["Node"]["properties"]["children"],
        json!({"type": "array", "items": {"$ref": "#/$defs/Node"}, "description": "Children."})
    );
    assert!(schema.get("title").is_none() && schema.get("$schema").is_none());
}

/// No arguments at all.
#[tool]
async fn now() -> &'static str {
    "12:00"
}

#[test]
fn a_tool_without_arguments_has_an_empty_object_schema() {
    assert_eq!(
        parameters(&NowTool),
        json!({"type": "object", "properties": {}})
    );
}

/// Raw identifiers lose their `r#`.
#[tool]
async fn r#match(r#type: String) -> String {
    r#type
}

#[test]
fn raw_identifiers_are_unraw() {
    let spec = MatchTool.spec();
    assert_eq!(spec.name, "match");
    assert_eq!(spec.parameters["required"], json!(["type"]));
}

#[test]
fn the_spec_is_built_once() {
    assert!(std::ptr::eq(ForecastTool.spec(), ForecastTool.spec()));
    assert!(std::ptr::eq(
        ForecastTool
            .validator()
            .expect("generated tools carry a validator"),
        ForecastTool
            .validator()
            .expect("generated tools carry a validator"),
    ));
}
