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
    /// The base64 bytes of all images one script attaches: 10 MiB. They are kept in the
    /// result (and so in the transcript): `attachImage` throws past it.
    pub image_bytes: usize,
    /// The script's return value, as JSON, kept in the result: 256 KiB (pi-tool's
    /// [`DEFAULT_MAX_RESULT_BYTES`](pi_tool::DEFAULT_MAX_RESULT_BYTES)). Past it the model reads
    /// the first this many bytes with a note, and the result's `details` keep none of it (only
    /// its size), so neither the transcript nor a session file holds more.
    pub result_bytes: usize,
    /// CPU time the engine's thread may use: 10 s. Apart from [`time`](Self::time): waits for
    /// tool calls do not count, the script's own work (and the tools' work polled on its
    /// thread) does. Read from the thread's CPU clock where the system has one (Linux, Android,
    /// macOS, iOS, FreeBSD), else the wall time the engine was not waiting for tools.
    pub cpu_time: Duration,
    /// The script's source: 256 KiB. A longer script is refused before the engine starts.
    pub source_bytes: usize,
    /// One tool call's arguments, as JSON: 1 MiB. A call past it rejects, and its tool never
    /// runs.
    pub call_argument_bytes: usize,
    /// One tool call's result (its `details` as JSON when the tool has an output schema, else
    /// its text): 4 MiB. A call past it rejects.
    pub call_result_bytes: usize,
    /// Tool calls running at once (started and not finished; a call that finishes when it is
    /// made never counts): 64. A call past it rejects, and its tool never runs.
    pub max_calls_in_flight: usize,
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
            image_bytes: 10 << 20,
            result_bytes: pi_tool::DEFAULT_MAX_RESULT_BYTES,
            cpu_time: Duration::from_secs(10),
            source_bytes: 256 << 10,
            call_argument_bytes: 1 << 20,
            call_result_bytes: 4 << 20,
            max_calls_in_flight: 64,
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

    /// Sets how much of the return value is kept.
    #[must_use]
    pub fn result_bytes(mut self, bytes: usize) -> Self {
        self.result_bytes = bytes;
        self
    }

    /// Sets the CPU time cap.
    #[must_use]
    pub fn cpu_time(mut self, time: Duration) -> Self {
        self.cpu_time = time;
        self
    }

    /// Sets the cap of the script's source.
    #[must_use]
    pub fn source_bytes(mut self, bytes: usize) -> Self {
        self.source_bytes = bytes;
        self
    }

    /// Sets the cap of one call's arguments.
    #[must_use]
    pub fn call_argument_bytes(mut self, bytes: usize) -> Self {
        self.call_argument_bytes = bytes;
        self
    }

    /// Sets the cap of one call's result.
    #[must_use]
    pub fn call_result_bytes(mut self, bytes: usize) -> Self {
        self.call_result_bytes = bytes;
        self
    }

    /// Sets how many calls may run at once.
    #[must_use]
    pub fn max_calls_in_flight(mut self, calls: usize) -> Self {
        self.max_calls_in_flight = calls;
        self
    }

    /// Sets the cap of a script's images, in base64 bytes.
    #[must_use]
    pub fn image_bytes(mut self, bytes: usize) -> Self {
        self.image_bytes = bytes;
        self
    }
}
