//! What bounds one call in every host: the size of its arguments, how long it may run, the
//! grace it gets once cancelled, the size of its result and how deeply calls may nest. The
//! agent loop, `ToolRegistry::run`, an MCP server and a Restate tool service all apply the same.

use std::time::Duration;

use crate::{AgentTool, ArgumentLimits};

/// The default [`CallLimits::max_result_bytes`]: 256 KiB.
///
/// Why: about five times what pi's own coding tools keep (50 KB or 2000 lines, with notes of
/// their own), so they always truncate first; and about 64k tokens, so one result cannot fill a
/// model's context window.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 256 * 1024;

/// The default [`CallLimits::max_nesting_depth`]: 8 levels of calls inside calls.
///
/// Why: a script of the `code` tool calling a tool is one level, and that tool calling another a
/// second; eight leaves room for real compositions while a tool that calls itself without end is
/// stopped after a handful of calls, not a stack overflow.
pub const DEFAULT_MAX_NESTING_DEPTH: u32 = 8;

/// The default [`CallLimits::abort_grace`]: one second.
pub const DEFAULT_ABORT_GRACE: Duration = Duration::from_secs(1);

/// The bounds of one tool call, the same in every host.
///
/// - [`arguments`](Self::arguments): the size and depth of the arguments, checked before
///   anything parses or validates them;
/// - [`timeout`](Self::timeout): how long a call of a tool without a
///   [`timeout`](AgentTool::timeout) of its own may run; on expiry the call's signal is
///   cancelled, the tool gets [`abort_grace`](Self::abort_grace) to answer, and the result is
///   `Tool <name> timed out after <timeout>`;
/// - [`max_result_bytes`](Self::max_result_bytes): the most text one result may carry; the
///   rest is cut, with a note saying how much was dropped;
/// - [`max_nesting_depth`](Self::max_nesting_depth): how deeply calls made from inside calls
///   ([`ToolContext::call_tool`](crate::ToolContext::call_tool)) may nest.
///
/// ```
/// use std::time::Duration;
/// use pi_tool::{ArgumentLimits, CallLimits};
///
/// let limits = CallLimits::DEFAULT
///     .timeout(Duration::from_secs(30))
///     .max_result_bytes(64 * 1024)
///     .arguments(ArgumentLimits::DEFAULT.max_bytes(100_000));
/// assert_eq!(limits.timeout, Some(Duration::from_secs(30)));
/// assert_eq!(limits.arguments.max_bytes, 100_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CallLimits {
    /// How large and deeply nested one call's arguments may be. Default
    /// [`ArgumentLimits::DEFAULT`].
    pub arguments: ArgumentLimits,
    /// The timeout of a call whose tool sets none. Default `None`: a coding agent's shell may
    /// rightly run a long build; bound such tools one by one (`#[tool(timeout = "30s")]`), or
    /// set one here for all.
    pub timeout: Option<Duration>,
    /// How long a timed-out (or aborted) call may still take to answer for itself (a shell's
    /// output so far) before it is answered for. Default [`DEFAULT_ABORT_GRACE`].
    pub abort_grace: Duration,
    /// The most bytes of text one result may carry. Default [`DEFAULT_MAX_RESULT_BYTES`].
    /// Images do not count: what they cost a model depends on their size in pixels.
    pub max_result_bytes: usize,
    /// How many levels deep calls made from inside a call may nest (a top-level call is level
    /// 0, its nested calls level 1). A nested call past it gets an error result. Default
    /// [`DEFAULT_MAX_NESTING_DEPTH`].
    pub max_nesting_depth: u32,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits::DEFAULT
    }
}

impl CallLimits {
    /// The defaults: [`ArgumentLimits::DEFAULT`], no timeout, a one-second grace, 256 KiB of
    /// result text, 8 levels of nesting.
    pub const DEFAULT: CallLimits = CallLimits {
        arguments: ArgumentLimits::DEFAULT,
        timeout: None,
        abort_grace: DEFAULT_ABORT_GRACE,
        max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
        max_nesting_depth: DEFAULT_MAX_NESTING_DEPTH,
    };

    /// Sets [`arguments`](Self::arguments).
    #[must_use]
    pub const fn arguments(mut self, limits: ArgumentLimits) -> Self {
        self.arguments = limits;
        self
    }

    /// Sets [`timeout`](Self::timeout), for tools without one of their own.
    #[must_use]
    pub const fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Clears [`timeout`](Self::timeout).
    #[must_use]
    pub const fn no_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// Sets [`abort_grace`](Self::abort_grace).
    #[must_use]
    pub const fn abort_grace(mut self, grace: Duration) -> Self {
        self.abort_grace = grace;
        self
    }

    /// Sets [`max_result_bytes`](Self::max_result_bytes).
    #[must_use]
    pub const fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// Sets [`max_nesting_depth`](Self::max_nesting_depth).
    #[must_use]
    pub const fn max_nesting_depth(mut self, depth: u32) -> Self {
        self.max_nesting_depth = depth;
        self
    }

    /// The timeout a call of `tool` runs under: its own, else these limits' default.
    #[inline]
    pub fn timeout_of(&self, tool: &dyn AgentTool) -> Option<Duration> {
        tool.timeout().or(self.timeout)
    }

    /// Whether a call of `tool` runs as it is, with nothing around it: no timeout applies and
    /// the tool does not block its thread.
    #[inline]
    pub fn is_plain(&self, tool: &dyn AgentTool) -> bool {
        self.timeout_of(tool).is_none() && !tool.blocking()
    }
}
