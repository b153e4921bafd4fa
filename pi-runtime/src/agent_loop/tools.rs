//! One batch of tool calls (pi's `executeToolCalls`): preparation, execution in parallel or
//! in sequence, `after_tool_call`, and the result messages.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use futures_util::StreamExt;
use futures_util::future::{Either, OptionFuture, select};
use futures_util::stream::FuturesUnordered;
use pi_tool::{
    AgentTool, CancellationToken, ExecutionMode, StateMap, ToolContext, ToolResult, execute_call,
    prepare_call, tool_not_found_message,
};
use serde_json::Value;

use super::context::ToolSet;
use super::emitter::Emitter;
use super::guard::guarded;
use super::run::ABORTED;
use crate::config::{AfterToolCallContext, AgentLoopConfig, BeforeToolCallContext, ToolExecution};
use crate::event::{AgentEvent, ToolCallRef};
use crate::message::{Message, StopReason, ToolResultMessage, now_ms};

/// The text of a blocked call without a reason.
const BLOCKED: &str = "Tool execution was blocked";

/// The error of a call the loop refuses because its message hit the output token limit.
fn length_refusal(name: &str) -> String {
    format!(
        "Tool call \"{name}\" was not executed: the response hit the output token limit, so its arguments may be \
         truncated. Re-issue the tool call with complete arguments."
    )
}

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

/// Wall-clock timestamps derived from the monotonic clock, so that a finished call reads the
/// clock once for both its duration and its message's timestamp.
pub(crate) struct Clock {
    base: Instant,
    base_ms: i64,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Clock {
            base: Instant::now(),
            base_ms: now_ms(),
        }
    }

    /// Milliseconds since the Unix epoch at `instant`.
    fn epoch_ms(&self, instant: Instant) -> i64 {
        let elapsed = instant.saturating_duration_since(self.base).as_millis();
        self.base_ms
            .saturating_add(i64::try_from(elapsed).unwrap_or(i64::MAX))
    }
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

/// A call that passed preparation.
struct Prepared {
    call: ToolCallRef,
    tool: Arc<dyn AgentTool>,
    args: Value,
    started: Instant,
}

enum Preparation {
    /// The call failed (or was refused) before running: its result is final.
    Immediate(ToolResult),
    Ready(Prepared),
}

/// A finished call: its result message and the loop hints of its result.
struct Finished {
    message: Arc<Message>,
    terminate: bool,
    added_tool_names: Vec<String>,
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
    };

    let sequential = env.config.tool_execution == ToolExecution::Sequential
        || message.tool_calls().any(|block| {
            env.tools
                .get(&block.call.name)
                .is_some_and(|tool| tool.execution_mode() == Some(ExecutionMode::Sequential))
        });
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

struct Batch<'a, 'b> {
    env: &'a BatchEnv<'b>,
    truncated: bool,
    hook_messages: Option<Arc<[Arc<Message>]>>,
}

