//! The turn loop (pi's `runLoop` and `streamAssistantResponse`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pi_tool::{AgentTool, CallLimits, CancellationToken, StateMap, ToolRegistry};
use tracing::{Instrument, Span};

use super::context::ToolSet;
use super::deferred::Deferral;
use super::emitter::Emitter;
use super::tool_change;
use futures_util::StreamExt;

use super::batch::{BatchEnv, execute_tool_calls};
use super::clock::Clock;
use super::guard::guarded;
use super::spans;
use crate::config::{AgentLoopConfig, TurnEndContext};
use crate::event::AgentEvent;
use crate::message::{AssistantMessage, CustomMessage, Message, StopReason};
use crate::model::{AssistantEvent, Context, Model, StreamOptions};
use crate::run_state::RunState;
use crate::store::RunClaim;
use crate::transcript::Transcript;
use crate::turn_hooks::{FinishTurn, RequestContext, TurnUpdate};
use crate::wait::WaitingCall;

/// The text of the result of a call that was skipped because the run was aborted.
pub(crate) const ABORTED: &str = "Operation aborted";

/// Everything one run owns.
pub(crate) struct Run {
    pub(crate) system_prompt: String,
    pub(crate) transcript: Transcript,
    pub(crate) new_messages: Transcript,
    pub(crate) tools: Arc<ToolSet>,
    /// Which schemas requests carry when some tools are deferred (`None`: all of them).
    pub(crate) deferral: Option<Deferral>,
    pub(crate) available: ToolRegistry,
    pub(crate) state: StateMap,
    pub(crate) config: AgentLoopConfig,
    /// The bounds of every call, taken from `config` once per run.
    pub(crate) limits: CallLimits,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) signal: CancellationToken,
    /// The same signal, asked without a lock (before every call of a batch).
    pub(crate) aborted: super::abort_flag::AbortFlag,
    pub(crate) options: StreamOptions,
    pub(crate) emitter: Emitter,
    pub(crate) clock: Clock,
    /// The run's `invoke_agent` span (the run's future is instrumented with it).
    pub(crate) span: Span,
    /// How many model requests the run made so far.
    pub(crate) requests: usize,
    /// The turn that just ended, for `prepare_next_turn` (kept only when that hook is set).
    pub(crate) last_turn: Option<TurnEndContext>,
    /// On resume: the decisions on the calls that waited (taken after the first batch).
    pub(crate) resumed: Option<super::resume::Resumed>,
    /// Tools activated from the registry during the run (for a paused state).
    pub(crate) activated: Vec<String>,
    /// On a resume with a store's claim: where the run records itself as it goes.
    pub(crate) claim: Option<Arc<dyn RunClaim>>,
    /// The run paused (its state was handed over).
    pub(crate) paused: bool,
    /// The waiting calls of the last batch that wait on a call they made from code.
    pub(crate) nested_waits: std::collections::BTreeMap<String, crate::wait::NestedWait>,
    /// How many of `tools` (from the first) had their `State<T>` types checked: tools are only
    /// appended within a set, so a request checks just the ones added since (none, most turns),
    /// not the whole catalog again.
    /// (Atomic: a request reads the run through `&self`.)
    pub(crate) state_checked: AtomicUsize,
}

impl Run {
    /// `runAgentLoop` (with prompts) or `runAgentLoopContinue` (without).
    pub(crate) async fn run(mut self, prompts: Vec<Message>) {
        self.emitter.emit(AgentEvent::AgentStart).await;
        self.emitter.emit(AgentEvent::TurnStart).await;
        for prompt in prompts {
            self.add_message(Arc::new(prompt)).await;
        }
        // After a crash a store may hold the decided calls' results already: then the run
        // goes on from its transcript.
        let resuming = self
            .resumed
            .as_ref()
            .is_some_and(|resumed| !resumed.waiting.is_empty());
        if !resuming {
            self.resumed = None;
        }
        if !resuming || self.resume_batch().await {
            self.run_turns(!resuming).await;
        }
        if !self.paused
            && let Some(claim) = &self.claim
            && let Err(err) = claim.ended(&self.transcript)
        {
            tracing::error!("recording the end of the run in its store failed: {err}");
        }
        spans::record_run(&self.span, &self.new_messages);
        let messages = self.new_messages.take();
        self.emitter.emit(AgentEvent::AgentEnd { messages }).await;
    }

