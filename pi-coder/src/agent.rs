//! [`CodingAgent`]: a conversation with a model over the coding tools: the transcript, the
//! session file, `bash` approval through `before_tool_call`, and one [`agent_loop`] run per prompt.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::StreamExt;
use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, BeforeToolCall, Message, Model, StopReason,
    StreamOptions, agent_loop,
};
use pi_tool::{BoxFuture, CancellationToken, ToolRegistry};

use crate::render::Renderer;
use crate::session::Session;

/// What the model is told when the user declines a command.
pub const DECLINED: &str = "The user declined to run this command.";

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
}

/// A conversation between the user and a model that uses the coding tools.
pub struct CodingAgent {
    model: Arc<dyn Model>,
    tools: ToolRegistry,
    tool_order: Vec<String>,
    cwd: std::path::PathBuf,
    system_prompt: String,
    transcript: Vec<Arc<Message>>,
    session: Option<Session>,
    approval: Approval,
    stream_options: StreamOptions,
    progress: Arc<CallProgress>,
}

/// What the event consumer ([`CodingAgent::prompt`]) and the approval hook share: which calls'
/// headers have been rendered (the hook waits for its call's before asking, so the question
/// never comes before the header or glued to the model's text), and how long the user took to
/// answer, taken out of the durations shown so they time only the tools. A call's shown time
/// leaves out every approval between its start and its end: its own, and in a parallel batch
/// the later calls' (all are asked before any runs).
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
        if let Ok(mut starts) = self.waited_at_start.lock() {
            starts.insert(id.to_owned(), waited);
        }
        if let Ok(mut rendered) = self.rendered.lock() {
            rendered.insert(id.to_owned());
        }
        self.changed.send_modify(|n| *n += 1);
    }

    fn is_rendered(&self, id: &str) -> bool {
        self.rendered.lock().is_ok_and(|r| r.contains(id))
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
        if let Ok(mut rendered) = self.rendered.lock() {
            rendered.remove(id);
        }
        let at_start = self
            .waited_at_start
            .lock()
            .ok()
            .and_then(|mut starts| starts.remove(id));
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
            .field("tools", &self.tools)
            .field("messages", &self.transcript.len())
            .field("session", &self.session.as_ref().map(Session::path))
            .field("approval", &self.approval)
            .finish()
    }
}

impl CodingAgent {
    /// A new conversation with `model` and `tools` (which carry their `Workspace` state), pi's
    /// coding system prompt for `cwd`, and every `bash` call refused ([`Approval::Never`]) until
    /// an approval policy is set.
    pub fn new(model: Arc<dyn Model>, tools: ToolRegistry, cwd: &std::path::Path) -> Self {
        let system_prompt = system_prompt(&tools, cwd);
        CodingAgent {
            model,
            tools,
            tool_order: Vec::new(),
            cwd: cwd.to_path_buf(),
            system_prompt,
            transcript: Vec::new(),
            session: None,
            approval: Approval::Never(
                "Running commands was not approved: restart pi with --yes to allow it.".into(),
            ),
            stream_options: StreamOptions::default(),
            progress: Arc::new(CallProgress::new()),
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
    /// the session already holds, from [`Session::open_or_create`]).
    #[must_use]
    pub fn with_session(mut self, session: Session, earlier: Vec<Message>) -> Self {
        self.transcript = earlier.into_iter().map(Arc::new).collect();
        self.session = Some(session);
        self
    }

    /// The conversation so far.
    pub fn transcript(&self) -> &[Arc<Message>] {
        &self.transcript
    }

    /// The working directory named in the system prompt.
    pub fn cwd(&self) -> &std::path::Path {
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

    /// The system prompt.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// The session file, if the conversation is saved.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// Sends one prompt and runs the model and its tool calls until it answers, rendering
    /// everything to `renderer`. Cancelling `signal` aborts the turn (the running tools are
    /// killed, the model request ends as `Aborted`) and keeps the conversation usable.
    pub async fn prompt(
        &mut self,
        text: &str,
        signal: CancellationToken,
        renderer: &mut Renderer<'_>,
    ) -> PromptOutcome {
        let offered: Vec<_> = self
            .tool_names()
            .into_iter()
            .filter_map(|name| self.tools.get(name))
            .collect();
        let context = AgentContext {
            messages: self.transcript.clone(),
            ..AgentContext::new(self.system_prompt.clone())
                .with_available(self.tools.clone())
                .with_tools(offered)
        };
        let config = self.config();
        let mut events = agent_loop(
            vec![Message::user(text)],
            context,
            config,
            Arc::clone(&self.model),
            signal,
        );
        let mut outcome = PromptOutcome {
            stop_reason: StopReason::Stop,
            error_message: None,
        };
        while let Some(event) = events.next().await {
            if let AgentEvent::ToolExecutionEnd { call, .. } = &event {
                renderer.discount_wait(call.id(), self.progress.ended(call.id()));
            }
            renderer.event(&event);
            match &event {
                AgentEvent::ToolExecutionStart { call } => {
                    self.progress.started(call.id());
                }
                AgentEvent::MessageEnd { message } => {
                    if let Some(session) = &mut self.session
                        && let Err(err) = session.append(message)
                    {
                        renderer.warn(&format!(
                            "could not save the session to {}: {err}",
                            session.path().display()
                        ));
                    }
                    if let Some(assistant) = message.as_assistant() {
                        outcome = PromptOutcome {
                            stop_reason: assistant.stop_reason,
                            error_message: assistant.error_message.clone(),
                        };
                    }
                }
                AgentEvent::AgentEnd { messages } => {
                    self.transcript.extend(messages.iter().cloned())
                }
                _ => {}
            }
        }
        outcome
    }

    fn config(&self) -> AgentLoopConfig {
        let approval = self.approval.clone();
        let progress = Arc::clone(&self.progress);
        AgentLoopConfig::new()
            .stream_options(self.stream_options.clone())
            .before_tool_call(move |ctx| {
                let approval = approval.clone();
                let progress = Arc::clone(&progress);
                async move {
                    if ctx.tool_call.name != "bash" {
                        return Ok(BeforeToolCall::allow());
                    }
                    let command = ctx
                        .args
                        .get("command")
                        .and_then(|c| c.as_str())
                        .unwrap_or_default()
                        .to_owned();
                    Ok(match approval {
                        Approval::Always => BeforeToolCall::allow(),
                        Approval::Never(reason) => BeforeToolCall::block(reason),
                        Approval::Ask(approver) => {
                            let asked = Instant::now();
                            let id = ctx.tool_call.id.clone();
                            progress.rendered(&id, &ctx.signal).await;
                            let request = ApprovalRequest {
                                call_id: id.clone(),
                                command,
                                signal: ctx.signal.clone(),
                            };
                            let approved = approver(request).await;
                            let waited =
                                u64::try_from(asked.elapsed().as_millis()).unwrap_or(u64::MAX);
                            progress.record_wait(waited);
                            if approved {
                                BeforeToolCall::allow()
                            } else {
                                BeforeToolCall::block(DECLINED)
                            }
                        }
                    })
                }
            })
    }
}

/// pi's coding-agent system prompt for these tools (listed in pi's order) and `cwd`, without
/// context files; [`crate::system_prompt::build`] takes them, a custom prompt and appended text.
pub fn system_prompt(tools: &ToolRegistry, cwd: &std::path::Path) -> String {
    let names = crate::system_prompt::pi_order(tools.names());
    crate::system_prompt::build(&names, cwd, &crate::system_prompt::PromptParts::default())
}