impl Batch<'_, '_> {
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
            let started = Instant::now();
            let preparation = if self.env.config.before_tool_call.is_none() {
                self.validate(call.clone(), started)
            } else {
                self.prepare(call.clone(), started).await
            };
            let (done, end) = match preparation {
                Preparation::Immediate(result) => self.finish_quietly(&call, result, started),
                Preparation::Ready(prepared) => {
                    let (call, result, started) = self.execute_until_aborted(prepared).await;
                    self.finish_quietly(&call, result, started)
                }
            };
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
        let mut buffered = Vec::new();
        // Preparation runs in source order, one call at a time (hooks never run concurrently).
        for call in calls {
            let start = AgentEvent::ToolExecutionStart { call: call.clone() };
            if buffer {
                buffered.push(start);
            } else {
                self.env.emitter.emit(start).await;
            }
            let started = Instant::now();
            let preparation = if buffer {
                self.validate(call.clone(), started)
            } else {
                self.prepare(call.clone(), started).await
            };
            match preparation {
                Preparation::Immediate(result) => {
                    let (done, end) = self.finish_quietly(&call, result, started);
                    if buffer {
                        buffered.push(end);
                    } else {
                        self.env.emitter.emit(end).await;
                    }
                    slots.push(Some(done));
                }
                Preparation::Ready(prepared) => {
                    ready.push((slots.len(), prepared));
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
        let mut waiting = ready.into_iter();
        let mut running = None;
        let mut running_count = 0;
        // The calls still running after their first poll: what an abort needs to answer them.
        let mut running_meta = Vec::new();
        let mut finished_first = Vec::new();
        // A finished call comes back as its message and end event (small), not its result.
        let start = |slot: usize, prepared: Prepared| async move {
            let (call, result, started) = self.execute(prepared).await;
            let (done, end) = self.finish_quietly(&call, result, started);
            (slot, done, end)
        };
        // Calls that finish on their first poll hand their box to the next call.
        let mut spare = None;
        while running_count < limit {
            let Some((slot, prepared)) = waiting.next() else {
                break;
            };
            let (call, started) = (prepared.call.clone(), prepared.started);
            let mut execution = spare
                .take()
                .unwrap_or_else(|| Box::pin(OptionFuture::from(None)));
            execution.set(OptionFuture::from(Some(start(slot, prepared))));
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
                    running_meta.push((slot, call, started));
                    running_count += 1;
                }
            }
        }
        drop(spare);
        if running.is_none() {
            // Everything finished on its first poll: the ends and the result messages go out
            // together.
            let mut events = finished_first;
            events.reserve(slots.len() * 2);
            for done in slots.into_iter().flatten() {
                events.extend(message_events(&done.message));
                outcome.push(done);
            }
            self.env.emitter.emit_all(events).await;
            return;
        }
        self.env.emitter.emit_all(finished_first).await;
        if let Some(mut running) = running {
            // After an abort the loop stops waiting: a tool that ignores the signal cannot hang
            // the run (its call is answered `Operation aborted`).
            let mut cancelled = pin!(self.env.signal.cancelled());
            let mut aborted = false;
            loop {
                while running.len() < limit {
                    let Some((slot, prepared)) = waiting.next() else {
                        break;
                    };
                    running_meta.push((slot, prepared.call.clone(), prepared.started));
                    running.push(Box::pin(OptionFuture::from(Some(start(slot, prepared)))));
                }
                let next = match select(running.next(), cancelled.as_mut()).await {
                    Either::Left((next, _)) => next,
                    Either::Right(((), _)) => {
                        aborted = true;
                        break;
                    }
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
                let unstarted =
                    waiting.map(|(slot, prepared)| (slot, prepared.call, prepared.started));
                for (slot, call, started) in running_meta.into_iter().chain(unstarted) {
                    if slots[slot].is_none() {
                        let result = ToolResult::error(ABORTED);
                        slots[slot] = Some(self.finish(&call, result, started).await);
                    }
                }
            }
        }

        // Result messages go out in source order.
        let mut events = Vec::with_capacity(slots.len() * 2);
        for done in slots.into_iter().flatten() {
            events.extend(message_events(&done.message));
            outcome.push(done);
        }
        self.env.emitter.emit_all(events).await;
    }

    /// Lookup, `prepare_arguments`, validation and `before_tool_call`, with the abort checks.
    async fn prepare(&self, call: ToolCallRef, started: Instant) -> Preparation {
        if self.env.config.before_tool_call.is_none() {
            return self.validate(call, started);
        }
        let (call, tool, mut args) = match self.validate(call, started) {
            Preparation::Ready(Prepared {
                call, tool, args, ..
            }) => (call, tool, args),
            immediate => return immediate,
        };
        if let Some(hook) = &self.env.config.before_tool_call {
            let ctx = BeforeToolCallContext {
                assistant_message: Arc::clone(call.message()),
                tool_call: call.block().call.clone(),
                args: args.clone(),
                messages: self
                    .hook_messages
                    .clone()
                    .unwrap_or_else(|| self.env.transcript.into()),
                signal: self.env.signal.clone(),
            };
            match guarded(|| hook(ctx)).await {
                Ok(Ok(decision)) => {
                    if decision.block {
                        let reason = decision.reason.unwrap_or_else(|| BLOCKED.to_owned());
                        return Preparation::Immediate(
                            ToolResult::error(reason).with_terminate(decision.terminate),
                        );
                    }
                    if let Some(replaced) = decision.args {
                        args = replaced;
                    }
                }
                Ok(Err(err)) => return Preparation::Immediate(ToolResult::error(err.message())),
                Err(panic) => {
                    return Preparation::Immediate(ToolResult::error(format!(
                        "before_tool_call panicked: {panic}"
                    )));
                }
            }
            if self.env.signal.is_cancelled() {
                return Preparation::Immediate(ToolResult::error(ABORTED));
            }
        }
        Preparation::Ready(Prepared {
            call,
            tool,
            args,
            started,
        })
    }

    /// The checks before `before_tool_call`: the `length` refusal, abort, lookup,
    /// `prepare_arguments` and validation (no await: without a hook, preparation is this).
    fn validate(&self, call: ToolCallRef, started: Instant) -> Preparation {
        if self.truncated {
            return Preparation::Immediate(ToolResult::error(length_refusal(call.name())));
        }
        if self.env.signal.is_cancelled() {
            return Preparation::Immediate(ToolResult::error(ABORTED));
        }
        let Some(tool) = self.env.tools.get(call.name()) else {
            return Preparation::Immediate(ToolResult::error(tool_not_found_message(
                call.name(),
                self.env.tools.names(),
            )));
        };
        match prepare_call(tool.as_ref(), call.arguments()) {
            Ok(args) => Preparation::Ready(Prepared {
                call,
                tool: Arc::clone(tool),
                args,
                started,
            }),
            Err(err) => Preparation::Immediate(ToolResult::error(err.message())),
        }
    }

    /// [`execute`](Self::execute), but an abort stops waiting for a call that is still running
    /// (the call is answered `Operation aborted`).
    async fn execute_until_aborted(
        &self,
        prepared: Prepared,
    ) -> (ToolCallRef, ToolResult, Instant) {
        let (call, started) = (prepared.call.clone(), prepared.started);
        let mut execution = pin!(self.execute(prepared));
        if let Poll::Ready(done) = poll_once(execution.as_mut()).await {
            return done;
        }
        match select(execution, pin!(self.env.signal.cancelled())).await {
            Either::Left((done, _)) => done,
            Either::Right(((), _)) => (call, ToolResult::error(ABORTED), started),
        }
    }

    /// Runs a prepared call and `after_tool_call`.
    async fn execute(&self, prepared: Prepared) -> (ToolCallRef, ToolResult, Instant) {
        let Prepared {
            call,
            tool,
            args,
            started,
        } = prepared;
        if self.env.signal.is_cancelled() {
            return (call, ToolResult::error(ABORTED), started);
        }
        let shared = Arc::clone(self.env.emitter.shared());
        let update_call = call.clone();
        let ctx = ToolContext::new(call.id())
            .with_signal(self.env.signal.clone())
            .with_state(self.env.state.clone())
            .with_updates(Arc::new(move |partial_result| {
                shared.push_now(AgentEvent::ToolExecutionUpdate {
                    call: update_call.clone(),
                    partial_result: Box::new(partial_result),
                });
            }));
        match &self.env.config.after_tool_call {
            None => {
                let result = execute_call(tool.as_ref(), args, ctx).await;
                (call, result, started)
            }
            Some(_) => {
                // Boxed so that the hook's state does not grow every call's future.
                let result =
                    Box::pin(self.execute_with_after_hook(&call, tool.as_ref(), args, ctx)).await;
                (call, result, started)
            }
        }
    }

    /// Runs a call, then `after_tool_call` on its result.
    async fn execute_with_after_hook(
        &self,
        call: &ToolCallRef,
        tool: &dyn AgentTool,
        args: Value,
        ctx: ToolContext,
    ) -> ToolResult {
        let mut result = execute_call(tool, args.clone(), ctx).await;
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
        };
        match guarded(|| hook(hook_ctx)).await {
            Ok(Ok(overrides)) => overrides.apply(&mut result),
            Ok(Err(err)) => result = ToolResult::error(err.message()),
            Err(panic) => result = ToolResult::error(format!("after_tool_call panicked: {panic}")),
        }
        result
    }

