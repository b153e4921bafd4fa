//! How a run is configured: the execution mode and every hook of pi 0.73.1's `AgentLoopConfig`.
//!
//! Hooks are optional async closures. Each gets owned, cheaply shared inputs (`Arc`s), so a
//! plain `|ctx| async move { .. }` closure works. A hook that returns `Err` or panics never stops
//! the agent: the call it was about gets an error result with the error's text.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use pi_tool::{
    ArgumentLimits, BoxFuture, CallLimits, CancellationToken, Content, ToolCall, ToolError,
    ToolResult, Usage,
};
pub use pi_tool::{DEFAULT_ABORT_GRACE, DEFAULT_MAX_NESTING_DEPTH, DEFAULT_MAX_RESULT_BYTES};
use serde_json::Value;

use crate::message::Message;
use crate::model::StreamOptions;
use crate::transcript::Transcript;
use crate::turn_hooks::{
    FinishTurn, FinishTurnHook, PrepareNextTurnHook, PrepareRequestHook, RequestContext, TurnUpdate,
};
use crate::wait::{Decision, WaitingCall};

/// How the tool calls of one assistant message are scheduled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ToolExecution {
    /// Prepare the calls one by one in source order, then run them all at once (the default).
    #[default]
    Parallel,
    /// Prepare and run each call before the next one starts.
    Sequential,
}

/// What `before_tool_call` decides about a call.
///
/// The default lets the call run with its validated arguments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BeforeToolCall {
    /// Do not run the call; it gets an error result with [`reason`](Self::reason).
    pub block: bool,
    /// Why the call was blocked; the model sees it. Without one the text is
    /// `Tool execution was blocked`.
    pub reason: Option<String>,
    /// Run the call with these arguments instead of the validated ones (not re-validated).
    pub args: Option<Value>,
    /// Mark the blocked call's result `terminate` (it counts towards ending the batch).
    pub terminate: bool,
    /// Do not run the call yet: it waits for approval with [`reason`](Self::reason), and the
    /// run pauses (or asks the [`approver`](AgentLoopConfig::approver)). Ignored for a call
    /// that was approved already (on resume), so the hook need not remember its decisions.
    pub suspend: bool,
}

impl BeforeToolCall {
    /// Let the call run.
    pub fn allow() -> Self {
        BeforeToolCall::default()
    }

    /// Block the call with a reason for the model.
    pub fn block(reason: impl Into<String>) -> Self {
        BeforeToolCall {
            block: true,
            reason: Some(reason.into()),
            ..BeforeToolCall::default()
        }
    }

    /// Block the call without a reason (`Tool execution was blocked`).
    pub fn block_silently() -> Self {
        BeforeToolCall {
            block: true,
            ..BeforeToolCall::default()
        }
    }

    /// Make the call wait for approval: the run pauses with it listed as waiting (kind
    /// approval, this reason), and resumes once it is decided.
    pub fn suspend(reason: impl Into<String>) -> Self {
        BeforeToolCall {
            suspend: true,
            reason: Some(reason.into()),
            ..BeforeToolCall::default()
        }
    }

    /// Let the call run with other arguments (they are not validated again).
    pub fn replace_args(args: Value) -> Self {
        BeforeToolCall {
            args: Some(args),
            ..BeforeToolCall::default()
        }
    }

    /// Sets [`terminate`](Self::terminate) (meaningful for a blocked call).
    #[must_use]
    pub fn with_terminate(mut self, terminate: bool) -> Self {
        self.terminate = terminate;
        self
    }
}

/// Field-wise overrides `after_tool_call` applies to a result. `None` keeps the tool's value;
/// each `Some` replaces the whole field (nothing is deep-merged).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AfterToolCall {
    /// New content for the model.
    pub content: Option<Vec<Content>>,
    /// New details.
    pub details: Option<Value>,
    /// Whether the result counts as an error.
    pub is_error: Option<bool>,
    /// Whether the result asks the loop to stop after this batch.
    pub terminate: Option<bool>,
    /// The tool's token usage.
    pub usage: Option<Usage>,
}

