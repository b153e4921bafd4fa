//! The pipeline of one call, the same in every host: lookup, the argument limits,
//! `prepare_arguments`, normalization and validation, the abort check, sequential exclusion,
//! execution within the call's limits (the tool's timeout or the host's, a `blocking` tool on
//! the blocking pool, panic capture), and the result-size limit.
//!
//! A host lends the pipeline what is its own through [`ToolHost`]: its tools, its
//! [`CallLimits`] and its [`CallGate`]. Everything else is the same everywhere, so a tool means
//! the same in `ToolRegistry::run`, an MCP server, a Restate tool service and the agent loop
//! (which runs these same stages, [`prepare_call_within`], [`execute_within`] and
//! [`fit_result`], between its hooks and events, and keeps sequential tools apart by running
//! their batch one call at a time).

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;

use futures_util::future::{Either, select};
use serde_json::Value;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::callers::{code_only_message, model_only_message};
use crate::nested::{BeforeCall, CallHooks, cannot_wait_message};
use crate::waiting::{Settled, settle};
use crate::{
    AgentTool, Approver, CallGate, CallLimits, CallOutcome, Decision, ExecutionMode,
    PreparedArguments, ToolCall, ToolContext, ToolResult, WaitingCall, execute_within, fit_result,
    prepare_call_within, tool_not_found_message,
};

/// The result text of a call that did not run, or was answered for, because its run was
/// aborted (a tool may give its own: [`AgentTool::aborted_message`]).
pub const ABORTED: &str = "Operation aborted";

/// What a host lends the pipeline: its tools, the bounds of each call, and optionally a gate
/// for sequential tools.
///
/// [`ToolRegistry`](crate::ToolRegistry) is one (its `run` uses it); `pi-mcp`'s server catalog
/// is another.
pub trait ToolHost: Send + Sync {
    /// The tool called `name` (exactly, case-sensitive).
    fn tool(&self, name: &str) -> Option<&Arc<dyn AgentTool>>;

    /// Every tool's name, for the "did you mean" of an unknown one.
    fn tool_names(&self) -> Vec<&str>;

    /// The bounds of each call.
    fn limits(&self) -> &CallLimits;

    /// The gate that keeps a sequential tool's calls apart from every other call. `None` (the
    /// default) when the host runs one call at a time itself, or has no sequential tool.
    fn gate(&self) -> Option<&CallGate> {
        None
    }
}

/// Runs one call through every stage of the pipeline in `host` (lookup, argument limits,
/// `prepare_arguments`, normalization, validation, sequential exclusion, execution within the
/// timeout, on the blocking pool for a `blocking` tool, panic capture, the result limit); every
/// failure (unknown tool, arguments over a limit, invalid arguments, an abort, a timeout,
/// `Err`, a panic) is an error result with the text every host gives.
///
/// `ctx` is the call's context: its signal (an abort before the call runs or while it waits for
/// the gate answers it with the tool's [`aborted_message`](AgentTool::aborted_message),
/// `Operation aborted` unless the tool says otherwise, and so does one while the tool runs, after
/// the abort grace), its updates and its state.
pub async fn run_tool_call(host: &dyn ToolHost, call: &ToolCall, ctx: ToolContext) -> ToolResult {
    let mut result = run_unfitted(host, call, ctx).await;
    // Every result, a refusal's too, as the loop fits every result message.
    fit_result(&mut result.content, host.limits().max_result_bytes);
    result
}

/// Runs a nested call (one a tool made with [`ToolContext::call_tool`]) through every stage of
/// [`run_tool_call`], with `hooks` (if any) around its execution, and keeps a sequential tool's
/// call apart from the other nested calls of the same parent (it runs inside its parent's own
/// admission, so it is not kept apart from the host's other top-level calls: waiting for them
/// would wait for the parent itself). A tool the model alone may call
/// ([`ToolCallers::Model`](crate::ToolCallers::Model)) is refused.
///
/// What a [`NestedHost`](crate::NestedHost) runs: `parent` is the context of the call that made
/// this one, `ctx` the nested call's own.
pub async fn run_nested_call(
    host: &dyn ToolHost,
    hooks: Option<&dyn CallHooks>,
    call: &ToolCall,
    parent: &ToolContext,
    ctx: ToolContext,
) -> ToolResult {
    // Not boxed here: a host's `run_nested` boxes this whole future once.
    let mut result = run_nested_unfitted(host, hooks, call, parent, ctx).await;
    fit_result(&mut result.content, host.limits().max_result_bytes);
    result
}

