//! The expansion is warning-free under strict lints: a user's `#![deny(missing_docs)]`,
//! `unused_qualifications` and clippy (pedantic included) pass on code that uses `#[tool]`.
//! Checked by `cargo clippy --workspace --all-targets -- -D warnings` (CI runs it): this file
//! denies `clippy::pedantic` itself. It holds the shapes that used to need a user's `allow`:
//! tools with 8+ parameters (`too_many_arguments`), `async fn` tools without `.await`
//! (`unused_async`), plain `fn` tools, and `#[tools]` methods.

#![deny(warnings, missing_docs, unused_qualifications, rust_2018_idioms)]
#![deny(clippy::all, clippy::pedantic)]

use std::sync::Arc;

use pi_tool::{Content, State, ToolContext, ToolResult, tool, tools};

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

/// Nine parameters: clippy's `too_many_arguments` stays quiet, the parameters are the schema.
#[tool]
pub async fn many(
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    zone: String,
    label: Option<String>,
    config: State<Config>,
) -> String {
    tokio::task::yield_now().await;
    format!(
        "{}{year}-{month}-{day} {hour}:{minute}:{second} {zone} {}",
        config.prefix,
        label.unwrap_or_default()
    )
}

/// No `.await` in an `async fn` tool: pedantic `unused_async` stays quiet.
#[tool]
pub async fn no_await(text: String) -> String {
    text
}

/// A plain `fn` tool with eight arguments.
#[tool]
#[must_use]
pub fn sync_many(
    north: i64,
    south: i64,
    east: i64,
    west: i64,
    up: i64,
    down: i64,
    inward: i64,
    outward: i64,
) -> String {
    (north + south + east + west + up + down + inward + outward).to_string()
}

/// State shared by method tools.
pub struct Store {
    /// The stored text.
    pub text: String,
}

#[tools]
impl Store {
    /// Read the text with eight offsets, without awaiting anything.
    #[tool]
    async fn read(
        &self,
        year: u16,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
        zone: String,
        label: Option<String>,
    ) -> String {
        format!(
            "{} {year}-{month}-{day} {hour}:{minute}:{second} {zone} {label:?}",
            self.text
        )
    }

    /// Read the text synchronously.
    #[tool]
    fn read_now(&self) -> String {
        self.text.clone()
    }
}

#[test]
fn strict_lints_pass() {
    let mut tools = pi_tool::ToolRegistry::new()
        .with(LintedTool)
        .with(PrivateToolTool)
        .with(AnnotatedTool)
        .with(ManyTool)
        .with(NoAwaitTool)
        .with(SyncManyTool);
    tools.extend(
        Arc::new(Store {
            text: String::new(),
        })
        .tools(),
    );
    assert_eq!(tools.len(), 8);
}
