//! The host side of one `code` call: starts the engine, runs the calls it asks for (all at once,
//! each a nested call, [`ToolContext::call_tool`], through the host's own pipeline), forwards their updates as the call's progress, and turns
//! the outcome into the result the model sees.

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use pi_tool::{Content, ToolContext, ToolResult, UpdateSink};
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;

use crate::CodeLimits;
use crate::engine::{self, Call, Job, Outcome, ToHost, ToScript};

/// Runs `script` to its result. Calls still running when the script returns are dropped, which
/// cancels them; an abort of `ctx`'s signal stops the engine through its interrupt handler and
/// answers at once.
pub(crate) async fn run(
    script: String,
    tools: Arc<BTreeMap<String, bool>>,
    limits: CodeLimits,
    ctx: ToolContext,
) -> ToolResult {
    let (to_host, mut requests) = unbounded_channel();
    let (to_script, from_host) = mpsc::channel();
    let abort = Arc::new(AtomicBool::new(false));
    let job = Job {
        script,
        tools,
        limits,
        to_host,
        from_host,
        abort: Arc::clone(&abort),
    };
    if engine::spawn(job).is_err() {
        return ToolResult::error("the code engine could not start a thread");
    }
    let signal = ctx.signal().clone();
    let mut running = FuturesUnordered::new();
    let outcome = loop {
        tokio::select! {
            biased;
            () = signal.cancelled() => {
                abort.store(true, Ordering::Relaxed);
                drop(to_script);
                return ToolResult::error("the code call was aborted");
            }
            request = requests.recv() => match request {
                Some(ToHost::Calls(calls)) => {
                    for Call { id, name, arguments } in calls {
                        let updates = progress(&ctx, &name, id);
                        let call = ctx.call_tool(name, arguments).on_update(updates).into_future();
                        running.push(async move { (id, call.await) });
                    }
                }
                Some(ToHost::Done(outcome)) => break outcome,
                None => return ToolResult::error("the code engine stopped unexpectedly"),
            },
            Some((id, result)) = running.next(), if !running.is_empty() => {
                // The engine may be gone (the script is over): then nobody waits for this.
                let _ = to_script.send(ToScript::Result { id, result });
            }
        }
    };
    drop(running);
    answer(outcome)
}

/// A child's partial results as progress of the `code` call, tagged with the tool.
fn progress(ctx: &ToolContext, name: &str, id: u64) -> UpdateSink {
    let ctx = ctx.clone();
    let name = name.to_owned();
    Arc::new(move |partial: ToolResult| {
        let details = json!({ "tool": name, "call": id, "details": partial.details });
        ctx.update(ToolResult::new(partial.content, details));
    })
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
