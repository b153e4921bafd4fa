//! One batch of tool calls (pi's `executeToolCalls`): the choice between parallel and
//! sequential execution, the order of the events, and the batch's outcome. The pipeline of a
//! single call is in `call.rs`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;

use futures_util::StreamExt;
use futures_util::future::{Either, OptionFuture, select};
use futures_util::stream::FuturesUnordered;
use pi_tool::{CallLimits, CancellationToken, Deadline, ExecutionMode, StateMap, ToolResult};
use tracing::{Instrument, Span};

use super::call::{
    Finished, PlainCall, Preparation, Prepared, Stretch, poll_once, poll_once_in, waiting_event,
};
use super::clock::{Clock, Instant};
use super::context::ToolSet;
use super::emitter::{Emitter, MakeEvents};
use super::host::{BatchHost, NestedParts};
use super::resume::Resumed;
use super::run::ABORTED;
use super::spans;
use crate::config::{AgentLoopConfig, ToolExecution};
use crate::event::{AgentEvent, ToolCallRef};
use crate::message::{AssistantMessage, Message, StopReason};
use crate::transcript::Transcript;
use crate::wait::{NestedWait, WaitingCall};

/// What a batch borrows from its run.
pub(crate) struct BatchEnv<'a> {
    pub(crate) tools: &'a Arc<ToolSet>,
    pub(crate) config: &'a AgentLoopConfig,
    /// The bounds of each call (from `config`).
    pub(crate) limits: &'a CallLimits,
    pub(crate) signal: &'a CancellationToken,
    /// Whether `signal` is cancelled, asked without a lock.
    pub(crate) aborted: &'a super::abort_flag::AbortFlag,
    pub(crate) state: &'a StateMap,
    pub(crate) emitter: &'a Emitter,
    pub(crate) transcript: &'a Transcript,
    pub(crate) clock: &'a Clock,
    /// On resume: the decisions on the calls that waited (only those run).
    pub(crate) resumed: Option<&'a Resumed>,
}

/// What a batch produced.
pub(crate) struct BatchOutcome {
    /// One tool-result message per call, in call order.
    pub(crate) results: Vec<Arc<Message>>,
    /// Every result asked to stop.
    pub(crate) terminate: bool,
    /// Tools the results asked to activate.
    pub(crate) added_tool_names: Vec<String>,
    /// The calls that wait for a decision, in call order (no result for them).
    pub(crate) waiting: Vec<WaitingCall>,
    /// Of those, the ones that wait on a call they made from code, by id.
    pub(crate) nested: BTreeMap<String, NestedWait>,
}

/// Runs every tool call of `assistant`.
pub(crate) async fn execute_tool_calls(
    env: &BatchEnv<'_>,
    assistant: &Arc<Message>,
) -> BatchOutcome {
    let Some(message) = assistant.as_assistant() else {
        return BatchOutcome::with_capacity(0);
    };
    let resumed = env.resumed;
    // On resume only the calls that waited run again (the others are answered already).
    let runs = |block: &crate::message::ToolCallBlock| {
        resumed.is_none_or(|resumed| resumed.is_waiting(&block.call.id))
    };
    let count = message.tool_calls().filter(|block| runs(block)).count();
    let calls = (0..message.content.len())
        .filter_map(|index| ToolCallRef::new(Arc::clone(assistant), index))
        .filter(move |call| runs(call.block()));
    let truncated = message.stop_reason == StopReason::Length;
    let hook_messages: Option<Transcript> = (env.config.before_tool_call.is_some()
        || env.config.after_tool_call.is_some())
    .then(|| env.transcript.clone());
    let host = BatchHost::for_message(
        assistant,
        env.emitter.shared(),
        env.signal,
        env.state,
        NestedParts {
            tools: Arc::clone(env.tools),
            limits: *env.limits,
            before: env.config.before_tool_call.clone(),
            after: env.config.after_tool_call.clone(),
            approver: env.config.approver.clone(),
            approval_timeout: env.config.approval_timeout,
            resume: resumed.and_then(|resumed| resumed.nested.clone()),
            hook_messages: hook_messages.clone(),
        },
    );
    let batch = Batch {
        env,
        truncated,
        hook_messages,
        host,
    };

    let sequential = env.config.tool_execution == ToolExecution::Sequential
        || (env.tools.any_sequential()
            && message.tool_calls().any(|block| {
                env.tools
                    .get(&block.call.name)
                    .is_some_and(|tool| tool.execution_mode() == Some(ExecutionMode::Sequential))
            }));
    let mut outcome = BatchOutcome::with_capacity(count);
    if sequential {
        batch.run_sequential(calls, &mut outcome).await;
    } else {
        batch.run_parallel(calls, count, &mut outcome).await;
    }
    outcome.order_waiting(message);
    outcome
}

