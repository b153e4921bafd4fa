//! Tool timeouts and abort graces: futures that become ready at an instant, woken by one
//! process-wide timer thread.
//!
//! Why a thread of our own: every host (the agent loop, `ToolRegistry::run`, an MCP server, a
//! Restate service) runs on an executor of its choice, and a tokio runtime built without
//! `enable_time` would panic in `tokio::time::sleep`; one thread for every deadline costs a heap
//! entry per timed call, not a thread per call. A deadline dropped early (the call finished in
//! time) is marked and swept out in bulk, so a million fast calls with a 30 s timeout do not
//! pile up entries.

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;

/// A future that is ready once a duration has passed, woken by `pi-tool`'s timer thread, so
/// it needs no async runtime (nor tokio's timer driver).
///
/// The pipeline bounds a call's timeout and its abort grace with it; a host uses it for its own
/// waits (the agent loop's grace after an abort).
///
/// ```
/// use std::time::{Duration, Instant};
/// use pi_tool::Deadline;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let started = Instant::now();
/// Deadline::after(Duration::from_millis(20)).await;
/// assert!(started.elapsed() >= Duration::from_millis(20));
/// # });
/// ```
pub struct Deadline {
    entry: Arc<Entry>,
}

struct Entry {
    expired: AtomicBool,
    /// The `Deadline` is gone: the timer may drop the entry.
    abandoned: AtomicBool,
    waker: AtomicWaker,
}

struct Slot {
    at: Instant,
    seq: u64,
    entry: Arc<Entry>,
}

impl PartialEq for Slot {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Slot {}
impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Slot {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Default)]
struct Queue {
    slots: BinaryHeap<Reverse<Slot>>,
    seq: u64,
}

struct Timer {
    queue: Mutex<Queue>,
    changed: Condvar,
    /// Deadlines dropped before they expired, still in the heap.
    abandoned: AtomicUsize,
}

/// Abandoned entries are swept once there are this many and they are half the heap.
const SWEEP_AT: usize = 1024;

impl Timer {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The timer thread: expires due entries, then sleeps until the next one (or a new one).
    fn run(&self) {
        let mut queue = self.lock();
        loop {
            let now = Instant::now();
            while queue
                .slots
                .peek()
                .is_some_and(|Reverse(slot)| slot.at <= now)
            {
                if let Some(Reverse(slot)) = queue.slots.pop() {
                    if slot.entry.abandoned.load(Ordering::Relaxed) {
                        self.abandoned.fetch_sub(1, Ordering::Relaxed);
                    }
                    slot.entry.expired.store(true, Ordering::Release);
                    slot.entry.waker.wake();
                }
            }
            queue = match queue.slots.peek() {
                Some(Reverse(next)) => {
                    let wait = next.at.saturating_duration_since(now);
                    self.changed
                        .wait_timeout(queue, wait)
                        .map(|(guard, _)| guard)
                        .unwrap_or_else(|poisoned| poisoned.into_inner().0)
                }
                None => self
                    .changed
                    .wait(queue)
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
            };
        }
    }

    fn insert(&self, at: Instant, entry: Arc<Entry>) {
        let mut queue = self.lock();
        let abandoned = self.abandoned.load(Ordering::Relaxed);
        if abandoned >= SWEEP_AT && abandoned * 2 >= queue.slots.len() {
            let before = queue.slots.len();
            queue
                .slots
                .retain(|Reverse(slot)| !slot.entry.abandoned.load(Ordering::Relaxed));
            self.abandoned
                .fetch_sub(before - queue.slots.len(), Ordering::Relaxed);
        }
        let seq = queue.seq;
        queue.seq = queue.seq.wrapping_add(1);
        let earliest = queue.slots.peek().is_none_or(|Reverse(next)| at < next.at);
        queue.slots.push(Reverse(Slot { at, seq, entry }));
        drop(queue);
        if earliest {
            self.changed.notify_one();
        }
    }
}

/// The timer, its thread started on first use; `None` if no thread could be started.
fn timer() -> Option<&'static Timer> {
    static TIMER: OnceLock<Option<&'static Timer>> = OnceLock::new();
    *TIMER.get_or_init(|| {
        let timer: &'static Timer = Box::leak(Box::new(Timer {
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
            abandoned: AtomicUsize::new(0),
        }));
        std::thread::Builder::new()
            .name("pi-tool-timeouts".to_owned())
            .spawn(move || timer.run())
            .map(|_| timer)
            .ok()
    })
}

impl Deadline {
    /// Ready `after` from now (at once for zero). Without a timer thread (the system refused
    /// one) it never becomes ready: a call then runs unbounded rather than failing at once.
    pub fn after(after: Duration) -> Self {
        let entry = Arc::new(Entry {
            expired: AtomicBool::new(after.is_zero()),
            abandoned: AtomicBool::new(false),
            waker: AtomicWaker::new(),
        });
        if after.is_zero() {
            return Deadline { entry };
        }
        if let Some(timer) = timer() {
            let at = Instant::now().checked_add(after);
            // A timeout too far to represent never expires.
            if let Some(at) = at {
                timer.insert(at, Arc::clone(&entry));
            }
        }
        Deadline { entry }
    }
}

impl std::fmt::Debug for Deadline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deadline")
            .field("expired", &self.entry.expired.load(Ordering::Acquire))
            .finish()
    }
}

impl Future for Deadline {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.entry.expired.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        self.entry.waker.register(cx.waker());
        if self.entry.expired.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if !self.entry.expired.load(Ordering::Acquire)
            && !self.entry.abandoned.swap(true, Ordering::Relaxed)
            && let Some(timer) = timer()
        {
            timer.abandoned.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expires_in_order_and_dropped_ones_are_swept() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            // Many abandoned deadlines far in the future...
            for _ in 0..3 * SWEEP_AT {
                drop(Deadline::after(Duration::from_secs(3600)));
            }
            // ...do not keep a near one from firing, and get swept on a later insert.
            Deadline::after(Duration::from_millis(20)).await;
            let queue = timer().expect("timer").lock();
            assert!(queue.slots.len() < 2 * SWEEP_AT, "{}", queue.slots.len());
        });
    }
}