/// The refusal of a call that would have to wait (its tool is external, or wants approval for
/// these arguments): these hosts cannot wait for a decision, so the call does not run
/// unapproved. The agent loop pauses such a call instead.
fn cannot_wait(tool: &dyn AgentTool, arguments: &Value, ctx: &ToolContext) -> Option<ToolResult> {
    let name = &tool.spec().name;
    if tool.external() {
        return Some(ToolResult::error(crate::external_unanswered_message(name)));
    }
    tool.needs_approval(arguments, ctx).then(|| {
        ToolResult::error(format!(
            "Tool {name} was not run: it needs approval before it runs, and this host cannot wait \
             for a decision"
        ))
    })
}

/// Every stage of [`run_tool_call`] but the result-size limit.
async fn run_unfitted(host: &dyn ToolHost, call: &ToolCall, ctx: ToolContext) -> ToolResult {
    let (tool, arguments) = match prepare_top_level(host, call, &ctx) {
        Ok(prepared) => prepared,
        Err(refusal) => return refusal,
    };
    if let Some(refusal) = cannot_wait(tool.as_ref(), arguments.get(&call.arguments), &ctx) {
        return refusal;
    }
    execute_top_level(host, tool, call, arguments, ctx).await
}

/// Runs one call through every stage of [`run_tool_call`], except that a call that would wait
/// (its tool is external, or needs approval for these arguments) is put to `approver` and run
/// (or answered) as it decides, or, without an approver, given back as
/// [`CallOutcome::Waiting`] without running. What
/// [`ToolRegistry::run_or_wait`](crate::ToolRegistry::run_or_wait) runs; `pi-mcp`'s server runs
/// it with an approver that asks its client.
pub async fn run_tool_call_or_wait(
    host: &dyn ToolHost,
    call: &ToolCall,
    ctx: ToolContext,
    approver: Option<&Approver>,
) -> CallOutcome {
    let mut outcome = run_or_wait_unfitted(host, call, ctx, approver).await;
    if let CallOutcome::Done(result) = &mut outcome {
        fit_result(&mut result.content, host.limits().max_result_bytes);
    }
    outcome
}

/// Runs a call that waited, as `decision` says, through the stages after the wait: approved, it
/// runs with the arguments it waited with (prepared and validated again: the tool may have
/// changed since), or with the decision's own; denied, it is an error result with the reason;
/// answered, the answer is its result. An approval of an external tool's call is an error: only
/// an answer settles it.
pub async fn run_decided_call(
    host: &dyn ToolHost,
    waiting: &WaitingCall,
    decision: Decision,
    ctx: ToolContext,
) -> ToolResult {
    let call = ToolCall::new(
        waiting.id.clone(),
        waiting.tool.clone(),
        waiting.arguments.clone(),
    );
    let mut result = match prepare_top_level(host, &call, &ctx) {
        Ok((tool, arguments)) => run_decided(host, tool, &call, arguments, decision, ctx).await,
        // A denial or an answer needs no tool that still takes the arguments.
        Err(refusal) => match decision {
            Decision::Deny { reason } => {
                ToolResult::error(crate::denied_message(&waiting.tool, &reason))
            }
            Decision::Answer { result } => result,
            _ => refusal,
        },
    };
    fit_result(&mut result.content, host.limits().max_result_bytes);
    result
}

/// The stages of [`run_tool_call_or_wait`] but the result-size limit.
async fn run_or_wait_unfitted(
    host: &dyn ToolHost,
    call: &ToolCall,
    ctx: ToolContext,
    approver: Option<&Approver>,
) -> CallOutcome {
    let (tool, arguments) = match prepare_top_level(host, call, &ctx) {
        Ok(prepared) => prepared,
        Err(refusal) => return CallOutcome::Done(refusal),
    };
    let prepared = arguments.get(&call.arguments);
    let Some(waiting) = WaitingCall::of(tool.as_ref(), &call.id, prepared, &ctx) else {
        return CallOutcome::Done(execute_top_level(host, tool, call, arguments, ctx).await);
    };
    let Some(approver) = approver else {
        return CallOutcome::Waiting(waiting);
    };
    let decision = match crate::waiting::ask(approver, tool.as_ref(), waiting, &ctx).await {
        Ok(decision) => decision,
        Err(result) => return CallOutcome::Done(result),
    };
    CallOutcome::Done(run_decided(host, tool, call, arguments, decision, ctx).await)
}

