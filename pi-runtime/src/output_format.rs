//! The JSON Schema a run's final answer must match, as a model request carries it: each API
//! sends it as its own structured output (see [`StreamOptions::output`](crate::StreamOptions::output)).

use serde_json::{Map, Value, json};

use crate::providers::{Lowered, SchemaMode, lower_schema};

/// The schema of a final answer, with its lowered forms computed once (a run sends it with
/// every request).
///
/// Sent as OpenAI Responses' `text.format`, Chat Completions' and Mistral's `response_format`
/// (all `json_schema`, strict where the schema qualifies for OpenAI's strict mode), Anthropic's
/// `output_config.format` (also with OpenAI's strict rules: Anthropic wants objects closed) and
/// Gemini's `responseJsonSchema` with `responseMimeType: application/json` (plain JSON Schema:
/// the models that take a schema together with tools, Gemini 3, take that one).
///
/// ```
/// use pi_runtime::OutputFormat;
/// use serde_json::json;
///
/// let format = OutputFormat::new("weather report", json!({"type": "object",
///     "properties": {"city": {"type": "string"}}, "required": ["city"]}));
/// assert_eq!(format.name(), "weather_report");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct OutputFormat {
    name: String,
    schema: Value,
    strict: Lowered,
}

impl OutputFormat {
    /// A format named `name` (characters outside `[a-zA-Z0-9_-]` become `_`, at most 64 of
    /// them, as OpenAI requires) for a schema whose root is an object.
    pub fn new(name: impl AsRef<str>, schema: Value) -> Self {
        let mut name: String = name
            .as_ref()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        if name.is_empty() {
            name.push_str("output");
        }
        OutputFormat {
            name,
            strict: lower_schema(&schema, SchemaMode::OpenAiStrict),
            schema,
        }
    }

    /// The name APIs that take one are sent.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schema as given.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The schema lowered for OpenAI's strict mode, when it qualifies.
    pub(crate) fn strict_schema(&self) -> Option<&Value> {
        self.strict.qualifies().then_some(&self.strict.schema)
    }

    /// OpenAI Responses' `text`: `{"format": {"type": "json_schema", ..}}`, strict where the
    /// schema qualifies and the model sends strict schemas.
    pub(crate) fn responses_text(&self, strict: bool) -> Value {
        let (schema, strict) = self.openai_schema(strict);
        json!({"format": {"type": "json_schema", "name": self.name, "schema": schema, "strict": strict}})
    }

    /// Chat Completions' `response_format`: `{"type": "json_schema", "json_schema": {..}}`
    /// (Mistral's has the same shape).
    pub(crate) fn completions_response_format(&self, strict: bool) -> Value {
        let (schema, strict) = self.openai_schema(strict);
        json!({"type": "json_schema", "json_schema": {"name": self.name, "schema": schema, "strict": strict}})
    }

    /// Anthropic's `output_config`: `{"format": {"type": "json_schema", "schema": ..}}`. The
    /// API wants every object closed and every property required, as OpenAI's strict mode
    /// does: the lowered schema where it qualifies, else the schema as given.
    pub(crate) fn anthropic_output_config(&self) -> Value {
        let schema = self.strict_schema().unwrap_or(&self.schema);
        json!({"format": {"type": "json_schema", "schema": schema}})
    }

    /// Adds Gemini's `responseMimeType` and `responseJsonSchema` to a `generationConfig`.
    pub(crate) fn add_to_gemini_generation(&self, generation: &mut Map<String, Value>) {
        generation.insert("responseMimeType".into(), json!("application/json"));
        generation.insert("responseJsonSchema".into(), self.schema.clone());
    }

    fn openai_schema(&self, strict: bool) -> (&Value, bool) {
        match self.strict_schema() {
            Some(schema) if strict => (schema, true),
            _ => (&self.schema, false),
        }
    }
}