impl AfterToolCall {
    /// Keep the result as it is.
    pub fn keep() -> Self {
        AfterToolCall::default()
    }

    /// Replace the content.
    #[must_use]
    pub fn content(mut self, content: Vec<Content>) -> Self {
        self.content = Some(content);
        self
    }

    /// Replace the details.
    #[must_use]
    pub fn details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Set whether the result is an error.
    #[must_use]
    pub fn is_error(mut self, is_error: bool) -> Self {
        self.is_error = Some(is_error);
        self
    }

    /// Set whether the result ends the batch.
    #[must_use]
    pub fn terminate(mut self, terminate: bool) -> Self {
        self.terminate = Some(terminate);
        self
    }

    /// Set the usage.
    #[must_use]
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Applies the overrides to `result`.
    pub(crate) fn apply(self, result: &mut ToolResult) {
        if let Some(content) = self.content {
            result.content = content;
        }
        if let Some(details) = self.details {
            result.details = details;
        }
        if let Some(is_error) = self.is_error {
            result.is_error = is_error;
        }
        if let Some(terminate) = self.terminate {
            result.terminate = terminate;
        }
        if let Some(usage) = self.usage {
            result.usage = Some(usage);
        }
    }
}

/// What `before_tool_call` sees of a call.
#[derive(Clone, Debug)]
pub struct BeforeToolCallContext {
    /// The assistant message that made the call.
    pub assistant_message: Arc<Message>,
    /// The call as the model sent it (raw arguments).
    pub tool_call: ToolCall,
    /// The arguments after `prepare_arguments`, validation and normalization.
    pub args: Value,
    /// The transcript at the time of the call (it ends with the assistant message).
    pub messages: Transcript,
    /// The run's abort signal.
    pub signal: CancellationToken,
    /// For a call a tool made ([`ToolContext::call_tool`](pi_tool::ToolContext::call_tool)):
    /// the call that made it (pi's `parentToolCall`). `None` for the model's own calls.
    pub parent_tool_call: Option<ToolCall>,
}

/// What `after_tool_call` sees of a finished call.
#[derive(Clone, Debug)]
pub struct AfterToolCallContext {
    /// The assistant message that made the call.
    pub assistant_message: Arc<Message>,
    /// The call as the model sent it (raw arguments).
    pub tool_call: ToolCall,
    /// The arguments the tool ran with.
    pub args: Value,
    /// The tool's result, before any override.
    pub result: ToolResult,
    /// Whether the result is an error.
    pub is_error: bool,
    /// The transcript at the time of the call.
    pub messages: Transcript,
    /// The run's abort signal.
    pub signal: CancellationToken,
    /// For a call a tool made: the call that made it. `None` for the model's own calls.
    pub parent_tool_call: Option<ToolCall>,
}

/// What `should_stop_after_turn` sees of a finished turn.
#[derive(Clone, Debug)]
pub struct TurnEndContext {
    /// The turn's assistant message.
    pub message: Arc<Message>,
    /// Its tool results, in call order.
    pub tool_results: Vec<Arc<Message>>,
    /// The whole transcript.
    pub messages: Transcript,
    /// The messages this run added so far.
    pub new_messages: Transcript,
}

/// `convert_to_llm`/`transform_context`: rewrites the transcript a model request sees.
pub type MessagesHook = Arc<
    dyn Fn(Vec<Arc<Message>>, CancellationToken) -> BoxFuture<'static, Vec<Arc<Message>>>
        + Send
        + Sync,
>;
/// `before_tool_call`.
pub type BeforeToolCallHook = Arc<
    dyn Fn(BeforeToolCallContext) -> BoxFuture<'static, Result<BeforeToolCall, ToolError>>
        + Send
        + Sync,
>;
/// `after_tool_call`.
pub type AfterToolCallHook = Arc<
    dyn Fn(AfterToolCallContext) -> BoxFuture<'static, Result<AfterToolCall, ToolError>>
        + Send
        + Sync,
