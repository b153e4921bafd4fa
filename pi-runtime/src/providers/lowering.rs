//! One [`ToolSpec`] schema, rewritten for each API's dialect, with a report of which modes a
//! schema qualifies for and why not.
//!
//! - OpenAI strict mode: every object closed (`additionalProperties: false`), every property
//!   required, the optional ones made nullable (a `null` coming back means absent: pi-tool's
//!   validation drops `null` for properties the tool's own schema does not require), `oneOf`
//!   as `anyOf`, unsupported keywords moved into the description.
//! - Anthropic: an object root (`type: "object"`, `properties`).
//! - Gemini `parameters`: the OpenAPI subset (no `$ref`, no type arrays, `nullable`, string
//!   enums only, no `additionalProperties`).

use std::fmt;

use pi_tool::ToolSpec;
use serde_json::{Map, Value, json};

use super::root_union::{is_root_union, object_root};

/// A wire dialect a schema can be lowered to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchemaMode {
    /// OpenAI Structured Outputs (`strict: true`), Chat Completions and Responses.
    OpenAiStrict,
    /// Anthropic Messages `input_schema` (non-strict).
    Anthropic,
    /// Gemini `functionDeclarations[].parameters` (the OpenAPI 3.0 subset).
    Gemini,
}

impl SchemaMode {
    /// Every mode, in a fixed order.
    pub const ALL: [SchemaMode; 3] = [
        SchemaMode::OpenAiStrict,
        SchemaMode::Anthropic,
        SchemaMode::Gemini,
    ];
}

impl fmt::Display for SchemaMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SchemaMode::OpenAiStrict => "OpenAI strict mode",
            SchemaMode::Anthropic => "Anthropic",
            SchemaMode::Gemini => "Gemini parameters",
        })
    }
}

/// Why a schema does not qualify for a mode: where (a dotted path, `root` for the top) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaProblem {
    /// The dotted path of the sub-schema (`root`, `filters.tags`, `$defs.Node`).
    pub path: String,
    /// What is wrong, e.g. `a map is an open object, not allowed in OpenAI strict mode`.
    pub message: String,
}

impl fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// The result of lowering one schema to one mode: the rewritten schema, and the problems that
/// keep it from qualifying (empty when it qualifies).
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    /// The schema to send.
    pub schema: Value,
    /// Why the schema does not qualify; empty when it does.
    pub problems: Vec<SchemaProblem>,
}

impl Lowered {
    /// Whether the schema qualifies for the mode.
    pub fn qualifies(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Lowers a tool's parameter schema to a mode.
///
/// ```
/// use pi_runtime::providers::{SchemaMode, lower_schema};
/// use serde_json::json;
///
/// let schema = json!({"type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 0, "maximum": 255}},
///     "required": ["city"]});
/// let lowered = lower_schema(&schema, SchemaMode::OpenAiStrict);
/// assert!(lowered.qualifies());
/// assert_eq!(lowered.schema["required"], json!(["city", "days"]));
/// assert_eq!(lowered.schema["properties"]["days"]["type"], json!(["integer", "null"]));
/// assert_eq!(lowered.schema["additionalProperties"], json!(false));
/// ```
pub fn lower_schema(schema: &Value, mode: SchemaMode) -> Lowered {
    let mut lowering = Lowering {
        problems: Vec::new(),
        defs: schema
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        inlining: Vec::new(),
        inlined: 0,
    };
    // A root union is sent as one object in every mode (see `root_union`), and reported.
    let union = is_root_union(schema);
    let merged = object_root(schema);
    let schema = merged.as_ref();
    if union {
        lowering.problem(
            "root",
            match mode {
                SchemaMode::OpenAiStrict => {
                    "the root must not be a union (`oneOf`/`anyOf`) in OpenAI strict mode"
                }
                _ => {
                    "a root union (`oneOf`/`anyOf`) is sent as one object with every branch's \
                     properties (arguments are still checked against the real schema)"
                }
            },
        );
    }
    let schema = match mode {
        SchemaMode::OpenAiStrict => {
            let lowered = lowering.openai_root(schema);
            lowering.openai_limits(&lowered);
            lowered
        }
        SchemaMode::Anthropic => lowering.anthropic_root(schema),
        SchemaMode::Gemini => {
            if schema.get("type").and_then(Value::as_str) != Some("object") {
                lowering.problem("root", "the root must be an object schema for Gemini");
            }
            lowering.gemini(schema, "root", 0)
        }
    };
    Lowered {
        schema,
        problems: lowering.problems,
    }
}

/// Which modes one tool's schema qualifies for, and why not. (Option combinations an API
/// refuses, such as Anthropic's thinking with a forced tool choice, are reported per request by
/// [`OptionConflict::of`](super::OptionConflict::of).)
///
/// Use it in a test to keep a tool portable:
///
/// ```
/// use pi_runtime::providers::{CompatibilityReport, SchemaMode};
/// use pi_tool::ToolSpec;
/// use serde_json::json;
///
/// let spec = ToolSpec {
///     name: "tag".into(),
///     description: "Tags things".into(),
///     parameters: json!({"type": "object", "properties": {
///         "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}),
/// };
/// let report = CompatibilityReport::of(&spec);
/// assert!(!report.qualifies(SchemaMode::OpenAiStrict));
/// assert_eq!(
///     report.problems(SchemaMode::OpenAiStrict)[0].to_string(),
///     "labels: a map is an open object, not allowed in OpenAI strict mode"
/// );
/// assert!(report.qualifies(SchemaMode::Anthropic));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct CompatibilityReport {
    /// The tool's name.
    pub tool: String,
    modes: Vec<(SchemaMode, Vec<SchemaProblem>)>,
    /// The API's refusal after which the tool is sent without `strict` (see
    /// [`StrictTools::report`](super::StrictTools::report)).
    strict_fallback: Option<String>,
}

impl CompatibilityReport {
    /// Checks a tool's schema against every mode.
    pub fn of(spec: &ToolSpec) -> Self {
        CompatibilityReport {
            tool: spec.name.clone(),
            modes: SchemaMode::ALL
                .iter()
                .map(|&mode| (mode, lower_schema(&spec.parameters, mode).problems))
                .collect(),
            strict_fallback: None,
        }
    }

