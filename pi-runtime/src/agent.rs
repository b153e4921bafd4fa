//! [`Agent`]: the stateful wrapper around the loop (pi's `Agent` class): a transcript that
//! persists across prompts, steering and follow-up queues, abort, and awaited listeners.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::StreamExt;
use pi_tool::{AgentTool, BoxFuture, CancellationToken, StateMap, ToolRegistry};
use tokio::sync::watch;

use crate::agent_loop::{
    AgentContext, AgentLoopError, AgentStream, Resume, ResumeRefused, agent_loop,
    agent_loop_continue, agent_loop_resume,
};
use crate::config::AgentLoopConfig;
use crate::event::AgentEvent;
use crate::message::{AssistantMessage, Message, UserMessage};
use crate::model::Model;
use crate::run_state::RunState;

/// Misuse of an [`Agent`], with pi's texts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// `prompt` while a run is active.
    #[error(
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    )]
    AlreadyProcessingPrompt,
    /// `continue_run` while a run is active.
    #[error("Agent is already processing. Wait for completion before continuing.")]
    AlreadyProcessing,
    /// `continue_run` with an empty transcript.
    #[error("No messages to continue from")]
    NoMessages,
    /// `continue_run` after an assistant message with nothing queued.
    #[error("Cannot continue from message role: assistant")]
    ContinueFromAssistant,
}

/// How a steering or follow-up queue is drained each time the loop polls it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum QueueMode {
    /// One message per poll (pi's default): each queued message gets its own turn.
    #[default]
    OneAtATime,
    /// Every queued message at once.
    All,
}

/// What to prompt an [`Agent`] with: text, a message, or several messages.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt(pub Vec<Message>);

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        Prompt(vec![Message::user(text)])
    }
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Prompt(vec![Message::user(text)])
    }
}

impl From<Message> for Prompt {
    fn from(message: Message) -> Self {
        Prompt(vec![message])
    }
}

impl From<UserMessage> for Prompt {
    fn from(message: UserMessage) -> Self {
        Prompt(vec![Message::User(message)])
    }
}

impl From<Vec<Message>> for Prompt {
    fn from(messages: Vec<Message>) -> Self {
        Prompt(messages)
    }
}

/// A subscriber to an agent's events (see [`Agent::subscribe`]).
pub type Listener =
    Arc<dyn Fn(AgentEvent, CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;

/// Identifies a listener, to [`unsubscribe`](Agent::unsubscribe) it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ListenerId(u64);

struct State {
    system_prompt: String,
    model: Arc<dyn Model>,
    tools: Vec<Arc<dyn AgentTool>>,
    available: ToolRegistry,
    shared_state: StateMap,
    config: AgentLoopConfig,
    messages: Vec<Arc<Message>>,
    is_running: bool,
    streaming_message: Option<Arc<Message>>,
    partial: Option<AssistantMessage>,
    pending_tool_calls: HashSet<String>,
    error: Option<String>,
    abort: Option<CancellationToken>,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
    /// Counts the edits of the parts a running run picks up before its next turn.
    edits: Edits,
    /// The state of the last run, when it paused on calls that wait (until taken).
    paused: Option<RunState>,
}

/// How often each part a run can swap between turns was set; a run compares these with the
/// counts it last saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Edits {
    system_prompt: u64,
    model: u64,
    tools: u64,
}

