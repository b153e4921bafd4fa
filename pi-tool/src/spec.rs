//! What the model sees of a tool, and what it sends back.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Exactly what a model sees of a tool: its name, description and JSON Schema.
///
/// `parameters` is provider-neutral (draft 2020-12, no root `$schema`/`title`, non-recursive
/// references inlined); providers lower it to their own dialects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// How the model names the tool in a call; matches `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// Tells the model when and how to use the tool.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// How a tool's calls may be scheduled within one assistant message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionMode {
    /// The whole batch runs one call after another when any call targets this tool.
    Sequential,
    /// Calls run concurrently with the rest of the batch.
    Parallel,
}

/// A call of a tool by the model: the id to answer, the tool's name and its raw arguments.
/// Built with [`ToolCall::new`]; `#[non_exhaustive]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The provider's id for this call; the result must carry it back.
    pub id: String,
    /// The name of the tool the model wants to run.
    pub name: String,
    /// The arguments as the model sent them (an object, or a string holding JSON).
    pub arguments: Value,
}

impl ToolCall {
    /// A call with the given id, tool name and arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}
