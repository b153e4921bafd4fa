//! Who may call a tool: the model directly, code (another tool's nested call, a `code` tool's
//! script), or both.

/// Who may call a tool ([`AgentTool::callers`](crate::AgentTool::callers)).
///
/// With code mode, a large set of tools (an MCP server's, say) can be offered only through the
/// `code` tool: the model never sees their schemas, and its scripts call them. A tool that must
/// not run from a script (it asks the user, say) is [`Model`](Self::Model)-only.
///
/// Every host keeps the rule: the agent loop offers a [`Code`](Self::Code)-only tool to no
/// model and refuses a model's call of it, an MCP server lists it to no client, and a nested
/// call ([`ToolContext::call_tool`](crate::ToolContext::call_tool)) of a
/// [`Model`](Self::Model)-only tool is refused.
///
/// ```
/// use pi_tool::ToolCallers;
///
/// assert!(ToolCallers::Both.allows_model() && ToolCallers::Both.allows_code());
/// assert!(!ToolCallers::Code.allows_model());
/// assert_eq!(ToolCallers::default(), ToolCallers::Both);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ToolCallers {
    /// Only the model, directly: never from another tool or a script.
    Model,
    /// Only code: another tool's nested call or a script of the `code` tool; the model never
    /// sees the tool among its own.
    Code,
    /// The model and code (the default).
    #[default]
    Both,
}

impl ToolCallers {
    /// Whether the model may call the tool directly.
    pub const fn allows_model(self) -> bool {
        matches!(self, ToolCallers::Model | ToolCallers::Both)
    }

    /// Whether code (a nested call, a script) may call the tool.
    pub const fn allows_code(self) -> bool {
        matches!(self, ToolCallers::Code | ToolCallers::Both)
    }

    /// The name `#[tool(callers = "..")]` takes: `model`, `code` or `both`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ToolCallers::Model => "model",
            ToolCallers::Code => "code",
            ToolCallers::Both => "both",
        }
    }
}

/// The error result of a model's direct call of a [`ToolCallers::Code`]-only tool.
pub fn code_only_message(name: &str) -> String {
    format!("Tool {name} can be called only from code (a script of the `code` tool), not directly")
}

/// The error result of a nested call of a [`ToolCallers::Model`]-only tool.
pub fn model_only_message(name: &str) -> String {
    format!("Tool {name} can be called only by the model directly, not from code or another tool")
}
