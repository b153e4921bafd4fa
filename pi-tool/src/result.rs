//! The result of a tool call, and the return types a `#[tool]` fn may have.

use std::fmt::Display;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Content, ToolError, Usage};

/// What a tool call produced: content for the model, details for the host, and hints for the loop.
///
/// Serializes with pi's field names (`addedToolNames`, `isError`); empty optional fields are left out.
///
/// Built with [`ToolResult::text`], [`error`](ToolResult::error) or [`new`](ToolResult::new) and
/// the `with_*` methods; `#[non_exhaustive]`, so a field added later is not a breaking change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResult<D = Value> {
    /// Text and image blocks returned to the model.
    pub content: Vec<Content>,
    /// Structured data for a UI or logs; never sent to the model.
    pub details: D,
    /// Token usage of the tool itself, when it called a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Names of tools this call made available for the following turns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_tool_names: Vec<String>,
    /// Asks the loop to stop after this batch; honoured only when every result of the batch sets it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub terminate: bool,
    /// The call failed; the content explains why.
    #[serde(default)]
    pub is_error: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl ToolResult<Value> {
    /// A successful result with one text block and empty (`null`) details.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult::new(vec![Content::text(text)], Value::Null)
    }

    /// An error result with one text block and `{}` details, as the loop builds for every failure.
    pub fn error(text: impl Into<String>) -> Self {
        let mut result =
            ToolResult::new(vec![Content::text(text)], Value::Object(Default::default()));
        result.is_error = true;
        result
    }
}

impl<D> ToolResult<D> {
    /// A successful result with the given content and details.
    pub fn new(content: Vec<Content>, details: D) -> Self {
        ToolResult {
            content,
            details,
            usage: None,
            added_tool_names: Vec::new(),
            terminate: false,
            is_error: false,
        }
    }

    /// Sets [`terminate`](Self::terminate).
    #[must_use]
    pub fn with_terminate(mut self, terminate: bool) -> Self {
        self.terminate = terminate;
        self
    }

    /// Sets [`is_error`](Self::is_error).
    #[must_use]
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// Sets [`usage`](Self::usage).
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Adds tool names to [`added_tool_names`](Self::added_tool_names).
    #[must_use]
    pub fn with_added_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.added_tool_names
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// The text blocks of the content, joined with `\n`.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for text in self.content.iter().filter_map(Content::as_text) {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
        out
    }
}

impl<D: Serialize> ToolResult<D> {
    /// Turns typed details into JSON details.
    pub fn into_value(self) -> Result<ToolResult<Value>, ToolError> {
        let details = serde_json::to_value(&self.details).map_err(|err| {
            ToolError::new(format!("could not serialize the tool's details: {err}"))
        })?;
        Ok(ToolResult {
            content: self.content,
            details,
            usage: self.usage,
            added_tool_names: self.added_tool_names,
            terminate: self.terminate,
            is_error: self.is_error,
        })
    }
}

/// A return value sent to the model as JSON text and kept as the result's details; a `#[tool]`
/// fn returning it declares `T`'s JSON Schema as its output schema
/// ([`AgentTool::output_schema`](crate::AgentTool::output_schema), MCP's `outputSchema`).
///
/// ```
/// use pi_tool::{tool, Json};
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct User { id: u32, name: String }
///
/// /// Look up a user.
/// #[tool]
/// async fn user(id: u32) -> Json<User> {
///     Json(User { id, name: "Ada".into() })
/// }
/// ```
///
/// In a `#[tool]` fn, `T` must implement `JsonSchema` as well as `Serialize`: a `T` without it
/// is a compile error that says what to derive. For a `T` that cannot have one (a type from a
/// crate without schemars), return [`JsonWithoutSchema<T>`]: the same result, no output schema.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

/// [`Json<T>`] without an output schema: the value is sent as JSON text and kept as the result's
/// details, and the tool declares no output schema, so `T` needs only `Serialize`.
///
/// ```
/// use pi_tool::{tool, JsonWithoutSchema};
///
/// #[derive(serde::Serialize)]
/// struct Row { id: u32 }
///
/// /// List the rows.
/// #[tool]
/// async fn rows() -> JsonWithoutSchema<Vec<Row>> {
///     JsonWithoutSchema(vec![Row { id: 1 }])
/// }
/// # use pi_tool::AgentTool;
/// assert!(RowsTool.output_schema().is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonWithoutSchema<T>(pub T);

/// The return types a `#[tool]` fn may have.
///
/// `String`, `&'static str`, [`Content`], `Vec<Content>`, [`ToolResult<D>`] (with `D: Serialize`),
/// [`Json<T>`] and [`JsonWithoutSchema<T>`] (with `T: Serialize`), and `Result<` any of these `, E>` where `E: Display`: an
/// `Err` becomes an error result whose text is `E`'s `Display`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a `#[tool]` fn",
    label = "unsupported return type",
    note = "a `#[tool]` fn returns `String`, `&'static str`, `Content`, `Vec<Content>`, `ToolResult<D: Serialize>`, `Json<T: Serialize + JsonSchema>`, `JsonWithoutSchema<T: Serialize>`, or `Result<T, E: Display>` of one of these"
)]
pub trait IntoToolResult {
    /// Converts the value into a result, or into the error the loop reports.
    fn into_tool_result(self) -> Result<ToolResult, ToolError>;
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(self))
    }
}

impl IntoToolResult for Content {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::new(vec![self], Value::Null))
    }
}

impl IntoToolResult for Vec<Content> {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::new(self, Value::Null))
    }
}

impl<D: Serialize> IntoToolResult for ToolResult<D> {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        self.into_value()
    }
}

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        json_result(&self.0)
    }
}

impl<T: Serialize> IntoToolResult for JsonWithoutSchema<T> {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        json_result(&self.0)
    }
}

/// The value as JSON text for the model and as the result's details.
fn json_result<T: Serialize>(value: &T) -> Result<ToolResult, ToolError> {
    let details = serde_json::to_value(value)
        .map_err(|err| ToolError::new(format!("could not serialize the tool's output: {err}")))?;
    let text = details.to_string();
    Ok(ToolResult::new(vec![Content::Text { text }], details))
}

impl<T: IntoToolResult, E: Display> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        match self {
            Ok(value) => value.into_tool_result(),
            Err(err) => Err(ToolError::new(err.to_string())),
        }
    }
}