/// A prepared call that waited, run (or answered) as `decision` says.
async fn run_decided(
    host: &dyn ToolHost,
    tool: &Arc<dyn AgentTool>,
    call: &ToolCall,
    arguments: PreparedArguments,
    decision: Decision,
    ctx: ToolContext,
) -> ToolResult {
    let replaced = match settle(tool.as_ref(), call, decision) {
        Settled::Answered(result) => return result,
        Settled::Run => None,
        Settled::RunWith(replaced) => Some(replaced),
    };
    // A decision can take long: an abort that came meanwhile stops the call here.
    if ctx.may_be_aborted() && ctx.is_aborted() {
        return ToolResult::error(tool.aborted_message());
    }
    match replaced {
        None => execute_top_level(host, tool, call, arguments, ctx).await,
        Some(replaced) => {
            // Arguments a person gave are validated as the model's are.
            let limits = &host.limits().arguments;
            match prepare_call_within(tool.as_ref(), &replaced.arguments, limits) {
                Ok(arguments) => execute_top_level(host, tool, &replaced, arguments, ctx).await,
                Err(err) => ToolResult::error(err.message()),
            }
        }
    }
}

/// Lookup, the callers check, the abort check and preparation of a top-level call; every
/// refusal as its result.
#[allow(clippy::result_large_err)] // The refusal is the call's result: it is moved out once.
fn prepare_top_level<'h>(
    host: &'h dyn ToolHost,
    call: &ToolCall,
    ctx: &ToolContext,
) -> Result<(&'h Arc<dyn AgentTool>, PreparedArguments), ToolResult> {
    let Some(tool) = host.tool(&call.name) else {
        return Err(ToolResult::error(tool_not_found_message(
            &call.name,
            host.tool_names(),
        )));
    };
    if !tool.callers().allows_model() {
        return Err(ToolResult::error(code_only_message(&call.name)));
    }
    // A fresh context (`ToolContext::new`) cannot be aborted but by the tool: nothing to watch.
    if ctx.may_be_aborted() && ctx.is_aborted() {
        return Err(ToolResult::error(tool.aborted_message()));
    }
    match prepare_call_within(tool.as_ref(), &call.arguments, &host.limits().arguments) {
        Ok(arguments) => Ok((tool, arguments)),
        Err(err) => Err(ToolResult::error(err.message())),
    }
}

/// The stages after preparation of a top-level call: the gate, execution within the limits,
/// and the abort watch.
async fn execute_top_level(
    host: &dyn ToolHost,
    tool: &Arc<dyn AgentTool>,
    call: &ToolCall,
    arguments: PreparedArguments,
    ctx: ToolContext,
) -> ToolResult {
    let watched = ctx.may_be_aborted();
    if watched || host.gate().is_some() {
        // Boxed: what only a gate or an abort needs keeps the plain call's future small.
        return Box::pin(run_gated(
            host,
            host.gate(),
            tool,
            call,
            arguments,
            ctx,
            watched,
        ))
        .await;
    }
    execute_within(tool, &call.arguments, arguments, ctx, host.limits()).await
}

