//! Time spent waiting for the user (signing in in a browser, answering an elicitation) does not
//! count against the connect and call timeouts: those bound the server, not the person.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Whether someone is waiting for the user now, and when the last such wait ended.
#[derive(Debug, Default)]
pub(crate) struct UserWaits {
    state: Mutex<WaitState>,
    ended: Notify,
}

#[derive(Debug, Default)]
struct WaitState {
    active: usize,
    last_end: Option<Instant>,
}

impl UserWaits {
    fn lock(&self) -> std::sync::MutexGuard<'_, WaitState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks a wait for the user until the returned guard is dropped.
    pub(crate) fn begin(self: &Arc<Self>) -> UserWait {
        self.lock().active += 1;
        UserWait {
            waits: Arc::clone(self),
        }
    }

    /// Called when a deadline of `timeout` that was due at `due` has passed: the new deadline when
    /// the user was being waited for meanwhile (a wait still going on is waited out first, then
    /// the full timeout starts again), `None` when the time really ran out.
    pub(crate) async fn extended(&self, due: Instant, timeout: Duration) -> Option<Instant> {
        loop {
            let notified = self.ended.notified();
            {
                let state = self.lock();
                if state.active == 0 {
                    let started = due.checked_sub(timeout).unwrap_or(due);
                    return match state.last_end {
                        Some(end) if end > started => {
                            let extended = end + timeout;
                            (extended > Instant::now()).then_some(extended)
                        }
                        _ => None,
                    };
                }
            }
            notified.await;
            // The wait ended: a whole new timeout from now.
            let state = self.lock();
            if state.active == 0 {
                return Some(Instant::now() + timeout);
            }
        }
    }
}

/// One wait for the user; ends when dropped.
pub(crate) struct UserWait {
    waits: Arc<UserWaits>,
}

impl Drop for UserWait {
    fn drop(&mut self) {
        {
            let mut state = self.waits.lock();
            state.active -= 1;
            state.last_end = Some(Instant::now());
        }
        self.waits.ended.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_deadline_passes_when_nobody_was_waiting_for_the_user() {
        let waits = Arc::new(UserWaits::default());
        let timeout = Duration::from_secs(10);
        let due = Instant::now() + timeout;
        tokio::time::sleep_until(due).await;
        assert_eq!(waits.extended(due, timeout).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_the_user_moves_the_deadline() {
        let waits = Arc::new(UserWaits::default());
        let timeout = Duration::from_secs(10);
        let due = Instant::now() + timeout;
        // A wait that ended after the deadline started: the timeout counts from its end.
        let wait = waits.begin();
        tokio::time::sleep(Duration::from_secs(4)).await;
        drop(wait);
        let ended = Instant::now();
        tokio::time::sleep_until(due).await;
        assert_eq!(waits.extended(due, timeout).await, Some(ended + timeout));
        // A wait still going on when the deadline passes is waited out.
        let wait = waits.begin();
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            drop(wait);
        });
        let due = Instant::now();
        let extended = waits.extended(due, timeout).await.unwrap();
        release.await.unwrap();
        assert_eq!(extended, Instant::now() + timeout);
    }
}
