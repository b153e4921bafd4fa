//! The per-call pipeline shared by the single-call runner and the agent loop:
//! lookup -> `prepare_arguments` -> validate -> execute, every failure an error result.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

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
///
/// One pointer wide: a host that keeps a thousand prepared calls keeps no rewritten value
/// inline for the few that have one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PreparedArguments(Option<Box<Value>>);

impl PreparedArguments {
    /// Arguments that replace the model's (e.g. from a `before_tool_call` hook).
    pub fn replaced(arguments: Value) -> Self {
        PreparedArguments(Some(Box::new(arguments)))
    }

    /// Whether the model's arguments are used as they came.
    pub fn is_unchanged(&self) -> bool {
        self.0.is_none()
    }

    /// The arguments the tool will get, given the model's raw arguments.
    pub fn get<'a>(&'a self, raw: &'a Value) -> &'a Value {
        self.0.as_deref().unwrap_or(raw)
    }

    /// The arguments the tool will get, owned.
    pub fn into_value(self, raw: &Value) -> Value {
        self.0.map_or_else(|| raw.clone(), |arguments| *arguments)
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
    if !tool.rewrites_arguments() {
        let normalized = match tool.validator() {
            // The usual call: arguments that fit as they are pass in one walk.
            Some(validator) if validator.accepts_as_is(raw_arguments, limits) => None,
            Some(validator) => {
                limits.check(&tool.spec().name, raw_arguments)?;
                validator.validate_borrowed_in_full(raw_arguments)?
            }
            None => {
                limits.check(&tool.spec().name, raw_arguments)?;
                validate_borrowed_unchecked(tool, raw_arguments)?
            }
        };
        return Ok(PreparedArguments(normalized.map(Box::new)));
    }
    limits.check(&tool.spec().name, raw_arguments)?;
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
/// tool returns with `is_error` set stays an error. Updates sent after the call finishes (or
/// after its future is dropped) are ignored.
///
/// The tool's `execute` runs (and deserializes its arguments) when this is called; the
/// returned future awaits what it started.
pub fn execute_call(
    tool: &dyn AgentTool,
    arguments: Value,
    ctx: ToolContext,
) -> ToolCallFuture<'_> {
    let started =
        std::panic::catch_unwind(AssertUnwindSafe(|| tool.execute(arguments, ctx.clone())));
    ToolCallFuture::new(tool, started, ctx)
}

/// [`execute_call`] with the output of [`prepare_call`]: unchanged arguments are lent to the
/// tool ([`AgentTool::execute_borrowed`]) instead of copied.
pub fn execute_prepared<'a>(
    tool: &'a dyn AgentTool,
    raw_arguments: &Value,
    prepared: PreparedArguments,
    ctx: ToolContext,
) -> ToolCallFuture<'a> {
    let started = std::panic::catch_unwind(AssertUnwindSafe(|| match prepared.0 {
        Some(arguments) => tool.execute(*arguments, ctx.clone()),
        None => tool.execute_borrowed(raw_arguments, ctx.clone()),
    }));
    ToolCallFuture::new(tool, started, ctx)
}

type Started = std::thread::Result<BoxFuture<'static, Result<ToolResult, ToolError>>>;

/// A started tool call ([`execute_call`], [`execute_prepared`]): awaits the tool's future,
/// catching its panic, and closes the call's updates when it finishes or is dropped.
///
/// A plain struct rather than an `async fn`, so a host's per-call future stays small and the
/// result is moved out once.
#[must_use = "a tool call does nothing more unless its future is polled"]
pub struct ToolCallFuture<'a> {
    tool: &'a dyn AgentTool,
    /// `None` once the call has finished.
    running: Option<Started>,
    ctx: ToolContext,
}

impl<'a> ToolCallFuture<'a> {
    fn new(tool: &'a dyn AgentTool, started: Started, ctx: ToolContext) -> Self {
        ToolCallFuture {
            tool,
            running: Some(started),
            ctx,
        }
    }
}

