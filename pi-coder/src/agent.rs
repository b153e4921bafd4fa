//! [`CodingAgent`]: a conversation with a model over the coding tools, as pi's `AgentSession`
//! runs one: the transcript and its session file, the model and thinking level, compaction
//! (automatic near the context window, on a context-overflow error then retry, or asked for),
//! the user's own `!` commands, steering and follow-up queues, `bash` approval as a call that
//! waits (asked of the in-process approver, or the run pauses: see `waiting`), and one
//! [`agent_loop`] run per prompt.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use pi_runtime::{
    AfterToolCall, AgentContext, AgentEvent, AgentLoopConfig, AgentStream, AssistantMessage,
    Message, Model, QueueMode, StopReason, StreamOptions, ThinkingLevel, UserMessage, agent_loop,
    agent_loop_continue,
};
use pi_tool::{BoxFuture, CancellationToken, Content, ToolRegistry};
use serde_json::{Value, json};

use crate::compaction::{
    self, CompactionReason, CompactionResult, CompactionSettings, Summarizer, context_tokens,
    estimate_context_tokens, is_context_overflow, should_compact,
};
use crate::events::{CompactionEnd, Observer};
use crate::models::ModelInfo;
use crate::session::Session;

mod waiting;

pub use waiting::LEFT_WAITING;
pub(crate) use waiting::command_of;

/// What the model is told when the user declines a command.
pub const DECLINED: &str = "The user declined to run this command.";

/// pi's text when an overflow comes back right after the compaction meant to fix it.
const OVERFLOW_RECOVERY_FAILED: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// Asks the user whether a `bash` command may run; resolves to `true` to run it.
pub type Approver = Arc<dyn Fn(ApprovalRequest) -> BoxFuture<'static, bool> + Send + Sync>;

/// A `bash` call waiting for approval. When it is asked, the call's header (`● bash $ ...`)
/// has already been rendered, so the question can follow it on its own line.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The id of the call, as in the tool events.
    pub call_id: String,
    /// The command the model wants to run.
    pub command: String,
    /// The run's abort signal: an approver should give up (and decline) when it fires.
    pub signal: CancellationToken,
}

/// Whether `bash` calls need the user's approval.
#[derive(Clone)]
pub enum Approval {
    /// Every command runs (`--yes`).
    Always,
    /// Every command is blocked; the model sees the reason.
    Never(String),
    /// Each command is put to the approver first.
    Ask(Approver),
}

impl fmt::Debug for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Approval::Always => f.write_str("Always"),
            Approval::Never(reason) => f.debug_tuple("Never").field(reason).finish(),
            Approval::Ask(_) => f.write_str("Ask(..)"),
        }
    }
}

/// How a prompt ended: the stop reason of the last assistant message, and its error text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptOutcome {
    /// `Stop` normally; `Error` when the model failed; `Aborted` after Ctrl-C.
    pub stop_reason: StopReason,
    /// What went wrong, for `Error` and `Aborted`.
    pub error_message: Option<String>,
    /// Whether a `bash` call was refused for want of approval (no one could be asked).
    pub approval_refused: bool,
}

/// What a `!command` of the user gave (pi's `BashResult`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BashResult {
    /// stdout and stderr, as they came, tail-truncated like the `bash` tool's.
    pub output: String,
    /// The exit code (none when it was killed).
    pub exit_code: Option<i32>,
    /// Whether it was cancelled.
    pub cancelled: bool,
    /// Whether the output was cut.
    pub truncated: bool,
    /// Where the whole output is, when it was cut.
    pub full_output_path: Option<String>,
}

impl BashResult {
    /// pi's JSON for it (RPC's `bash` response).
    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "output": self.output,
            "exitCode": self.exit_code,
            "cancelled": self.cancelled,
            "truncated": self.truncated,
        });
        if let Some(path) = &self.full_output_path {
            value["fullOutputPath"] = json!(path);
        }
        value
    }
}

/// The counts and totals of a session (pi's `SessionStats`, for `/session`).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SessionStats {
    /// The session file, when saved.
    pub session_file: Option<PathBuf>,
    /// The session id.
    pub session_id: String,
    /// User messages in the context.
    pub user_messages: usize,
    /// Assistant messages in the context.
    pub assistant_messages: usize,
    /// Tool calls in the context.
    pub tool_calls: usize,
    /// Tool results in the context.
    pub tool_results: usize,
    /// All messages in the context.
    pub total_messages: usize,
    /// Tokens, summed over the context's answers.
    pub tokens: pi_tool::Usage,
    /// US dollars, summed likewise.
    pub cost: f64,
}

impl SessionStats {
    /// pi's JSON for it (RPC's `get_session_stats`).
    pub fn to_json(&self) -> Value {
        let t = &self.tokens;
        json!({
            "sessionFile": self.session_file,
            "sessionId": self.session_id,
            "userMessages": self.user_messages,
            "assistantMessages": self.assistant_messages,
            "toolCalls": self.tool_calls,
            "toolResults": self.tool_results,
            "totalMessages": self.total_messages,
            "tokens": {
                "input": t.input, "output": t.output, "cacheRead": t.cache_read,
                "cacheWrite": t.cache_write,
                "total": t.input + t.output + t.cache_read + t.cache_write,
            },
            "cost": self.cost,
        })
    }
}

