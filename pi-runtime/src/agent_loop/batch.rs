//! One batch of tool calls (pi's `executeToolCalls`): the choice between parallel and
//! sequential execution, the order of the events, and the batch's outcome. The pipeline of a
//! single call is in `call.rs`.

use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use futures_util::StreamExt;
use futures_util::future::{Either, OptionFuture, select};
use futures_util::stream::FuturesUnordered;
use pi_tool::{CallHost, CancellationToken, ExecutionMode, StateMap, ToolResult};
use tracing::{Instrument, Span};

use super::call::{Finished, PlainCall, Preparation, Prepared, poll_once, poll_once_in};
use super::clock::Clock;
use super::context::ToolSet;
use super::emitter::Emitter;
use super::grace::Grace;
use super::host::BatchHost;
use super::run::ABORTED;
use super::spans;
use crate::config::{AgentLoopConfig, ToolExecution};
use crate::event::{AgentEvent, ToolCallRef};
use crate::message::{Message, StopReason};

/// What a batch borrows from its run.
pub(crate) struct BatchEnv<'a> {
    pub(crate) tools: &'a ToolSet,
    pub(crate) config: &'a AgentLoopConfig,
    pub(crate) signal: &'a CancellationToken,
    pub(crate) state: &'a StateMap,
    pub(crate) emitter: &'a Emitter,
    pub(crate) transcript: &'a [Arc<Message>],
    pub(crate) clock: &'a Clock,
}

/// What a batch produced.
pub(crate) struct BatchOutcome {
    /// One tool-result message per call, in call order.
    pub(crate) results: Vec<Arc<Message>>,
    /// Every result asked to stop.
    pub(crate) terminate: bool,
    /// Tools the results asked to activate.
    pub(crate) added_tool_names: Vec<String>,
}