>;
/// The approver: decides a waiting call in process (see [`AgentLoopConfig::approver`]).
pub type Approver = Arc<dyn Fn(WaitingCall) -> BoxFuture<'static, Decision> + Send + Sync>;

/// How long the loop waits for its [`approver`](AgentLoopConfig::approver), and what happens
/// then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApprovalTimeout {
    /// Wait as long as it takes (an abort still ends the wait).
    #[default]
    WaitForever,
    /// Deny the call after this long (the model gets an error result saying no decision came).
    DenyAfter(Duration),
    /// Pause the run after this long: the call waits in the run's [`RunState`](crate::RunState),
    /// to be decided and resumed later.
    PauseAfter(Duration),
}

/// `should_stop_after_turn`.
pub type ShouldStopHook = Arc<dyn Fn(TurnEndContext) -> BoxFuture<'static, bool> + Send + Sync>;
/// A source of steering or follow-up messages, polled by the loop.
pub type MessageSource = Arc<dyn Fn() -> BoxFuture<'static, Vec<Message>> + Send + Sync>;
/// `get_api_key`: resolves the API key for a provider before every model request.
pub type ApiKeyHook = Arc<dyn Fn(String) -> BoxFuture<'static, Option<String>> + Send + Sync>;

/// The configuration of one run: the execution mode, request options and pi's hooks.
///
/// Every hook is optional; without hooks the loop does no per-turn work beyond the model call
/// and the tools. Cloning is cheap (hooks are shared).
///
/// ```
/// use pi_runtime::{AgentLoopConfig, BeforeToolCall, ToolExecution};
///
/// let config = AgentLoopConfig::new()
///     .tool_execution(ToolExecution::Parallel)
///     .max_parallel(8)
///     .before_tool_call(|ctx| async move {
///         if ctx.tool_call.name == "bash" {
///             Ok(BeforeToolCall::block("bash needs the user's approval"))
///         } else {
///             Ok(BeforeToolCall::allow())
///         }
///     });
/// # let _ = config;
/// ```
#[derive(Clone)]
pub struct AgentLoopConfig {
    /// Maps the transcript to what the model sees (pi's `convertToLlm`). `None` passes the
    /// transcript through; providers skip [`Message::Custom`] themselves.
    pub convert_to_llm: Option<MessagesHook>,
    /// Rewrites the transcript before `convert_to_llm` (pruning, compaction).
    pub transform_context: Option<MessagesHook>,
    /// Runs after validation, before a call executes: may block it or replace its arguments.
    pub before_tool_call: Option<BeforeToolCallHook>,
    /// Runs after a call executes: may override fields of its result.
    pub after_tool_call: Option<AfterToolCallHook>,
    /// Runs after every turn, after `turn_end`; `true` ends the run (steering and follow-ups
    /// are not polled). It keeps working beside [`finish_turn`](Self::finish_turn), which runs
    /// first: either one ending the run ends it.
    pub should_stop_after_turn: Option<ShouldStopHook>,
    /// Runs when a turn's tools are done, before `turn_end` (pi 1.x's `finishTurn`):
    /// [`FinishTurn::End`] ends the run, [`FinishTurn::Continue`] makes one more request even
    /// when the loop would stop, `None` leaves it to the loop. Not run for a failed or aborted
    /// response.
    pub finish_turn: Option<FinishTurnHook>,
    /// Runs between two turns, with the one that ended (pi's `prepareNextTurn`): may swap the
    /// tools, the model, the system prompt or the request options for the rest of the run.
    pub prepare_next_turn: Option<PrepareNextTurnHook>,
    /// Runs right before every model request, the first included (pi's `prepareRequest`), with
    /// the same powers as [`prepare_next_turn`](Self::prepare_next_turn).
    pub prepare_request: Option<PrepareRequestHook>,
    /// Messages to inject before the next model request (polled before the first request and
    /// after every turn).
    pub get_steering_messages: Option<MessageSource>,
    /// Messages that start another turn when the agent would otherwise stop.
    pub get_follow_up_messages: Option<MessageSource>,
    /// Resolves the API key before every request; `None` from it falls back to the options' key.
    pub get_api_key: Option<ApiKeyHook>,
    /// Parallel (default) or sequential.
    pub tool_execution: ToolExecution,
    /// At most this many calls of a parallel batch run at once (`None`: no limit, like pi).
    pub max_parallel: Option<usize>,
    /// Options for every model request (the run's signal replaces `signal`).
    pub stream_options: StreamOptions,
    /// After an abort, how long the loop still waits for running tools to answer for
    /// themselves (a shell's partial output and `Command aborted`) before it answers them
    /// `Operation aborted` and moves on. Default: one second.
    pub abort_grace: Duration,
    /// Records each tool call's arguments and result on its `execute_tool` span
    /// (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`; a failed call's text as the
    /// span's status description). Off by default: they may hold sensitive data, which the
    /// OpenTelemetry GenAI conventions make opt-in.
    pub trace_tool_content: bool,
    /// How large and deeply nested one call's arguments may be; a call over a limit gets an
    /// error result naming it, before anything parses or validates its arguments. Default
    /// [`ArgumentLimits::DEFAULT`] (1 MiB, 128 levels).
    pub argument_limits: ArgumentLimits,
    /// The most bytes of text one tool result may put into the transcript; longer text is cut
    /// (at a line end where one is near) and a note tells the model how much was dropped and
    /// to ask for less. Default [`DEFAULT_MAX_RESULT_BYTES`] (256 KiB). Images do not count:
    /// what they cost a model depends on their size in pixels, not in bytes.
    pub max_result_bytes: usize,
    /// How long a call may run when its tool sets no [`timeout`](pi_tool::AgentTool::timeout)
    /// of its own; on expiry the call's token is cancelled, the tool gets the
    /// [`abort_grace`](Self::abort_grace) to answer, and the model gets `Tool <name> timed out
    /// after <timeout>`. Default `None`: a coding agent's shell may rightly run a long build;
    /// bound such tools one by one (`#[tool(timeout = "30s")]`), or set one here for all.
    pub tool_timeout: Option<Duration>,
    /// Decides calls that wait for approval (or an external answer) in process, without
    /// pausing the run: called once per waiting call, in call order, after `before_tool_call`.
    /// `None` (the default): the run pauses on them.
    pub approver: Option<Approver>,
    /// How long the loop waits for the approver (default: as long as it takes).
    pub approval_timeout: ApprovalTimeout,
    /// How many levels deep calls a tool makes of other tools
    /// ([`ToolContext::call_tool`](pi_tool::ToolContext::call_tool)) may nest; a nested call
    /// past it gets an error result. Default [`DEFAULT_MAX_NESTING_DEPTH`] (8).
    pub max_nesting_depth: u32,
}