    /// Emits a message's start and end and appends it to the transcript.
    async fn add_message(&mut self, message: Arc<Message>) {
        self.emitter
            .emit(AgentEvent::MessageStart {
                message: Arc::clone(&message),
            })
            .await;
        self.emitter
            .emit(AgentEvent::MessageEnd {
                message: Arc::clone(&message),
            })
            .await;
        self.observe(&message);
        self.transcript.push(Arc::clone(&message));
        self.new_messages.push(message);
    }

    /// Loads the deferred tools a message added to the transcript loads.
    fn observe(&mut self, message: &Message) {
        if let Some(deferral) = &mut self.deferral {
            deferral.observe(message, &self.tools);
        }
    }

    async fn poll_source(source: Option<&crate::config::MessageSource>) -> Vec<Message> {
        match source {
            Some(source) => guarded(|| source()).await.unwrap_or_else(|panic| {
                tracing::error!("a steering or follow-up source panicked: {panic}");
                Vec::new()
            }),
            None => Vec::new(),
        }
    }

    /// The turns; `first_turn`: the run's `TurnStart` was emitted already (not on resume,
    /// whose first turn was the decided calls').
    async fn run_turns(&mut self, first_turn: bool) {
        let mut pending = Self::poll_source(self.config.get_steering_messages.as_ref()).await;
        let mut first_turn = first_turn;
        loop {
            let mut has_more_tool_calls = true;
            while has_more_tool_calls || !pending.is_empty() {
                if first_turn {
                    first_turn = false;
                } else {
                    self.emitter.emit(AgentEvent::TurnStart).await;
                }
                let mut failed = self.prepare_next_turn().await.err();
                for message in std::mem::take(&mut pending) {
                    self.add_message(Arc::new(message)).await;
                }
                if failed.is_none() {
                    failed = self.prepare_request().await.err();
                }

                let assistant = self.stream_assistant(failed).await;
                self.new_messages.push(Arc::clone(&assistant));
                let stop_reason = assistant
                    .as_assistant()
                    .map_or(StopReason::Error, |m| m.stop_reason);
                if matches!(stop_reason, StopReason::Error | StopReason::Aborted) {
                    self.emitter
                        .emit(AgentEvent::TurnEnd {
                            message: assistant,
                            tool_results: Vec::new(),
                        })
                        .await;
                    return;
                }

                has_more_tool_calls = false;
                let mut tool_results = Vec::new();
                let has_calls = assistant
                    .as_assistant()
                    .is_some_and(|m| m.tool_calls().next().is_some());
                if has_calls {
                    let (results, more, waiting) = self.run_batch(&assistant).await;
                    has_more_tool_calls = more;
                    tool_results = results;
                    if !waiting.is_empty() {
                        self.pause(assistant, tool_results, waiting).await;
                        return;
                    }
                }

                // Built once, for the hooks that look at the turn (none: no transcript copy).
                let config = &self.config;
                let turn = (config.finish_turn.is_some()
                    || config.should_stop_after_turn.is_some()
                    || config.prepare_next_turn.is_some())
                .then(|| TurnEndContext {
                    message: Arc::clone(&assistant),
                    tool_results: tool_results.clone(),
                    messages: self.transcript.clone(),
                    new_messages: self.new_messages.clone(),
                });
                let mut end = false;
                if let (Some(hook), Some(turn)) = (&self.config.finish_turn, &turn) {
                    match guarded(|| hook(turn.clone())).await {
                        Ok(Some(FinishTurn::End)) => end = true,
                        Ok(Some(FinishTurn::Continue)) => has_more_tool_calls = true,
                        Ok(None) => {}
                        Err(panic) => {
                            tracing::error!("finish_turn panicked: {panic}; stopping the run");
                            end = true;
                        }
                    }
                }

                self.emitter
                    .emit(AgentEvent::TurnEnd {
                        message: Arc::clone(&assistant),
                        tool_results,
                    })
                    .await;
                self.save_turn();
                if end {
                    return;
                }

                if let (Some(hook), Some(turn)) = (&self.config.should_stop_after_turn, &turn) {
                    match guarded(|| hook(turn.clone())).await {
                        Ok(true) => return,
                        Ok(false) => {}
                        Err(panic) => {
                            tracing::error!(
                                "should_stop_after_turn panicked: {panic}; stopping the run"
                            );
                            return;
                        }
                    }
                }
                if self.config.prepare_next_turn.is_some() {
                    self.last_turn = turn;
                }
                pending = Self::poll_source(self.config.get_steering_messages.as_ref()).await;
            }
            let follow_ups = Self::poll_source(self.config.get_follow_up_messages.as_ref()).await;
            if follow_ups.is_empty() {
                break;
            }
            pending = follow_ups;
        }
    }