impl BatchOutcome {
    fn with_capacity(calls: usize) -> Self {
        BatchOutcome {
            results: Vec::with_capacity(calls),
            terminate: calls > 0,
            added_tool_names: Vec::new(),
            waiting: Vec::new(),
            nested: BTreeMap::new(),
        }
    }

    /// Records a call that waits, and tells listeners; returns whether the loop paused for the
    /// consumer meanwhile.
    async fn wait(&mut self, emitter: &Emitter, call: ToolCallRef, waiting: WaitingCall) -> bool {
        let paused = emitter.emit(waiting_event(call, &waiting)).await;
        self.waiting.push(waiting);
        paused
    }

    /// Puts the waiting calls in the model's call order: a call that waits on its own is
    /// listed when it is prepared, one whose nested call waits only when it returns, after
    /// every call of a parallel batch was prepared.
    fn order_waiting(&mut self, message: &AssistantMessage) {
        if self.nested.is_empty() || self.waiting.len() < 2 {
            return;
        }
        let place: HashMap<&str, usize> = message
            .tool_calls()
            .enumerate()
            .map(|(index, block)| (block.call.id.as_str(), index))
            .collect();
        self.waiting
            .sort_by_key(|waiting| place.get(waiting.id.as_str()).copied());
    }

    /// Adds a finished call (in source order); one whose nested call waits, waits.
    fn push(&mut self, mut done: Finished) {
        if let Some(paused) = done.paused.take() {
            let (waiting, nested) = *paused;
            self.nested.insert(waiting.id.clone(), nested);
            self.waiting.push(waiting);
            return;
        }
        self.terminate &= done.terminate;
        self.added_tool_names.extend(done.added_tool_names);
        self.results.push(done.message);
    }
}

pub(super) struct Batch<'a, 'b> {
    pub(super) env: &'a BatchEnv<'b>,
    pub(super) truncated: bool,
    pub(super) hook_messages: Option<Transcript>,
    /// What the calls share: their ids, where their updates go, the run's signal and state.
    pub(super) host: Arc<BatchHost>,
}