struct Inner {
    state: Mutex<State>,
    listeners: Mutex<Arc<Vec<(ListenerId, Listener)>>>,
    next_listener: AtomicU64,
    steering: Mutex<VecDeque<Message>>,
    follow_ups: Mutex<VecDeque<Message>>,
    skip_next_steering_poll: AtomicBool,
    running: watch::Sender<bool>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Inner {
    fn dequeue(queue: &Mutex<VecDeque<Message>>, mode: QueueMode) -> Vec<Message> {
        let mut queue = lock(queue);
        match mode {
            QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
            QueueMode::All => queue.drain(..).collect(),
        }
    }

    fn dequeue_steering(&self) -> Vec<Message> {
        let mode = lock(&self.state).steering_mode;
        Inner::dequeue(&self.steering, mode)
    }

    fn dequeue_follow_ups(&self) -> Vec<Message> {
        let mode = lock(&self.state).follow_up_mode;
        Inner::dequeue(&self.follow_ups, mode)
    }

    /// Applies an event to the state (pi's reducer). Each event costs O(1) (plus the size of a
    /// streamed delta): the transcript only grows by the message at `MessageEnd`.
    fn reduce(&self, event: &AgentEvent) {
        let mut state = lock(&self.state);
        match event {
            AgentEvent::MessageStart { message } if message.as_assistant().is_some() => {
                state.streaming_message = Some(Arc::clone(message));
                state.partial = None;
            }
            AgentEvent::MessageUpdate { event } => {
                if state.partial.is_none() {
                    let start = state
                        .streaming_message
                        .as_ref()
                        .and_then(|m| m.as_assistant())
                        .cloned();
                    state.partial = start;
                }
                if let Some(partial) = state.partial.as_mut() {
                    partial.apply(event);
                }
            }
            AgentEvent::MessageEnd { message } => {
                if message.as_assistant().is_some() {
                    state.streaming_message = None;
                    state.partial = None;
                }
                state.messages.push(Arc::clone(message));
            }
            AgentEvent::ToolExecutionStart { call } => {
                state.pending_tool_calls.insert(call.id().to_owned());
            }
            AgentEvent::ToolExecutionEnd { call, .. } => {
                state.pending_tool_calls.remove(call.id());
            }
            AgentEvent::TurnEnd { message, .. } => {
                if let Some(error) = message.as_assistant().and_then(|m| m.error_message.clone()) {
                    state.error = Some(error);
                }
            }
            AgentEvent::AgentEnd { .. } => {
                state.streaming_message = None;
                state.partial = None;
            }
            _ => {}
        }
    }
}

/// A stateful agent: a model, tools and a transcript that persists across prompts.
///
/// Cloning is cheap and every clone is the same agent, so one task can `prompt` while another
/// steers, follows up or aborts. Listeners are awaited in subscription order for every event,
/// and the run waits for them (awaiting the assistant's `MessageEnd` is a barrier before its
/// tool calls are prepared).
///
/// ```
/// use std::sync::Arc;
/// use pi_runtime::{Agent, AssistantContent, AssistantMessage, ScriptedModel, StopReason};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = Arc::new(ScriptedModel::new([AssistantMessage::new(vec![AssistantContent::text("hi!")], StopReason::Stop)]));
/// let agent = Agent::new(model).with_system_prompt("Be brief.");
/// agent.subscribe(|event, _signal| async move { println!("{}", event.kind()) });
/// agent.prompt("hello").await.unwrap();
/// assert_eq!(agent.messages().len(), 2);
/// # });
/// ```
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

impl Agent {
    /// An agent for `model`, with no system prompt, no tools and an empty transcript.
    pub fn new(model: Arc<dyn Model>) -> Self {
        Agent {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    system_prompt: String::new(),
                    model,
                    tools: Vec::new(),
                    available: ToolRegistry::new(),
                    shared_state: StateMap::new(),
                    config: AgentLoopConfig::new(),
                    messages: Vec::new(),
                    is_running: false,
                    streaming_message: None,
                    partial: None,
                    pending_tool_calls: HashSet::new(),
                    error: None,
                    abort: None,
                    steering_mode: QueueMode::OneAtATime,
                    follow_up_mode: QueueMode::OneAtATime,
                    edits: Edits::default(),
                    paused: None,
                }),
                listeners: Mutex::new(Arc::new(Vec::new())),
                next_listener: AtomicU64::new(0),
                steering: Mutex::new(VecDeque::new()),
                follow_ups: Mutex::new(VecDeque::new()),
                skip_next_steering_poll: AtomicBool::new(false),
                running: watch::Sender::new(false),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.inner.state)
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn with_system_prompt(self, prompt: impl Into<String>) -> Self {
        self.set_system_prompt(prompt);
        self
    }

    /// Offers every tool of `registry` and keeps it for `added_tool_names` and its state.
    #[must_use]
    pub fn with_tools(self, registry: ToolRegistry) -> Self {
        self.set_tools(registry);
        self
    }

    /// Sets the loop configuration (hooks, execution mode, request options). The agent
    /// supplies its own steering and follow-up sources, replacing the config's.
    #[must_use]
    pub fn with_config(self, config: AgentLoopConfig) -> Self {
        self.set_config(config);
        self
    }

    /// Sets how the steering queue is drained.
    #[must_use]
    pub fn with_steering_mode(self, mode: QueueMode) -> Self {
        self.state().steering_mode = mode;
        self
    }

    /// Sets how the follow-up queue is drained.
    #[must_use]
    pub fn with_follow_up_mode(self, mode: QueueMode) -> Self {
        self.state().follow_up_mode = mode;
        self
    }

