//! Target: the argument pipeline of `#[tool]`s (lookup, normalization, validation,
//! deserialization), through the registry's single-call path, for tools that together take
//! every parameter shape users write.

use std::collections::{BTreeMap, HashMap};
use std::num::{NonZeroI32, NonZeroU64};
use std::sync::LazyLock;

use pi_runtime::providers::PartialJson;
use pi_tool::{
    ArgumentLimits, DEFAULT_MAX_ARGUMENT_DEPTH, Json, State, ToolCall, ToolContext, ToolRegistry,
    tool, validate_arguments,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Echo the integer widths.
#[tool]
#[allow(clippy::too_many_arguments)]
async fn integers(
    a8: i8,
    a16: i16,
    a32: i32,
    a64: i64,
    a128: Option<i128>,
    b8: u8,
    b16: Option<u16>,
    b32: Option<u32>,
    b64: Option<u64>,
    bsize: Option<usize>,
    nz: Option<NonZeroI32>,
    nzu: Option<NonZeroU64>,
) -> Json<Value> {
    Json(json!({
        "a8": a8, "a16": a16, "a32": a32, "a64": a64, "a128": a128, "b8": b8, "b16": b16,
        "b32": b32, "b64": b64, "bsize": bsize, "nz": nz, "nzu": nzu,
    }))
}

/// Echo the other scalars.
#[tool]
async fn scalars(
    /// A name
    name: String,
    flag: bool,
    ratio: f64,
    small: Option<f32>,
    letter: Option<char>,
    #[schemars(range(min = 1, max = 7))] days: Option<u8>,
    #[schemars(length(min = 2, max = 5))] code: Option<String>,
) -> Json<Value> {
    Json(json!({
        "name": name, "flag": flag, "ratio": ratio, "small": small, "letter": letter,
        "days": days, "code": code,
    }))
}

/// A nested record.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Debug)]
pub(crate) struct Item {
    /// Its name
    name: String,
    /// Its tags
    tags: Option<Vec<String>>,
}

/// Echo the containers.
#[tool]
async fn containers(
    items: Vec<Item>,
    matrix: Option<Vec<Vec<i32>>>,
    env: Option<BTreeMap<String, Option<String>>>,
    counts: Option<HashMap<String, u32>>,
    pair: Option<(i32, String, bool)>,
    rgb: Option<[u8; 3]>,
    anything: Option<Value>,
) -> Json<Value> {
    let counts: Option<BTreeMap<String, u32>> = counts.map(|c| c.into_iter().collect());
    Json(json!({
        "items": items, "matrix": matrix, "env": env, "counts": counts, "pair": pair,
        "rgb": rgb, "anything": anything,
    }))
}

/// An internally tagged enum.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Debug)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Shape {
    /// No size
    Point,
    /// A circle
    Circle {
        /// Its radius
        radius: f64,
    },
    /// A named shape
    Named {
        /// Its name
        name: String,
        /// Its size
        size: Option<u8>,
    },
}

/// An adjacently tagged enum.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Debug)]
#[serde(tag = "t", content = "c")]
pub(crate) enum Adjacent {
    /// Text
    Text(String),
    /// A count
    Count(u8),
    /// A pair
    Pair(i16, bool),
}

/// An externally tagged enum.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Debug)]
pub(crate) enum External {
    /// Stop
    Stop,
    /// Move
    Move {
        /// x
        x: i32,
        /// y
        y: i32,
    },
    /// Jump
    Jump(u16),
}

/// An untagged enum.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Debug)]
#[serde(untagged)]
pub(crate) enum Loose {
    /// A number
    Number(i64),
    /// Words
    Words(String),
    /// A flag
    Flag(bool),
}

/// A unit enum.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Debug)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Unit {
    /// Celsius
    Celsius,
    /// Fahrenheit
    Fahrenheit,
}

/// Echo the enums.
#[tool]
async fn enums(
    shape: Shape,
    adjacent: Option<Adjacent>,
    external: Option<External>,
    loose: Option<Loose>,
    unit: Option<Unit>,
) -> Json<Value> {
    Json(json!({
        "shape": shape, "adjacent": adjacent, "external": external, "loose": loose, "unit": unit,
    }))
}

/// Flattened fields.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Debug)]
pub(crate) struct Flat {
    /// A renamed count
    #[serde(rename = "flatCount")]
    flat_count: u32,
    /// A note
    flat_note: Option<String>,
}

/// A record with renamed, defaulted and flattened fields.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Options {
    /// Defaults to 0
    #[serde(default)]
    retry_count: u32,
    /// Flattened
    #[serde(flatten)]
    flat: Flat,
}

/// A recursive type (keeps its `$defs`).
#[derive(Serialize, Deserialize, schemars::JsonSchema, Debug)]
pub(crate) struct Tree {
    /// The label
    label: String,
    /// The children
    children: Vec<Tree>,
}

/// Echo attributes, recursion and injected parameters.
#[tool]
async fn records(
    options: Options,
    tree: Option<Tree>,
    #[serde(rename = "type")] kind: Option<String>,
    prefix: State<Prefix>,
    ctx: ToolContext,
) -> Result<Json<Value>, String> {
    if prefix.0 != "p" || ctx.tool_call_id() != "call-1" {
        return Err(format!(
            "injected {:?} and {:?}",
            prefix.0,
            ctx.tool_call_id()
        ));
    }
    Ok(Json(
        json!({ "options": options, "tree": tree, "type": kind }),
    ))
}

