//! The event queue between a running loop and the [`AgentStream`](crate::AgentStream) that
//! drives it.
//!
//! The loop runs inside the stream: polling the stream polls the loop. Events go into a shared
//! queue; once the queue holds `yield_after` events the loop pauses (without waking anyone) so the
//! stream can hand them out, and the consumer's next poll resumes it. With `yield_after = 1` the
//! loop never runs ahead of the consumer (pi's awaited `emit`); larger values amortise the
//! hand-over. Tool updates arrive from tool code, possibly on other threads: they are queued and
//! wake the stream.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use futures_util::task::AtomicWaker;

use crate::event::AgentEvent;
use crate::message::Message;

/// How many events the loop may queue before it pauses, by default.
pub(crate) const DEFAULT_YIELD_AFTER: usize = 64;

pub(crate) struct Shared {
    queue: Mutex<VecDeque<AgentEvent>>,
    waker: AtomicWaker,
    yield_after: AtomicUsize,
    /// The loop is paused until the consumer has taken the queued events (not waiting on a
    /// tool or a timer): the stream must not poll it before then.
    paused: AtomicBool,
    /// The state of a run that paused on calls that wait, until taken.
    run_state: Mutex<Option<crate::run_state::RunState>>,
}

impl Shared {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            waker: AtomicWaker::new(),
            yield_after: AtomicUsize::new(DEFAULT_YIELD_AFTER),
            paused: AtomicBool::new(false),
            run_state: Mutex::new(None),
        })
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<AgentEvent>> {
        // A panic while holding the lock cannot leave the queue inconsistent: keep using it.
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Moves every queued event into `out` (which the caller has emptied).
    pub(crate) fn drain_into(&self, out: &mut VecDeque<AgentEvent>) {
        let mut queue = self.lock();
        if !queue.is_empty() {
            std::mem::swap(&mut *queue, out);
        }
    }

    /// Keeps the state of a run that paused.
    pub(crate) fn set_paused_state(&self, state: crate::run_state::RunState) {
        *self
            .run_state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(state);
    }

    /// Takes the state of a run that paused.
    pub(crate) fn take_paused_state(&self) -> Option<crate::run_state::RunState> {
        self.run_state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }

    pub(crate) fn register(&self, waker: &std::task::Waker) {
        self.waker.register(waker);
    }

    /// Whether the loop waits for the consumer (see [`YieldToConsumer`]).
    pub(crate) fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    pub(crate) fn set_yield_after(&self, events: usize) {
        self.yield_after.store(events.max(1), Ordering::Relaxed);
    }

    /// Queues an event from outside the loop's own flow (a tool's update) and wakes the stream.
    pub(crate) fn push_now(&self, event: AgentEvent) {
        self.lock().push_back(event);
        self.waker.wake();
    }
}

/// The loop's handle on the queue.
#[derive(Clone)]
pub(crate) struct Emitter {
    shared: Arc<Shared>,
}

impl Emitter {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Emitter { shared }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Queues an event; pauses the loop once enough events wait for the consumer. Returns
    /// whether it paused (the consumer's code ran meanwhile).
    pub(crate) async fn emit(&self, event: AgentEvent) -> bool {
        let queued = {
            let mut queue = self.shared.lock();
            queue.push_back(event);
            queue.len()
        };
        if queued < self.shared.yield_after.load(Ordering::Relaxed) {
            return false;
        }
        self.pause_for_consumer().await;
        true
    }
}

impl Emitter {
    /// Lets the consumer take the queued events before the loop goes on.
    pub(crate) async fn pause_for_consumer(&self) {
        YieldToConsumer {
            yielded: false,
            shared: &self.shared,
        }
        .await;
    }
}

/// Events the loop has made and not queued yet: [`Emitter::emit_pending`] queues them
/// together, under one lock, when the last one is due to pause the loop; [`Emitter::flush`]
/// before anything else could queue an event or watch the queue.
#[derive(Default)]
pub(crate) struct Pending {
    events: Vec<AgentEvent>,
    /// How many events the queue takes before the loop pauses for the consumer, as of the
    /// last look at it (under the lock); `None`: look again.
    room: Option<usize>,
}