impl Future for ToolCallFuture<'_> {
    type Output = ToolResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ToolResult> {
        let this = &mut *self;
        // Matched where it lands: the result (216 bytes) is moved as few times as it can be.
        let result = match &mut this.running {
            Some(Ok(future)) => {
                match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
                    Ok(Poll::Pending) => return Poll::Pending,
                    Ok(Poll::Ready(Ok(result))) => result,
                    Ok(Poll::Ready(Err(err))) => ToolResult::error(err.message()),
                    Err(panic) => panicked(this.tool, &*panic),
                }
            }
            Some(Err(panic)) => panicked(this.tool, &**panic),
            None => panic!("a `ToolCallFuture` was polled after it finished"),
        };
        // The tool's future is dropped before its updates stop.
        this.running = None;
        this.ctx.close_updates();
        Poll::Ready(result)
    }
}

/// The result of a tool that panicked.
fn panicked(tool: &dyn AgentTool, panic: &(dyn Any + Send)) -> ToolResult {
    ToolResult::error(format!(
        "Tool {} panicked: {}",
        tool.spec().name,
        panic_message(panic)
    ))
}

impl Drop for ToolCallFuture<'_> {
    fn drop(&mut self) {
        if self.running.take().is_some() {
            self.ctx.close_updates();
        }
    }
}

impl std::fmt::Debug for ToolCallFuture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCallFuture")
            .field("tool", &self.tool.spec().name)
            .field("finished", &self.running.is_none())
            .finish_non_exhaustive()
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures_util::FutureExt;
    use serde_json::json;

    use super::*;
    use crate::{FnTool, tool_fn};

    /// A tool that sends an update, then waits forever (until its future is dropped).
    fn waiting_tool() -> FnTool {
        let handler = |_args, ctx: ToolContext| async move {
            ctx.update(ToolResult::text("started"));
            std::future::pending::<()>().await;
            Ok::<_, ToolError>(ToolResult::text("done"))
        };
        tool_fn(
            "wait",
            "Send an update, then wait.",
            json!({"type": "object"}),
            handler,
        )
        .expect("a valid tool")
    }

    #[test]
    fn dropping_a_running_call_closes_its_updates() {
        let tool = waiting_tool();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let ctx = ToolContext::new("c1").with_updates(Arc::new(move |partial: ToolResult| {
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(partial.text_content());
        }));
        let leftover = ctx.clone();
        let mut call = execute_call(&tool, json!({}), ctx);
        assert!((&mut call).now_or_never().is_none(), "the tool waits");
        drop(call);
        leftover.update(ToolResult::text("after the drop"));
        assert_eq!(
            *seen.lock().unwrap_or_else(|p| p.into_inner()),
            vec!["started".to_owned()]
        );
    }

    #[test]
    fn a_panicking_or_failing_tool_gives_an_error_result() {
        let panics = tool_fn(
            "boom",
            "Panic.",
            json!({"type": "object"}),
            |_args, _ctx| async {
                panic!("the disk is on fire");
                #[allow(unreachable_code)]
                Ok::<_, ToolError>(ToolResult::text("unreachable"))
            },
        )
        .expect("a valid tool");
        let result = execute_call(&panics, json!({}), ToolContext::new("c1"))
            .now_or_never()
            .expect("finishes at once");
        assert!(result.is_error);
        assert_eq!(
            result.text_content(),
            "Tool boom panicked: the disk is on fire"
        );

        let fails = tool_fn(
            "fail",
            "Fail.",
            json!({"type": "object"}),
            |_args, _ctx| async { Err::<ToolResult, _>(ToolError::new("no such file")) },
        )
        .expect("a valid tool");
        let result = execute_call(&fails, json!({}), ToolContext::new("c2"))
            .now_or_never()
            .expect("finishes at once");
        assert!(result.is_error);
        assert_eq!(result.text_content(), "no such file");
    }
}