/// How full the context is (pi's `ContextUsage`): `None` tokens right after a compaction,
/// until the model answers again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContextUsage {
    /// Estimated tokens of the context.
    pub tokens: Option<u64>,
    /// The model's window.
    pub context_window: u64,
    /// `tokens` as a percentage of the window.
    pub percent: Option<f64>,
}

/// What can be done to a running conversation from outside it (another task, a signal
/// handler): steer it, queue a follow-up, abort it, ask whether it runs. Cloning is cheap.
#[derive(Clone, Default)]
pub struct AgentControl {
    inner: Arc<ControlState>,
}

#[derive(Default)]
struct ControlState {
    steering: Mutex<VecDeque<Message>>,
    follow_up: Mutex<VecDeque<Message>>,
    steering_all: AtomicBool,
    follow_up_all: AtomicBool,
    /// The texts of queued messages not yet seen by the model (pi's `_steeringMessages` and
    /// `_followUpMessages`): the loop takes a message from the queue before it emits it.
    shown: Mutex<(Vec<String>, Vec<String>)>,
    signal: Mutex<Option<CancellationToken>>,
    streaming: AtomicBool,
    compacting: AtomicBool,
}

impl fmt::Debug for AgentControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentControl")
            .field("streaming", &self.is_streaming())
            .field("pending", &self.pending_count())
            .finish()
    }
}

impl AgentControl {
    /// Queues a message for the running turn: it reaches the model after the current tool
    /// calls, before the next request (pi's `steer`).
    pub fn steer(&self, text: &str) {
        lock(&self.inner.shown).0.push(text.to_owned());
        lock(&self.inner.steering).push_back(Message::user(text));
    }

    /// Queues a message for when the agent would stop (pi's `followUp`).
    pub fn follow_up(&self, text: &str) {
        lock(&self.inner.shown).1.push(text.to_owned());
        lock(&self.inner.follow_up).push_back(Message::user(text));
    }

    /// Aborts the running turn, if any.
    pub fn abort(&self) {
        if let Some(signal) = lock(&self.inner.signal).as_ref() {
            signal.cancel();
        }
    }

    /// Whether a turn is running.
    pub fn is_streaming(&self) -> bool {
        self.inner.streaming.load(Ordering::SeqCst)
    }

    /// Whether a compaction is running.
    pub fn is_compacting(&self) -> bool {
        self.inner.compacting.load(Ordering::SeqCst)
    }

    /// How many steering and follow-up messages wait.
    pub fn pending_count(&self) -> usize {
        let shown = lock(&self.inner.shown);
        shown.0.len() + shown.1.len()
    }

    /// The texts of the waiting steering and follow-up messages.
    pub fn queued(&self) -> (Vec<String>, Vec<String>) {
        lock(&self.inner.shown).clone()
    }

    /// Takes every waiting steering and follow-up message out of the queues: their texts,
    /// steering first, each queue in order. pi puts them back into the editor when a turn is
    /// stopped, so nothing the user typed is sent behind their back or lost.
    pub fn take_queued(&self) -> Vec<String> {
        lock(&self.inner.steering).clear();
        lock(&self.inner.follow_up).clear();
        let (steering, follow_up) = std::mem::take(&mut *lock(&self.inner.shown));
        steering.into_iter().chain(follow_up).collect()
    }

    /// A message with `text` reached the model: it leaves its queue's list; `true` when it was
    /// in one.
    fn delivered(&self, text: &str) -> bool {
        let mut shown = lock(&self.inner.shown);
        let (steering, follow_up) = &mut *shown;
        for list in [steering, follow_up] {
            if let Some(at) = list.iter().position(|t| t == text) {
                list.remove(at);
                return true;
            }
        }
        false
    }

    /// Drains one message per poll (pi's default) or all of them.
    pub fn set_queue_modes(&self, steering: QueueMode, follow_up: QueueMode) {
        self.inner
            .steering_all
            .store(steering == QueueMode::All, Ordering::SeqCst);
        self.inner
            .follow_up_all
            .store(follow_up == QueueMode::All, Ordering::SeqCst);
    }

    /// The queue modes (steering, follow-up).
    pub fn queue_modes(&self) -> (QueueMode, QueueMode) {
        let mode = |all: &AtomicBool| {
            if all.load(Ordering::SeqCst) {
                QueueMode::All
            } else {
                QueueMode::OneAtATime
            }
        };
        (
            mode(&self.inner.steering_all),
            mode(&self.inner.follow_up_all),
        )
    }