    /// The report of a tool an API refused strict: `refusal` is the API's message.
    pub(crate) fn with_strict_fallback(mut self, refusal: String) -> Self {
        self.strict_fallback = Some(refusal);
        self
    }

    /// The API's refusal after which this tool is sent without `strict` in its session, when
    /// that happened ([`StrictTools::report`](super::StrictTools::report) fills it in).
    pub fn strict_fallback(&self) -> Option<&str> {
        self.strict_fallback.as_deref()
    }

    /// Whether the schema qualifies for `mode`.
    pub fn qualifies(&self, mode: SchemaMode) -> bool {
        self.problems(mode).is_empty()
    }

    /// Why the schema does not qualify for `mode` (empty when it does).
    pub fn problems(&self, mode: SchemaMode) -> &[SchemaProblem] {
        self.modes
            .iter()
            .find(|(m, _)| *m == mode)
            .map_or(&[], |(_, problems)| problems.as_slice())
    }

    /// Panics with the report when the schema does not qualify for `mode`: a test helper.
    #[track_caller]
    pub fn assert_qualifies(&self, mode: SchemaMode) {
        assert!(self.qualifies(mode), "{self}");
    }
}

impl fmt::Display for CompatibilityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool \"{}\":", self.tool)?;
        for (mode, problems) in &self.modes {
            if problems.is_empty() {
                write!(f, "\n  {mode}: qualifies")?;
            } else {
                write!(f, "\n  {mode}: does not qualify")?;
                for problem in problems {
                    write!(f, "\n    - {problem}")?;
                }
            }
        }
        if let Some(refusal) = &self.strict_fallback {
            write!(
                f,
                "\n  sent without strict in this session: the API refused strict tools ({refusal})"
            )?;
        }
        Ok(())
    }
}

/// Keywords OpenAI strict mode rejects outright.
const OPENAI_UNSUPPORTED: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
];

/// Keywords OpenAI strict mode does not support but that only describe: moved to the description.
const OPENAI_DESCRIBED: &[&str] = &["minLength", "maxLength"];

/// String formats OpenAI strict mode accepts.
const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// OpenAI's limit on nesting depth (the current documented figure; older copies of the page say 5).
const OPENAI_MAX_DEPTH: usize = 10;

/// OpenAI strict mode: most object properties in one schema.
const OPENAI_MAX_PROPERTIES: usize = 5000;
/// OpenAI strict mode: most enum values across one schema.
const OPENAI_MAX_ENUM_VALUES: usize = 1000;
/// OpenAI strict mode: most characters in property names, definition names, enum and const
/// values together.
const OPENAI_MAX_STRING_LENGTH: usize = 120_000;
/// OpenAI strict mode: a string enum of more values than this ...
const OPENAI_LONG_ENUM: usize = 250;
/// ... may hold at most this many characters in all.
const OPENAI_LONG_ENUM_LENGTH: usize = 15_000;