impl Emitter {
    /// [`emit`](Self::emit), but the event waits in `pending` until it is the one that pauses
    /// the loop (the queue reaches `yield_after` with it): then `pending` is queued, in order,
    /// under one lock, and the loop pauses as `emit` would have, at the same event. Returns
    /// whether it paused. Only for events made by code that queues nothing else and that no
    /// one else watches meanwhile (see [`flush`](Self::flush)).
    pub(crate) async fn emit_pending(&self, pending: &mut Pending, event: AgentEvent) -> bool {
        if !self.stage(pending, event) {
            return false;
        }
        self.pause_for_consumer().await;
        true
    }

    /// The part of [`emit_pending`](Self::emit_pending) before its pause: puts `event` in
    /// `pending` (queuing `pending` when `event` fills the queue) and returns whether the loop
    /// must now pause ([`pause_for_consumer`](Self::pause_for_consumer)). Not `async`, and
    /// inlined: an event made in the call is written straight into `pending`, not moved there
    /// through the futures of the callers (each move read back what had just been written).
    #[inline]
    pub(crate) fn stage(&self, pending: &mut Pending, event: AgentEvent) -> bool {
        let yield_after = self.shared.yield_after.load(Ordering::Relaxed);
        let room = *pending
            .room
            .get_or_insert_with(|| yield_after.saturating_sub(self.shared.lock().len()));
        pending.events.push(event);
        if pending.events.len() < room {
            return false;
        }
        self.queue_pending(pending) >= yield_after
    }

    /// Queues the events waiting in `pending` (none of them pauses the loop: see
    /// [`emit_pending`](Self::emit_pending)), before code that could queue events of its own
    /// (a tool's update) or let the consumer look.
    pub(crate) fn flush(&self, pending: &mut Pending) {
        if !pending.events.is_empty() {
            self.queue_pending(pending);
        }
    }

    /// Queues `pending`'s events under one lock; returns the queue's length.
    fn queue_pending(&self, pending: &mut Pending) -> usize {
        pending.room = None;
        let mut queue = self.shared.lock();
        queue.extend(pending.events.drain(..));
        queue.len()
    }
}

/// Events made where the queue takes them: [`Emitter::emit_made`].
pub(crate) trait MakeEvents {
    /// Pushes the next event onto `queue`; `false` when there is none left.
    fn push_next(&mut self, queue: &mut VecDeque<AgentEvent>) -> bool;
}

impl Emitter {
    /// Queues the events `events` makes, in order, under one lock per chunk; pauses at the
    /// same events as [`emit`](Self::emit) of each would.
    ///
    /// Each chunk queues at least one event, even when the queue is already at `yield_after`:
    /// a tool's updates are queued from outside the loop, and a tool that sends them faster
    /// than the consumer takes them would otherwise refill the queue before every resume, and
    /// the loop would wait for room forever (its run never ending, even after an abort).
    ///
    /// Each event is made in the queue's own memory: an event made elsewhere and then moved
    /// into the queue is read back (48 bytes) right after the stores that wrote it, which the
    /// CPU cannot forward from its store buffer (a stall of about 2% of W1 per event moved).
    pub(crate) async fn emit_made(&self, mut events: impl MakeEvents) {
        let mut more = true;
        while more {
            let yield_after = self.shared.yield_after.load(Ordering::Relaxed);
            let (queued, pushed) = {
                let mut queue = self.shared.lock();
                let mut pushed = false;
                loop {
                    if !events.push_next(&mut queue) {
                        more = false;
                        break;
                    }
                    pushed = true;
                    if queue.len() >= yield_after {
                        break;
                    }
                }
                (queue.len(), pushed)
            };
            if pushed && queued >= yield_after {
                self.pause_for_consumer().await;
            }
        }
    }

    /// Queues `MessageStart` and `MessageEnd` of each message, in order (see
    /// [`emit_made`](Self::emit_made)).
    pub(crate) async fn emit_messages(&self, messages: &[Arc<Message>]) {
        self.emit_made(MessageEvents { messages, next: 0 }).await;
    }
}

/// `MessageStart` and `MessageEnd` of each message.
struct MessageEvents<'m> {
    messages: &'m [Arc<Message>],
    /// The next event: message `next / 2`, its start when `next` is even.
    next: usize,
}

impl MakeEvents for MessageEvents<'_> {
    #[inline]
    fn push_next(&mut self, queue: &mut VecDeque<AgentEvent>) -> bool {
        let Some(message) = self.messages.get(self.next / 2) else {
            return false;
        };
        let message = Arc::clone(message);
        if self.next.is_multiple_of(2) {
            queue.push_back(AgentEvent::MessageStart { message });
        } else {
            queue.push_back(AgentEvent::MessageEnd { message });
        }
        self.next += 1;
        true
    }
}