impl Default for AgentLoopConfig {
    fn default() -> Self {
        AgentLoopConfig {
            convert_to_llm: None,
            transform_context: None,
            before_tool_call: None,
            after_tool_call: None,
            should_stop_after_turn: None,
            finish_turn: None,
            prepare_next_turn: None,
            prepare_request: None,
            get_steering_messages: None,
            get_follow_up_messages: None,
            get_api_key: None,
            tool_execution: ToolExecution::default(),
            max_parallel: None,
            stream_options: StreamOptions::default(),
            abort_grace: DEFAULT_ABORT_GRACE,
            trace_tool_content: false,
            argument_limits: ArgumentLimits::DEFAULT,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            tool_timeout: None,
            max_nesting_depth: DEFAULT_MAX_NESTING_DEPTH,
            approver: None,
            approval_timeout: ApprovalTimeout::WaitForever,
        }
    }
}

impl AgentLoopConfig {
    /// The default configuration: parallel, no hooks.
    pub fn new() -> Self {
        AgentLoopConfig::default()
    }

    /// The bounds this configuration puts on each call ([`argument_limits`](Self::argument_limits),
    /// [`tool_timeout`](Self::tool_timeout), [`abort_grace`](Self::abort_grace),
    /// [`max_result_bytes`](Self::max_result_bytes)), as `pi-tool`'s pipeline takes them: the
    /// loop runs every call within them, and a host that runs a call for the loop (a durable
    /// wrapper) applies the same.
    pub fn call_limits(&self) -> CallLimits {
        let limits = CallLimits::DEFAULT
            .arguments(self.argument_limits)
            .abort_grace(self.abort_grace)
            .max_result_bytes(self.max_result_bytes)
            .max_nesting_depth(self.max_nesting_depth);
        match self.tool_timeout {
            Some(timeout) => limits.timeout(timeout),
            None => limits,
        }
    }

