//! The CPU time of the engine's thread, for the CPU cap ([`CodeLimits::cpu_time`]).
//!
//! [`CodeLimits::cpu_time`]: crate::CodeLimits::cpu_time

use std::time::Duration;

/// The CPU time the current thread has used, where the system has a clock for it; `None`
/// elsewhere (then the cap counts the wall time the engine did not wait for tools).
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    #[cfg(any(
        target_os = "linux",
        target_os = "android",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd"
    ))]
    {
        use nix::time::{ClockId, clock_gettime};
        clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
            .ok()
            .map(Duration::from)
    }
    #[cfg(not(any(
        target_os = "linux",
        target_os = "android",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd"
    )))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::thread_cpu_time;

    #[test]
    #[cfg(target_os = "linux")]
    fn the_clock_counts_work_and_not_sleep() {
        let start = thread_cpu_time().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let slept = thread_cpu_time().unwrap() - start;
        let mut x = 0u64;
        let busy = std::time::Instant::now();
        while busy.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let worked = thread_cpu_time().unwrap() - start - slept;
        assert!(worked > slept, "{worked:?} of work, {slept:?} of sleep");
    }
}
