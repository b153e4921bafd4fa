//! The pipeline of one tool call: preparation (lookup, `prepare_arguments`, validation,
//! `before_tool_call`, abort checks), execution with its `ToolContext`, `after_tool_call`, and
//! the result message.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;

use futures_util::future::{Either, select};
use pi_tool::{
    AgentTool, Deadline, PreparedArguments, ToolCallFuture, ToolContext, ToolResult, Usage,
    WaitKind, approval_reason, code_only_message, execute_prepared, execute_within,
    external_reason, fit_result, model_only_message, prepare_call_within, tool_not_found_message,
};
use tracing::Span;

use super::batch::Batch;
use super::clock::Instant;
use super::context::ToolSet;
use super::emitter::{Emitter, Pending};
use super::hooks;
use super::nested_wait::{NestedEnd, outer_reason};
use super::resume::Settled;
use super::run::ABORTED;
use crate::config::{AfterToolCallContext, BeforeToolCallContext};
use crate::event::{AgentEvent, ToolCallRef};
use crate::message::{Message, ToolResultMessage};
use crate::wait::{NestedWait, WaitingCall};

/// The error of a call the loop refuses because its message hit the output token limit.
fn length_refusal(name: &str) -> String {
    format!(
        "Tool call \"{name}\" was not executed: the response hit the output token limit, so its arguments may be \
         truncated. Re-issue the tool call with complete arguments."
    )
}

/// A call that passed preparation. Its tool is borrowed from the run's tool set.
pub(super) struct Prepared<'t> {
    pub(super) call: ToolCallRef,
    pub(super) tool: &'t Arc<dyn AgentTool>,
    /// The model's arguments (borrowed from the message) unless preparation rewrote them.
    pub(super) args: PreparedArguments,
    pub(super) started: Instant,
}

pub(super) enum Preparation<'t> {
    /// The call failed (or was refused) before running: its result is final.
    Immediate(ToolCallRef, ToolResult),
    Ready(Prepared<'t>),
    /// The call waits for a decision (or an answer from outside): it does not run now.
    Wait(ToolCallRef, WaitingCall),
}

/// A finished call: its result message, the loop hints of its result, and what its
/// `ToolExecutionEnd` tells besides the message.
pub(super) struct Finished {
    /// Moved into the end event (a clone would cost the assistant message's reference count
    /// twice more per call).
    call: Option<ToolCallRef>,
    pub(super) message: Arc<Message>,
    pub(super) terminate: bool,
    pub(super) added_tool_names: Vec<String>,
    is_error: bool,
    duration_ms: u64,
    /// Taken by the end event.
    usage: Option<Box<Usage>>,
    /// The call waits after all, with a call it made from code (no result message then).
    pub(super) paused: Option<Box<(WaitingCall, NestedWait)>>,
}

impl Finished {
    /// The call, until its end event took it.
    pub(super) fn call(&self) -> Option<&ToolCallRef> {
        self.call.as_ref()
    }

    /// The call's `ToolExecutionEnd` (emitted once: it takes the call and the usage).
    pub(super) fn end_event(&mut self) -> AgentEvent {
        let call = self.call.take().expect("a call's end event is made once");
        if let Some(paused) = &self.paused {
            return waiting_event(call, &paused.0);
        }
        AgentEvent::ToolExecutionEnd {
            call,
            result: Arc::clone(&self.message),
            is_error: self.is_error,
            terminate: self.terminate,
            usage: self.usage.take(),
            duration_ms: self.duration_ms,
        }
    }

    /// [`end_event`](Self::end_event), made in `queue`'s own memory (see
    /// [`Emitter::emit_made`](super::emitter::Emitter::emit_made)). Written out again rather
    /// than `queue.push_back(self.end_event())`: the event built on the stack and then moved is
    /// the store-forwarding stall 47a0dc4 measured away in W1 (-33 instructions per call).
    #[inline]
    pub(super) fn push_end_event(&mut self, queue: &mut VecDeque<AgentEvent>) {
        let call = self.call.take().expect("a call's end event is made once");
        if let Some(paused) = &self.paused {
            queue.push_back(waiting_event(call, &paused.0));
            return;
        }
        queue.push_back(AgentEvent::ToolExecutionEnd {
            call,
            result: Arc::clone(&self.message),
            is_error: self.is_error,
            terminate: self.terminate,
            usage: self.usage.take(),
            duration_ms: self.duration_ms,
        });
    }
}