/// Returns `Pending` once without waking: the stream that polled the loop finds the queued
/// events, returns them, and polls the loop again on the consumer's next request.
struct YieldToConsumer<'a> {
    yielded: bool,
    shared: &'a Shared,
}

impl Future for YieldToConsumer<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            self.shared.paused.store(false, Ordering::Relaxed);
            Poll::Ready(())
        } else {
            self.yielded = true;
            self.shared.paused.store(true, Ordering::Relaxed);
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::Context;

    use futures_util::task::noop_waker_ref;

    use super::*;

    /// The events in the queue, taken as the stream takes them.
    fn drain(shared: &Shared) -> Vec<&'static str> {
        let mut taken = VecDeque::new();
        shared.drain_into(&mut taken);
        taken.iter().map(AgentEvent::kind).collect()
    }

    #[test]
    fn emit_made_gets_its_events_out_while_tool_updates_keep_the_queue_full() {
        // Lockstep: the loop pauses after every event. A tool's update (any event queued from
        // outside, here `agent_start`) is already queued when the loop wants to emit, and
        // another arrives each time the consumer has taken the queue.
        let shared = Shared::new();
        shared.set_yield_after(1);
        let emitter = Emitter::new(Arc::clone(&shared));
        let mut cx = Context::from_waker(noop_waker_ref());
        let message = [Arc::new(Message::user("hi"))];
        let mut emitting = pin!(emitter.emit_messages(&message));
        let mut emitted = 0;
        for _ in 0..4 {
            shared.push_now(AgentEvent::AgentStart);
            let done = emitting.as_mut().poll(&mut cx).is_ready();
            emitted += drain(&shared)
                .iter()
                .filter(|kind| kind.starts_with("message_"))
                .count();
            if done {
                break;
            }
        }
        assert_eq!(emitted, 2, "the loop's events never got into the queue");
    }

    /// What the consumer takes at each pause of `emitting`, one polling at a time, with an
    /// update queued from outside before every poll when `updates`.
    fn pauses<F: Future<Output = ()>>(
        shared: &Shared,
        emitting: F,
        updates: bool,
    ) -> Vec<Vec<String>> {
        let mut cx = Context::from_waker(noop_waker_ref());
        let mut emitting = pin!(emitting);
        let mut taken = Vec::new();
        for _ in 0..20 {
            if updates {
                shared.push_now(AgentEvent::AgentStart);
            }
            let done = emitting.as_mut().poll(&mut cx).is_ready();
            let mut queue = VecDeque::new();
            shared.drain_into(&mut queue);
            taken.push(
                queue
                    .iter()
                    .map(|event| match event.message() {
                        Some(message) => format!("{} {:p}", event.kind(), Arc::as_ptr(message)),
                        None => event.kind().to_owned(),
                    })
                    .collect(),
            );
            if done {
                return taken;
            }
        }
        panic!("the events never all got out");
    }

    #[test]
    fn emit_messages_queues_and_pauses_as_emit_of_each_event() {
        let messages: Vec<Arc<Message>> = ["a", "b", "c"]
            .into_iter()
            .map(|text| Arc::new(Message::user(text)))
            .collect();
        let events = || {
            messages.iter().flat_map(|message| {
                [
                    AgentEvent::MessageStart {
                        message: Arc::clone(message),
                    },
                    AgentEvent::MessageEnd {
                        message: Arc::clone(message),
                    },
                ]
            })
        };
        for yield_after in 1..=7 {
            for updates in [false, true] {
                let one_by_one = Shared::new();
                one_by_one.set_yield_after(yield_after);
                let emitter = Emitter::new(Arc::clone(&one_by_one));
                let emit_each = async {
                    for event in events() {
                        emitter.emit(event).await;
                    }
                };
                let by_emit = pauses(&one_by_one, emit_each, updates);
                let each = Shared::new();
                each.set_yield_after(yield_after);
                let emitter = Emitter::new(Arc::clone(&each));
                let by_messages = pauses(&each, emitter.emit_messages(&messages), updates);
                assert_eq!(
                    by_messages, by_emit,
                    "yield_after {yield_after}, updates {updates}"
                );
            }
        }
    }
}