/// What OpenAI's strict-mode limits count, summed over a schema.
#[derive(Default)]
struct SchemaSize {
    properties: usize,
    enum_values: usize,
    string_length: usize,
}

impl SchemaSize {
    fn walk(&mut self, schema: &Value, path: &str, report: &mut dyn FnMut(&str, String)) {
        let Value::Object(map) = schema else {
            return;
        };
        if let Some(Value::Array(values)) = map.get("enum") {
            self.enum_values += values.len();
            let length: usize = values
                .iter()
                .filter_map(Value::as_str)
                .map(|v| v.chars().count())
                .sum();
            self.string_length += length;
            let strings = values.iter().filter(|v| v.is_string()).count();
            if strings > OPENAI_LONG_ENUM && length > OPENAI_LONG_ENUM_LENGTH {
                report(
                    path,
                    format!(
                        "a string enum of {strings} values takes {length} characters; OpenAI strict \
                         mode allows {OPENAI_LONG_ENUM_LENGTH} for more than {OPENAI_LONG_ENUM} values"
                    ),
                );
            }
        }
        if let Some(Value::String(value)) = map.get("const") {
            self.string_length += value.chars().count();
        }
        if let Some(Value::Object(properties)) = map.get("properties") {
            self.properties += properties.len();
            for (name, property) in properties {
                self.string_length += name.chars().count();
                self.walk(property, &child(path, name), report);
            }
        }
        if let Some(Value::Object(defs)) = map.get("$defs") {
            for (name, def) in defs {
                self.string_length += name.chars().count();
                self.walk(def, &child("$defs", name), report);
            }
        }
        if let Some(items) = map.get("items") {
            self.walk(items, &child(path, "items"), report);
        }
        for key in ["anyOf", "oneOf", "prefixItems"] {
            if let Some(Value::Array(branches)) = map.get(key) {
                for branch in branches {
                    self.walk(branch, path, report);
                }
            }
        }
    }
}

/// Gemini's rule for parameter names (its API reference: start with a letter or an
/// underscore, then letters, digits or underscores, 64 characters at most).
fn is_gemini_parameter_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64
}

/// Keywords the Gemini `Schema` object has.
const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "items",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "propertyOrdering",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "default",
    "minimum",
    "maximum",
];

struct Lowering {
    problems: Vec<SchemaProblem>,
    defs: Map<String, Value>,
    /// `$defs` names being inlined (Gemini), to detect recursion.
    inlining: Vec<String>,
    /// How many references were inlined in all (Gemini), to bound a schema that would grow
    /// without end (a chain of definitions each used twice doubles at every link).
    inlined: usize,
}

/// How many definitions Gemini's inlining may nest: a chain of thousands of references (a
/// schema from an MCP server) would otherwise overflow the stack.
const GEMINI_MAX_INLINING_DEPTH: usize = 64;

/// How many references Gemini's inlining may replace in one schema.
const GEMINI_MAX_INLINED: usize = 10_000;