/// The `ToolCallWaiting` of a call that waits on a call it made from code.
#[cold]
pub(super) fn waiting_event(call: ToolCallRef, waiting: &WaitingCall) -> AgentEvent {
    AgentEvent::ToolCallWaiting {
        call,
        waiting: Box::new(waiting.clone()),
    }
}

impl<'b> Batch<'_, 'b> {
    /// Lookup, `prepare_arguments`, validation and `before_tool_call`, with the abort checks.
    pub(super) async fn prepare(&self, call: ToolCallRef, started: Instant) -> Preparation<'b> {
        let preparation = self.prepare_with_hook(call, started).await;
        match (preparation, &self.env.config.approver) {
            (Preparation::Wait(call, waiting), Some(approver)) => {
                self.ask_approver(approver, call, waiting, started).await
            }
            (preparation, _) => preparation,
        }
    }

    /// Whether preparing a call may await (a `before_tool_call` hook or an approver is set).
    pub(super) fn prepares_async(&self) -> bool {
        self.env.config.before_tool_call.is_some() || self.env.config.approver.is_some()
    }

    /// [`prepare`](Self::prepare) up to the approver.
    async fn prepare_with_hook(&self, call: ToolCallRef, started: Instant) -> Preparation<'b> {
        if self.env.config.before_tool_call.is_none() {
            return self.validate(call, started);
        }
        let (call, tool, mut args) = match self.check(call, started, &mut Stretch::default()) {
            Preparation::Ready(Prepared {
                call, tool, args, ..
            }) => (call, tool, args),
            immediate => return immediate,
        };
        let mut suspended = None;
        if let Some(hook) = &self.env.config.before_tool_call {
            let ctx = BeforeToolCallContext {
                assistant_message: Arc::clone(call.message()),
                tool_call: call.block().call.clone(),
                args: args.get(call.arguments()).clone(),
                messages: self
                    .hook_messages
                    .clone()
                    .unwrap_or_else(|| self.env.transcript.into()),
                signal: self.env.signal.clone(),
                parent_tool_call: None,
            };
            match hooks::before(hook, ctx).await {
                hooks::Before::Run(Some(replaced)) => args = PreparedArguments::replaced(replaced),
                hooks::Before::Run(None) => {}
                hooks::Before::Refused(result) => return Preparation::Immediate(call, result),
                hooks::Before::Wait(reason, replaced) => {
                    if let Some(replaced) = replaced {
                        args = PreparedArguments::replaced(replaced);
                    }
                    suspended = Some(reason);
                }
            }
            if self.env.aborted.is_cancelled() {
                return Preparation::Immediate(call, ToolResult::error(ABORTED));
            }
        }
        self.wait_check(
            Prepared {
                call,
                tool,
                args,
                started,
            },
            suspended,
            &mut Stretch::default(),
        )
    }

    /// [`check`](Self::check), then whether the call must wait (no await: without a hook,
    /// preparation is this).
    pub(super) fn validate(&self, call: ToolCallRef, started: Instant) -> Preparation<'b> {
        self.validate_in_run(call, started, &mut Stretch::default())
    }

    /// [`validate`](Self::validate) for one of a stretch of preparations (see [`Stretch`]),
    /// which it leaves as it should be for the next call.
    pub(super) fn validate_in_run(
        &self,
        call: ToolCallRef,
        started: Instant,
        stretch: &mut Stretch,
    ) -> Preparation<'b> {
        match self.check(call, started, stretch) {
            Preparation::Ready(prepared) => self.wait_check(prepared, None, stretch),
            other => other,
        }
    }

    /// Whether a prepared call waits: `before_tool_call` suspended it (`suspended`), its tool is
    /// external, or its tool wants approval for these arguments. A call approved on resume
    /// runs.
    fn wait_check(
        &self,
        prepared: Prepared<'b>,
        suspended: Option<String>,
        stretch: &mut Stretch,
    ) -> Preparation<'b> {
        let resumed = self.env.resumed;
        if let Some(resumed) = resumed
            && resumed.approved(prepared.call.id())
        {
            // The store learns that it starts before it does (exactly once across a crash).
            return match resumed.record_start(prepared.call.id(), prepared.call.name()) {
                Ok(()) => Preparation::Ready(prepared),
                Err(result) => Preparation::Immediate(prepared.call, *result),
            };
        }
        let tool = prepared.tool;
        let name = prepared.call.name();
        let args = prepared.args.get(prepared.call.arguments());
        let wait = match suspended {
            Some(reason) => Some((WaitKind::Approval, reason)),
            None if tool.external() => Some((WaitKind::External, external_reason(name))),
            None if tool.may_need_approval() => {
                stretch.before_foreign_code(self.env.emitter);
                tool.needs_approval(args, &self.context(&prepared.call))
                    .then(|| (WaitKind::Approval, approval_reason(name)))
            }
            None => None,
        };
        match wait {
            None => Preparation::Ready(prepared),
            Some((kind, reason)) => {
                let waiting =
                    WaitingCall::new(prepared.call.id(), name, args.clone(), reason, kind);
                Preparation::Wait(prepared.call, waiting)
            }
        }
    }

    /// The checks before `before_tool_call`: a decision taken on resume (deny, answer, a
    /// recorded result), the `length` refusal, abort, lookup, `prepare_arguments` and
    /// validation (of the arguments an `approve_with` gave, when it did).
    fn check(&self, call: ToolCallRef, started: Instant, stretch: &mut Stretch) -> Preparation<'b> {
        let mut raw = call.arguments();
        if let Some(resumed) = self.env.resumed {
            // A resumed batch asks its run store for every call.
            stretch.before_foreign_code(self.env.emitter);
            match resumed.settled(&call, self.env.tools) {
                Settled::No => {}
                Settled::Result(result) => return Preparation::Immediate(call, *result),
                Settled::RunWith(arguments) => raw = arguments,
            }
        }
        if self.truncated {
            let refusal = ToolResult::error(length_refusal(call.name()));
            return Preparation::Immediate(call, refusal);
        }
        if !stretch.live {
            if self.env.aborted.is_cancelled() {
                return Preparation::Immediate(call, ToolResult::error(ABORTED));
            }
            stretch.live = true;
        }
        // Borrowed for the batch: a prepared call keeps its tool without a reference count.
        let tools: &'b ToolSet = self.env.tools;
        let Some(tool) = tools.get(call.name()) else {
            let missing = tool_not_found_message(call.name(), self.env.tools.names());
            return Preparation::Immediate(call, ToolResult::error(missing));
        };
        // A call the API's code runner made (it carries a `caller`) is code calling.
        if called_by_code(call.block()) {
            if !tool.callers().allows_code() {
                let refusal = ToolResult::error(model_only_message(call.name()));
                return Preparation::Immediate(call, refusal);
            }
        } else if !tool.callers().allows_model() {
            let refusal = ToolResult::error(code_only_message(call.name()));
            return Preparation::Immediate(call, refusal);
        }
        if tool.rewrites_arguments() {
            // Its `prepare_arguments` runs.
            stretch.before_foreign_code(self.env.emitter);
        }
        let prepared = prepare_call_within(tool.as_ref(), raw, &self.env.limits.arguments);
        // Arguments an `approve_with` gave replace the model's, even when they pass as they are.
        let prepared = match prepared {
            Ok(args) if args.is_unchanged() && !std::ptr::eq(raw, call.arguments()) => {
                Ok(PreparedArguments::replaced(raw.clone()))
            }
            other => other,
        };
        match prepared {
            Ok(args) => Preparation::Ready(Prepared {
                call,
                tool,
                args,
                started,
            }),
            Err(err) => Preparation::Immediate(call, ToolResult::error(err.message())),
        }
    }

    /// [`execute`](Self::execute), but after an abort the loop waits at most
    /// `abort_grace` for a call that is still running (then it is answered `Operation aborted`).
    pub(super) async fn execute_until_aborted(
        &self,
        prepared: Prepared<'b>,
    ) -> (ToolCallRef, ToolResult, Instant) {
        let (call, started) = (prepared.call.clone(), prepared.started);
        let mut execution = pin!(self.execute(prepared));
        if let Poll::Ready(done) = poll_once(execution.as_mut()).await {
            return done;
        }
        let execution = match select(execution, pin!(self.env.signal.cancelled())).await {
            Either::Left((done, _)) => return done,
            Either::Right(((), execution)) => execution,
        };
        // Aborted: the tool gets a grace period to answer for itself.
        let grace = Deadline::after(self.env.limits.abort_grace);
        match select(execution, grace).await {
            Either::Left((done, _)) => done,
            Either::Right(((), _)) => (call, ToolResult::error(ABORTED), started),
        }
    }

    /// Runs a prepared call and `after_tool_call`.
    pub(super) async fn execute(
        &self,
        prepared: Prepared<'b>,
    ) -> (ToolCallRef, ToolResult, Instant) {
        // The call's future closes its updates when it finishes or is dropped.
        let Prepared {
            call,
            tool,
            args,
            started,
        } = match self.start_plain(prepared) {
            Ok(plain) => return (plain.call, plain.future.await, plain.started),
            Err(prepared) => prepared,
        };
        if self.env.aborted.is_cancelled() {
            return (call, ToolResult::error(ABORTED), started);
        }
        let ctx = self.context(&call);
        // However this call ends (finished, timed out, or dropped after the abort grace), its
        // updates stop before its `ToolExecutionEnd` is queued, also those of tasks the tool
        // left behind (a blocking tool's thread).
        let _close_updates = CloseUpdatesOnDrop(ctx.clone());
        let result = match &self.env.config.after_tool_call {
            None => execute_within(tool, call.arguments(), args, ctx, self.env.limits).await,
            // Boxed so that the hook's state does not grow every call's future.
            Some(_) => Box::pin(self.execute_with_after_hook(&call, tool, args, ctx)).await,
        };
        (call, result, started)
    }

    /// A call's context. Its own signal is a child of the run's (a tool cancelling it stops
    /// only itself); its id, updates, parent signal and state come from the batch
    /// (`BatchHost`), so it allocates nothing.
    fn context(&self, call: &ToolCallRef) -> ToolContext {
        let host: Arc<super::host::BatchHost> = Arc::clone(&self.host);
        ToolContext::hosted(host, call.index())
    }

    /// Starts a prepared call that [`is_plain`](Self::is_plain): the tool's future, which the
    /// caller polls in the call's span. Any other call (or any call once the run is aborted)
    /// is handed back for [`execute`](Self::execute).
    pub(super) fn start_plain(
        &self,
        prepared: Prepared<'b>,
    ) -> Result<PlainCall<'b>, Prepared<'b>> {
        if !self.is_plain(prepared.tool.as_ref()) || self.env.aborted.is_cancelled() {
            return Err(prepared);
        }
        let Prepared {
            call,
            tool,
            args,
            started,
        } = prepared;
        let ctx = self.context(&call);
        let future = execute_prepared(tool.as_ref(), call.arguments(), args, ctx);
        Ok(PlainCall {
            call,
            future,
            started,
        })
    }

    /// A call with no `after_tool_call`, no timeout and not `blocking` runs as it is.
    fn is_plain(&self, tool: &dyn AgentTool) -> bool {
        self.env.config.after_tool_call.is_none() && self.env.limits.is_plain(tool)
    }

    /// Runs a call, then `after_tool_call` on its result.
    pub(super) async fn execute_with_after_hook(
        &self,
        call: &ToolCallRef,
        tool: &Arc<dyn AgentTool>,
        prepared: PreparedArguments,
        ctx: ToolContext,
    ) -> ToolResult {
        let args = prepared.get(call.arguments()).clone();
        let mut result =
            execute_within(tool, call.arguments(), prepared, ctx, self.env.limits).await;
        let Some(hook) = &self.env.config.after_tool_call else {
            return result;
        };
        let hook_ctx = AfterToolCallContext {
            assistant_message: Arc::clone(call.message()),
            tool_call: call.block().call.clone(),
            args,
            is_error: result.is_error,
            result: result.clone(),
            messages: self
                .hook_messages
                .clone()
                .unwrap_or_else(|| self.env.transcript.into()),
            signal: self.env.signal.clone(),
            parent_tool_call: None,
        };
        hooks::after(hook, hook_ctx, &mut result).await;
        result
    }

    /// Builds the result message (its `ToolExecutionEnd` is [`Finished::end_event`]); a call
    /// whose nested call waits waits instead (unless the run was aborted).
    pub(super) fn finished(
        &self,
        call: ToolCallRef,
        mut result: ToolResult,
        started: Instant,
    ) -> Finished {
        match self.host.nested_end(call.id()) {
            None => {}
            Some(NestedEnd::Diverged(message)) => result = ToolResult::error(message),
            Some(NestedEnd::Paused(nested)) if !self.env.aborted.is_cancelled() => {
                return self.waits_on_nested(call, *nested);
            }
            Some(NestedEnd::Paused(_)) => {}
        }
        let now = self.env.clock.now();
        let duration_ms =
            u64::try_from(now.saturating_duration_since(started).as_millis()).unwrap_or(u64::MAX);
        let ToolResult {
            mut content,
            details,
            usage,
            added_tool_names,
            terminate,
            is_error,
            ..
        } = result;
        fit_result(&mut content, self.env.limits.max_result_bytes);
        let message = Arc::new(Message::ToolResult(ToolResultMessage {
            tool_call_id: call.id().to_owned(),
            tool_name: call.name().to_owned(),
            content,
            details,
            is_error,
            duration_ms: Some(duration_ms),
            timestamp: self.env.clock.epoch_ms(now),
        }));
        if let Some(resumed) = self.env.resumed {
            resumed.record_result(call.id(), &message);
        }
        Finished {
            call: Some(call),
            message,
            terminate,
            added_tool_names,
            is_error,
            duration_ms,
            usage: usage.map(Box::new),
            paused: None,
        }
    }
}

