//! The agent loop (pi's `agentLoop` / `agentLoopContinue`): hands the tools to a model, runs its
//! tool calls, and repeats until the model stops calling tools.

mod abort_flag;
mod approve;
mod batch;
mod call;
mod clock;
mod context;
mod deferred;
mod emitter;
mod guard;
mod hooks;
mod host;
mod nested;
mod nested_wait;
mod resume;
mod resume_start;
mod run;
mod spans;
mod stream;
mod tool_change;

use std::sync::Arc;

use pi_tool::CancellationToken;
use tracing::Instrument;

pub use context::AgentContext;
pub use resume_start::{Resume, ResumeRefused};
pub use stream::AgentStream;

use crate::config::AgentLoopConfig;
use crate::message::Message;
use crate::model::Model;
use crate::run_state::RunState;
use emitter::{Emitter, Shared};
use run::Run;

pub(crate) use deferred::Deferral;

/// Awaits an agent listener; a panic becomes `Err(message)`.
pub(crate) async fn guarded_listener(
    listener: &crate::agent::Listener,
    event: crate::event::AgentEvent,
    signal: CancellationToken,
) -> Result<(), String> {
    guard::guarded(|| listener(event, signal)).await
}

/// Why a run could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentLoopError {
    /// `agent_loop_continue` on an empty transcript.
    #[error("Cannot continue: no messages in context")]
    NoMessages,
    /// `agent_loop_continue` when the last message is the assistant's (there is nothing to answer).
    #[error("Cannot continue from message role: assistant")]
    ContinueFromAssistant,
}