/// Runs every tool call of `assistant`.
pub(crate) async fn execute_tool_calls(
    env: &BatchEnv<'_>,
    assistant: &Arc<Message>,
) -> BatchOutcome {
    let Some(message) = assistant.as_assistant() else {
        return BatchOutcome::with_capacity(0);
    };
    let count = message.tool_calls().count();
    let calls = (0..message.content.len())
        .filter_map(|index| ToolCallRef::new(Arc::clone(assistant), index));
    let truncated = message.stop_reason == StopReason::Length;
    let hook_messages: Option<Arc<[Arc<Message>]>> = (env.config.before_tool_call.is_some()
        || env.config.after_tool_call.is_some())
    .then(|| env.transcript.into());
    let batch = Batch {
        env,
        truncated,
        hook_messages,
        host: BatchHost::for_message(assistant, env.emitter.shared(), env.signal, env.state),
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
    outcome
}

impl BatchOutcome {
    fn with_capacity(calls: usize) -> Self {
        BatchOutcome {
            results: Vec::with_capacity(calls),
            terminate: calls > 0,
            added_tool_names: Vec::new(),
        }
    }

    /// Adds a finished call (in source order).
    fn push(&mut self, done: Finished) {
        self.terminate &= done.terminate;
        self.added_tool_names.extend(done.added_tool_names);
        self.results.push(done.message);
    }
}

pub(super) struct Batch<'a, 'b> {
    pub(super) env: &'a BatchEnv<'b>,
    pub(super) truncated: bool,
    pub(super) hook_messages: Option<Arc<[Arc<Message>]>>,
    /// What the calls share: their ids, where their updates go, the run's signal and state.
    pub(super) host: Arc<dyn CallHost>,
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
    fn record_outcome(&self, span: &Span, call: &ToolCallRef, done: &Finished) {
        spans::record_tool_outcome(
            span,
            call,
            &done.message,
            self.env.config.trace_tool_content,
        );
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
            let started = Instant::now();
            let preparation = if self.env.config.before_tool_call.is_none() {
                span.in_scope(|| self.validate(call.clone(), started))
            } else {
                self.prepare(call.clone(), started)
                    .instrument(span.clone())
                    .await
            };
            let (done, end) = match preparation {
                Preparation::Immediate(result) => self.finish_quietly(&call, result, started),
                Preparation::Ready(prepared) => {
                    let (call, result, started) = self
                        .execute_until_aborted(prepared)
                        .instrument(span.clone())
                        .await;
                    self.finish_quietly(&call, result, started)
                }
            };
            self.record_outcome(&span, &call, &done);
            drop(span);
            let [start, end_message] = message_events(&done.message);
            self.env.emitter.emit_all([end, start, end_message]).await;
            outcome.push(done);
        }
    }

    async fn run_parallel(
        &self,
        calls: impl Iterator<Item = ToolCallRef>,
        count: usize,
        outcome: &mut BatchOutcome,
    ) {
        let mut slots: Vec<Option<Finished>> = Vec::with_capacity(count);
        let mut ready = Vec::with_capacity(count);
        // Without a `before_tool_call` hook, preparation runs no code that could observe the
        // events, so they are queued in one go when it is over.
        let buffer = self.env.config.before_tool_call.is_none();
        let mut buffered = Vec::with_capacity(if buffer { count } else { 0 });
        // Preparation runs in source order, one call at a time (hooks never run concurrently).
        for call in calls {
            let start = AgentEvent::ToolExecutionStart { call: call.clone() };
            if buffer {
                buffered.push(start);
            } else {
                self.env.emitter.emit(start).await;
            }
            let span = self.tool_span(&call);
            let started = Instant::now();
            let preparation = if buffer {
                span.in_scope(|| self.validate(call.clone(), started))
            } else {
                self.prepare(call.clone(), started)
                    .instrument(span.clone())
                    .await
            };
            match preparation {
                Preparation::Immediate(result) => {
                    let (done, end) = self.finish_quietly(&call, result, started);
                    self.record_outcome(&span, &call, &done);
                    if buffer {
                        buffered.push(end);
                    } else {
                        self.env.emitter.emit(end).await;
                    }
                    slots.push(Some(done));
                }
                Preparation::Ready(prepared) => {
                    ready.push((slots.len(), prepared, span));
                    slots.push(None);
                }
            }
        }

        // Then the prepared calls run at once (up to `max_parallel`); each ends when it finishes.
        // Every call is polled once in source order before any end is emitted; a call that
        // finishes on that first poll never needs a task of its own (most tools finish at once),
        // and its end waits until every call has started.
        self.env.emitter.emit_all(buffered).await;
        let limit = self.env.config.max_parallel.unwrap_or(usize::MAX).max(1);
        let mut finished_first = Vec::with_capacity(ready.len().min(limit));
        let mut waiting = ready.into_iter();
        let mut running = None;
        let mut running_count = 0;
        // The calls still running after their first poll: what an abort needs to answer them.
        let mut running_meta = Vec::new();
        // A finished call comes back as its message and end event (small), not its result.
        // Each call runs inside its span, also while other calls' futures are polled.
        let start = |slot: usize, prepared: Prepared<'b>, span: Span| {
            let recorder = span.clone();
            Either::Left(
                async move {
                    let (call, result, started) = self.execute(prepared).await;
                    let (done, end) = self.finish_quietly(&call, result, started);
                    self.record_outcome(&recorder, &call, &done);
                    (slot, done, end)
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
                    let (done, end) = self.finish_quietly(&call, result, started);
                    self.record_outcome(&recorder, &call, &done);
                    (slot, done, end)
                }
                .instrument(span),
            )
        };
        // Calls that finish on their first poll hand their box to the next call.
        let mut spare = None;
        while running_count < limit {
            let Some((slot, prepared, span)) = waiting.next() else {
                break;
            };
            // A plain call is started and polled here, with no future or box around its own.
            let prepared = match span.in_scope(|| self.start_plain(prepared)) {
                Ok(mut plain) => {
                    match poll_once_in(&span, &mut plain.future).await {
                        Poll::Ready(result) => {
                            let (done, end) =
                                self.finish_quietly(&plain.call, result, plain.started);
                            self.record_outcome(&span, &plain.call, &done);
                            slots[slot] = Some(done);
                            finished_first.push(end);
                        }
                        Poll::Pending => {
                            running_meta.push((
                                slot,
                                plain.call.clone(),
                                plain.started,
                                span.clone(),
                            ));
                            running
                                .get_or_insert_with(FuturesUnordered::new)
                                .push(Box::pin(OptionFuture::from(Some(go_on(slot, plain, span)))));
                            running_count += 1;
                        }
                    }
                    continue;
                }
                Err(prepared) => prepared,
            };
            let (call, started) = (prepared.call.clone(), prepared.started);
            let meta_span = span.clone();
            let mut execution = spare
                .take()
                .unwrap_or_else(|| Box::pin(OptionFuture::from(None)));
            execution.set(OptionFuture::from(Some(start(slot, prepared, span))));
            match poll_once(execution.as_mut()).await {
                Poll::Ready(Some((slot, done, end))) => {
                    slots[slot] = Some(done);
                    finished_first.push(end);
                    execution.set(OptionFuture::from(None));
                    spare = Some(execution);
                }
                Poll::Ready(None) => {}
                Poll::Pending => {
                    running
                        .get_or_insert_with(FuturesUnordered::new)
                        .push(execution);
                    running_meta.push((slot, call, started, meta_span));
                    running_count += 1;
                }
            }
        }
        drop(spare);
        if running.is_none() {
            // Everything finished on its first poll: the ends and the result messages go out
            // together.
            for done in slots.into_iter().flatten() {
                outcome.push(done);
            }
            let messages = outcome.results.iter().flat_map(message_events);
            self.env
                .emitter
                .emit_all(finished_first.into_iter().chain(messages))
                .await;
            return;
        }
        self.env.emitter.emit_all(finished_first).await;
        if let Some(mut running) = running {
            // After an abort the loop waits at most `abort_grace` more: a tool that ignores the
            // signal cannot hang the run (its call is answered `Operation aborted`).
            let mut cancelled = pin!(self.env.signal.cancelled());
            let mut grace: Option<Pin<Box<Grace>>> = None;
            let mut aborted = false;
            loop {
                while running.len() < limit {
                    let Some((slot, prepared, span)) = waiting.next() else {
                        break;
                    };
                    running_meta.push((
                        slot,
                        prepared.call.clone(),
                        prepared.started,
                        span.clone(),
                    ));
                    running.push(Box::pin(OptionFuture::from(Some(start(
                        slot, prepared, span,
                    )))));
                }
                let next = match grace.as_mut() {
                    None => match select(running.next(), cancelled.as_mut()).await {
                        Either::Left((next, _)) => next,
                        Either::Right(((), _)) => {
                            grace = Some(Box::pin(Grace::after(self.env.config.abort_grace)));
                            continue;
                        }
                    },
                    Some(grace) => match select(running.next(), grace.as_mut()).await {
                        Either::Left((next, _)) => next,
                        Either::Right(((), _)) => {
                            aborted = true;
                            break;
                        }
                    },
                };
                let Some(next) = next else {
                    break;
                };
                if let Some((slot, done, end)) = next {
                    slots[slot] = Some(done);
                    self.env.emitter.emit(end).await;
                }
            }
            if aborted {
                drop(running);
                let unstarted = waiting
                    .map(|(slot, prepared, span)| (slot, prepared.call, prepared.started, span));
                for (slot, call, started, span) in running_meta.into_iter().chain(unstarted) {
                    if slots[slot].is_none() {
                        let result = ToolResult::error(ABORTED);
                        let done = self.finish(&call, result, started).await;
                        self.record_outcome(&span, &call, &done);
                        slots[slot] = Some(done);
                    }
                }
            }
        }

        // Result messages go out in source order.
        for done in slots.into_iter().flatten() {
            outcome.push(done);
        }
        let messages = outcome.results.iter().flat_map(message_events);
        self.env.emitter.emit_all(messages).await;
    }
}

/// `MessageStart` and `MessageEnd` of a message.
fn message_events(message: &Arc<Message>) -> [AgentEvent; 2] {
    [
        AgentEvent::MessageStart {
            message: Arc::clone(message),
        },
        AgentEvent::MessageEnd {
            message: Arc::clone(message),
        },
    ]
}