impl<'b> Batch<'_, 'b> {
    /// A call that returned while a call it made from code waits: it waits too (its result is
    /// dropped; it runs again on resume).
    fn waits_on_nested(&self, call: ToolCallRef, nested: NestedWait) -> Finished {
        let waiting = WaitingCall::new(
            call.id(),
            call.name(),
            call.arguments().clone(),
            outer_reason(&nested.call, call.name()),
            nested.call.kind,
        );
        let message = Arc::new(Message::ToolResult(ToolResultMessage {
            tool_call_id: call.id().to_owned(),
            tool_name: call.name().to_owned(),
            content: Vec::new(),
            details: serde_json::Value::Null,
            is_error: false,
            duration_ms: None,
            timestamp: 0,
        }));
        Finished {
            call: Some(call),
            message,
            terminate: false,
            added_tool_names: Vec::new(),
            is_error: false,
            duration_ms: 0,
            usage: None,
            paused: Some(Box::new((waiting, nested))),
        }
    }
}

/// What a stretch of preparations with nothing else in between (a parallel batch without
/// hooks) carries from one call to the next.
#[derive(Default)]
pub(super) struct Stretch {
    /// The run's signal was found not cancelled and nothing that could cancel it has run since
    /// (no pause for the consumer, no hook, no code of a tool's or a run store's), so it is not
    /// asked again. Asking is one atomic load now (`AbortFlag`), but dropping this skip was
    /// measured 1-3% slower in W1 (same instruction count, 13 alternate runs each, 2026-12-05).
    pub(super) live: bool,
    /// The events made so far and not queued yet (the calls' starts, the ends of those refused
    /// at once), queued together.
    pub(super) pending: Pending,
}