    /// Sets the system prompt. A running run uses it from its next turn on.
    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        let mut state = self.state();
        state.system_prompt = prompt.into();
        state.edits.system_prompt += 1;
    }

    /// Replaces the model. A running run uses it from its next turn on.
    pub fn set_model(&self, model: Arc<dyn Model>) {
        let mut state = self.state();
        state.model = model;
        state.edits.model += 1;
    }

    /// Replaces the tools with every tool of `registry`. A running run offers them from its
    /// next turn on, and tells the model what was added and removed (see
    /// [`TurnUpdate`](crate::TurnUpdate)).
    pub fn set_tools(&self, registry: ToolRegistry) {
        let mut tools = registry.tools().cloned().collect();
        // With deferred tools, `tool_search` and its index are built once here, not per prompt.
        crate::agent_loop::Deferral::add_search(&mut tools);
        let mut state = self.state();
        state.tools = tools;
        state.available = registry;
        state.edits.tools += 1;
    }

    /// Replaces the tools with a list (in order; the first of two with one name is used). A
    /// running run offers them from its next turn on, as with [`set_tools`](Self::set_tools).
    pub fn set_tool_list(&self, mut tools: Vec<Arc<dyn AgentTool>>) {
        crate::agent_loop::Deferral::add_search(&mut tools);
        let mut state = self.state();
        state.tools = tools;
        state.edits.tools += 1;
    }

    /// Adds shared state for `State<T>` parameters.
    pub fn insert_state<T: Send + Sync + 'static>(&self, value: T) {
        self.state().shared_state.insert(value);
    }

    /// Replaces the loop configuration.
    pub fn set_config(&self, config: AgentLoopConfig) {
        self.state().config = config;
    }

    /// Sets how the steering queue is drained.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.state().steering_mode = mode;
    }

    /// Sets how the follow-up queue is drained.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.state().follow_up_mode = mode;
    }

    /// Replaces the transcript.
    pub fn replace_messages(&self, messages: Vec<Arc<Message>>) {
        self.state().messages = messages;
    }

    /// Appends a message to the transcript.
    pub fn append_message(&self, message: Message) {
        self.state().messages.push(Arc::new(message));
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> String {
        self.state().system_prompt.clone()
    }

    /// The transcript (shared messages: the copy costs one pointer per message).
    pub fn messages(&self) -> Vec<Arc<Message>> {
        self.state().messages.clone()
    }

    /// How many messages the transcript holds.
    pub fn message_count(&self) -> usize {
        self.state().messages.len()
    }

    /// The last message of the transcript.
    pub fn last_message(&self) -> Option<Arc<Message>> {
        self.state().messages.last().cloned()
    }

    /// Whether a run is active.
    pub fn is_running(&self) -> bool {
        self.state().is_running
    }

    /// The assistant message being streamed, as far as it got.
    pub fn streaming_message(&self) -> Option<AssistantMessage> {
        let state = self.state();
        state.partial.clone().or_else(|| {
            state
                .streaming_message
                .as_ref()
                .and_then(|m| m.as_assistant())
                .cloned()
        })
    }

    /// The ids of the tool calls that started and have not ended.
    pub fn pending_tool_calls(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.state().pending_tool_calls.iter().cloned().collect();
        ids.sort();
        ids
    }

    /// The error message of the last failed model response, if any.
    pub fn error(&self) -> Option<String> {
        self.state().error.clone()
    }

    /// Subscribes to every event; listeners are awaited in subscription order, and the run
    /// waits for them. They get the run's abort signal.
    pub fn subscribe<F, Fut>(&self, listener: F) -> ListenerId
    where
        F: Fn(AgentEvent, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let id = ListenerId(self.inner.next_listener.fetch_add(1, Ordering::Relaxed));
        let listener: Listener = Arc::new(move |event, signal| Box::pin(listener(event, signal)));
        let mut listeners = lock(&self.inner.listeners);
        Arc::make_mut(&mut listeners).push((id, listener));
        id
    }

    /// Removes a listener; returns whether it was subscribed.
    pub fn unsubscribe(&self, id: ListenerId) -> bool {
        let mut listeners = lock(&self.inner.listeners);
        let before = listeners.len();
        Arc::make_mut(&mut listeners).retain(|(other, _)| *other != id);
        listeners.len() != before
    }

    /// Queues a message to inject before the next model request of the current run (after
    /// the running tool batch completes).
    pub fn steer(&self, message: Message) {
        lock(&self.inner.steering).push_back(message);
    }

    /// Queues a message to send when the agent would otherwise stop.
    pub fn follow_up(&self, message: Message) {
        lock(&self.inner.follow_ups).push_back(message);
    }

    /// Empties the steering queue.
    pub fn clear_steering_queue(&self) {
        lock(&self.inner.steering).clear();
    }

    /// Empties the follow-up queue.
    pub fn clear_follow_up_queue(&self) {
        lock(&self.inner.follow_ups).clear();
    }

    /// Empties both queues.
    pub fn clear_all_queues(&self) {
        self.clear_steering_queue();
        self.clear_follow_up_queue();
    }

    /// Whether a steering or follow-up message is waiting.
    pub fn has_queued_messages(&self) -> bool {
        !lock(&self.inner.steering).is_empty() || !lock(&self.inner.follow_ups).is_empty()
    }

    /// Aborts the active run (tools see the signal; the next model request ends `Aborted`).
    pub fn abort(&self) {
        if let Some(signal) = &self.state().abort {
            signal.cancel();
        }
    }

    /// Waits until no run is active.
    pub async fn wait_for_idle(&self) {
        let mut running = self.inner.running.subscribe();
        // The sender lives as long as the agent, so this only ends when the agent is idle.
        let _ = running.wait_for(|running| !*running).await;
    }

    /// Clears the transcript, the queues, the error and the streaming state.
    pub fn reset(&self) {
        {
            let mut state = self.state();
            state.messages.clear();
            state.streaming_message = None;
            state.partial = None;
            state.pending_tool_calls.clear();
            state.error = None;
        }
        self.clear_all_queues();
    }

    /// Sends a prompt and runs until the agent is done (tools, steering and follow-ups
    /// included). Fails at once when a run is already active.
    pub async fn prompt(&self, prompt: impl Into<Prompt>) -> Result<(), AgentError> {
        let Prompt(messages) = prompt.into();
        let start = {
            let mut state = self.state();
            if state.is_running {
                return Err(AgentError::AlreadyProcessingPrompt);
            }
            self.begin(&mut state, Some(messages))
        };
        self.drive(start).await;
        Ok(())
    }

    /// [`prompt`](Self::prompt), with the run's context and configuration adjusted before it
    /// starts (a typed run adds its answer's format or tool and its hooks, see
    /// [`prompt_output`](Self::prompt_output)); an adjustment that fails starts nothing.
    pub(crate) async fn prompt_adjusted<E>(
        &self,
        prompt: Prompt,
        adjust: impl FnOnce(&mut AgentContext, &mut AgentLoopConfig, &dyn Model) -> Result<(), E>,
    ) -> Result<Result<(), E>, AgentError> {
        let Prompt(messages) = prompt;
        let mut start = {
            let mut state = self.state();
            if state.is_running {
                return Err(AgentError::AlreadyProcessingPrompt);
            }
            self.begin(&mut state, Some(messages))
        };
        if let Err(error) = adjust(&mut start.context, &mut start.config, start.model.as_ref()) {
            // Marks the agent idle again.
            drop(RunGuard {
                inner: Arc::clone(&self.inner),
                signal: start.signal,
            });
            return Ok(Err(error));
        }
        self.drive(start).await;
        Ok(Ok(()))
    }

    /// Continues from the transcript as it is (pi's `continue()`): after a tool result or a
    /// user message, asks the model again; after an assistant message, sends the queued
    /// steering message(s), else the queued follow-up(s).
    pub async fn continue_run(&self) -> Result<(), AgentError> {
        let start = {
            let mut state = self.state();
            if state.is_running {
                return Err(AgentError::AlreadyProcessing);
            }
            let Some(last) = state.messages.last() else {
                return Err(AgentError::NoMessages);
            };
            if last.as_assistant().is_some() {
                let steering = Inner::dequeue(&self.inner.steering, state.steering_mode);
                if !steering.is_empty() {
                    self.inner
                        .skip_next_steering_poll
                        .store(true, Ordering::Relaxed);
                    self.begin(&mut state, Some(steering))
                } else {
                    let follow_ups = Inner::dequeue(&self.inner.follow_ups, state.follow_up_mode);
                    if follow_ups.is_empty() {
                        return Err(AgentError::ContinueFromAssistant);
                    }
                    self.begin(&mut state, Some(follow_ups))
                }
            } else {
                self.begin(&mut state, None)
            }
        };
        self.drive(start).await;
        Ok(())
    }

    /// The state of the last run when it paused on calls that wait (its `RunPaused` event
    /// lists them), once: decide them and [`resume`](Self::resume) it, here or in another
    /// process after storing it.
    pub fn take_paused(&self) -> Option<RunState> {
        self.state().paused.take()
    }

    /// Resumes a paused run (see [`agent_loop_resume`](crate::agent_loop_resume)): the agent's
    /// system prompt and transcript become the state's, the decided calls run with the agent's
    /// tools, hooks and listeners, then the run goes on. Returns when the run ends or pauses
    /// again.
    ///
    /// # Errors
    ///
    /// A refused resume changes nothing (the agent's transcript included) and comes back with
    /// its reason; a running agent refuses with [`ResumeError::AgentBusy`](crate::ResumeError::AgentBusy).
    pub async fn resume(&self, resume: Resume) -> Result<(), ResumeRefused> {
        self.resume_adjusted(resume, |_, _, _| Ok::<(), std::convert::Infallible>(()))
            .await
            .map(|_| ())
    }

    /// [`resume`](Self::resume), with the run's context and configuration adjusted before it
    /// starts (see [`resume_output`](Self::resume_output)); an adjustment that fails starts
    /// nothing and drops the resume unchanged.
    pub(crate) async fn resume_adjusted<E>(
        &self,
        resume: Resume,
        adjust: impl FnOnce(&mut AgentContext, &mut AgentLoopConfig, &dyn Model) -> Result<(), E>,
    ) -> Result<Result<(), E>, ResumeRefused> {
        let (signal, stream) = {
            let mut state = self.state();
            if state.is_running {
                return Err(ResumeRefused {
                    error: crate::ResumeError::AgentBusy,
                    resume: Box::new(resume),
                });
            }
            let messages = resume.state().messages.clone();
            let system_prompt = resume.state().system_prompt.clone();
            let mut start = self.begin(&mut state, None);
            if let Err(error) = adjust(&mut start.context, &mut start.config, start.model.as_ref())
            {
                drop(state);
                // Marks the agent idle again.
                drop(RunGuard {
                    inner: Arc::clone(&self.inner),
                    signal: start.signal,
                });
                return Ok(Err(error));
            }
            let stream = agent_loop_resume(
                resume,
                start.context,
                start.config,
                start.model,
                start.signal.clone(),
            );
            match stream {
                Ok(stream) => {
                    state.messages = messages;
                    state.system_prompt = system_prompt;
                    (start.signal, stream)
                }
                Err(refused) => {
                    drop(state);
                    // Marks the agent idle again.
                    drop(RunGuard {
                        inner: Arc::clone(&self.inner),
                        signal: start.signal,
                    });
                    return Err(refused);
                }
            }
        };
        self.drive_stream(signal, Ok(stream)).await;
        Ok(Ok(()))
    }

    /// Marks the agent running and snapshots what the run needs (under the state lock, so two
    /// callers cannot both start).
    fn begin(&self, state: &mut State, prompts: Option<Vec<Message>>) -> RunStart {
        state.is_running = true;
        state.error = None;
        let signal = CancellationToken::new();
        state.abort = Some(signal.clone());
        self.inner.running.send_replace(true);

        let mut context =
            AgentContext::new(state.system_prompt.clone()).with_available(state.available.clone());
        context.messages = state.messages.clone();
        context.tools = state.tools.clone();
        context.state = state.shared_state.clone();

        let mut config = state.config.clone();
        let steering = Arc::clone(&self.inner);
        config.get_steering_messages = Some(Arc::new(move || {
            let messages = if steering
                .skip_next_steering_poll
                .swap(false, Ordering::Relaxed)
            {
                Vec::new()
            } else {
                steering.dequeue_steering()
            };
            Box::pin(async move { messages })
        }));
        let follow_ups = Arc::clone(&self.inner);
        config.get_follow_up_messages = Some(Arc::new(move || {
            let messages = follow_ups.dequeue_follow_ups();
            Box::pin(async move { messages })
        }));
        config.prepare_next_turn =
            Some(self.edits_between_turns(state.edits, config.prepare_next_turn.take()));
        RunStart {
            prompts,
            context,
            config,
            model: Arc::clone(&state.model),
            signal,
        }
    }

    /// The run's `prepare_next_turn`: the system prompt, model and tools set on the agent since
    /// the run last looked (it starts from `seen`), then the configuration's own hook, whose
    /// update wins where both set a part.
    fn edits_between_turns(
        &self,
        seen: Edits,
        configured: Option<crate::PrepareNextTurnHook>,
    ) -> crate::PrepareNextTurnHook {
        let inner = Arc::clone(&self.inner);
        let seen = Mutex::new(seen);
        Arc::new(move |turn| {
            let edits = {
                let state = lock(&inner.state);
                let mut seen = lock(&seen);
                let mut update = crate::TurnUpdate::new();
                if state.edits.system_prompt != seen.system_prompt {
                    update.system_prompt = Some(state.system_prompt.clone());
                }
                if state.edits.model != seen.model {
                    update.model = Some(Arc::clone(&state.model));
                }
                if state.edits.tools != seen.tools {
                    update.tools = Some(state.tools.clone());
                }
                *seen = state.edits;
                update
            };
            let configured = configured.clone();
            Box::pin(async move {
                let own = match configured {
                    Some(hook) => hook(turn).await,
                    None => None,
                };
                let update = edits.then(own.unwrap_or_default());
                (!update.is_empty()).then_some(update)
            })
        })
    }

    /// Runs the loop, reducing every event into the state and awaiting the listeners.
    async fn drive(&self, start: RunStart) {
        let RunStart {
            prompts,
            context,
            config,
            model,
            signal,
        } = start;
        // Marks the agent idle when the run ends, also when the caller drops `prompt`'s future
        // mid-run.
        let _idle_on_exit = RunGuard {
            inner: Arc::clone(&self.inner),
            signal: signal.clone(),
        };
        let stream = match prompts {
            Some(prompts) => Ok(agent_loop(prompts, context, config, model, signal.clone())),
            None => agent_loop_continue(context, config, model, signal.clone()),
        };
        self.drive_stream_guarded(signal, stream).await;
    }

    /// Runs a started loop with its own idle guard.
    async fn drive_stream(
        &self,
        signal: CancellationToken,
        stream: Result<AgentStream, AgentLoopError>,
    ) {
        let _idle_on_exit = RunGuard {
            inner: Arc::clone(&self.inner),
            signal: signal.clone(),
        };
        self.drive_stream_guarded(signal, stream).await;
    }

    /// Reduces every event of a run into the state and awaits the listeners; keeps the state
    /// of a run that paused.
    async fn drive_stream_guarded(
        &self,
        signal: CancellationToken,
        stream: Result<AgentStream, AgentLoopError>,
    ) {
        match stream {
            Ok(stream) => {
                let mut stream = stream.lockstep();
                while let Some(event) = stream.next().await {
                    self.inner.reduce(&event);
                    let listeners = Arc::clone(&lock(&self.inner.listeners));
                    for (_, listener) in listeners.iter() {
                        let outcome = crate::agent_loop::guarded_listener(
                            listener,
                            event.clone(),
                            signal.clone(),
                        )
                        .await;
                        if let Err(panic) = outcome {
                            tracing::error!("an agent listener panicked: {panic}");
                        }
                    }
                }
                if let Some(paused) = stream.take_paused() {
                    self.state().paused = Some(paused);
                }
            }
            Err(err) => {
                // `begin` checked the transcript under the lock, so this is a broken invariant;
                // record it like pi's `handleRunFailure`.
                self.state().error = Some(err.to_string());
            }
        }
    }
}

/// Ends a run's bookkeeping when the run's future completes or is dropped.
struct RunGuard {
    inner: Arc<Inner>,
    signal: CancellationToken,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        // A dropped run stops its tools too (they may hold clones of the signal).
        self.signal.cancel();
        {
            let mut state = lock(&self.inner.state);
            state.is_running = false;
            state.abort = None;
            state.streaming_message = None;
            state.partial = None;
            state.pending_tool_calls.clear();
        }
        self.inner
            .skip_next_steering_poll
            .store(false, Ordering::Relaxed);
        self.inner.running.send_replace(false);
    }
}

struct RunStart {
    prompts: Option<Vec<Message>>,
    context: AgentContext,
    config: AgentLoopConfig,
    model: Arc<dyn Model>,
    signal: CancellationToken,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        f.debug_struct("Agent")
            .field("system_prompt", &state.system_prompt)
            .field("model", &state.model.id())
            .field(
                "tools",
                &state
                    .tools
                    .iter()
                    .map(|t| t.spec().name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("messages", &state.messages.len())
            .field("is_running", &state.is_running)
            .field("error", &state.error)
            .finish()
    }
}