fn child(path: &str, key: &str) -> String {
    if path == "root" {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn append_description(schema: &mut Map<String, Value>, note: String) {
    let text = match schema.get("description").and_then(Value::as_str) {
        Some(existing) if !existing.is_empty() => format!("{existing} ({note})"),
        _ => note,
    };
    schema.insert("description".into(), Value::String(text));
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

impl Lowering {
    fn problem(&mut self, path: &str, message: impl Into<String>) {
        self.problems.push(SchemaProblem {
            path: path.to_owned(),
            message: message.into(),
        });
    }

    // ---- OpenAI strict ----

    fn openai_root(&mut self, schema: &Value) -> Value {
        let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
        if !is_object {
            self.problem(
                "root",
                "the root must be an object schema in OpenAI strict mode",
            );
        }
        let mut lowered = self.openai(schema, "root", 0);
        if let Some(Value::Object(defs)) = schema.get("$defs") {
            let defs: Map<String, Value> = defs
                .iter()
                .map(|(name, def)| (name.clone(), self.openai(def, &child("$defs", name), 1)))
                .collect();
            if let Value::Object(map) = &mut lowered {
                map.insert("$defs".into(), Value::Object(defs));
            }
        }
        lowered
    }

    fn openai(&mut self, schema: &Value, path: &str, depth: usize) -> Value {
        let Value::Object(source) = schema else {
            if schema == &Value::Bool(true) {
                self.problem(
                    path,
                    "any JSON value (an unconstrained schema) is not allowed in OpenAI strict mode",
                );
            } else {
                self.problem(
                    path,
                    "a `false` schema is not allowed in OpenAI strict mode",
                );
            }
            return schema.clone();
        };
        if depth > OPENAI_MAX_DEPTH {
            self.problem(path, format!("nesting deeper than {OPENAI_MAX_DEPTH} levels is not allowed in OpenAI strict mode"));
        }
        let mut out = Map::new();
        let mut notes = Vec::new();
        for (key, value) in source {
            match key.as_str() {
                "$defs" | "$schema" | "title" | "default" | "examples" => {}
                "oneOf" | "anyOf" => {
                    let branches = value.as_array().map(Vec::as_slice).unwrap_or_default();
                    let lowered: Vec<Value> = branches
                        .iter()
                        .map(|b| self.openai(b, path, depth + 1))
                        .collect();
                    out.insert("anyOf".into(), Value::Array(lowered));
                }
                "properties" => {
                    let properties = value.as_object().cloned().unwrap_or_default();
                    let required: Vec<&str> = source
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|r| r.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    let mut lowered = Map::new();
                    for (name, property) in &properties {
                        let mut property = self.openai(property, &child(path, name), depth + 1);
                        if !required.contains(&name.as_str()) {
                            property = nullable(property);
                        }
                        lowered.insert(name.clone(), property);
                    }
                    out.insert("properties".into(), Value::Object(lowered));
                    out.insert(
                        "required".into(),
                        Value::Array(properties.keys().cloned().map(Value::String).collect()),
                    );
                }
                "required" => {}
                "additionalProperties" => {
                    if value != &Value::Bool(false) {
                        self.problem(
                            path,
                            "a map is an open object, not allowed in OpenAI strict mode",
                        );
                    }
                }
                "items" => {
                    if value == &Value::Bool(true) || value.as_object().is_some_and(Map::is_empty) {
                        self.problem(
                            path,
                            "an array with untyped items is not allowed in OpenAI strict mode",
                        );
                    }
                    out.insert(
                        key.clone(),
                        self.openai(value, &child(path, "items"), depth + 1),
                    );
                }
                "prefixItems" => {
                    // OpenAI answers 400 to `prefixItems` in strict mode (with or without `items`).
                    self.problem(
                        path,
                        "a tuple (`prefixItems`) is not allowed in OpenAI strict mode",
                    );
                    let items = value.as_array().map(Vec::as_slice).unwrap_or_default();
                    let lowered = items
                        .iter()
                        .map(|i| self.openai(i, path, depth + 1))
                        .collect();
                    out.insert(key.clone(), Value::Array(lowered));
                }
                "format" => {
                    let format = value.as_str().unwrap_or_default();
                    let is_string = source.get("type").and_then(Value::as_str) == Some("string");
                    if is_string && OPENAI_FORMATS.contains(&format) {
                        out.insert(key.clone(), value.clone());
                    } else if is_string {
                        notes.push(format!("format: {format}"));
                    }
                }
                keyword if OPENAI_DESCRIBED.contains(&keyword) => {
                    notes.push(format!("{keyword}: {value}"))
                }
                keyword if OPENAI_UNSUPPORTED.contains(&keyword) => {
                    self.problem(
                        path,
                        format!("`{keyword}` is not supported in OpenAI strict mode"),
                    );
                }
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
        let is_object = source.get("type").and_then(Value::as_str) == Some("object")
            || source.contains_key("properties");
        // `{"type": "object"}` inside a schema means any object; closing it would leave `{}`.
        // (At the root it is a tool without parameters.)
        let open =
            !source.contains_key("properties") && !source.contains_key("additionalProperties");
        if is_object && open && depth > 0 {
            self.problem(
                path,
                "an open object (any keys) is not allowed in OpenAI strict mode",
            );
        }
        if is_object {
            out.entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            out.entry("required")
                .or_insert_with(|| Value::Array(Vec::new()));
            out.insert("additionalProperties".into(), Value::Bool(false));
        }
        if source.get("type").and_then(Value::as_str) == Some("array")
            && !source.contains_key("items")
            && !source.contains_key("prefixItems")
        {
            self.problem(
                path,
                "an array with untyped items is not allowed in OpenAI strict mode",
            );
        }
        let constrained = ["type", "anyOf", "oneOf", "$ref", "enum", "const"]
            .iter()
            .any(|k| source.contains_key(*k));
        if !constrained {
            self.problem(
                path,
                "any JSON value (an unconstrained schema) is not allowed in OpenAI strict mode",
            );
        }
        // A `$ref` may not have siblings in strict mode: wrap it.
        if out.contains_key("$ref")
            && out.len() > 1
            && let Some(reference) = out.remove("$ref")
        {
            out.insert("anyOf".into(), json!([{"$ref": reference}]));
        }
        if !notes.is_empty() {
            append_description(&mut out, notes.join(", "));
        }
        Value::Object(out)
    }

    /// OpenAI's documented size limits for strict schemas, checked on the lowered schema.
    fn openai_limits(&mut self, lowered: &Value) {
        let mut size = SchemaSize::default();
        size.walk(lowered, "root", &mut |path, message| {
            self.problems.push(SchemaProblem {
                path: path.to_owned(),
                message,
            })
        });
        if size.properties > OPENAI_MAX_PROPERTIES {
            self.problem(
                "root",
                format!(
                    "{} properties in all; OpenAI strict mode allows {OPENAI_MAX_PROPERTIES}",
                    size.properties
                ),
            );
        }
        if size.enum_values > OPENAI_MAX_ENUM_VALUES {
            self.problem(
                "root",
                format!(
                    "{} enum values in all; OpenAI strict mode allows {OPENAI_MAX_ENUM_VALUES}",
                    size.enum_values
                ),
            );
        }
        if size.string_length > OPENAI_MAX_STRING_LENGTH {
            self.problem(
                "root",
                format!(
                    "property names, definition names, enum and const values take {} characters; \
                     OpenAI strict mode allows {OPENAI_MAX_STRING_LENGTH}",
                    size.string_length
                ),
            );
        }
    }

    // ---- Anthropic ----

    fn anthropic_root(&mut self, schema: &Value) -> Value {
        let mut out = match schema {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        match out.get("type").and_then(Value::as_str) {
            Some("object") | None if !out.contains_key("anyOf") && !out.contains_key("oneOf") => {}
            _ => self.problem("root", "the root must be an object schema for Anthropic"),
        }
        out.remove("$schema");
        out.remove("title");
        out.insert("type".into(), Value::String("object".into()));
        out.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        Value::Object(out)
    }

    // ---- Gemini (OpenAPI subset) ----

    fn gemini(&mut self, schema: &Value, path: &str, depth: usize) -> Value {
        let Value::Object(source) = schema else {
            self.problem(
                path,
                "any JSON value (an unconstrained schema) cannot be described to Gemini",
            );
            return json!({});
        };
        if let Some(name) = source.get("$ref").and_then(Value::as_str) {
            return self.gemini_ref(name, source, path, depth);
        }
        let mut out = Map::new();
        let mut nullable = source.get("nullable") == Some(&Value::Bool(true));
        let mut notes = Vec::new();
        for (key, value) in source {
            match key.as_str() {
                "type" => match value {
                    Value::Array(types) => {
                        let concrete: Vec<&Value> = types
                            .iter()
                            .filter(|t| t.as_str() != Some("null"))
                            .collect();
                        nullable |= concrete.len() < types.len();
                        match concrete.as_slice() {
                            [single] => {
                                out.insert("type".into(), (*single).clone());
                            }
                            _ => {
                                let branches =
                                    concrete.iter().map(|t| json!({"type": t})).collect();
                                out.insert("anyOf".into(), Value::Array(branches));
                            }
                        }
                    }
                    Value::String(name) if name == "null" => {
                        nullable = true;
                    }
                    other => {
                        out.insert("type".into(), other.clone());
                    }
                },
                "anyOf" | "oneOf" => {
                    let branches = value.as_array().map(Vec::as_slice).unwrap_or_default();
                    let concrete: Vec<&Value> =
                        branches.iter().filter(|b| !is_null_schema(b)).collect();
                    nullable |= concrete.len() < branches.len();
                    let lowered: Vec<Value> = concrete
                        .iter()
                        .map(|b| self.gemini(b, path, depth + 1))
                        .collect();
                    match <[Value; 1]>::try_from(lowered) {
                        Ok([Value::Object(single)]) => {
                            for (k, v) in single {
                                out.entry(k).or_insert(v);
                            }
                        }
                        Ok([other]) => {
                            out.insert("anyOf".into(), Value::Array(vec![other]));
                        }
                        Err(many) => {
                            out.insert("anyOf".into(), Value::Array(many));
                        }
                    }
                }
                "allOf" => match value.as_array().map(Vec::as_slice) {
                    Some([single]) => {
                        if let Value::Object(single) = self.gemini(single, path, depth + 1) {
                            for (k, v) in single {
                                out.entry(k).or_insert(v);
                            }
                        }
                    }
                    _ => self.problem(
                        path,
                        "`allOf` with several schemas cannot be described to Gemini",
                    ),
                },
                "const" => {
                    out.insert("enum".into(), json!([value]));
                }
                "properties" => {
                    let properties = value.as_object().cloned().unwrap_or_default();
                    for name in properties.keys() {
                        if !is_gemini_parameter_name(name) {
                            self.problem(
                                &child(path, name),
                                "a Gemini parameter name must start with a letter or `_` and \
                                 hold only `a-z`, `A-Z`, `0-9` and `_` (64 at most)",
                            );
                        }
                    }
                    let lowered: Map<String, Value> = properties
                        .iter()
                        .map(|(name, p)| {
                            (name.clone(), self.gemini(p, &child(path, name), depth + 1))
                        })
                        .collect();
                    out.insert("properties".into(), Value::Object(lowered));
                }
                "required" => {
                    let known = source.get("properties").and_then(Value::as_object);
                    let required: Vec<Value> = value
                        .as_array()
                        .map(Vec::as_slice)
                        .unwrap_or_default()
                        .iter()
                        .filter(|name| {
                            name.as_str()
                                .is_some_and(|n| known.is_some_and(|k| k.contains_key(n)))
                        })
                        .cloned()
                        .collect();
                    out.insert("required".into(), Value::Array(required));
                }
                "items" => {
                    out.insert(
                        "items".into(),
                        self.gemini(value, &child(path, "items"), depth + 1),
                    );
                }
                "additionalProperties"
                    if value != &Value::Bool(false) && value != &Value::Bool(true) =>
                {
                    self.problem(
                        path,
                        "a map is an open object; Gemini parameters cannot describe its values",
                    );
                }
                "format" => {
                    let format = value.as_str().unwrap_or_default();
                    let kept = matches!(
                        format,
                        "int32" | "int64" | "float" | "double" | "date-time" | "enum"
                    );
                    if kept {
                        out.insert(key.clone(), value.clone());
                    } else if source.get("type").and_then(Value::as_str) == Some("string") {
                        notes.push(format!("format: {format}"));
                    }
                }
                "prefixItems" => {
                    self.problem(path, "tuples (`prefixItems`) cannot be described to Gemini")
                }
                "$defs" | "$schema" | "title" | "examples" | "exclusiveMinimum"
                | "exclusiveMaximum" | "nullable" => {}
                keyword if GEMINI_KEYWORDS.contains(&keyword) => {
                    out.insert(key.clone(), value.clone());
                }
                _ => {}
            }
        }
        // Gemini enums are strings only: describe the others and keep the type.
        if let Some(Value::Array(values)) = out.get("enum").cloned() {
            if values.iter().any(|v| !v.is_string()) {
                let listed: Vec<String> = values.iter().map(Value::to_string).collect();
                out.remove("enum");
                notes.push(format!("one of: {}", listed.join(", ")));
                if !out.contains_key("type")
                    && let Some(kind) = json_type_of(&values)
                {
                    out.insert("type".into(), Value::String(kind.into()));
                }
            } else if !out.contains_key("type") {
                out.insert("type".into(), Value::String("string".into()));
            }
        }
        // Gemini rejects an OBJECT without properties ("should be non-empty for OBJECT type");
        // the root of a tool without parameters is left out of the declaration instead.
        let no_properties = out
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        let is_map = source
            .get("additionalProperties")
            .is_some_and(|v| !v.is_boolean());
        if depth > 0
            && out.get("type").and_then(Value::as_str) == Some("object")
            && no_properties
            && !is_map
        {
            self.problem(
                path,
                "an object without properties cannot be described to Gemini",
            );
        }
        if out.get("type").and_then(Value::as_str) == Some("array") && !out.contains_key("items") {
            self.problem(
                path,
                "an array without `items` cannot be described to Gemini",
            );
        }
        if !out.contains_key("type") && !out.contains_key("anyOf") {
            self.problem(
                path,
                "any JSON value (an unconstrained schema) cannot be described to Gemini",
            );
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        if !notes.is_empty() {
            append_description(&mut out, notes.join(", "));
        }
        Value::Object(out)
    }

    fn gemini_ref(
        &mut self,
        reference: &str,
        source: &Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Value {
        let name = reference
            .strip_prefix("#/$defs/")
            .map(|n| n.replace("~1", "/").replace("~0", "~"));
        let Some(name) = name else {
            self.problem(
                path,
                format!("the reference `{reference}` cannot be resolved for Gemini"),
            );
            return json!({});
        };
        if self.inlining.contains(&name) {
            self.problem(
                path,
                format!("the recursive type `{name}` cannot be described to Gemini (no `$ref`)"),
            );
            return json!({"type": "object"});
        }
        let Some(target) = self.defs.get(&name).cloned() else {
            self.problem(
                path,
                format!("the reference `{reference}` cannot be resolved for Gemini"),
            );
            return json!({});
        };
        if self.inlining.len() >= GEMINI_MAX_INLINING_DEPTH || self.inlined >= GEMINI_MAX_INLINED {
            self.problem(
                path,
                format!(
                    "the reference `{reference}` goes past {GEMINI_MAX_INLINING_DEPTH} nested or \
                     {GEMINI_MAX_INLINED} inlined definitions, more than can be described to \
                     Gemini (no `$ref`)"
                ),
            );
            return json!({});
        }
        self.inlined += 1;
        self.inlining.push(name);
        let mut merged = match target {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        for (key, value) in source {
            if key != "$ref" {
                merged.insert(key.clone(), value.clone());
            }
        }
        let lowered = self.gemini(&Value::Object(merged), path, depth);
        self.inlining.pop();
        lowered
    }
}

/// The JSON type shared by every enum value, if there is one.
fn json_type_of(values: &[Value]) -> Option<&'static str> {
    let kind = |v: &Value| match v {
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        Value::String(_) => Some("string"),
        _ => None,
    };
    let first = kind(values.first()?)?;
    values
        .iter()
        .all(|v| kind(v) == Some(first))
        .then_some(first)
}

/// Makes a (lowered) schema also accept `null`.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    if let Some(kind) = map.get_mut("type") {
        match kind {
            Value::String(name) if name != "null" => {
                *kind = json!([name.clone(), "null"]);
            }
            Value::Array(names) if !names.iter().any(|n| n == "null") => names.push(json!("null")),
            _ => {}
        }
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
        return Value::Object(map);
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        if !branches.iter().any(is_null_schema) {
            branches.push(json!({"type": "null"}));
        }
        return Value::Object(map);
    }
    // `$ref` or `enum`/`const` without a type: a union with null, the description kept outside.
    let description = map.remove("description");
    let mut wrapper = Map::new();
    wrapper.insert(
        "anyOf".into(),
        json!([Value::Object(map), {"type": "null"}]),
    );
    if let Some(description) = description {
        wrapper.insert("description".into(), description);
    }
    Value::Object(wrapper)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `D0 -> D1 -> ... -> Dn`, each link used `uses` times.
    fn chain(n: usize, uses: usize) -> Value {
        let mut defs = Map::new();
        for i in 0..n {
            let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
            let properties: Map<String, Value> =
                (0..uses).map(|u| (format!("p{u}"), next.clone())).collect();
            defs.insert(
                format!("D{i}"),
                json!({"type": "object", "properties": properties}),
            );
        }
        defs.insert(format!("D{n}"), json!({"type": "string"}));
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/D0"}}, "$defs": defs})
    }

    #[test]
    fn gemini_inlining_stops_at_a_deep_or_exploding_chain_of_references() {
        // Ten thousand links on a 2 MiB stack, and a chain that doubles at every link.
        let lowered = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let deep = lower_schema(&chain(10_000, 1), SchemaMode::Gemini);
                let doubling = lower_schema(&chain(60, 2), SchemaMode::Gemini);
                (deep, doubling)
            })
            .expect("a thread")
            .join()
            .expect("no overflow");
        for lowered in [lowered.0, lowered.1] {
            assert!(!lowered.qualifies());
            assert!(
                lowered
                    .problems
                    .iter()
                    .any(|p| p.message.contains("more than can be described to Gemini")),
                "{:?}",
                lowered.problems.first()
            );
        }
        // A short chain is inlined whole.
        let short = lower_schema(&chain(3, 2), SchemaMode::Gemini);
        assert!(short.qualifies(), "{:?}", short.problems);
    }

    #[test]
    fn optional_reference_and_enum_become_nullable() {
        let schema = json!({"type": "object", "properties": {
            "unit": {"enum": ["c", "f"], "description": "Unit"},
            "kind": {"type": "string", "enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1}
        }});
        let lowered = lower_schema(&schema, SchemaMode::OpenAiStrict);
        assert!(lowered.qualifies(), "{:?}", lowered.problems);
        assert_eq!(
            lowered.schema["properties"]["unit"],
            json!({"anyOf": [{"enum": ["c", "f"]}, {"type": "null"}], "description": "Unit"})
        );
        assert_eq!(
            lowered.schema["properties"]["kind"],
            json!({"type": ["string", "null"], "enum": ["a", "b", null]})
        );
        assert_eq!(
            lowered.schema["properties"]["tags"]["type"],
            json!(["array", "null"])
        );
    }

    #[test]
    fn strict_problems_name_the_field_and_the_reason() {
        let schema = json!({"type": "object", "properties": {
            "any": true,
            "list": {"type": "array"},
            "both": {"allOf": [{"type": "string"}, {"minLength": 1}]},
        }, "required": ["any", "list", "both"]});
        let problems: Vec<String> = lower_schema(&schema, SchemaMode::OpenAiStrict)
            .problems
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            problems,
            [
                "any: any JSON value (an unconstrained schema) is not allowed in OpenAI strict mode",
                "list: an array with untyped items is not allowed in OpenAI strict mode",
                "both: `allOf` is not supported in OpenAI strict mode",
                "both: any JSON value (an unconstrained schema) is not allowed in OpenAI strict mode",
            ]
        );
    }

    #[test]
    fn an_open_object_inside_is_not_strict_but_an_empty_root_is() {
        let schema = json!({"type": "object", "properties": {"meta": {"type": "object"}}, "required": ["meta"]});
        let problems: Vec<String> = lower_schema(&schema, SchemaMode::OpenAiStrict)
            .problems
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            problems,
            ["meta: an open object (any keys) is not allowed in OpenAI strict mode"]
        );
        let root = lower_schema(&json!({"type": "object"}), SchemaMode::OpenAiStrict);
        assert!(root.qualifies());
        assert_eq!(
            root.schema,
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
    }

    #[test]
    fn descriptive_keywords_move_into_the_description() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 3, "format": "hostnameish", "default": "x", "description": "Name"},
        }, "required": ["name"]});
        let lowered = lower_schema(&schema, SchemaMode::OpenAiStrict);
        assert_eq!(
            lowered.schema["properties"]["name"],
            json!({"type": "string", "description": "Name (minLength: 3, format: hostnameish)"})
        );
    }

    #[test]
    fn gemini_inlines_references_and_uses_nullable() {
        let schema = json!({"type": "object", "properties": {
            "unit": {"anyOf": [{"$ref": "#/$defs/Unit"}, {"type": "null"}], "description": "Unit"},
            "days": {"type": ["integer", "null"], "format": "uint8", "minimum": 0, "exclusiveMaximum": 8},
            "level": {"enum": [1, 2, 3]},
            "kind": {"const": "fast"}
        }, "required": ["kind", "ghost"], "additionalProperties": false,
           "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}}});
        let lowered = lower_schema(&schema, SchemaMode::Gemini);
        assert!(lowered.qualifies(), "{:?}", lowered.problems);
        assert_eq!(
            lowered.schema,
            json!({"type": "object", "properties": {
                "unit": {"type": "string", "enum": ["c", "f"], "description": "Unit", "nullable": true},
                "days": {"type": "integer", "minimum": 0, "nullable": true},
                "level": {"type": "integer", "description": "one of: 1, 2, 3"},
                "kind": {"enum": ["fast"], "type": "string"}
            }, "required": ["kind"]})
        );
    }

    #[test]
    fn gemini_reports_recursion_and_maps() {
        let schema = json!({"type": "object", "properties": {
            "tree": {"$ref": "#/$defs/Node"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        }, "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}});
        let problems: Vec<String> = lower_schema(&schema, SchemaMode::Gemini)
            .problems
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            problems,
            [
                "tree.children.items: the recursive type `Node` cannot be described to Gemini (no `$ref`)",
                "labels: a map is an open object; Gemini parameters cannot describe its values",
            ]
        );
    }
}