/// Shared state given to `records`.
#[derive(Debug)]
pub(crate) struct Prefix(String);

/// Take nothing.
#[tool]
async fn nothing() -> &'static str {
    "nothing"
}

/// The names of the target's tools, indexed by the input's first byte.
pub const TOOL_NAMES: [&str; 7] = [
    "integers",
    "scalars",
    "containers",
    "enums",
    "records",
    "nothing",
    "missing_tool",
];

static REGISTRY: LazyLock<ToolRegistry> = LazyLock::new(|| {
    ToolRegistry::new()
        .with(IntegersTool)
        .with(ScalarsTool)
        .with(ContainersTool)
        .with(EnumsTool)
        .with(RecordsTool)
        .with(NothingTool)
        .with_state(Prefix("p".to_owned()))
});

/// Each tool's schema compiled by `jsonschema` here, apart from the validators under test.
static SCHEMAS: LazyLock<HashMap<&'static str, jsonschema::Validator>> = LazyLock::new(|| {
    TOOL_NAMES
        .iter()
        .filter_map(|&name| {
            let tool = REGISTRY.get(name)?;
            let compiled = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(false)
                .build(&tool.spec().parameters)
                .unwrap_or_else(|err| panic!("the schema of {name} compiles: {err}"));
            Some((name, compiled))
        })
        .collect()
});

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|err| panic!("a current-thread runtime: {err}"))
});

/// How deeply `arguments` nest, counted here rather than by the code under test: levels of
/// objects and arrays of a parsed value, or for argument text that stayed a string, the deepest
/// run of brackets left open outside string literals (`{}` is one level, `{"a": []}` two).
fn nesting(arguments: &Value) -> usize {
    match arguments {
        Value::String(text) => {
            let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0, false, false);
            for c in text.chars() {
                match (in_string, escaped, c) {
                    (true, true, _) => escaped = false,
                    (true, false, '\\') => escaped = true,
                    (true, false, '"') | (false, _, '"') => in_string = !in_string,
                    (false, _, '[' | '{') => {
                        depth += 1;
                        deepest = deepest.max(depth);
                    }
                    (false, _, ']' | '}') => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
            deepest
        }
        Value::Array(items) => 1 + items.iter().map(nesting_of_value).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(nesting_of_value).max().unwrap_or(0),
        _ => 0,
    }
}

/// [`nesting`] of a value inside parsed arguments (a string there is a leaf).
fn nesting_of_value(value: &Value) -> usize {
    match value {
        Value::String(_) => 0,
        other => nesting(other),
    }
}

/// Input: a tool-selector byte, then the argument text a model streamed (lossy UTF-8), read as
/// the providers read it ([`PartialJson::finish`]: JSON, repaired JSON, or the raw string).
///
/// Asserts: arguments the quick check takes as they are pass an independent compile of the
/// tool's schema, within the limits, and the call succeeds; the call gives exactly one result;
/// an error result is `Tool <name> not found`
/// for the unknown tool, the depth limit's refusal for arguments nested deeper than the default limit
/// (counted independently), and our validation report (`Validation failed for tool "<name>":`,
/// with the received arguments) otherwise, never a serde error after validation passed nor a
/// panic; a success echoes what was deserialized, and that echo, sent again as arguments,
/// validates and deserializes to the same echo.
pub fn args_pipeline(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let name = TOOL_NAMES[usize::from(selector) % TOOL_NAMES.len()];
    let mut parser = PartialJson::new();
    parser.push(&String::from_utf8_lossy(body));
    let call = ToolCall::new("call-1", name, parser.finish());
    let result = RUNTIME.block_on(REGISTRY.run(&call));
    let text = result.text_content();
    let Some(tool) = REGISTRY.get(name) else {
        assert!(result.is_error, "an unknown tool ran");
        assert!(
            text.starts_with(&format!("Tool {name} not found")),
            "{text}"
        );
        return;
    };
    if let Some(validator) = tool.validator()
        && validator.accepts_as_is(&call.arguments, &ArgumentLimits::DEFAULT)
    {
        assert!(
            ArgumentLimits::DEFAULT.check(name, &call.arguments).is_ok()
                && SCHEMAS[name].is_valid(&call.arguments),
            "the quick check took {} for {name}",
            call.arguments
        );
        assert!(!result.is_error, "taken as is, yet refused: {text}");
    }
    if result.is_error {
        if text.starts_with(&format!("Arguments for tool \"{name}\" are nested deeper")) {
            assert!(
                nesting(&call.arguments) > DEFAULT_MAX_ARGUMENT_DEPTH,
                "refused as too deep at {} levels: {text}",
                nesting(&call.arguments)
            );
            return;
        }
        let header = format!("Validation failed for tool \"{name}\":\n  - ");
        assert!(
            text.starts_with(&header) && text.contains("\n\nReceived arguments:\n"),
            "not a validation report: {text}"
        );
        return;
    }
    if name == "nothing" {
        assert_eq!(text, "nothing");
        return;
    }
    let echo = result.details;
    if let Err(err) = validate_arguments(tool.as_ref(), &echo) {
        panic!("the deserialized arguments {echo} do not validate: {err}");
    }
    let again = RUNTIME.block_on(REGISTRY.run(&ToolCall::new("call-1", name, echo.clone())));
    assert!(!again.is_error, "{echo} fails: {}", again.text_content());
    assert_eq!(again.details, echo, "the echo does not round-trip");
}