    /// Sets [`abort_grace`](Self::abort_grace).
    #[must_use]
    pub fn abort_grace(mut self, grace: Duration) -> Self {
        self.abort_grace = grace;
        self
    }

    /// Sets [`trace_tool_content`](Self::trace_tool_content): whether tool spans record the
    /// calls' arguments and results.
    #[must_use]
    pub fn trace_tool_content(mut self, record: bool) -> Self {
        self.trace_tool_content = record;
        self
    }

    /// Sets [`argument_limits`](Self::argument_limits).
    #[must_use]
    pub fn argument_limits(mut self, limits: ArgumentLimits) -> Self {
        self.argument_limits = limits;
        self
    }

    /// Sets [`max_result_bytes`](Self::max_result_bytes).
    #[must_use]
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// Sets [`max_nesting_depth`](Self::max_nesting_depth).
    #[must_use]
    pub fn max_nesting_depth(mut self, depth: u32) -> Self {
        self.max_nesting_depth = depth;
        self
    }

    /// Sets [`tool_timeout`](Self::tool_timeout), for tools without a timeout of their own.
    #[must_use]
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Sets the execution mode.
    #[must_use]
    pub fn tool_execution(mut self, mode: ToolExecution) -> Self {
        self.tool_execution = mode;
        self
    }

    /// Caps how many calls of a parallel batch run at once (0 is read as 1).
    #[must_use]
    pub fn max_parallel(mut self, limit: usize) -> Self {
        self.max_parallel = Some(limit.max(1));
        self
    }

    /// Sets the options of every model request.
    #[must_use]
    pub fn stream_options(mut self, options: StreamOptions) -> Self {
        self.stream_options = options;
        self
    }