/// Starts a run: appends `prompts` to the context's transcript and loops until the model stops
/// calling tools (or a batch terminates, a hook stops the run, or the model fails).
///
/// The run happens as the returned stream is polled; its last event is `AgentEnd` with the
/// messages the run added. `signal` aborts it: tools see it in their context, the model request
/// ends as `Aborted`, and no further call runs.
///
/// ```
/// use std::sync::Arc;
/// use futures_util::StreamExt;
/// use pi_runtime::{agent_loop, AgentContext, AgentLoopConfig, AssistantContent, AssistantMessage,
///                  Message, ScriptedModel, StopReason};
/// use pi_tool::{tool, CancellationToken, ToolRegistry};
///
/// /// Add two numbers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> String {
///     (a + b).to_string()
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = Arc::new(ScriptedModel::new([
///     AssistantMessage::new(vec![AssistantContent::tool_call("c1", "add", serde_json::json!({"a": 2, "b": 3}))], StopReason::ToolUse),
///     AssistantMessage::new(vec![AssistantContent::text("5")], StopReason::Stop),
/// ]));
/// let context = AgentContext::new("You add numbers.").with_tool(AddTool);
/// let mut events = agent_loop(vec![Message::user("2+3?")], context, AgentLoopConfig::new(), model, CancellationToken::new());
/// let mut kinds = Vec::new();
/// while let Some(event) = events.next().await {
///     kinds.push(event.kind());
/// }
/// assert_eq!(kinds.iter().filter(|k| **k == "tool_execution_end").count(), 1);
/// assert_eq!(kinds.last(), Some(&"agent_end"));
/// # });
/// ```
pub fn agent_loop(
    prompts: Vec<Message>,
    context: AgentContext,
    config: AgentLoopConfig,
    model: Arc<dyn Model>,
    signal: CancellationToken,
) -> AgentStream {
    start(prompts, context, config, model, signal)
}

/// Continues a run from the context as it is, without a new prompt (after a failed request,
/// or when the caller appended tool results or custom messages itself).
///
/// Fails when the transcript is empty or ends with an assistant message.
pub fn agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    model: Arc<dyn Model>,
    signal: CancellationToken,
) -> Result<AgentStream, AgentLoopError> {
    match context.messages.last() {
        None => Err(AgentLoopError::NoMessages),
        Some(last) if matches!(**last, Message::Assistant(_)) => {
            Err(AgentLoopError::ContinueFromAssistant)
        }
        Some(_) => Ok(start(Vec::new(), context, config, model, signal)),
    }
}

/// Resumes a paused run (see [`RunState`](crate::RunState)) once its waiting calls are
/// decided: the decided calls run first, through the loop's own pipeline (`before_tool_call`,
/// `after_tool_call`, events, timeouts, limits), as the turn that made them; then the loop asks
/// the model again, as after any batch. A denied call's result is an error with the reason; an
/// answered call's is the answer; undecided calls wait again (with
/// [`Resume::leave_undecided_waiting`]). `context` gives the tools (found again by name), the
/// registry and the shared state; the system prompt and transcript are the state's.
///
/// # Errors
///
/// A state that is refused changes nothing and comes back in [`ResumeRefused`]: a newer
/// format, no waiting call, a decision for an unknown call, undecided calls, a call to run
/// whose tool the context lacks or whose arguments no longer validate, or a claim that could
/// not record the decisions.
///
/// ```
/// use std::sync::Arc;
/// use pi_runtime::{agent_loop, agent_loop_resume, AgentContext, AgentLoopConfig, AssistantContent,
///                  AssistantMessage, Message, Resume, ScriptedModel, StopReason};
/// use pi_tool::{tool, CancellationToken};
///
/// /// Refund an order.
/// #[tool(approval)]
/// async fn refund(cents: u64) -> String { format!("refunded {cents}") }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = Arc::new(ScriptedModel::new([
///     AssistantMessage::new(vec![AssistantContent::tool_call("c1", "refund", serde_json::json!({"cents": 500}))], StopReason::ToolUse),
///     AssistantMessage::new(vec![AssistantContent::text("Refunded.")], StopReason::Stop),
/// ]));
/// let context = || AgentContext::new("You handle refunds.").with_tool(RefundTool);
/// let run = agent_loop(vec![Message::user("refund order 7")], context(), AgentLoopConfig::new(), model.clone(), CancellationToken::new());
/// let (_, paused) = run.outcome().await;
/// let mut state = paused.expect("the refund waits for approval");
/// assert_eq!(state.waiting()[0].tool, "refund");
///
/// state.approve("c1").unwrap();
/// let resumed = agent_loop_resume(Resume::new(state), context(), AgentLoopConfig::new(), model, CancellationToken::new()).unwrap();
/// let (messages, paused) = resumed.outcome().await;
/// assert!(paused.is_none());
/// assert_eq!(messages[0].as_tool_result().unwrap().content[0], pi_tool::Content::text("refunded 500"));
/// # });
/// ```
pub fn agent_loop_resume(
    resume: Resume,
    context: AgentContext,
    config: AgentLoopConfig,
    model: Arc<dyn Model>,
    signal: CancellationToken,
) -> Result<AgentStream, ResumeRefused> {
    let refuse = |error, resume| ResumeRefused {
        error,
        resume: Box::new(resume),
    };
    let resumed = match resume_start::check(&resume, &context, &config.argument_limits) {
        Ok(resumed) => resumed,
        Err(error) => return Err(refuse(error, resume)),
    };
    if let Some(claim) = &resume.claim
        && let Err(err) = claim.record_decisions(&resume.state)
    {
        let error = crate::run_state::ResumeError::Store(err.to_string());
        return Err(refuse(error, resume));
    }
    let Resume { state, claim, .. } = resume;
    let RunState {
        system_prompt,
        messages,
        activated_tools,
        ..
    } = state;
    let mut context = context;
    context.system_prompt = system_prompt;
    context.messages = messages;
    // Tools the run had activated from its registry are active again.
    for name in &activated_tools {
        if !context.tools.iter().any(|tool| &tool.spec().name == name)
            && let Some(tool) = context.available.get(name)
        {
            context.tools.push(tool);
        }
    }
    Ok(start_with(
        Vec::new(),
        context,
        config,
        model,
        signal,
        Some((resumed, claim, activated_tools)),
    ))
}

fn start(
    prompts: Vec<Message>,
    context: AgentContext,
    config: AgentLoopConfig,
    model: Arc<dyn Model>,
    signal: CancellationToken,
) -> AgentStream {
    start_with(prompts, context, config, model, signal, None)
}

type Resuming = (
    resume::Resumed,
    Option<Arc<dyn crate::store::RunClaim>>,
    Vec<String>,
);

fn start_with(
    prompts: Vec<Message>,
    context: AgentContext,
    config: AgentLoopConfig,
    model: Arc<dyn Model>,
    signal: CancellationToken,
    resuming: Option<Resuming>,
) -> AgentStream {
    let (resumed, claim, activated) = match resuming {
        Some((resumed, claim, activated)) => (Some(resumed), claim, activated),
        None => (None, None, Vec::new()),
    };
    let shared = Shared::new();
    let AgentContext {
        system_prompt,
        messages,
        tools,
        available,
        mut state,
    } = context;
    let mut options = config.stream_options.clone();
    options.signal = signal.clone();
    let (native_search, native_code) = tool_change::natives(&options, model.as_ref());
    let installed = tool_change::install(
        tools,
        &messages,
        native_search,
        native_code,
        None,
        &available,
    );
    options.tools = installed.request_tools;
    let (tools, deferral) = (installed.tools, installed.deferral);
    let mut all_state = available.state().clone();
    all_state.extend(&state);
    state = all_state;
    // Created here, so that the span current where the run starts is its parent.
    let span = spans::agent_span(model.as_ref());
    let run = Run {
        system_prompt,
        transcript: messages.into(),
        new_messages: Default::default(),
        tools,
        deferral,
        available,
        state,
        limits: config.call_limits(),
        config,
        model,
        aborted: abort_flag::AbortFlag::new(&signal),
        signal,
        options,
        emitter: Emitter::new(Arc::clone(&shared)),
        clock: clock::Clock::new(),
        span: span.clone(),
        requests: 0,
        last_turn: None,
        resumed,
        activated,
        claim,
        paused: false,
        state_checked: Default::default(),
        nested_waits: Default::default(),
    };
    AgentStream::new(Box::pin(run.run(prompts).instrument(span)), shared)
}
