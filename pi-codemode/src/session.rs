//! The host side of one `code` call: starts the engine (which runs the script's calls on its
//! own thread, [`crate::calls`]), waits for its outcome or an abort, and turns the outcome into
//! the result the model sees.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pi_tool::{Content, ToolContext, ToolResult};
use serde_json::json;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::CodeLimits;
use crate::engine::{self, Job, Outcome};

/// Runs `script` to its result. Calls still running when the script returns are dropped, which
/// cancels them; an abort of `ctx`'s signal stops the engine through its interrupt handler (or
/// wakes it from waiting for calls) and answers at once.
pub(crate) async fn run(
    script: String,
    tools: Arc<BTreeMap<String, bool>>,
    limits: CodeLimits,
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
    };
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
        outcome = outcome => match outcome {
            Ok(outcome) => answer(outcome),
            Err(_) => ToolResult::error("the code engine stopped unexpectedly"),
        },
    }
}

/// The result the model sees: the return value as JSON, the console, the attached images.
fn answer(outcome: Outcome) -> ToolResult {
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
            let text = serde_json::to_string(&value).unwrap_or_else(|_| "null".into());
            let mut content = vec![Content::text(with_console(text))];
            content.extend(images);
            ToolResult::new(
                content,
                json!({ "result": value, "console": console, "calls": calls }),
            )
        }
        Err(message) => {
            let mut result = ToolResult::error(with_console(message));
            result.content.extend(images);
            result.details = json!({ "console": console, "calls": calls });
            result
        }
    }
}