impl<'b> Batch<'_, 'b> {
    /// The `execute_tool` span of a call (a child of the run's span).
    fn tool_span(&self, call: &ToolCallRef) -> Span {
        spans::tool_span(call, || {
            self.env
                .tools
                .get(call.name())
                .map(|tool| tool.spec().description.as_str())
        })
    }

    /// Records how a call ended on its span.
    fn record_outcome(&self, span: &Span, done: &Finished) {
        if let Some(call) = done.call() {
            spans::record_tool_outcome(
                span,
                call,
                &done.message,
                self.env.config.trace_tool_content,
            );
        }
    }

    async fn run_sequential(
        &self,
        calls: impl Iterator<Item = ToolCallRef>,
        outcome: &mut BatchOutcome,
    ) {
        for call in calls {
            self.env
                .emitter
                .emit(AgentEvent::ToolExecutionStart { call: call.clone() })
                .await;
            let span = self.tool_span(&call);
            let started = self.env.clock.now();
            let preparation = if self.prepares_async() {
                self.prepare(call, started).instrument(span.clone()).await
            } else {
                span.in_scope(|| self.validate(call, started))
            };
            let mut done = match preparation {
                Preparation::Wait(call, waiting) => {
                    outcome.wait(self.env.emitter, call, waiting).await;
                    continue;
                }
                Preparation::Immediate(call, result) => self.finished(call, result, started),
                Preparation::Ready(prepared) => {
                    let (call, result, started) = self
                        .execute_until_aborted(prepared)
                        .instrument(span.clone())
                        .await;
                    self.finished(call, result, started)
                }
            };
            self.record_outcome(&span, &done);
            drop(span);
            if done.paused.is_some() {
                // It waits: no result message.
                self.env.emitter.emit(done.end_event()).await;
                outcome.push(done);
                continue;
            }
            self.env.emitter.emit(done.end_event()).await;
            self.env
                .emitter
                .emit_messages(std::slice::from_ref(&done.message))
                .await;
            outcome.push(done);
        }
    }

    /// Queues an event of a parallel batch's preparation: at once when hooks run (their code
    /// may watch the queue), else with the stretch's others; a pause for the consumer ends
    /// the stretch's knowledge that the run's signal is not cancelled.
    async fn emit_in_stretch(&self, hooked: bool, stretch: &mut Stretch, event: AgentEvent) {
        let paused = if hooked {
            self.env.emitter.emit(event).await
        } else {
            self.env
                .emitter
                .emit_pending(&mut stretch.pending, event)
                .await
        };
        if paused {
            stretch.live = false;
        }
    }

    async fn run_parallel(
        &self,
        calls: impl Iterator<Item = ToolCallRef>,
        count: usize,
        outcome: &mut BatchOutcome,
    ) {
        // Every call of the batch in source order, from its preparation to its result, in one
        // vector: a batch of a thousand calls touches as little memory as it can.
        let mut slots: Vec<Slot<'b>> = Vec::with_capacity(count);
        let hooked = self.prepares_async();
        // Without hooks, preparation runs no code but the loop's own (unless a tool has some:
        // see `Stretch`): the run's signal is asked once per stretch, not once per call, and
        // the events are queued a stretch at a time, under one lock, pausing for the consumer
        // at the same events as one at a time would.
        let mut stretch = Stretch::default();
        // Preparation runs in source order, one call at a time (hooks never run concurrently).
        for call in calls {
            // Made in each branch, so that a stretch's start is written straight into its
            // `pending` (see `Emitter::stage`).
            let paused = if hooked {
                let start = AgentEvent::ToolExecutionStart { call: call.clone() };
                self.env.emitter.emit(start).await
            } else if self.env.emitter.stage(
                &mut stretch.pending,
                AgentEvent::ToolExecutionStart { call: call.clone() },
            ) {
                self.env.emitter.pause_for_consumer().await;
                true
            } else {
                false
            };
            if paused {
                stretch.live = false;
            }
            let span = self.tool_span(&call);
            let started = self.env.clock.now();
            let preparation = if hooked {
                self.prepare(call, started).instrument(span.clone()).await
            } else {
                span.in_scope(|| self.validate_in_run(call, started, &mut stretch))
            };
            match preparation {
                Preparation::Immediate(call, result) => {
                    let mut done = self.finished(call, result, started);
                    self.record_outcome(&span, &done);
                    self.emit_in_stretch(hooked, &mut stretch, done.end_event())
                        .await;
                    slots.push(Slot::Done {
                        done,
                        end_pending: false,
                    });
                }
                Preparation::Ready(prepared) => slots.push(Slot::Ready(prepared, span)),
                Preparation::Wait(call, waiting) => {
                    self.env.emitter.flush(&mut stretch.pending);
                    if outcome.wait(self.env.emitter, call, waiting).await {
                        stretch.live = false;
                    }
                }
            }
        }
        // The calls start now (their tools' code runs).
        self.env.emitter.flush(&mut stretch.pending);

        // Then the prepared calls run at once (up to `max_parallel`); each ends when it finishes.
        // Every call is polled once in source order before any end is emitted; a call that
        // finishes on that first poll never needs a task of its own (most tools finish at once),
        // and its end waits until every call has started.
        let limit = self.env.config.max_parallel.unwrap_or(usize::MAX).max(1);
        let mut running = None;
        let mut running_count = 0;
        // The next slot to start.
        let mut next = 0;
        // Each call runs inside its span, also while other calls' futures are polled.
        let start = |slot: usize, prepared: Prepared<'b>, span: Span| {
            let recorder = span.clone();
            Either::Left(
                async move {
                    let (call, result, started) = self.execute(prepared).await;
                    let done = self.finished(call, result, started);
                    self.record_outcome(&recorder, &done);
                    (slot, done)
                }
                .instrument(span),
            )
        };
        // A plain call that did not finish on its first poll goes on in the running set.
        let go_on = |slot: usize, plain: PlainCall<'b>, span: Span| {
            let recorder = span.clone();
            let PlainCall {
                call,
                future,
                started,
            } = plain;
            Either::Right(
                async move {
                    let result = future.await;
                    let done = self.finished(call, result, started);
                    self.record_outcome(&recorder, &done);
                    (slot, done)
                }
                .instrument(span),
            )
        };
        // Calls that finish on their first poll hand their box to the next call.
        let mut spare = None;
        while running_count < limit && next < slots.len() {
            let index = next;
            next += 1;
            let Some((prepared, span)) = slots[index].start() else {
                continue;
            };
            // A plain call is started and polled here, with no future or box around its own.
            let prepared = match span.in_scope(|| self.start_plain(prepared)) {
                Ok(mut plain) => {
                    match poll_once_in(&span, &mut plain.future).await {
                        Poll::Ready(result) => {
                            let done = self.finished(plain.call, result, plain.started);
                            self.record_outcome(&span, &done);
                            slots[index] = Slot::Done {
                                done,
                                end_pending: true,
                            };
                        }
                        Poll::Pending => {
                            slots[index] = Slot::running(&plain.call, plain.started, &span);
                            running
                                .get_or_insert_with(FuturesUnordered::new)
                                .push(Box::pin(OptionFuture::from(Some(go_on(
                                    index, plain, span,
                                )))));
                            running_count += 1;
                        }
                    }
                    continue;
                }
                Err(prepared) => prepared,
            };
            let running_slot = Slot::running(&prepared.call, prepared.started, &span);
            let mut execution = spare
                .take()
                .unwrap_or_else(|| Box::pin(OptionFuture::from(None)));
            execution.set(OptionFuture::from(Some(start(index, prepared, span))));
            match poll_once(execution.as_mut()).await {
                Poll::Ready(Some((slot, done))) => {
                    slots[slot] = Slot::Done {
                        done,
                        end_pending: true,
                    };
                    execution.set(OptionFuture::from(None));
                    spare = Some(execution);
                }
                Poll::Ready(None) => {}
                Poll::Pending => {
                    slots[index] = running_slot;
                    running
                        .get_or_insert_with(FuturesUnordered::new)
                        .push(execution);
                    running_count += 1;
                }
            }
        }
        drop(spare);
        // The ends of the calls that finished on their first poll.
        self.env
            .emitter
            .emit_made(PendingEnds(slots.iter_mut()))
            .await;

        if let Some(mut running) = running {
            // After an abort the loop waits at most `abort_grace` more: a tool that ignores the
            // signal cannot hang the run (its call is answered `Operation aborted`).
            let mut cancelled = pin!(self.env.signal.cancelled());
            let mut grace: Option<Pin<Box<Deadline>>> = None;
            let mut aborted = false;
            loop {
                while running.len() < limit && next < slots.len() {
                    let index = next;
                    next += 1;
                    let Some((prepared, span)) = slots[index].start() else {
                        continue;
                    };
                    slots[index] = Slot::running(&prepared.call, prepared.started, &span);
                    running.push(Box::pin(OptionFuture::from(Some(start(
                        index, prepared, span,
                    )))));
                }
                let finished = match grace.as_mut() {
                    None => match select(running.next(), cancelled.as_mut()).await {
                        Either::Left((finished, _)) => finished,
                        Either::Right(((), _)) => {
                            grace = Some(Box::pin(Deadline::after(self.env.limits.abort_grace)));
                            continue;
                        }
                    },
                    Some(grace) => match select(running.next(), grace.as_mut()).await {
                        Either::Left((finished, _)) => finished,
                        Either::Right(((), _)) => {
                            aborted = true;
                            break;
                        }
                    },
                };
                let Some(finished) = finished else {
                    break;
                };
                if let Some((slot, mut done)) = finished {
                    let end = done.end_event();
                    slots[slot] = Slot::Done {
                        done,
                        end_pending: false,
                    };
                    self.env.emitter.emit(end).await;
                }
            }
            if aborted {
                drop(running);
                // The calls still running, then those never started, in source order.
                for slot in &mut slots {
                    let Some((call, started, span)) = slot.unfinished() else {
                        continue;
                    };
                    let mut done = self.finished(call, ToolResult::error(ABORTED), started);
                    self.record_outcome(&span, &done);
                    self.env.emitter.emit(done.end_event()).await;
                    *slot = Slot::Done {
                        done,
                        end_pending: false,
                    };
                }
            }
        }

        // Result messages go out in source order.
        for slot in slots {
            if let Slot::Done { done, .. } = slot {
                outcome.push(done);
            }
        }
        self.env.emitter.emit_messages(&outcome.results).await;
    }
}