    /// Runs the calls of `assistant` (on resume: the decided ones) and appends their results;
    /// returns them, whether the loop goes on, and the calls that wait.
    async fn run_batch(
        &mut self,
        assistant: &Arc<Message>,
    ) -> (Vec<Arc<Message>>, bool, Vec<WaitingCall>) {
        let mut outcome = {
            let env = BatchEnv {
                tools: &self.tools,
                config: &self.config,
                limits: &self.limits,
                signal: &self.signal,
                aborted: &self.aborted,
                state: &self.state,
                emitter: &self.emitter,
                transcript: &self.transcript,
                clock: &self.clock,
                resumed: self.resumed.as_ref(),
            };
            execute_tool_calls(&env, assistant).await
        };
        self.nested_waits = std::mem::take(&mut outcome.nested);
        self.activate_tools(&outcome.added_tool_names);
        for result in &outcome.results {
            self.observe(result);
        }
        self.transcript.reserve(outcome.results.len() + 1);
        self.transcript.extend(outcome.results.iter().cloned());
        self.new_messages.extend(outcome.results.iter().cloned());
        (outcome.results, !outcome.terminate, outcome.waiting)
    }

    /// Ends the turn of `assistant` with calls that wait: emits `TurnEnd` and `RunPaused`, and
    /// leaves the state to resume from for [`AgentStream::take_paused`](crate::AgentStream::take_paused).
    async fn pause(
        &mut self,
        assistant: Arc<Message>,
        tool_results: Vec<Arc<Message>>,
        waiting: Vec<WaitingCall>,
    ) {
        self.emitter
            .emit(AgentEvent::TurnEnd {
                message: assistant,
                tool_results,
            })
            .await;
        let mut state = RunState {
            format: crate::run_state::format_for(&self.nested_waits),
            // The run ends here: the state takes the transcript (no copy).
            system_prompt: std::mem::take(&mut self.system_prompt),
            messages: self.transcript.take(),
            waiting: waiting.clone(),
            nested: std::mem::take(&mut self.nested_waits),
            activated_tools: self.activated.clone(),
            requests: self.requests as u64,
            decisions: Default::default(),
            started: Default::default(),
            finished: Default::default(),
            revision: 0,
        };
        if let Some(claim) = &self.claim {
            match claim.paused(&state) {
                Ok(revision) => state.revision = revision,
                Err(err) => tracing::error!("recording the paused run in its store failed: {err}"),
            }
        }
        self.paused = true;
        self.emitter.shared().set_paused_state(state);
        self.emitter.emit(AgentEvent::RunPaused { waiting }).await;
    }

