//! [`CodingAgent`]: a conversation with a model over the coding tools: the transcript, the
//! session file, `bash` approval through `before_tool_call`, and one [`agent_loop`] run per prompt.

use std::fmt;
use std::sync::Arc;

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

/// A `bash` call waiting for approval.
#[derive(Clone, Debug)]
pub struct ApprovalRequest {
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
    cwd: std::path::PathBuf,
    system_prompt: String,
    transcript: Vec<Arc<Message>>,
    session: Option<Session>,
    approval: Approval,
    stream_options: StreamOptions,
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
            cwd: cwd.to_path_buf(),
            system_prompt,
            transcript: Vec::new(),
            session: None,
            approval: Approval::Never(
                "Running commands was not approved: restart pi with --yes to allow it.".into(),
            ),
            stream_options: StreamOptions::default(),
        }
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

    /// The names of the tools offered to the model, sorted.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.names().collect()
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
        let context = AgentContext {
            messages: self.transcript.clone(),
            ..AgentContext::new(self.system_prompt.clone()).with_registry(self.tools.clone())
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
            renderer.event(&event);
            match &event {
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
        AgentLoopConfig::new()
            .stream_options(self.stream_options.clone())
            .before_tool_call(move |ctx| {
                let approval = approval.clone();
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
                            let request = ApprovalRequest {
                                command,
                                signal: ctx.signal.clone(),
                            };
                            if approver(request).await {
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

/// pi's coding-agent system prompt, shortened: role, tools, guidelines, working directory.
pub fn system_prompt(tools: &ToolRegistry, cwd: &std::path::Path) -> String {
    let mut prompt = String::from(
        "You are an expert coding assistant. You help users with coding tasks by reading files, executing commands, editing code, and writing new files.\n\nAvailable tools:\n",
    );
    for spec in tools.specs() {
        let first_sentence = spec
            .description
            .split(". ")
            .next()
            .unwrap_or(&spec.description);
        prompt.push_str(&format!(
            "- {}: {}\n",
            spec.name,
            first_sentence.trim_end_matches('.')
        ));
    }
    prompt.push_str(
        "\nGuidelines:\n- Use read to examine files before editing them.\n- Use edit for precise changes (every oldText must match exactly and be unique); use write only for new files or complete rewrites.\n- Use bash for file operations like ls, grep and find when no dedicated tool is available, and to build and test.\n- Be concise in your responses.\n- Show file paths clearly when working with files.\n",
    );
    prompt.push_str(&format!("\nCurrent working directory: {}", cwd.display()));
    prompt
}
