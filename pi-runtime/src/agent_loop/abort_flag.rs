//! Whether the run's signal is cancelled, asked without a lock.
//!
//! `CancellationToken::is_cancelled` takes the token's mutex, and a parallel batch asks before
//! every call starts (a tool's code may cancel the run between two starts). The flag is set
//! by the token itself: the run registers a waker for its cancellation once, and `cancel()`
//! wakes every registered waker before it returns. So the flag is set as soon as the token
//! says cancelled to the thread that cancelled it (a tool, a hook, the consumer between two
//! events), and reading it is one atomic load. A `cancel()` on another thread has no order
//! with the loop's steps either way: the loop sees it at its next look after the wake.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Wake, Waker};

use pi_tool::CancellationToken;
use tokio_util::sync::WaitForCancellationFutureOwned;

/// The run's signal, as a flag its cancellation sets.
pub(crate) struct AbortFlag {
    flag: Arc<Flag>,
    /// Keeps the waker registered with the token for as long as the run lives.
    _registration: Pin<Box<WaitForCancellationFutureOwned>>,
}

/// The waker registered with the token: waking it is the cancellation.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

impl AbortFlag {
    /// Watches `signal` (already cancelled: the flag starts set).
    pub(crate) fn new(signal: &CancellationToken) -> Self {
        let flag = Arc::new(Flag::default());
        let mut registration = Box::pin(signal.clone().cancelled_owned());
        let waker = Waker::from(Arc::clone(&flag));
        if registration
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_ready()
        {
            flag.0.store(true, Ordering::Release);
        }
        AbortFlag {
            flag,
            _registration: registration,
        }
    }

    /// Whether the signal was cancelled (see the module's doc for when it shows).
    pub(crate) fn is_cancelled(&self) -> bool {
        self.flag.0.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_set_once_cancel_returns_and_starts_set_for_a_cancelled_token() {
        let signal = CancellationToken::new();
        let flag = AbortFlag::new(&signal);
        assert!(!flag.is_cancelled());
        signal.cancel();
        assert!(
            flag.is_cancelled(),
            "cancel() returned before the flag was set"
        );

        let parent = CancellationToken::new();
        let child = parent.child_token();
        let flag = AbortFlag::new(&child);
        parent.cancel();
        assert!(
            flag.is_cancelled(),
            "a parent's cancel reaches the child's flag"
        );

        assert!(AbortFlag::new(&signal).is_cancelled());
    }

    #[test]
    fn a_cancel_on_another_thread_sets_the_flag() {
        let signal = CancellationToken::new();
        let flag = AbortFlag::new(&signal);
        let canceller = signal.clone();
        std::thread::spawn(move || canceller.cancel())
            .join()
            .expect("the cancelling thread");
        assert!(flag.is_cancelled());
    }
}