    /// A resumed run's first step: the calls that waited, decided, run through the pipeline
    /// (hooks, events, limits) as the turn that made them; `false` when the run ends there
    /// (it paused again, or a result asked to stop).
    async fn resume_batch(&mut self) -> bool {
        let Some(assistant) = self
            .transcript
            .iter()
            .rev()
            .find(|message| message.as_assistant().is_some())
            .cloned()
        else {
            return true;
        };
        let (tool_results, more, waiting) = self.run_batch(&assistant).await;
        // Later batches are the model's new calls: nothing is decided for them.
        self.resumed = None;
        if !waiting.is_empty() {
            self.pause(assistant, tool_results, waiting).await;
            return false;
        }
        self.emitter
            .emit(AgentEvent::TurnEnd {
                message: assistant,
                tool_results,
            })
            .await;
        self.save_turn();
        more
    }

    /// With a store's claim: appends the turn's messages (the store holds the rest).
    fn save_turn(&self) {
        if let Some(claim) = &self.claim
            && let Err(err) = claim.append(&self.transcript)
        {
            tracing::error!("recording a turn of the run in its store failed: {err}");
        }
    }

    /// Brings tools named by results' `added_tool_names` in from the registry of available tools.
    fn activate_tools(&mut self, names: &[String]) {
        for name in names {
            if self.tools.get(name).is_some() {
                // Already in the set (a deferred tool a search loaded, say).
                continue;
            }
            match self.available.get(name) {
                Some(tool) => {
                    if self.deferral.is_none() && !super::deferred::offered(tool.as_ref()) {
                        // The first tool the model is not offered: requests need a view now.
                        let (native, code) = self.natives();
                        self.deferral =
                            Some(Deferral::new(&self.tools, &self.transcript, native, code));
                    }
                    if let Some(deferral) = &mut self.deferral {
                        deferral.activated(tool.as_ref());
                    }
                    Arc::make_mut(&mut self.tools).activate(tool);
                    self.activated.push(name.clone());
                }
                None => tracing::warn!(
                    "a tool result added the tool `{name}`, but no available tool has that name"
                ),
            }
        }
    }

    /// A failed response stamped with this run's model.
    fn failed(&self, reason: StopReason, text: impl Into<String>) -> AssistantMessage {
        let mut message = AssistantMessage::failed(reason, text);
        message.api = self.model.api().to_owned();
        message.provider = self.model.provider().to_owned();
        message.model = self.model.id().to_owned();
        message
    }

    /// The transcript as the model should see it, when a hook rewrites it.
    async fn llm_messages(&self) -> Result<Option<Vec<Arc<Message>>>, String> {
        let transform = self.config.transform_context.as_ref();
        let convert = self.config.convert_to_llm.as_ref();
        if transform.is_none() && convert.is_none() {
            return Ok(None);
        }
        let mut messages = self.transcript.to_vec();
        if let Some(transform) = transform {
            let signal = self.signal.clone();
            messages = guarded(|| transform(messages, signal))
                .await
                .map_err(|panic| format!("transform_context panicked: {panic}"))?;
        }
        if let Some(convert) = convert {
            let signal = self.signal.clone();
            messages = guarded(|| convert(messages, signal))
                .await
                .map_err(|panic| format!("convert_to_llm panicked: {panic}"))?;
        }
        Ok(Some(messages))
    }

    /// Runs `prepare_next_turn` with the turn that ended (when there is one and the hook is
    /// set) and applies its update. A panic fails the coming request with its text.
    async fn prepare_next_turn(&mut self) -> Result<(), AssistantMessage> {
        let (Some(hook), Some(turn)) = (&self.config.prepare_next_turn, self.last_turn.take())
        else {
            return Ok(());
        };
        let update = guarded(|| hook(turn)).await;
        self.take_update("prepare_next_turn", update).await
    }

