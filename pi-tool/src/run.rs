//! The per-call pipeline shared by the single-call runner and the agent loop:
//! lookup -> `prepare_arguments` -> validate -> execute, every failure an error result.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use serde_json::Value;

use crate::suggest::did_you_mean;
use crate::validate::{validate_borrowed_unchecked, validate_owned_unchecked};
use crate::{AgentTool, ArgumentLimits, BoxFuture, ToolContext, ToolError, ToolResult};

/// `Tool <name> not found`, plus ` (did you mean "<close>"?)` when a known name is close.
pub fn tool_not_found_message<'a, I>(name: &str, known: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    format!("Tool {name} not found{}", did_you_mean(name, known))
}

/// Arguments that passed preparation: the model's own arguments when they were valid exactly
/// as sent (nothing is copied), or the rewritten ones (a shim's output, normalized values).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PreparedArguments(Option<Value>);

impl PreparedArguments {
    /// Arguments that replace the model's (e.g. from a `before_tool_call` hook).
    pub fn replaced(arguments: Value) -> Self {
        PreparedArguments(Some(arguments))
    }

    /// Whether the model's arguments are used as they came.
    pub fn is_unchanged(&self) -> bool {
        self.0.is_none()
    }

    /// The arguments the tool will get, given the model's raw arguments.
    pub fn get<'a>(&'a self, raw: &'a Value) -> &'a Value {
        self.0.as_ref().unwrap_or(raw)
    }

    /// The arguments the tool will get, owned.
    pub fn into_value(self, raw: &Value) -> Value {
        self.0.unwrap_or_else(|| raw.clone())
    }
}

/// Checks the arguments against [`ArgumentLimits::DEFAULT`], applies the tool's
/// `prepare_arguments` shim, then validates and normalizes the result.
///
/// A tool without a shim ([`AgentTool::rewrites_arguments`] is `false`, as for every `#[tool]`
/// without `prepare_arguments`) is validated in place: valid arguments are not copied. A
/// panicking shim is reported as an error, like any other failure of this step.
pub fn prepare_call(
    tool: &dyn AgentTool,
    raw_arguments: &Value,
) -> Result<PreparedArguments, ToolError> {
    prepare_call_within(tool, raw_arguments, &ArgumentLimits::DEFAULT)
}

/// [`prepare_call`] with other [`ArgumentLimits`] (the agent loop's configured ones). Arguments
/// over a limit are refused before the shim, validation or any copy sees them.
pub fn prepare_call_within(
    tool: &dyn AgentTool,
    raw_arguments: &Value,
    limits: &ArgumentLimits,
) -> Result<PreparedArguments, ToolError> {
    limits.check(&tool.spec().name, raw_arguments)?;
    if !tool.rewrites_arguments() {
        return validate_borrowed_unchecked(tool, raw_arguments).map(PreparedArguments);
    }
    let prepared = std::panic::catch_unwind(AssertUnwindSafe(|| {
        tool.prepare_arguments(raw_arguments.clone())
    }))
    .unwrap_or_else(|panic| {
        Err(ToolError::new(format!(
            "Tool {} panicked while preparing arguments: {}",
            tool.spec().name,
            panic_message(&*panic)
        )))
    })?;
    validate_owned_unchecked(tool, prepared).map(PreparedArguments::replaced)
}

/// Runs a tool with prepared arguments and turns every outcome into a result: `Err` becomes an
/// error result with the error's text, a panic `Tool <name> panicked: <message>`. A result the
/// tool returns with `is_error` set stays an error. Updates sent after this returns are ignored.
pub async fn execute_call(tool: &dyn AgentTool, arguments: Value, ctx: ToolContext) -> ToolResult {
    let started =
        std::panic::catch_unwind(AssertUnwindSafe(|| tool.execute(arguments, ctx.clone())));
    settle(tool, started, ctx).await
}

/// [`execute_call`] with the output of [`prepare_call`]: unchanged arguments are lent to the
/// tool ([`AgentTool::execute_borrowed`]) instead of copied.
pub async fn execute_prepared(
    tool: &dyn AgentTool,
    raw_arguments: &Value,
    prepared: PreparedArguments,
    ctx: ToolContext,
) -> ToolResult {
    let started = std::panic::catch_unwind(AssertUnwindSafe(|| match prepared.0 {
        Some(arguments) => tool.execute(arguments, ctx.clone()),
        None => tool.execute_borrowed(raw_arguments, ctx.clone()),
    }));
    settle(tool, started, ctx).await
}

type Started = std::thread::Result<BoxFuture<'static, Result<ToolResult, ToolError>>>;

/// Awaits a started tool, catching panics, and closes its update channel.
async fn settle(tool: &dyn AgentTool, started: Started, ctx: ToolContext) -> ToolResult {
    let outcome = match started {
        Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
        Err(panic) => Err(panic),
    };
    ctx.close_updates();
    match outcome {
        Ok(Ok(result)) => result,
        Ok(Err(err)) => ToolResult::error(err.message()),
        Err(panic) => ToolResult::error(format!(
            "Tool {} panicked: {}",
            tool.spec().name,
            panic_message(&*panic)
        )),
    }
}

/// The message of a panic payload (`&str` or `String`), or a placeholder.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "the panic carried no message".to_owned()
    }
}