impl Stretch {
    /// Before code of a tool's (`prepare_arguments`, `needs_approval`) or of a run store's:
    /// it could cancel the run's signal, or send an update that must come after the events
    /// made so far, which are queued first.
    fn before_foreign_code(&mut self, emitter: &Emitter) {
        self.live = false;
        emitter.flush(&mut self.pending);
    }
}

/// A started call that runs as it is (see [`Batch::start_plain`]).
pub(super) struct PlainCall<'t> {
    pub(super) call: ToolCallRef,
    pub(super) future: ToolCallFuture<'t>,
    pub(super) started: Instant,
}

/// Closes a call's update channel when dropped.
struct CloseUpdatesOnDrop(ToolContext);

impl Drop for CloseUpdatesOnDrop {
    fn drop(&mut self) {
        self.0.close_updates();
    }
}

/// Polls a future once with the current task's context, inside `span`.
pub(super) async fn poll_once_in<F: Future + Unpin>(
    span: &Span,
    future: &mut F,
) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(span.in_scope(|| Pin::new(&mut *future).poll(cx)))).await
}

/// Polls a future once with the current task's context.
pub(super) async fn poll_once<F: Future + ?Sized>(mut future: Pin<&mut F>) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await
}

/// Whether the API's own code runner made the call: its block carries a `caller` that is not
/// the model itself (OpenAI's `{"type": "program", ..}`; a `{"type": "direct"}` caller is the
/// model's own call).
fn called_by_code(block: &crate::message::ToolCallBlock) -> bool {
    block
        .provider_fields
        .get("caller")
        .and_then(|caller| caller.get("type"))
        .and_then(serde_json::Value::as_str)
        .is_some_and(|kind| kind != "direct")
}
