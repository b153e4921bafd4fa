//! The hooks around a turn (pi 1.x's `prepareNextTurn`, `prepareRequest` and `finishTurn`):
//! what they see, and what they may change for the rest of a run.

use std::fmt;
use std::sync::Arc;

use pi_tool::{AgentTool, BoxFuture};

use crate::config::TurnEndContext;
use crate::model::{Model, StreamOptions};
use crate::transcript::Transcript;

/// What [`prepare_next_turn`](crate::AgentLoopConfig::prepare_next_turn) and
/// [`prepare_request`](crate::AgentLoopConfig::prepare_request) change. Each `Some` replaces
/// that part of the run from the next request on (and for the rest of the run); `None` keeps it.
///
/// A change of the tools the model is offered is announced to it: the loop appends a
/// [`tools_changed`](crate::CustomMessage::tools_changed) message to the transcript before the
/// next request, which every provider renders as a short note naming what was added and
/// removed. Tools kept from before keep their place in the request's tool list and new ones
/// come after them, so the unchanged prefix of the request stays in the provider's prompt
/// cache.
///
/// ```
/// use pi_runtime::TurnUpdate;
///
/// let update = TurnUpdate::new().system_prompt("Answer in French.");
/// assert!(update.tools.is_none());
/// ```
#[derive(Clone, Default)]
pub struct TurnUpdate {
    /// A new system prompt.
    pub system_prompt: Option<String>,
    /// The tools offered from now on, replacing the run's (a result's `added_tool_names` still
    /// looks tools up in the context's registry of available tools).
    pub tools: Option<Vec<Arc<dyn AgentTool>>>,
    /// Another model.
    pub model: Option<Arc<dyn Model>>,
    /// Other request options (thinking, temperature, ...). The run's abort signal replaces the
    /// options' `signal`.
    pub stream_options: Option<StreamOptions>,
}

impl TurnUpdate {
    /// An update that changes nothing.
    pub fn new() -> Self {
        TurnUpdate::default()
    }

    /// Replaces the system prompt.
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Replaces the offered tools.
    #[must_use]
    pub fn tools(mut self, tools: Vec<Arc<dyn AgentTool>>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Replaces the model.
    #[must_use]
    pub fn model(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// Replaces the request options.
    #[must_use]
    pub fn stream_options(mut self, options: StreamOptions) -> Self {
        self.stream_options = Some(options);
        self
    }

    /// Whether the update changes nothing.
    pub fn is_empty(&self) -> bool {
        self.system_prompt.is_none()
            && self.tools.is_none()
            && self.model.is_none()
            && self.stream_options.is_none()
    }

    /// `later` on top of `self`: each part `later` sets wins.
    #[must_use]
    pub fn then(self, later: TurnUpdate) -> TurnUpdate {
        TurnUpdate {
            system_prompt: later.system_prompt.or(self.system_prompt),
            tools: later.tools.or(self.tools),
            model: later.model.or(self.model),
            stream_options: later.stream_options.or(self.stream_options),
        }
    }
}

impl fmt::Debug for TurnUpdate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnUpdate")
            .field("system_prompt", &self.system_prompt)
            .field(
                "tools",
                &self.tools.as_ref().map(|tools| {
                    tools
                        .iter()
                        .map(|t| t.spec().name.clone())
                        .collect::<Vec<_>>()
                }),
            )
            .field("model", &self.model.as_ref().map(|m| m.id().to_owned()))
            .field("stream_options", &self.stream_options.is_some())
            .finish()
    }
}

/// What [`prepare_request`](crate::AgentLoopConfig::prepare_request) sees: the state right
/// before a model request, with this turn's steering or follow-up messages already in the
/// transcript.
#[derive(Clone)]
pub struct RequestContext {
    /// The whole transcript.
    pub messages: Transcript,
    /// The messages this run added so far.
    pub new_messages: Transcript,
    /// The model the request would go to.
    pub model: Arc<dyn Model>,
    /// Which request of the run this is (0 for the first).
    pub request_index: usize,
}

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext")
            .field("messages", &self.messages.len())
            .field("new_messages", &self.new_messages.len())
            .field("model", &self.model.id())
            .field("request_index", &self.request_index)
            .finish()
    }
}

/// What [`finish_turn`](crate::AgentLoopConfig::finish_turn) decides about a finished turn
/// (pi's `{action: "end" | "continue"}`); the hook returns `None` to leave it to the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FinishTurn {
    /// End the run after this turn (`turn_end` is still sent; steering and follow-up messages
    /// are not polled).
    End,
    /// Make one more request, even when the model called no tool or a batch asked to stop.
    Continue,
}

/// `prepare_next_turn`: runs between two turns of a run, with the turn that just ended.
pub type PrepareNextTurnHook =
    Arc<dyn Fn(TurnEndContext) -> BoxFuture<'static, Option<TurnUpdate>> + Send + Sync>;
/// `prepare_request`: runs right before every model request.
pub type PrepareRequestHook =
    Arc<dyn Fn(RequestContext) -> BoxFuture<'static, Option<TurnUpdate>> + Send + Sync>;
/// `finish_turn`: runs when a turn's tools are done, before `turn_end`.
pub type FinishTurnHook =
    Arc<dyn Fn(TurnEndContext) -> BoxFuture<'static, Option<FinishTurn>> + Send + Sync>;
