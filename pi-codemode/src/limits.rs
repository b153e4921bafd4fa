//! The caps a script runs under.

use std::time::Duration;

/// The caps of one `code` call. Every field has a sane default ([`CodeLimits::default`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeLimits {
    /// Memory the engine may allocate (QuickJS's own accounting): 64 MiB.
    pub memory_bytes: usize,
    /// Wall time from the script's start to its result, tool calls included: 30 s. The engine's
    /// interrupt handler stops running code at the cap; a wait for tools stops there too.
    pub time: Duration,
    /// The engine's stack (deep recursion is a `RangeError` past it): 1 MiB.
    pub stack_bytes: usize,
    /// Console output kept for the model: 16 KiB (the rest is cut with a note).
    pub console_bytes: usize,
    /// Tool calls one script may make: 1,000.
    pub max_calls: usize,
    /// Images one script may attach: 8.
    pub max_images: usize,
}

impl Default for CodeLimits {
    fn default() -> Self {
        CodeLimits {
            memory_bytes: 64 << 20,
            time: Duration::from_secs(30),
            stack_bytes: 1 << 20,
            console_bytes: 16 << 10,
            max_calls: 1_000,
            max_images: 8,
        }
    }
}

impl CodeLimits {
    /// The default caps.
    pub fn new() -> Self {
        CodeLimits::default()
    }

    /// Sets the memory cap.
    #[must_use]
    pub fn memory_bytes(mut self, bytes: usize) -> Self {
        self.memory_bytes = bytes;
        self
    }

    /// Sets the time cap.
    #[must_use]
    pub fn time(mut self, time: Duration) -> Self {
        self.time = time;
        self
    }

    /// Sets the stack cap.
    #[must_use]
    pub fn stack_bytes(mut self, bytes: usize) -> Self {
        self.stack_bytes = bytes;
        self
    }

    /// Sets how much console output is kept.
    #[must_use]
    pub fn console_bytes(mut self, bytes: usize) -> Self {
        self.console_bytes = bytes;
        self
    }

    /// Sets how many tool calls a script may make.
    #[must_use]
    pub fn max_calls(mut self, calls: usize) -> Self {
        self.max_calls = calls;
        self
    }

    /// Sets how many images a script may attach.
    #[must_use]
    pub fn max_images(mut self, images: usize) -> Self {
        self.max_images = images;
        self
    }
}