    fn drain(queue: &Mutex<VecDeque<Message>>, all: &AtomicBool) -> Vec<Message> {
        let mut queue = lock(queue);
        if all.load(Ordering::SeqCst) {
            queue.drain(..).collect()
        } else {
            queue.pop_front().into_iter().collect()
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn user_text(message: &Message) -> String {
    match message {
        Message::User(user) => user.content.iter().filter_map(Content::as_text).collect(),
        _ => String::new(),
    }
}

/// A conversation between the user and a model that uses the coding tools.
pub struct CodingAgent {
    model: Arc<dyn Model>,
    info: ModelInfo,
    thinking: ThinkingLevel,
    tools: ToolRegistry,
    tool_order: Vec<String>,
    cwd: PathBuf,
    system_prompt: String,
    transcript: Vec<Arc<Message>>,
    session: Session,
    approval: Approval,
    stream_options: StreamOptions,
    progress: Arc<CallProgress>,
    compaction: CompactionSettings,
    control: AgentControl,
    overflow_retried: bool,
    shell: Option<PathBuf>,
    shell_prefix: Option<String>,
    pending_bash: Vec<Value>,
    output_dir: PathBuf,
    /// The run that paused on calls waiting for a decision, until they are settled
    /// ([`resume_waiting`](Self::resume_waiting)) or left behind by a new prompt.
    paused: Option<pi_runtime::RunState>,
}

/// What the event consumer ([`CodingAgent::prompt`]) and the approval hook share: which calls'
/// headers have been rendered (the hook waits for its call's before asking, so the question
/// never comes before the header or glued to the model's text), how long the user took to
/// answer, taken out of the durations shown so they time only the tools.
#[derive(Debug)]
struct CallProgress {
    rendered: Mutex<HashSet<String>>,
    changed: tokio::sync::watch::Sender<u64>,
    /// Milliseconds spent waiting for approvals in this conversation so far.
    waited_ms: AtomicU64,
    /// `waited_ms` when each running call started.
    waited_at_start: Mutex<HashMap<String, u64>>,
}

impl CallProgress {
    fn new() -> Self {
        CallProgress {
            rendered: Mutex::new(HashSet::new()),
            changed: tokio::sync::watch::Sender::new(0),
            waited_ms: AtomicU64::new(0),
            waited_at_start: Mutex::new(HashMap::new()),
        }
    }

    /// The call's header is on screen: its approval may be asked now.
    fn started(&self, id: &str) {
        let waited = self.waited_ms.load(Ordering::Relaxed);
        lock(&self.waited_at_start).insert(id.to_owned(), waited);
        lock(&self.rendered).insert(id.to_owned());
        self.changed.send_modify(|n| *n += 1);
    }

    fn is_rendered(&self, id: &str) -> bool {
        lock(&self.rendered).contains(id)
    }

    /// Waits until the call's header is rendered (or the run is aborted).
    async fn rendered(&self, id: &str, signal: &CancellationToken) {
        let mut changes = self.changed.subscribe();
        while !self.is_rendered(id) {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = signal.cancelled() => return,
            }
        }
    }

    fn record_wait(&self, waited_ms: u64) {
        self.waited_ms.fetch_add(waited_ms, Ordering::Relaxed);
    }

    /// The call ended: how long approvals took while it was running.
    fn ended(&self, id: &str) -> u64 {
        lock(&self.rendered).remove(id);
        let at_start = lock(&self.waited_at_start).remove(id);
        at_start.map_or(0, |start| {
            self.waited_ms.load(Ordering::Relaxed).saturating_sub(start)
        })
    }
}

impl fmt::Debug for CodingAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodingAgent")
            .field(
                "model",
                &format_args!("{}/{}", self.model.provider(), self.model.id()),
            )
            .field("thinking", &self.thinking)
            .field("tools", &self.tools)
            .field("messages", &self.transcript.len())
            .field("session", &self.session.file())
            .field("approval", &self.approval)
            .finish()
    }
}

impl PromptOutcome {
    /// A run that ended normally, so far.
    fn stopped() -> Self {
        PromptOutcome {
            stop_reason: StopReason::Stop,
            error_message: None,
            approval_refused: false,
        }
    }
}

impl CodingAgent {
    /// A new conversation with `model` and `tools` (which carry their `Workspace` state), pi's
    /// coding system prompt for `cwd`, nothing saved, and every `bash` call refused
    /// ([`Approval::Never`]) until an approval policy is set.
    pub fn new(model: Arc<dyn Model>, tools: ToolRegistry, cwd: &Path) -> Self {
        let system_prompt = system_prompt(&tools, cwd);
        let info = ModelInfo::generic(model.provider(), model.id(), model.api(), "");
        CodingAgent {
            model,
            info,
            thinking: ThinkingLevel::Off,
            tools,
            tool_order: Vec::new(),
            cwd: cwd.to_path_buf(),
            system_prompt,
            transcript: Vec::new(),
            session: Session::in_memory(cwd),
            approval: Approval::Never(
                "Running commands was not approved: restart pi with --yes to allow it.".into(),
            ),
            stream_options: StreamOptions::default(),
            progress: Arc::new(CallProgress::new()),
            compaction: CompactionSettings::default(),
            control: AgentControl::default(),
            overflow_retried: false,
            shell: None,
            shell_prefix: None,
            pending_bash: Vec::new(),
            output_dir: std::env::temp_dir(),
            paused: None,
        }
    }