    /// Builds the result message and emits `ToolExecutionEnd`.
    async fn finish(&self, call: &ToolCallRef, result: ToolResult, started: Instant) -> Finished {
        let (done, end) = self.finish_quietly(call, result, started);
        self.env.emitter.emit(end).await;
        done
    }

    /// Builds the result message and the `ToolExecutionEnd` event to emit for it.
    fn finish_quietly(
        &self,
        call: &ToolCallRef,
        result: ToolResult,
        started: Instant,
    ) -> (Finished, AgentEvent) {
        let now = Instant::now();
        let duration_ms =
            u64::try_from(now.saturating_duration_since(started).as_millis()).unwrap_or(u64::MAX);
        let ToolResult {
            content,
            details,
            usage,
            added_tool_names,
            terminate,
            is_error,
        } = result;
        let message = Arc::new(Message::ToolResult(ToolResultMessage {
            tool_call_id: call.id().to_owned(),
            tool_name: call.name().to_owned(),
            content,
            details,
            is_error,
            duration_ms: Some(duration_ms),
            timestamp: self.env.clock.epoch_ms(now),
        }));
        let end = AgentEvent::ToolExecutionEnd {
            call: call.clone(),
            result: Arc::clone(&message),
            is_error,
            terminate,
            usage: usage.map(Box::new),
            duration_ms,
        };
        let done = Finished {
            message,
            terminate,
            added_tool_names,
        };
        (done, end)
    }
}

/// Polls a future once with the current task's context.
async fn poll_once<F: Future + ?Sized>(mut future: Pin<&mut F>) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await
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