    /// Runs `prepare_request` (when set) and applies its update. A panic fails the request
    /// with its text.
    async fn prepare_request(&mut self) -> Result<(), AssistantMessage> {
        let Some(hook) = &self.config.prepare_request else {
            return Ok(());
        };
        let ctx = RequestContext {
            messages: self.transcript.clone(),
            new_messages: self.new_messages.clone(),
            model: Arc::clone(&self.model),
            request_index: self.requests,
        };
        let update = guarded(|| hook(ctx)).await;
        self.take_update("prepare_request", update).await
    }

    /// Applies what the hook `name` returned; its panic becomes the failed message the coming
    /// request is answered with.
    async fn take_update(
        &mut self,
        name: &str,
        update: Result<Option<TurnUpdate>, String>,
    ) -> Result<(), AssistantMessage> {
        let update = update
            .map_err(|panic| self.failed(StopReason::Error, format!("{name} panicked: {panic}")))?;
        if let Some(update) = update {
            self.apply(update).await;
        }
        Ok(())
    }

    /// Whether requests use the API's own tool search and its code runner.
    fn natives(&self) -> (bool, bool) {
        tool_change::natives(&self.options, self.model.as_ref())
    }

    /// Applies a hook's update for the rest of the run; a change of the tools the model is
    /// offered is announced with a `tools_changed` record before the next request.
    async fn apply(&mut self, update: TurnUpdate) {
        let TurnUpdate {
            system_prompt,
            tools,
            model,
            stream_options,
        } = update;
        let was_native = self.natives();
        if let Some(prompt) = system_prompt {
            self.system_prompt = prompt;
        }
        if let Some(model) = model {
            self.model = model;
        }
        if let Some(mut options) = stream_options {
            options.signal = self.signal.clone();
            options.tools = std::mem::take(&mut self.options.tools);
            self.options = options;
        }
        let tools = match tools {
            Some(tools) => Some(tool_change::keep_order(tools, &self.tools)),
            // The API's own search or code runner came or went with the model or the options:
            // the same tools, with or without the local `tool_search` and the code-only tools.
            None if self.natives() != was_native => Some(self.tools.tools().to_vec()),
            None => None,
        };
        if let Some(tools) = tools {
            self.install(tools).await;
        }
    }

    /// Replaces the run's tools and announces what the model gained and lost.
    async fn install(&mut self, tools: Vec<Arc<dyn AgentTool>>) {
        let before = tool_change::offered_names(self.offered_specs());
        let (native, code) = self.natives();
        let installed = tool_change::install(
            tools,
            &self.transcript,
            native,
            code,
            Some(&self.options.tools),
            &self.available,
        );
        self.tools = installed.tools;
        *self.state_checked.get_mut() = 0;
        self.deferral = installed.deferral;
        if let Some(deferral) = &mut self.deferral {
            deferral.keep_order(&before);
        }
        self.options.tools = installed.request_tools;
        let after = tool_change::offered_names(self.offered_specs());
        if let Some((added, removed)) = tool_change::difference(&before, &after) {
            let record = Message::Custom(CustomMessage::tools_changed(added, removed));
            self.add_message(Arc::new(record)).await;
        }
    }

    /// The specs the next request carries.
    fn offered_specs(&self) -> &[pi_tool::ToolSpec] {
        match &self.deferral {
            Some(deferral) => deferral.specs(),
            None => self.tools.specs(),
        }
    }

    /// One model request (or the failure a hook ended it with before it was made): streams the
    /// response, emitting its message events, and appends it.
    async fn stream_assistant(&mut self, failed: Option<AssistantMessage>) -> Arc<Message> {
        let mut started = false;
        let span = spans::chat_span(self.model.as_ref());
        let message = match failed {
            Some(failed) => failed,
            None => {
                self.requests += 1;
                self.request(&mut started)
                    .instrument(span.clone())
                    .await
                    .unwrap_or_else(|failed| failed)
            }
        };
        spans::record_response(&span, &message);
        let message = Arc::new(Message::Assistant(message));
        if !started {
            self.emitter
                .emit(AgentEvent::MessageStart {
                    message: Arc::clone(&message),
                })
                .await;
        }
        self.emitter
            .emit(AgentEvent::MessageEnd {
                message: Arc::clone(&message),
            })
            .await;
        self.observe(&message);
        self.transcript.push(Arc::clone(&message));
        message
    }

