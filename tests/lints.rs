//! The expansion is warning-free under strict lints: a user's `#![deny(missing_docs)]`,
//! `unused_qualifications` and clippy (pedantic included) pass on code that uses `#[tool]`.

#![deny(warnings, missing_docs, unused_qualifications, rust_2018_idioms)]
#![deny(clippy::all, clippy::pedantic)]

use pi_tool::{Content, State, ToolContext, ToolResult, tool};

/// Shared configuration.
pub struct Config {
    /// A prefix for every answer.
    pub prefix: String,
}

/// A documented public tool with every kind of parameter.
///
/// # Errors
///
/// Never in practice; the signature shows a fallible tool.
#[tool(label = "Linted", sequential)]
pub async fn linted(
    /// A documented argument
    text: String,
    count: Option<u32>,
    config: State<Config>,
    ctx: ToolContext,
) -> Result<ToolResult, std::io::Error> {
    tokio::task::yield_now().await;
    let count = count.unwrap_or(1);
    let text = format!("{}{} x{count} {}", config.prefix, text, ctx.tool_call_id());
    Ok(ToolResult::new(
        vec![Content::text(text)],
        pi_tool::serde_json::Value::Null,
    ))
}

/// A private tool without arguments.
#[tool]
async fn private_tool() -> &'static str {
    tokio::task::yield_now().await;
    "private"
}

/// A structured answer.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Answer {
    /// The answer.
    pub value: u32,
}

/// A read-only tool with a typed output (annotations and an output schema in the expansion).
#[tool(read_only, open_world = false)]
pub async fn annotated(value: u32) -> pi_tool::Json<Answer> {
    tokio::task::yield_now().await;
    pi_tool::Json(Answer { value })
}

#[test]
fn strict_lints_pass() {
    let tools = pi_tool::ToolRegistry::new()
        .with(LintedTool)
        .with(PrivateToolTool)
        .with(AnnotatedTool);
    assert_eq!(tools.len(), 3);
}
