//! How long the loop still waits for running tools after an abort.
//!
//! A well-behaved tool notices the abort and returns its own result (a shell's output so far
//! and `Command aborted`), which tells the model more than `Operation aborted`. A tool that
//! ignores the signal must not hang the run, so the wait is bounded. The timer is a short-lived
//! thread, so the loop needs no particular async runtime.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::task::AtomicWaker;

/// Ready once `duration` has passed.
pub(crate) struct Grace {
    shared: Arc<Shared>,
}

struct Shared {
    expired: AtomicBool,
    waker: AtomicWaker,
}

impl Grace {
    pub(crate) fn after(duration: Duration) -> Self {
        let shared = Arc::new(Shared {
            expired: AtomicBool::new(duration.is_zero()),
            waker: AtomicWaker::new(),
        });
        if !duration.is_zero() {
            let timer = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name("pi-abort-grace".to_owned())
                .spawn(move || {
                    std::thread::sleep(duration);
                    timer.expired.store(true, Ordering::Release);
                    timer.waker.wake();
                });
            if spawned.is_err() {
                // No thread, no grace: stop waiting at once rather than never.
                shared.expired.store(true, Ordering::Release);
            }
        }
        Grace { shared }
    }
}

impl Future for Grace {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.shared.expired.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        self.shared.waker.register(cx.waker());
        if self.shared.expired.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}