    /// Sets `convert_to_llm`.
    #[must_use]
    pub fn convert_to_llm<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(Vec<Arc<Message>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Arc<Message>>> + Send + 'static,
    {
        self.convert_to_llm = Some(Arc::new(move |messages, _signal| Box::pin(hook(messages))));
        self
    }

    /// Sets `transform_context` (it gets the run's abort signal).
    #[must_use]
    pub fn transform_context<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(Vec<Arc<Message>>, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Arc<Message>>> + Send + 'static,
    {
        self.transform_context = Some(Arc::new(move |messages, signal| {
            Box::pin(hook(messages, signal))
        }));
        self
    }

    /// Sets `before_tool_call`.
    #[must_use]
    pub fn before_tool_call<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(BeforeToolCallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<BeforeToolCall, ToolError>> + Send + 'static,
    {
        self.before_tool_call = Some(Arc::new(move |ctx| Box::pin(hook(ctx))));
        self
    }

    /// Sets `after_tool_call`.
    #[must_use]
    pub fn after_tool_call<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(AfterToolCallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AfterToolCall, ToolError>> + Send + 'static,
    {
        self.after_tool_call = Some(Arc::new(move |ctx| Box::pin(hook(ctx))));
        self
    }

    /// Sets the [`approver`](Self::approver) and how long it may take.
    ///
    /// ```
    /// use std::time::Duration;
    /// use pi_runtime::{AgentLoopConfig, ApprovalTimeout, Decision};
    ///
    /// let config = AgentLoopConfig::new().approver(
    ///     |call| async move {
    ///         if call.tool == "refund" { Decision::Approve } else { Decision::Deny { reason: "not now".into() } }
    ///     },
    ///     ApprovalTimeout::PauseAfter(Duration::from_secs(30)),
    /// );
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn approver<F, Fut>(mut self, approver: F, timeout: ApprovalTimeout) -> Self
    where
        F: Fn(WaitingCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Decision> + Send + 'static,
    {
        self.approver = Some(Arc::new(move |call| Box::pin(approver(call))));
        self.approval_timeout = timeout;
        self
    }

    /// Sets `should_stop_after_turn`.
    #[must_use]
    pub fn should_stop_after_turn<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(TurnEndContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.should_stop_after_turn = Some(Arc::new(move |ctx| Box::pin(hook(ctx))));
        self
    }

    /// Sets [`finish_turn`](Self::finish_turn).
    #[must_use]
    pub fn finish_turn<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(TurnEndContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<FinishTurn>> + Send + 'static,
    {
        self.finish_turn = Some(Arc::new(move |ctx| Box::pin(hook(ctx))));
        self
    }

    /// Sets [`prepare_next_turn`](Self::prepare_next_turn).
    #[must_use]
    pub fn prepare_next_turn<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(TurnEndContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<TurnUpdate>> + Send + 'static,
    {
        self.prepare_next_turn = Some(Arc::new(move |ctx| Box::pin(hook(ctx))));
        self
    }

    /// Sets [`prepare_request`](Self::prepare_request).
    #[must_use]
    pub fn prepare_request<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<TurnUpdate>> + Send + 'static,
    {
        self.prepare_request = Some(Arc::new(move |ctx| Box::pin(hook(ctx))));
        self
    }

    /// Sets the steering source.
    #[must_use]
    pub fn steering<F, Fut>(mut self, source: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Message>> + Send + 'static,
    {
        self.get_steering_messages = Some(Arc::new(move || Box::pin(source())));
        self
    }

    /// Sets the follow-up source.
    #[must_use]
    pub fn follow_up<F, Fut>(mut self, source: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Message>> + Send + 'static,
    {
        self.get_follow_up_messages = Some(Arc::new(move || Box::pin(source())));
        self
    }

    /// Sets `get_api_key` (called with the model's provider name).
    #[must_use]
    pub fn api_key<F, Fut>(mut self, resolve: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<String>> + Send + 'static,
    {
        self.get_api_key = Some(Arc::new(move |provider| Box::pin(resolve(provider))));
        self
    }
}

impl fmt::Debug for AgentLoopConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hooks: Vec<&str> = [
            ("convert_to_llm", self.convert_to_llm.is_some()),
            ("transform_context", self.transform_context.is_some()),
            ("before_tool_call", self.before_tool_call.is_some()),
            ("after_tool_call", self.after_tool_call.is_some()),
            (
                "should_stop_after_turn",
                self.should_stop_after_turn.is_some(),
            ),
            (
                "get_steering_messages",
                self.get_steering_messages.is_some(),
            ),
            (
                "get_follow_up_messages",
                self.get_follow_up_messages.is_some(),
            ),
            ("get_api_key", self.get_api_key.is_some()),
            ("finish_turn", self.finish_turn.is_some()),
            ("prepare_next_turn", self.prepare_next_turn.is_some()),
            ("prepare_request", self.prepare_request.is_some()),
            ("approver", self.approver.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
        f.debug_struct("AgentLoopConfig")
            .field("tool_execution", &self.tool_execution)
            .field("max_parallel", &self.max_parallel)
            .field("abort_grace", &self.abort_grace)
            .field("trace_tool_content", &self.trace_tool_content)
            .field("argument_limits", &self.argument_limits)
            .field("max_result_bytes", &self.max_result_bytes)
            .field("tool_timeout", &self.tool_timeout)
            .field("hooks", &hooks)
            .field("stream_options", &self.stream_options)
            .finish()
    }
}