    /// Offers the tools in this order (names not in the registry are ignored; tools not named
    /// come after, in pi's order). By default the built-ins come in pi's order
    /// ([`PI_TOOL_ORDER`](crate::system_prompt::PI_TOOL_ORDER)), then the others by name.
    #[must_use]
    pub fn with_tool_order<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tool_order = names.into_iter().map(Into::into).collect();
        self
    }

    /// Replaces the system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// What is known of the model: its context window (compaction), reasoning (thinking
    /// levels), output limit and price. By default: pi's assumptions for an unknown model.
    #[must_use]
    pub fn with_model_info(mut self, info: ModelInfo) -> Self {
        self.info = info;
        self.thinking = self.info.clamp_thinking(self.thinking);
        self
    }

    /// The thinking level, clamped to what the model has.
    #[must_use]
    pub fn with_thinking(mut self, level: ThinkingLevel) -> Self {
        self.thinking = self.info.clamp_thinking(level);
        self
    }

    /// When to compact and what to keep.
    #[must_use]
    pub fn with_compaction(mut self, settings: CompactionSettings) -> Self {
        self.compaction = settings;
        self
    }

    /// The shell for the user's `!` commands (default as the `bash` tool: `/bin/bash`, else
    /// `bash`, else `sh`), and a line run before each (`settings.json`'s
    /// `shellCommandPrefix`).
    #[must_use]
    pub fn with_shell(mut self, shell: Option<PathBuf>, prefix: Option<String>) -> Self {
        self.shell = shell;
        self.shell_prefix = prefix;
        self
    }

    /// Replaces the tools offered from the next prompt on (an MCP server's list changed). The
    /// system prompt stays as it is.
    pub fn set_tools(&mut self, tools: ToolRegistry) {
        self.tools = tools;
    }

    /// Sets the `bash` approval policy.
    #[must_use]
    pub fn with_approval(mut self, approval: Approval) -> Self {
        self.approval = approval;
        self
    }

    /// Sets the options of every model request (API key, temperature, ...).
    #[must_use]
    pub fn with_stream_options(mut self, options: StreamOptions) -> Self {
        self.stream_options = options;
        self
    }

    /// Saves every message to `session` from now on, continuing after `earlier` (the messages
    /// of its current branch, from [`Session::open_or_create`]).
    #[must_use]
    pub fn with_session(mut self, session: Session, earlier: Vec<Message>) -> Self {
        self.transcript = earlier.into_iter().map(Arc::new).collect();
        self.session = session;
        self.load_paused();
        self
    }

    /// Records the model and thinking level in the session as pi does when it starts one: a
    /// new session gets a `model_change` and a `thinking_level_change`; a resumed one that
    /// never had its thinking level recorded gets one.
    pub fn record_start(&mut self) {
        let branch_has = |kind: &str| self.session.branch().iter().any(|e| e["type"] == kind);
        let has_thinking = branch_has("thinking_level_change");
        let level = self.thinking.as_str();
        let result = if self.transcript.is_empty() {
            self.session
                .append_model_change(self.model.provider(), self.model.id())
                .and_then(|_| self.session.append_thinking_level_change(level))
        } else if !has_thinking {
            self.session.append_thinking_level_change(level)
        } else {
            Ok(String::new())
        };
        if let Err(err) = result {
            eprintln!(
                "warning: could not save the session to {}: {err}",
                self.session.path().display()
            );
        }
    }

    /// The conversation so far, as the model sees it.
    pub fn transcript(&self) -> &[Arc<Message>] {
        &self.transcript
    }

    /// The conversation as pi's agent state holds it (RPC's `get_messages`): the current
    /// branch's messages as they are in the session, `!` commands (`bashExecution`) and
    /// compaction summaries (`compactionSummary`) included, then any still being answered.
    pub fn agent_messages(&self) -> Vec<Value> {
        crate::pi_session::branch_agent_messages(&self.session.branch())
    }

    /// The working directory named in the system prompt.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The names of the tools offered to the model, in the order they are offered.
    pub fn tool_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .tool_order
            .iter()
            .map(String::as_str)
            .filter(|name| self.tools.contains(name))
            .collect();
        let rest = crate::system_prompt::pi_order(self.tools.names());
        for name in rest {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// The model.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.model
    }

    /// What is known of the model.
    pub fn model_info(&self) -> &ModelInfo {
        &self.info
    }

    /// The thinking level in force.
    pub fn thinking(&self) -> ThinkingLevel {
        self.thinking
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// The session file, if the conversation is saved to one.
    pub fn session(&self) -> Option<&Session> {
        self.session.file().is_some().then_some(&self.session)
    }

    /// The session, saved or in memory.
    pub fn session_state(&self) -> &Session {
        &self.session
    }

    /// The compaction settings.
    pub fn compaction_settings(&self) -> CompactionSettings {
        self.compaction
    }

    /// Turns automatic compaction on or off (pi's `set_auto_compaction`).
    pub fn set_auto_compaction(&mut self, enabled: bool) {
        self.compaction.enabled = enabled;
    }

    /// A handle to steer, queue, abort and watch this conversation while it runs.
    pub fn control(&self) -> AgentControl {
        self.control.clone()
    }

    /// Switches the model from the next request on: recorded in the session, and the thinking
    /// level clamped again to what the new model has (pi's `setModel`).
    pub fn set_model(&mut self, model: Arc<dyn Model>, info: ModelInfo) {
        let wanted = self.thinking;
        self.model = model;
        self.info = info;
        self.save(|session, model| session.append_model_change(model.provider(), model.id()));
        self.set_thinking(wanted);
    }

    /// Sets the thinking level, clamped to what the model has; a change is recorded in the
    /// session (pi's `setThinkingLevel`). Returns the level in force.
    pub fn set_thinking(&mut self, level: ThinkingLevel) -> ThinkingLevel {
        let effective = self.info.clamp_thinking(level);
        if effective != self.thinking {
            self.thinking = effective;
            self.save(|session, _| session.append_thinking_level_change(effective.as_str()));
        }
        effective
    }

    /// Replaces the session (pi's `/new`, `/resume`, RPC's `switch_session`): the transcript
    /// becomes `earlier`.
    pub fn replace_session(&mut self, session: Session, earlier: Vec<Message>) {
        self.session = session;
        self.transcript = earlier.into_iter().map(Arc::new).collect();
        self.overflow_retried = false;
        self.pending_bash.clear();
    }

    /// Names the session (pi's `/name`).
    pub fn set_session_name(&mut self, name: &str) {
        self.save(|session, _| session.append_session_info(name));
    }

    fn save(
        &mut self,
        write: impl FnOnce(&mut Session, &Arc<dyn Model>) -> std::io::Result<String>,
    ) {
        if let Err(err) = write(&mut self.session, &self.model) {
            eprintln!(
                "warning: could not save the session to {}: {err}",
                self.session.path().display()
            );
        }
    }

    /// The session's counts and totals, over the current context (pi's `getSessionStats`).
    pub fn stats(&self) -> SessionStats {
        let mut stats = SessionStats {
            session_file: self.session.file().map(Path::to_path_buf),
            session_id: self.session.id().to_owned(),
            total_messages: self.transcript.len(),
            ..SessionStats::default()
        };
        for message in &self.transcript {
            match &**message {
                Message::User(_) => stats.user_messages += 1,
                Message::Assistant(assistant) => {
                    stats.assistant_messages += 1;
                    stats.tool_calls += assistant.tool_calls().count();
                    stats.tokens.add(&assistant.usage);
                    stats.cost += assistant.usage.cost.total;
                }
                Message::ToolResult(_) => stats.tool_results += 1,
                Message::Custom(_) => {}
            }
        }
        stats
    }

    /// Tokens and cost of every answer in the session file, compacted ones included (pi's
    /// footer counts them all).
    pub fn session_usage(&self) -> pi_tool::Usage {
        let mut total = pi_tool::Usage::default();
        for entry in self.session.entries() {
            if entry["type"] == "message"
                && entry["message"]["role"] == "assistant"
                && let Ok(usage) =
                    serde_json::from_value::<pi_tool::Usage>(entry["message"]["usage"].clone())
            {
                total.add(&usage);
            }
        }
        total
    }

    /// How full the context is (pi's `getContextUsage`).
    pub fn context_usage(&self) -> Option<ContextUsage> {
        let window = self.info.context_window;
        if window == 0 {
            return None;
        }
        let branch = self.session.branch();
        if let Some(at) = branch.iter().rposition(|e| e["type"] == "compaction") {
            let answered = branch[at + 1..].iter().rev().find_map(|e| {
                let message = &e["message"];
                (e["type"] == "message"
                    && message["role"] == "assistant"
                    && message["stopReason"] != "aborted"
                    && message["stopReason"] != "error")
                    .then(|| message["usage"]["totalTokens"].as_u64().unwrap_or(0) > 0)
            });
            if answered != Some(true) {
                return Some(ContextUsage {
                    tokens: None,
                    context_window: window,
                    percent: None,
                });
            }
        }
        let tokens = estimate_context_tokens(&self.transcript).tokens;
        Some(ContextUsage {
            tokens: Some(tokens),
            context_window: window,
            percent: Some(tokens as f64 / window as f64 * 100.0),
        })
    }

    /// The text of the last answer, trimmed (pi's `getLastAssistantText`): its text blocks
    /// joined, an aborted answer without content skipped.
    pub fn last_assistant_text(&self) -> Option<String> {
        let last = self
            .transcript
            .iter()
            .rev()
            .filter_map(|m| m.as_assistant())
            .find(|a| a.stop_reason != StopReason::Aborted || !a.content.is_empty())?;
        let text: String = last
            .content
            .iter()
            .filter_map(|block| match block {
                pi_runtime::AssistantContent::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_owned())
    }

    /// Sends one prompt and runs the model and its tool calls until it answers, reporting
    /// everything to `observer` (a [`Renderer`](crate::Renderer) shows it). Cancelling `signal`
    /// aborts the turn (the running tools are killed, the model request ends as `Aborted`) and
    /// keeps the conversation usable.
    pub async fn prompt(
        &mut self,
        text: &str,
        signal: CancellationToken,
        observer: &mut dyn Observer,
    ) -> PromptOutcome {
        self.prompt_content(vec![Content::text(text)], signal, observer)
            .await
    }

    /// [`prompt`](Self::prompt) with text and images (`@file` arguments).
    pub async fn prompt_content(
        &mut self,
        content: Vec<Content>,
        signal: CancellationToken,
        observer: &mut dyn Observer,
    ) -> PromptOutcome {
        self.flush_pending_bash();
        self.leave_waiting_behind();
        // pi checks before sending too (an aborted answer may have left the context too large).
        if let Some(last) = self.last_assistant() {
            self.check_compaction(&last, false, &signal, observer).await;
        }
        self.overflow_retried = false;
        let prompt = Message::User(UserMessage::new(content));
        let mut outcome = self.run(vec![prompt], &signal, observer).await;
        while let Some(last) = self.last_assistant() {
            if self.paused.is_some() {
                break;
            }
            if !self.check_compaction(&last, true, &signal, observer).await {
                break;
            }
            outcome = self.run(Vec::new(), &signal, observer).await;
        }
        self.flush_pending_bash();
        outcome
    }

    fn last_assistant(&self) -> Option<AssistantMessage> {
        self.transcript
            .iter()
            .rev()
            .find_map(|m| m.as_assistant())
            .cloned()
    }

    /// One run of the loop: with `prompts`, or continuing the context as it is.
    async fn run(
        &mut self,
        prompts: Vec<Message>,
        signal: &CancellationToken,
        observer: &mut dyn Observer,
    ) -> PromptOutcome {
        let context = self.run_context();
        let config = self.run_config(signal);
        let model = Arc::clone(&self.model);
        let stream: AgentStream = if prompts.is_empty() {
            match agent_loop_continue(context, config, model, signal.clone()) {
                Ok(stream) => stream,
                Err(_) => return PromptOutcome::stopped(),
            }
        } else {
            agent_loop(prompts, context, config, model, signal.clone())
        };
        self.follow(stream, signal, observer).await
    }

    /// The loop's context for a run: the transcript and the tools, `bash` needing approval
    /// unless every command may run.
    fn run_context(&self) -> AgentContext {
        let tools = self.tools_for_run();
        let offered: Vec<_> = self
            .tool_names()
            .into_iter()
            .filter_map(|name| tools.get(name))
            .collect();
        AgentContext {
            messages: self.transcript.clone(),
            ..AgentContext::new(self.system_prompt.clone())
                .with_available(tools)
                .with_tools(offered)
        }
    }

    /// Follows a run's events to its end: the observer sees each, the session file gets each
    /// message, and a run that paused is kept (and saved beside the session file).
    async fn follow(
        &mut self,
        stream: AgentStream,
        signal: &CancellationToken,
        observer: &mut dyn Observer,
    ) -> PromptOutcome {
        let mut outcome = PromptOutcome::stopped();
        *lock(&self.control.inner.signal) = Some(signal.clone());
        self.control.inner.streaming.store(true, Ordering::SeqCst);
        let mut events = stream;
        while let Some(event) = events.next().await {
            if let AgentEvent::ToolExecutionEnd { call, .. } = &event {
                observer.approval_wait(call.id(), self.progress.ended(call.id()));
            }
            if let AgentEvent::MessageStart { message } = &event
                && let Message::User(_) = &**message
            {
                self.overflow_retried = false;
                self.dequeued(&user_text(message), observer);
            }
            observer.agent_event(&event);
            match &event {
                AgentEvent::ToolExecutionStart { call } => {
                    self.progress.started(call.id());
                }
                AgentEvent::MessageEnd { message } => {
                    if let Err(err) = self.session.append(message) {
                        eprintln!(
                            "warning: could not save the session to {}: {err}",
                            self.session.path().display()
                        );
                    }
                    if let Some(assistant) = message.as_assistant() {
                        if assistant.stop_reason != StopReason::Error {
                            self.overflow_retried = false;
                        }
                        outcome.stop_reason = assistant.stop_reason;
                        outcome.error_message.clone_from(&assistant.error_message);
                    }
                }
                AgentEvent::AgentEnd { messages } => {
                    self.transcript.extend(messages.iter().cloned());
                }
                _ => {}
            }
        }
        self.control.inner.streaming.store(false, Ordering::SeqCst);
        *lock(&self.control.inner.signal) = None;
        if let Some(paused) = events.take_paused() {
            // Nobody could be asked ([`Approval::Never`]): the calls wait in the session.
            outcome.approval_refused = true;
            self.keep_paused(paused);
        }
        outcome
    }

    /// A queued message reached the model: it leaves the queue's display (pi's
    /// `queue_update`).
    fn dequeued(&self, text: &str, observer: &mut dyn Observer) {
        if self.control.delivered(text) {
            let (steering, follow_up) = self.control.queued();
            observer.queue_update(&steering, &follow_up);
        }
    }

    /// pi's `_checkCompaction` after `assistant`: compacts on an overflow (then `true`: the
    /// turn is to be retried) or past the threshold. `skip_aborted` leaves aborted answers
    /// alone, as pi does after a run (not before a prompt).
    async fn check_compaction(
        &mut self,
        assistant: &AssistantMessage,
        skip_aborted: bool,
        signal: &CancellationToken,
        observer: &mut dyn Observer,
    ) -> bool {
        if !self.compaction.enabled || signal.is_cancelled() {
            return false;
        }
        if skip_aborted && assistant.stop_reason == StopReason::Aborted {
            return false;
        }
        let window = self.info.context_window;
        let same_model =
            assistant.provider == self.model.provider() && assistant.model == self.model.id();
        let latest_compaction = self
            .session
            .branch()
            .iter()
            .rev()
            .find(|e| e["type"] == "compaction")
            .map(|e| crate::pi_session::entry_time(e));
        if latest_compaction.is_some_and(|at| assistant.timestamp <= at) {
            return false;
        }
        if same_model && is_context_overflow(assistant, window) {
            if self.overflow_retried {
                observer.compaction_end(&CompactionEnd {
                    reason: CompactionReason::Overflow,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some(OVERFLOW_RECOVERY_FAILED.into()),
                });
                return false;
            }
            self.overflow_retried = true;
            // The failed answer stays in the session file; the retry leaves it out (below).
            return self
                .auto_compact(CompactionReason::Overflow, skip_aborted, signal, observer)
                .await;
        }
        let tokens = if assistant.stop_reason == StopReason::Error {
            let estimate = estimate_context_tokens(&self.transcript);
            let Some(index) = estimate.last_usage else {
                return false;
            };
            let usage_time = self.transcript[index].timestamp();
            if latest_compaction.is_some_and(|at| usage_time <= at) {
                return false;
            }
            estimate.tokens
        } else {
            context_tokens(&assistant.usage)
        };
        if should_compact(tokens, window, &self.compaction) {
            self.auto_compact(CompactionReason::Threshold, false, signal, observer)
                .await;
        }
        false
    }

    /// pi's `_runAutoCompaction`: `true` when the overflowed turn is to be retried now.
    async fn auto_compact(
        &mut self,
        reason: CompactionReason,
        will_retry: bool,
        signal: &CancellationToken,
        observer: &mut dyn Observer,
    ) -> bool {
        observer.compaction_start(reason);
        match self.compact_now(None, signal).await {
            Ok(Some(result)) => {
                if will_retry
                    && self.transcript.last().is_some_and(|m| {
                        m.as_assistant()
                            .is_some_and(|a| a.stop_reason == StopReason::Error)
                    })
                {
                    self.transcript.pop();
                }
                observer.compaction_end(&CompactionEnd {
                    reason,
                    result: Some(result),
                    aborted: false,
                    will_retry,
                    error_message: None,
                });
                let queued = self.control.pending_count() > 0;
                let can_continue = self
                    .transcript
                    .last()
                    .is_some_and(|m| m.as_assistant().is_none());
                (will_retry || queued) && can_continue
            }
            Ok(None) => {
                observer.compaction_end(&CompactionEnd {
                    reason,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: None,
                });
                false
            }
            Err(error) => {
                let aborted = error == "Compaction cancelled";
                let prefix = if reason == CompactionReason::Overflow {
                    "Context overflow recovery failed"
                } else {
                    "Auto-compaction failed"
                };
                observer.compaction_end(&CompactionEnd {
                    reason,
                    result: None,
                    aborted,
                    will_retry: false,
                    error_message: (!aborted).then(|| format!("{prefix}: {error}")),
                });
                false
            }
        }
    }

    /// Compacts the session by hand (pi's `/compact [instructions]`, RPC's `compact`):
    /// `Already compacted` or `Nothing to compact (session too small)` when there is nothing to
    /// do.
    pub async fn compact(
        &mut self,
        instructions: Option<&str>,
        signal: CancellationToken,
        observer: &mut dyn Observer,
    ) -> Result<CompactionResult, String> {
        observer.compaction_start(CompactionReason::Manual);
        let result = match self.compact_now(instructions, &signal).await {
            Ok(Some(result)) => Ok(result),
            Ok(None) => {
                let last = self
                    .session
                    .branch()
                    .last()
                    .map(|e| e["type"] == "compaction");
                Err(if last == Some(true) {
                    "Already compacted".to_owned()
                } else {
                    "Nothing to compact (session too small)".to_owned()
                })
            }
            Err(error) => Err(error),
        };
        let aborted = result
            .as_ref()
            .err()
            .is_some_and(|e| e == "Compaction cancelled");
        observer.compaction_end(&CompactionEnd {
            reason: CompactionReason::Manual,
            result: result.as_ref().ok().cloned(),
            aborted,
            will_retry: false,
            error_message: match &result {
                Err(error) if !aborted => Some(format!("Compaction failed: {error}")),
                _ => None,
            },
        });
        result
    }

    /// Summarizes and writes the compaction; `Ok(None)` when there is nothing to compact.
    async fn compact_now(
        &mut self,
        instructions: Option<&str>,
        signal: &CancellationToken,
    ) -> Result<Option<CompactionResult>, String> {
        let branch = self.session.branch();
        let Some(preparation) = compaction::prepare(&branch, &self.compaction) else {
            return Ok(None);
        };
        self.control.inner.compacting.store(true, Ordering::SeqCst);
        let mut options = self.stream_options.clone();
        options.signal = signal.clone();
        let summarizer = Summarizer {
            model: &*self.model,
            options,
            thinking: (self.info.reasoning && self.thinking != ThinkingLevel::Off)
                .then_some(self.thinking),
        };
        let result = summarizer
            .compact(&preparation, &self.compaction, instructions)
            .await;
        self.control.inner.compacting.store(false, Ordering::SeqCst);
        let result = result?;
        if signal.is_cancelled() {
            return Err("Compaction cancelled".into());
        }
        self.session
            .append_compaction(
                &result.summary,
                &result.first_kept_entry_id,
                result.tokens_before,
                result.details.clone(),
            )
            .map_err(|err| format!("could not save the compaction: {err}"))?;
        let context = self.session.context()?;
        self.transcript = context.messages.into_iter().map(Arc::new).collect();
        Ok(Some(result))
    }

    /// Runs the user's own shell command (pi's `!command`; `!!command` with `exclude`: the
    /// model never sees it). Its output goes into the context as pi puts it there (`Ran
    /// \`command\`` and the output in a code fence), and into the session as a `bashExecution`.
    pub async fn run_user_bash(
        &mut self,
        command: &str,
        exclude: bool,
        signal: CancellationToken,
        on_output: impl FnMut(&str),
    ) -> BashResult {
        let result = run_user_command(
            self.shell.as_deref(),
            self.shell_prefix.as_deref(),
            &self.cwd,
            command,
            &signal,
            on_output,
        )
        .await;
        let message = bash_execution(command, &result, exclude);
        if self.control.is_streaming() {
            self.pending_bash.push(message);
        } else {
            self.record_bash(message);
        }
        result
    }

    fn record_bash(&mut self, message: Value) {
        if message["excludeFromContext"] != true {
            let text = crate::pi_session::bash_execution_text(&message);
            let timestamp = message["timestamp"].as_i64().unwrap_or_default();
            self.transcript
                .push(Arc::new(crate::pi_session::user_text(&text, timestamp)));
        }
        self.save(|session, _| session.append_raw_message(message));
    }

    /// Adds `!` commands that ran while the agent was busy (pi's `_flushPendingBashMessages`).
    fn flush_pending_bash(&mut self) {
        for message in std::mem::take(&mut self.pending_bash) {
            self.record_bash(message);
        }
    }

    /// Records a `!` command that ran elsewhere (RPC's `bash` while a turn runs): kept until
    /// the turn ends, then added as [`run_user_bash`](Self::run_user_bash) adds its own.
    pub fn add_bash_result(&mut self, command: &str, result: &BashResult, exclude: bool) {
        let message = bash_execution(command, result, exclude);
        if self.control.is_streaming() {
            self.pending_bash.push(message);
        } else {
            self.record_bash(message);
        }
    }

    /// Where any tool's output over pi's limits is saved (`pi-<tool>-<16 hex>.log`; the
    /// system's temporary directory by default, where `bash` saves its own): the model gets the
    /// head, the tail and the path (`details.fullOutputPath`).
    #[must_use]
    pub fn with_output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = dir.into();
        self
    }

    fn config(&self) -> AgentLoopConfig {
        let output_dir = self.output_dir.clone();
        let mut options = self.stream_options.clone();
        options.thinking = (self.thinking != ThinkingLevel::Off).then_some(self.thinking);
        if options.session_id.is_none() {
            options.session_id = Some(self.session.id().to_owned());
        }
        let steering = self.control.clone();
        let follow_up = self.control.clone();
        AgentLoopConfig::new()
            .stream_options(options)
            .steering(move || {
                let messages =
                    AgentControl::drain(&steering.inner.steering, &steering.inner.steering_all);
                async move { messages }
            })
            .follow_up(move || {
                let messages =
                    AgentControl::drain(&follow_up.inner.follow_up, &follow_up.inner.follow_up_all);
                async move { messages }
            })
            .after_tool_call(move |ctx| {
                let output_dir = output_dir.clone();
                async move {
                    let spilled = crate::spill::spill_oversized(
                        &ctx.tool_call.name,
                        &ctx.result,
                        &output_dir,
                    )
                    .await;
                    Ok(match spilled {
                        Some((content, details)) => {
                            AfterToolCall::keep().content(content).details(details)
                        }
                        None => AfterToolCall::keep(),
                    })
                }
            })
    }
}

