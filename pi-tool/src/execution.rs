//! The execution stage every host shares: a prepared call runs as it is, or, when its tool
//! blocks its thread or a timeout applies, on tokio's blocking pool and under a deadline.
//!
//! A call that sets no timeout and does not block costs nothing more than the tool's own
//! future ([`ToolCallFuture`]): no box, no timer, no thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::{Either, select};
use serde_json::Value;

use crate::run::{execute_call, execute_prepared};
use crate::{
    AgentTool, BoxFuture, CallLimits, Content, Deadline, PreparedArguments, ToolCallFuture,
    ToolContext, ToolResult,
};

/// `Tool get_weather timed out after 30s`: the result of a call that ran past its timeout.
pub fn timed_out_message(name: &str, timeout: Duration) -> String {
    format!("Tool {name} timed out after {}", short_duration(timeout))
}

/// `500ms`, `30s`, `5m`, `2h`: the units `#[tool(timeout = ..)]` takes.
fn short_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    if duration.subsec_nanos() != 0 || secs == 0 {
        let millis = duration.as_millis();
        if Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX)) == duration {
            return format!("{millis}ms");
        }
        return format!("{duration:?}");
    }
    if secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

/// Runs a prepared call within `limits`: in place when [`CallLimits::is_plain`] says so (the
/// returned future is then the tool's own [`ToolCallFuture`]); else on tokio's blocking pool
/// when the tool [blocks](AgentTool::blocking), and under its timeout when one applies
/// ([`CallLimits::timeout_of`]).
///
/// At the timeout the call's signal is cancelled and the tool gets
/// [`abort_grace`](CallLimits::abort_grace) to answer: what it answers is kept, marked as an
/// error, followed by `Tool <name> timed out after <timeout>`; a tool that does not answer in
/// time gets that text alone. `Err`s and panics become error results, as in
/// [`execute_prepared`].
#[inline]
pub fn execute_within<'a>(
    tool: &'a Arc<dyn AgentTool>,
    raw_arguments: &'a Value,
    arguments: PreparedArguments,
    ctx: ToolContext,
    limits: &CallLimits,
) -> ToolRun<'a> {
    let timeout = limits.timeout_of(tool.as_ref());
    if timeout.is_none() && !tool.blocking() {
        return ToolRun(Running::Plain(execute_prepared(
            tool.as_ref(),
            raw_arguments,
            arguments,
            ctx,
        )));
    }
    let limited = Limited {
        tool,
        raw_arguments,
        arguments,
        ctx,
        timeout,
        grace: limits.abort_grace,
    };
    // Boxed so that the rare path does not grow every call's future.
    ToolRun(Running::Limited(Box::pin(limited.run())))
}

/// A call started by [`execute_within`]: the tool's own future, or the future that bounds it.
#[must_use = "a tool call does nothing more unless its future is polled"]
pub struct ToolRun<'a>(Running<'a>);

enum Running<'a> {
    Plain(ToolCallFuture<'a>),
    Limited(BoxFuture<'a, ToolResult>),
}

impl Future for ToolRun<'_> {
    type Output = ToolResult;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ToolResult> {
        match &mut self.0 {
            Running::Plain(call) => Pin::new(call).poll(cx),
            Running::Limited(call) => call.as_mut().poll(cx),
        }
    }
}

impl std::fmt::Debug for ToolRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Running::Plain(call) => f.debug_tuple("ToolRun").field(call).finish(),
            Running::Limited(_) => f.debug_tuple("ToolRun").field(&"limited").finish(),
        }
    }
}

/// How one call runs when it has a timeout or blocks its thread.
struct Limited<'a> {
    tool: &'a Arc<dyn AgentTool>,
    raw_arguments: &'a Value,
    arguments: PreparedArguments,
    ctx: ToolContext,
    timeout: Option<Duration>,
    grace: Duration,
}

impl Limited<'_> {
    /// Runs the call (on the blocking pool if the tool says it blocks); at the timeout,
    /// cancels the call's signal, waits the grace for the tool to answer, and reports the
    /// timeout either way.
    async fn run(self) -> ToolResult {
        let Limited {
            tool,
            raw_arguments,
            arguments,
            ctx,
            timeout,
            grace,
        } = self;
        let signal = ctx.signal().clone();
        let execution = if tool.blocking() {
            Either::Left(run_blocking(
                Arc::clone(tool),
                arguments.into_value(raw_arguments),
                ctx,
            ))
        } else {
            Either::Right(execute_prepared(
                tool.as_ref(),
                raw_arguments,
                arguments,
                ctx,
            ))
        };
        let Some(timeout) = timeout else {
            return execution.await;
        };
        let execution = std::pin::pin!(execution);
        let execution = match select(execution, Deadline::after(timeout)).await {
            Either::Left((result, _)) => return result,
            Either::Right(((), execution)) => execution,
        };
        let message = timed_out_message(&tool.spec().name, timeout);
        signal.cancel();
        match select(execution, Deadline::after(grace)).await {
            // The tool answered for itself after the cancel (output so far, `Command
            // aborted`): keep what it said, marked as an error, and say why it stopped.
            Either::Left((mut result, _)) => {
                result.is_error = true;
                result.content.push(Content::text(message));
                result
            }
            Either::Right(((), _)) => ToolResult::error(message),
        }
    }
}

/// Runs a call on tokio's blocking pool, driving its future there with the runtime's handle,
/// so a tool that blocks its thread holds a pool thread, not the host's task. Outside a tokio
/// runtime there is no pool: the call runs in place.
async fn run_blocking(tool: Arc<dyn AgentTool>, arguments: Value, ctx: ToolContext) -> ToolResult {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return execute_call(tool.as_ref(), arguments, ctx).await;
    };
    let name = tool.spec().name.clone();
    let on_pool = handle.clone();
    let joined = handle
        .spawn_blocking(move || on_pool.block_on(execute_call(tool.as_ref(), arguments, ctx)))
        .await;
    // `execute_call` catches the tool's panics; a join error means the runtime is shutting
    // down and cancelled the task before it started.
    joined.unwrap_or_else(|err| ToolResult::error(format!("Tool {name} did not run: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_written() {
        assert_eq!(short_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(short_duration(Duration::from_secs(30)), "30s");
        assert_eq!(short_duration(Duration::from_secs(300)), "5m");
        assert_eq!(short_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(short_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(short_duration(Duration::from_nanos(1500)), "1.5µs");
    }
}
