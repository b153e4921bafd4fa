//! The host side of one `code` call: starts the engine (which runs the script's calls on its
//! own thread, [`crate::calls`]), waits for its outcome or an abort, and turns the outcome into
//! the result the model sees.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pi_tool::{Content, Deadline, ToolContext, ToolResult};
use serde_json::json;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::CodeLimits;
use crate::catalog::Catalog;
use crate::engine::{self, Job, Outcome};

/// Runs `script` to its result. Calls still running when the script returns are dropped, which
/// cancels them; an abort of `ctx`'s signal stops the engine through its interrupt handler (or
/// wakes it from waiting for calls) and answers at once.
pub(crate) async fn run(
    script: String,
    tools: Arc<Catalog>,
    limits: CodeLimits,
    engines: Arc<AtomicUsize>,
    ctx: ToolContext,
) -> ToolResult {
    let Ok(runtime) = Handle::try_current() else {
        return ToolResult::error("the code tool runs only inside a tokio runtime");
    };
    let (done, outcome) = oneshot::channel();
    let abort = Arc::new(AtomicBool::new(false));
    let signal = ctx.signal().clone();
    let job = Job {
        script,
        tools,
        limits,
        ctx,
        runtime,
        abort: Arc::clone(&abort),
        engines,
    };
    let result_bytes = job.limits.result_bytes;
    let time = job.limits.time;
    let Ok(engine) = engine::spawn(job, done) else {
        return ToolResult::error("the code engine could not start a thread");
    };
    tokio::select! {
        biased;
        () = signal.cancelled() => {
            abort.store(true, Ordering::Relaxed);
            engine.unpark();
            ToolResult::error("the code call was aborted")
        }
        // The engine polls its caps by a count of operations: a loop of long built-in calls
        // can keep it from looking for a while. The call is answered at the cap all the same;
        // the engine stops at its next look (the deadline has passed by then).
        () = Deadline::after(time + ANSWER_GRACE) => {
            engine.unpark();
            ToolResult::error(format!(
                "the script ran past its time cap ({} s) and was stopped",
                time.as_secs_f64()
            ))
        }
        outcome = outcome => match outcome {
            Ok(outcome) => answer(outcome, result_bytes),
            Err(_) => ToolResult::error("the code engine stopped unexpectedly"),
        },
    }
}

/// How long past the time cap the host waits for the engine's own answer before answering for
/// it (the engine answers within a few milliseconds when it polls as usual).
const ANSWER_GRACE: Duration = Duration::from_millis(100);

/// The result the model sees: the return value as JSON (at most `result_bytes` of it), the
/// console, the attached images.
fn answer(outcome: Outcome, result_bytes: usize) -> ToolResult {
    let Outcome {
        value,
        console,
        images,
        unfinished,
        calls,
    } = outcome;
    let with_console = |mut text: String| {
        if !console.is_empty() {
            text.push_str("\n\nconsole:\n");
            text.push_str(&console);
        }
        text
    };
    let value = match value {
        Ok(_) if !unfinished.is_empty() => Err(format!(
            "the script returned while {} tool call(s) were still running ({}); they were cancelled. Await every call (e.g. with Promise.all)",
            unfinished.len(),
            unfinished.join(", ")
        )),
        value => value,
    };
    match value {
        Ok(value) => {
            let mut text = serde_json::to_string(&value).unwrap_or_else(|_| "null".into());
            let details = if text.len() > result_bytes {
                drop(value);
                let bytes = text.len();
                // The note first, and the whole within the cap: a host's own cut of the text
                // (at the same size by default) leaves it alone.
                let note = format!(
                    "[the return value is {bytes} bytes of JSON, past the result cap of {result_bytes} bytes: only its start is shown, and the rest is not kept. Return less: a summary, a count, a slice]\n"
                );
                text.truncate(floor_char_boundary(
                    &text,
                    result_bytes.saturating_sub(note.len()),
                ));
                text.insert_str(0, &note);
                json!({ "result_bytes": bytes, "result_cut": true, "console": console, "calls": calls })
            } else {
                json!({ "result": value, "console": console, "calls": calls })
            };
            let mut content = vec![Content::text(with_console(text))];
            content.extend(images);
            ToolResult::new(content, details)
        }
        Err(message) => {
            let mut result = ToolResult::error(with_console(message));
            result.content.extend(images);
            result.details = json!({ "console": console, "calls": calls });
            result
        }
    }
}

/// The largest index at most `index` that is a character boundary of `text`.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}
