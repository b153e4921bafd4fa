//! The per-call pipeline shared by the single-call runner and the agent loop:
//! lookup -> `prepare_arguments` -> validate -> execute, every failure an error result.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use serde_json::Value;

use crate::suggest::did_you_mean;
use crate::validate::validate_owned;
use crate::{AgentTool, ToolContext, ToolError, ToolResult};

/// `Tool <name> not found`, plus ` (did you mean "<close>"?)` when a known name is close.
pub fn tool_not_found_message<'a, I>(name: &str, known: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    format!("Tool {name} not found{}", did_you_mean(name, known))
}

/// Applies the tool's `prepare_arguments` shim, then validates and normalizes the result.
///
/// A panicking shim is reported as an error, like any other failure of this step.
pub fn prepare_call(tool: &dyn AgentTool, raw_arguments: &Value) -> Result<Value, ToolError> {
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
    validate_owned(tool, prepared)
}

/// Runs a tool with prepared arguments and turns every outcome into a result: `Err` becomes an
/// error result with the error's text, a panic `Tool <name> panicked: <message>`. A result the
/// tool returns with `is_error` set stays an error. Updates sent after this returns are ignored.
pub async fn execute_call(tool: &dyn AgentTool, arguments: Value, ctx: ToolContext) -> ToolResult {
    let started =
        std::panic::catch_unwind(AssertUnwindSafe(|| tool.execute(arguments, ctx.clone())));
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