/// The ends of the calls that finished on their first poll, in source order, made in the
/// queue (a named type: a closure here would trip the `Send` check of the loop's future).
struct PendingEnds<'s, 't>(std::slice::IterMut<'s, Slot<'t>>);

impl MakeEvents for PendingEnds<'_, '_> {
    #[inline]
    fn push_next(&mut self, queue: &mut VecDeque<AgentEvent>) -> bool {
        for slot in self.0.by_ref() {
            if let Slot::Done {
                done,
                end_pending: pending @ true,
            } = slot
            {
                *pending = false;
                done.push_end_event(queue);
                return true;
            }
        }
        false
    }
}

/// Where one call of a parallel batch stands.
enum Slot<'t> {
    /// Prepared, not started yet.
    Ready(Prepared<'t>, Span),
    /// Being started: its first poll is under way.
    Starting,
    /// Still running after its first poll: what an abort needs to answer it.
    Running {
        call: ToolCallRef,
        started: Instant,
        span: Span,
    },
    /// Finished; `end_pending`: its `ToolExecutionEnd` is still to be emitted.
    Done { done: Finished, end_pending: bool },
}

impl<'t> Slot<'t> {
    fn running(call: &ToolCallRef, started: Instant, span: &Span) -> Self {
        Slot::Running {
            call: call.clone(),
            started,
            span: span.clone(),
        }
    }

    /// A prepared call's parts, leaving it `Starting`; `None` for any other slot.
    fn start(&mut self) -> Option<(Prepared<'t>, Span)> {
        match std::mem::replace(self, Slot::Starting) {
            Slot::Ready(prepared, span) => Some((prepared, span)),
            other => {
                *self = other;
                None
            }
        }
    }

    /// What answering a call that has not finished needs (after an abort); `None` when it has.
    fn unfinished(&mut self) -> Option<(ToolCallRef, Instant, Span)> {
        match std::mem::replace(self, Slot::Starting) {
            Slot::Running {
                call,
                started,
                span,
            } => Some((call, started, span)),
            Slot::Ready(prepared, span) => Some((prepared.call, prepared.started, span)),
            other => {
                *self = other;
                None
            }
        }
    }
}