/// pi's `BashExecutionMessage` for a `!` command.
fn bash_execution(command: &str, result: &BashResult, exclude: bool) -> Value {
    let mut message = json!({
        "role": "bashExecution",
        "command": command,
        "output": result.output,
        "exitCode": result.exit_code,
        "cancelled": result.cancelled,
        "truncated": result.truncated,
        "timestamp": pi_runtime::now_ms(),
    });
    if let Some(path) = &result.full_output_path {
        message["fullOutputPath"] = json!(path);
    }
    if exclude {
        message["excludeFromContext"] = json!(true);
    }
    message
}

/// Runs a `!` command as pi's `executeBash` does: the configured shell, the prefix line, the
/// output tail-truncated with the whole of it in a log file.
pub(crate) async fn run_user_command(
    shell: Option<&Path>,
    prefix: Option<&str>,
    cwd: &Path,
    command: &str,
    signal: &CancellationToken,
    mut on_output: impl FnMut(&str),
) -> BashResult {
    let mut workspace = crate::Workspace::new(cwd);
    if let Some(shell) = shell {
        workspace = workspace.with_shell(shell);
    }
    let shell = match workspace.shell() {
        Ok(shell) => shell,
        Err(err) => {
            return BashResult {
                output: err.to_string(),
                exit_code: Some(1),
                cancelled: false,
                truncated: false,
                full_output_path: None,
            };
        }
    };
    let full = match prefix {
        Some(prefix) => format!("{prefix}\n{command}"),
        None => command.to_owned(),
    };
    let mut shown = 0;
    let ran = crate::tools::bash::run_command(
        &shell,
        cwd,
        &full,
        None,
        workspace.temp_dir(),
        // The user's own commands are not the model's: they run unconfined.
        None,
        signal,
        |output| {
            if let Some(output) = output {
                let text = output.snapshot().truncation.content;
                if text.len() >= shown && text.is_char_boundary(shown) {
                    on_output(&text[shown..]);
                    shown = text.len();
                }
            }
        },
    )
    .await;
    match ran {
        Ok(ran) => {
            let snapshot = &ran.snapshot;
            let (exit_code, cancelled) = match ran.outcome {
                crate::tools::bash::Outcome::Exited(code) => (code, false),
                crate::tools::bash::Outcome::Aborted | crate::tools::bash::Outcome::TimedOut => {
                    (None, true)
                }
            };
            BashResult {
                output: snapshot.truncation.content.clone(),
                exit_code,
                cancelled,
                truncated: snapshot.truncation.truncated,
                full_output_path: snapshot
                    .full_output_path
                    .as_ref()
                    .map(|p| p.display().to_string()),
            }
        }
        Err(err) => BashResult {
            output: err.to_string(),
            exit_code: Some(1),
            cancelled: false,
            truncated: false,
            full_output_path: None,
        },
    }
}

/// pi's coding-agent system prompt for these tools (listed in pi's order) and `cwd`, without
/// context files; [`crate::system_prompt::build`] takes them, a custom prompt and appended text.
pub fn system_prompt(tools: &ToolRegistry, cwd: &Path) -> String {
    let names = crate::system_prompt::pi_order(tools.names());
    crate::system_prompt::build(&names, cwd, &crate::system_prompt::PromptParts::default())
}
