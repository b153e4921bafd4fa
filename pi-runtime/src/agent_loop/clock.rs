//! Timestamps for tool results.

use std::time::Instant;

use crate::message::now_ms;

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
    pub(super) fn epoch_ms(&self, instant: Instant) -> i64 {
        let elapsed = instant.saturating_duration_since(self.base).as_millis();
        self.base_ms
            .saturating_add(i64::try_from(elapsed).unwrap_or(i64::MAX))
    }
}