/// The stages of a nested call but the result-size limit.
async fn run_nested_unfitted(
    host: &dyn ToolHost,
    hooks: Option<&dyn CallHooks>,
    call: &ToolCall,
    parent: &ToolContext,
    ctx: ToolContext,
) -> ToolResult {
    let Some(tool) = host.tool(&call.name) else {
        return ToolResult::error(tool_not_found_message(&call.name, host.tool_names()));
    };
    if !tool.callers().allows_code() {
        return ToolResult::error(model_only_message(&call.name));
    }
    if ctx.is_aborted() {
        return ToolResult::error(tool.aborted_message());
    }
    let limits = host.limits();
    let mut arguments = match prepare_call_within(tool.as_ref(), &call.arguments, &limits.arguments)
    {
        Ok(arguments) => arguments,
        Err(err) => return ToolResult::error(err.message()),
    };
    // A call that must wait is the host's to decide (the agent loop asks its approver, or
    // pauses the run); a host without hooks cannot wait, and refuses it.
    if let Some(waiting) = WaitingCall::of(
        tool.as_ref(),
        &call.id,
        arguments.get(&call.arguments),
        &ctx,
    ) {
        let Some(hooks) = hooks else {
            return ToolResult::error(cannot_wait_message(&call.name, waiting.kind));
        };
        match hooks.wait(call, waiting, parent).await {
            BeforeCall::Run => {}
            BeforeCall::RunWith(replaced) => arguments = PreparedArguments::replaced(replaced),
            BeforeCall::Answer(result) => return result,
        }
        if ctx.is_aborted() {
            return ToolResult::error(tool.aborted_message());
        }
    }
    let Some(hooks) = hooks.filter(|hooks| hooks.has_before_call() || hooks.has_after_call())
    else {
        let gate = Some(&parent.children().gate);
        return run_gated(host, gate, tool, call, arguments, ctx, true).await;
    };
    if hooks.has_before_call() {
        match hooks
            .before_call(call, arguments.get(&call.arguments), parent)
            .await
        {
            BeforeCall::Run => {}
            BeforeCall::RunWith(replaced) => arguments = PreparedArguments::replaced(replaced),
            BeforeCall::Answer(result) => return result,
        }
        if ctx.is_aborted() {
            return ToolResult::error(tool.aborted_message());
        }
    }
    let kept = hooks
        .has_after_call()
        .then(|| arguments.get(&call.arguments).clone());
    let gate = Some(&parent.children().gate);
    let result = run_gated(host, gate, tool, call, arguments, ctx, true).await;
    match kept {
        Some(arguments) => hooks.after_call(call, &arguments, result, parent).await,
        None => result,
    }
}

/// The stages after preparation for a call with a gate, or a signal to watch.
async fn run_gated(
    host: &dyn ToolHost,
    gate: Option<&CallGate>,
    tool: &Arc<dyn AgentTool>,
    call: &ToolCall,
    arguments: PreparedArguments,
    ctx: ToolContext,
    watched: bool,
) -> ToolResult {
    let limits = host.limits();
    let _admission = match gate {
        Some(gate) => {
            let exclusive = tool.execution_mode() == Some(ExecutionMode::Sequential);
            match until_aborted(&ctx, gate.admit(exclusive)).await {
                Some(admission) => Some(admission),
                None => return ToolResult::error(tool.aborted_message()),
            }
        }
        None => None,
    };
    if watched {
        let watching = ctx.clone();
        let running = execute_within(tool, &call.arguments, arguments, ctx, limits);
        until_aborted_or_grace(&watching, limits, tool.aborted_message(), running).await
    } else {
        execute_within(tool, &call.arguments, arguments, ctx, limits).await
    }
}

/// `future`'s output, or `None` once `ctx` is aborted first.
async fn until_aborted<F: Future>(ctx: &ToolContext, future: F) -> Option<F::Output> {
    if !ctx.may_be_aborted() {
        return Some(future.await);
    }
    race_abort(ctx.abort_signal(), pin!(future)).await.ok()
}

/// `future`'s output, or `Err` once `signal` is cancelled first (the future is then left
/// unfinished with its caller). The wait for the signal is set up only when the future does not
/// finish at its first poll, so a call that finishes at once never registers with the signal.
async fn race_abort<F: Future>(
    signal: &CancellationToken,
    mut future: Pin<&mut F>,
) -> Result<F::Output, ()> {
    let mut cancelled = pin!(None::<WaitForCancellationFuture<'_>>);
    poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        if cancelled.is_none() {
            cancelled.set(Some(signal.cancelled()));
        }
        let Some(cancelled) = cancelled.as_mut().as_pin_mut() else {
            unreachable!("set above");
        };
        cancelled.poll(cx).map(Err)
    })
    .await
}

/// Runs a call; after an abort of `ctx` from outside ([`ToolContext::abort_signal`]: its parent,
/// or its own signal if it had one when the call started) the call gets the grace to answer
/// for itself, and is then answered with the tool's `aborted` text (`Operation aborted` unless
/// it says otherwise). A timeout cancelling the call's own signal is the timeout's to answer,
/// not this.
async fn until_aborted_or_grace<F>(
    ctx: &ToolContext,
    limits: &CallLimits,
    aborted: &str,
    call: F,
) -> ToolResult
where
    F: Future<Output = ToolResult>,
{
    let mut call = pin!(call);
    if let Ok(result) = race_abort(ctx.abort_signal(), call.as_mut()).await {
        return result;
    }
    match select(call, crate::Deadline::after(limits.abort_grace)).await {
        Either::Left((result, _)) => result,
        Either::Right(((), _)) => ToolResult::error(aborted),
    }
}
