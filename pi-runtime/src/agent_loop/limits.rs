//! What bounds one tool call in the loop: its timeout, running a blocking tool off the loop's
//! task, and the size of the result that enters the transcript.
//!
//! None of it costs a call that sets no timeout, is not `blocking` and returns a result under
//! the size limit: those take the plain path in `call.rs`, and the size check only adds up
//! lengths.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{Either, select};
use pi_tool::{
    AgentTool, Content, PreparedArguments, ToolContext, ToolResult, execute_call, execute_prepared,
};
use serde_json::Value;

use super::batch::Batch;
use super::deadline::Deadline;
use super::grace::Grace;

impl Batch<'_, '_> {
    /// Runs a prepared call: in place when it has no timeout and does not block, else through
    /// [`Limited`]. (The loop's plain path, no hook either, calls the tool without this.)
    pub(super) async fn run_tool(
        &self,
        tool: &Arc<dyn AgentTool>,
        raw_arguments: &Value,
        args: PreparedArguments,
        ctx: ToolContext,
    ) -> ToolResult {
        let timeout = tool.timeout().or(self.env.config.tool_timeout);
        if timeout.is_none() && !tool.blocking() {
            return execute_prepared(tool.as_ref(), raw_arguments, args, ctx).await;
        }
        let limited = Limited {
            tool,
            raw_arguments,
            args,
            ctx,
            timeout,
            grace: self.env.config.abort_grace,
        };
        // Boxed so that the rare path does not grow every call's future.
        Box::pin(limited.run()).await
    }
}

/// `Tool get_weather timed out after 30s`.
pub(super) fn timed_out_message(name: &str, timeout: Duration) -> String {
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

/// How one call runs when it has a timeout or blocks its thread.
pub(super) struct Limited<'a> {
    pub(super) tool: &'a Arc<dyn AgentTool>,
    pub(super) raw_arguments: &'a Value,
    pub(super) args: PreparedArguments,
    pub(super) ctx: ToolContext,
    pub(super) timeout: Option<Duration>,
    pub(super) grace: Duration,
}

impl Limited<'_> {
    /// Runs the call (on the blocking pool if the tool says it blocks); at the timeout,
    /// cancels the call's token, waits the grace for the tool to answer, and reports the
    /// timeout either way.
    pub(super) async fn run(self) -> ToolResult {
        let Limited {
            tool,
            raw_arguments,
            args,
            ctx,
            timeout,
            grace,
        } = self;
        let signal = ctx.signal().clone();
        let execution = if tool.blocking() {
            Either::Left(run_blocking(
                Arc::clone(tool),
                args.into_value(raw_arguments),
                ctx,
            ))
        } else {
            Either::Right(execute_prepared(tool.as_ref(), raw_arguments, args, ctx))
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
        match select(execution, Grace::after(grace)).await {
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
/// so a tool that blocks its thread holds a pool thread, not the loop's task. Outside a tokio
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

/// Cuts the text of a result to `max_bytes`, in place; a note saying how much was dropped
/// takes the place of the rest. Images are kept (see `AgentLoopConfig::max_result_bytes`).
/// Allocates nothing when the text fits.
pub(super) fn fit_result(content: &mut Vec<Content>, max_bytes: usize) {
    let total: usize = content
        .iter()
        .filter_map(Content::as_text)
        .map(str::len)
        .sum();
    if total <= max_bytes {
        return;
    }
    let mut budget = max_bytes;
    let mut kept = 0;
    content.retain_mut(|block| {
        let Content::Text { text } = block else {
            return true;
        };
        if budget == 0 {
            return false;
        }
        if text.len() > budget {
            // Cut here and drop later text: it would read as if it followed the cut directly.
            text.truncate(cut_point(text, budget));
            budget = 0;
        } else {
            budget -= text.len();
        }
        kept += text.len();
        !text.is_empty()
    });
    content.push(Content::text(format!(
        "[Tool output truncated: {kept} of {total} bytes shown. The rest exceeded this agent's \
         limit of {max_bytes} bytes for one tool result. Ask for less at a time: a narrower \
         query, a smaller range, or an offset and limit.]"
    )));
}

/// The byte index to cut `text` at so at most `budget` bytes stay: after the last line break
/// in the second half of the budget, else at a character boundary.
fn cut_point(text: &str, budget: usize) -> usize {
    let mut cut = budget.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    match text[..cut].rfind('\n') {
        Some(line_end) if line_end + 1 >= cut / 2 => line_end + 1,
        _ => cut,
    }
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

    #[test]
    fn text_is_cut_at_a_line_end_or_char_boundary() {
        let mut content = vec![Content::text("ab\ncd\nef"), Content::text("gh")];
        fit_result(&mut content, 7);
        assert_eq!(content[0].as_text(), Some("ab\ncd\n"));
        assert_eq!(
            content.len(),
            2,
            "the second block is dropped, the note added"
        );
        assert!(
            content[1]
                .as_text()
                .is_some_and(|note| note.starts_with("[Tool output truncated: 6 of 10 bytes shown"))
        );

        let mut content = vec![Content::text("ééé")];
        fit_result(&mut content, 3);
        assert_eq!(content[0].as_text(), Some("é"));
    }

    #[test]
    fn text_within_the_limit_is_left_alone() {
        let mut content = vec![Content::text("abc")];
        fit_result(&mut content, 3);
        assert_eq!(content, vec![Content::text("abc")]);
    }
}
