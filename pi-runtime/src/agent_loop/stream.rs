//! [`AgentStream`]: the events of a run, and the run itself (it advances as the stream is polled).

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::{Stream, StreamExt};

use super::emitter::Shared;
use crate::event::AgentEvent;
use crate::message::Message;
use crate::run_state::RunState;

/// The events of one run, ending with `AgentEnd` (pi's `EventStream<AgentEvent, AgentMessage[]>`).
///
/// The run lives inside the stream: it makes progress only while the stream is polled, and
/// dropping the stream stops it (running tools are dropped too). Tools run inside this task,
/// so a consumer that awaits slow work between events also pauses the tools.
///
/// By default the loop may run up to 64 events ahead of the consumer; [`lockstep`](Self::lockstep)
/// makes it wait for the consumer after every event, so that work done while handling an event
/// (say, persisting the assistant message) finishes before the loop goes on (pi's `Agent`
/// relies on this).
#[must_use = "a run only makes progress while its stream is polled"]
pub struct AgentStream {
    run: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    shared: Arc<Shared>,
    ready: VecDeque<AgentEvent>,
    /// The run has finished and its events are in `ready`: nothing more is taken from the queue.
    ended: bool,
}

impl AgentStream {
    pub(crate) fn new(run: Pin<Box<dyn Future<Output = ()> + Send>>, shared: Arc<Shared>) -> Self {
        AgentStream {
            run: Some(run),
            shared,
            ready: VecDeque::new(),
            ended: false,
        }
    }

    /// Makes the loop wait for the consumer after every event (no read-ahead).
    pub fn lockstep(self) -> Self {
        self.shared.set_yield_after(1);
        self
    }

    /// Lets the loop queue up to `events` events before it waits for the consumer.
    pub fn read_ahead(self, events: usize) -> Self {
        self.shared.set_yield_after(events);
        self
    }

    /// The next event, or `None` after `AgentEnd` (the same as `StreamExt::next`, without
    /// importing a trait).
    pub async fn next_event(&mut self) -> Option<AgentEvent> {
        self.next().await
    }

    /// The state of a run that paused on calls that wait (after its `RunPaused` event), once:
    /// decide its waiting calls and resume it. `None` while the run goes on, when it ended
    /// without waiting, or once taken.
    pub fn take_paused(&mut self) -> Option<RunState> {
        self.shared.take_paused_state()
    }

    /// Runs to the end, ignoring the events; returns the messages the run added and, when it
    /// paused, the state to resume from.
    pub async fn outcome(mut self) -> (Vec<Arc<Message>>, Option<RunState>) {
        let mut messages = Vec::new();
        while let Some(event) = self.next().await {
            if let AgentEvent::AgentEnd { messages: added } = event {
                messages = added;
            }
        }
        (messages, self.take_paused())
    }

    /// Runs to the end, ignoring the events, and returns the messages the run added (the
    /// payload of `AgentEnd`).
    pub async fn messages(mut self) -> Vec<Arc<Message>> {
        let mut messages = Vec::new();
        while let Some(event) = self.next().await {
            if let AgentEvent::AgentEnd { messages: added } = event {
                messages = added;
            }
        }
        messages
    }
}

impl Stream for AgentStream {
    type Item = AgentEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        let this = self.get_mut();
        loop {
            if !this.ready.is_empty() {
                // Events are waiting, but unless the loop paused for the consumer it is waiting
                // on something else (a tool, the abort grace): give it its turn too, so tool
                // updates arriving faster than they are consumed cannot starve the run.
                if let Some(run) = this.run.as_mut()
                    && !this.shared.is_paused()
                    && run.as_mut().poll(cx).is_ready()
                {
                    this.finish_run();
                }
                return Poll::Ready(this.ready.pop_front());
            }
            if this.ended {
                return Poll::Ready(None);
            }
            // Everything taken from the queue has been handed out: a loop that paused for the
            // consumer goes on now, even if tool updates have queued up meanwhile.
            if let Some(run) = this.run.as_mut()
                && this.shared.is_paused()
                && run.as_mut().poll(cx).is_ready()
            {
                this.finish_run();
                continue;
            }
            this.shared.drain_into(&mut this.ready);
            if !this.ready.is_empty() {
                continue;
            }
            let Some(run) = this.run.as_mut() else {
                return Poll::Ready(None);
            };
            match run.as_mut().poll(cx) {
                Poll::Ready(()) => this.finish_run(),
                Poll::Pending => {
                    this.shared.drain_into(&mut this.ready);
                    if this.ready.is_empty() {
                        // Tool updates from other threads wake us through the shared waker;
                        // check once more after registering so none is missed.
                        this.shared.register(cx.waker());
                        this.shared.drain_into(&mut this.ready);
                        if this.ready.is_empty() {
                            return Poll::Pending;
                        }
                    }
                }
            }
        }
    }
}

impl AgentStream {
    /// The run has returned: its last event, `AgentEnd`, is queued. Takes what it queued and
    /// stops reading the queue, so nothing can follow `AgentEnd`.
    fn finish_run(&mut self) {
        self.run = None;
        let mut rest = VecDeque::new();
        self.shared.drain_into(&mut rest);
        self.ready.extend(rest);
        self.ended = true;
    }
}

impl fmt::Debug for AgentStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentStream")
            .field("running", &self.run.is_some())
            .field("ready", &self.ready.len())
            .finish()
    }
}