    /// Asks the model and returns the final message; `started` tells whether a `MessageStart`
    /// was emitted for its streamed start. Failures of the hooks or the model come back as
    /// failed messages (`Err`).
    async fn request(&self, started: &mut bool) -> Result<AssistantMessage, AssistantMessage> {
        let llm_messages = self
            .llm_messages()
            .await
            .map_err(|text| self.failed(StopReason::Error, text))?
            .map(Transcript::from);
        let keyed_options;
        let options = match &self.config.get_api_key {
            Some(resolve) => {
                let provider = self.model.provider().to_owned();
                let key = guarded(|| resolve(provider)).await.map_err(|panic| {
                    self.failed(StopReason::Error, format!("get_api_key panicked: {panic}"))
                })?;
                let mut options = self.options.clone();
                if key.is_some() {
                    options.api_key = key;
                }
                keyed_options = options;
                &keyed_options
            }
            None => &self.options,
        };
        if self.signal.is_cancelled() {
            return Err(self.failed(StopReason::Aborted, ABORTED));
        }
        // A tool taking `State<T>` with no `T` given would fail at its first call, with a
        // message only the model reads: the run stops before it asks the model.
        let checked = self.state_checked.load(Ordering::Relaxed);
        let unchecked = self.tools.tools().get(checked..).unwrap_or_default();
        if let Some(missing) = pi_tool::missing_state(unchecked, &self.state)
            .into_iter()
            .next()
        {
            return Err(self.failed(StopReason::Error, missing.into_error().to_string()));
        }
        self.state_checked
            .store(self.tools.tools().len(), Ordering::Relaxed);
        let messages = llm_messages.as_ref().unwrap_or(&self.transcript);
        let context = Context {
            system_prompt: &self.system_prompt,
            messages,
            tools: self.offered_specs(),
        };
        // One panic guard around the whole response (not one per streamed event).
        let streamed = guarded(|| self.stream_response(context, messages, options, started)).await;
        match streamed {
            Ok(outcome) => outcome,
            Err(panic) => {
                Err(self.failed(StopReason::Error, format!("the model panicked: {panic}")))
            }
        }
    }

    /// Streams one response, emitting its start and updates; returns the final message.
    /// `messages` is the transcript `context` lends the model, lent also as a snapshot to the
    /// crate's test models, which keep the request.
    async fn stream_response(
        &self,
        context: Context<'_>,
        messages: &Transcript,
        options: &StreamOptions,
        started: &mut bool,
    ) -> Result<AssistantMessage, AssistantMessage> {
        let mut stream = crate::transcript::lend(messages, || self.model.stream(context, options));
        loop {
            match stream.next().await {
                None => {
                    return Err(self.failed(
                        StopReason::Error,
                        "the model's stream ended without a final message",
                    ));
                }
                Some(AssistantEvent::Start { partial }) => {
                    *started = true;
                    let message = Arc::new(Message::Assistant(partial));
                    self.emitter
                        .emit(AgentEvent::MessageStart { message })
                        .await;
                }
                Some(AssistantEvent::Done { message, .. }) => return Ok(message),
                Some(AssistantEvent::Error { error, .. }) => return Ok(error),
                Some(event) => {
                    // Deltas before `Start` are ignored, like pi.
                    if *started {
                        self.emitter
                            .emit(AgentEvent::MessageUpdate {
                                event: Box::new(event),
                            })
                            .await;
                    }
                }
            }
        }
    }
}
