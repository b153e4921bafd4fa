//! The clock of call durations and result timestamps.
//!
//! A batch reads it twice per call (when the call's preparation starts and when it finishes),
//! so it reads the CPU's time-stamp counter through `quanta`: about 15 ns, where the OS clock
//! (`std::time::Instant`) costs 30 to 50 ns on a cloud VM. Where the counter is not invariant,
//! `quanta` reads the OS clock. The first read in a process calibrates the counter (about a
//! millisecond, once).

use crate::message::now_ms;

/// A reading of the loop's clock.
pub(crate) type Instant = quanta::Instant;

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

    /// The time now.
    pub(super) fn now(&self) -> Instant {
        Instant::now()
    }

    /// Milliseconds since the Unix epoch at `instant`.
    pub(super) fn epoch_ms(&self, instant: Instant) -> i64 {
        let elapsed = instant.saturating_duration_since(self.base).as_millis();
        self.base_ms
            .saturating_add(i64::try_from(elapsed).unwrap_or(i64::MAX))
    }
}
