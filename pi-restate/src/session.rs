//! The durable session: a Restate virtual object, keyed by session id, that runs the agent
//! loop with every model request and tool call journaled and keeps the transcript in its state.

use std::fmt;
use std::sync::Arc;

use futures_util::StreamExt;
use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, AgentStream, Message, Model, agent_loop,
};
use pi_tool::{AgentTool, CancellationToken, StateMap, ToolRegistry};
use restate_sdk::context::RequestTarget;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::{self, Approval, refusing_approver};
use crate::driver::drive;
use crate::durable_model::DurableModel;
use crate::durable_tool::{CallScope, DurableTool};
use crate::inbox::INBOX_OBJECT;
use crate::journal::{Journal, Target};
use crate::remote_tool::{RemoteTool, RemoteToolSpec};
use crate::stamps::{apply_stamps, stamps_of};

/// The state key of the transcript.
pub const TRANSCRIPT_KEY: &str = "transcript";
/// The state key of the running invocation's id (what `abort` cancels).
pub const RUNNING_KEY: &str = "running";

/// What to prompt a session with: a text, or messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PromptRequest {
    /// One user message with this text.
    Text(String),
    /// These messages, in order.
    Messages {
        /// The messages.
        messages: Vec<Message>,
    },
}

impl PromptRequest {
    fn into_messages(self) -> Vec<Message> {
        match self {
            PromptRequest::Text(text) => vec![Message::user(text)],
            PromptRequest::Messages { messages } => messages,
        }
    }
}

/// What one prompt added to the transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunOutcome {
    /// The prompt, the assistant's messages and the tool results, in order.
    pub new_messages: Vec<Message>,
}

/// A durable agent session, served as the Restate virtual object `PiSession`.
///
/// Handlers (the object key is the session id):
/// - `prompt` (exclusive): appends the prompt to the transcript and runs the loop until the
///   model stops; returns the new messages. Prompts to one session queue up in arrival order.
/// - `followUp` (exclusive): the same, named for a message sent while a run is going: it runs
///   when the current run has finished, against the transcript that run left.
/// - `steer` (shared): queues a message the running prompt's loop delivers before its next
///   model request (with [`with_steering`](Self::with_steering)).
/// - `transcript` (shared): the stored transcript.
/// - `abort` (shared): cancels the running prompt; its run ends as `Aborted` and what it did
///   so far is kept.
pub struct PiSession {
    setup: Arc<Setup>,
}

struct Setup {
    model: Arc<dyn Model>,
    system_prompt: String,
    tools: ToolRegistry,
    remote: Vec<Arc<RemoteToolSpec>>,
    config: AgentLoopConfig,
    approval: Option<Approval>,
    steering: bool,
}

impl PiSession {
    /// A session service that talks to `model`, with no tools and no system prompt.
    pub fn new(model: Arc<dyn Model>) -> Self {
        PiSession {
            setup: Arc::new(Setup {
                model,
                system_prompt: String::new(),
                tools: ToolRegistry::new(),
                remote: Vec::new(),
                config: AgentLoopConfig::new(),
                approval: None,
                steering: false,
            }),
        }
    }

    fn setup_mut(&mut self) -> &mut Setup {
        Arc::get_mut(&mut self.setup).expect("a session is configured before it is served")
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.setup_mut().system_prompt = prompt.into();
        self
    }

    /// Offers the tools of `registry`; they run in this process, each call a journaled step.
    #[must_use]
    pub fn with_tools(mut self, registry: ToolRegistry) -> Self {
        self.setup_mut().tools = registry;
        self
    }

    /// Offers tools served by a [`PiTools`](crate::PiTools) service, called by durable RPC.
    #[must_use]
    pub fn with_remote_tools(mut self, tools: impl IntoIterator<Item = RemoteToolSpec>) -> Self {
        self.setup_mut()
            .remote
            .extend(tools.into_iter().map(Arc::new));
        self
    }

    /// The loop's configuration (execution mode, `max_parallel`, stream options, hooks).
    /// Hooks run again on replay, so they must be deterministic; `before_tool_call` is
    /// replaced by the approval's rule when [`with_approval`](Self::with_approval) is given one
    /// ([`Approval::new`]), and the approver by the awakeables of an approval.
    #[must_use]
    pub fn with_config(mut self, config: AgentLoopConfig) -> Self {
        self.setup_mut().config = config;
        self
    }

    /// Asks a human, through a Restate awakeable, before each call that waits: a call of a
    /// tool marked as needing approval (`#[tool(approval)]`, `approval = path`,
    /// `ToolRegistry::require_approval`), one `before_tool_call` suspends, an external tool's
    /// call, and those `approval`'s own rule selects. Without an approval such calls are
    /// refused with an error result that says so.
    #[must_use]
    pub fn with_approval(mut self, approval: Approval) -> Self {
        self.setup_mut().approval = Some(approval);
        self
    }

    /// Accepts steering messages (`steer`) while a prompt runs: the loop takes them from the
    /// session's [`PiSessionInbox`](crate::PiSessionInbox) before each model request, one
    /// durable call each time. Bind `PiSessionInbox` in the same endpoint.
    #[must_use]
    pub fn with_steering(mut self) -> Self {
        self.setup_mut().steering = true;
        self
    }

    /// Runs the loop for `prompts` on top of the stored transcript and stores the result.
    async fn run(
        &self,
        ctx: &ObjectContext<'_>,
        prompts: Vec<Message>,
    ) -> Result<RunOutcome, HandlerError> {
        let setup = &*self.setup;
        let stored = ctx
            .get::<Json<Vec<Message>>>(TRANSCRIPT_KEY)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        ctx.set(RUNNING_KEY, ctx.invocation_id().to_owned());

        let session_id: Arc<str> = Arc::from(ctx.key());
        let (journal, steps) = Journal::new();
        let abort = CancellationToken::new();
        let context = self.context(&journal, &session_id, stored.clone());
        let mut config = setup.config.clone();
        // Each `DurableTool` applies the timeout inside its journaled step (so a timeout is
        // journaled like any result); the loop must not race it with a second one outside. A
        // remote tool's timeout is its tool service's.
        config.tool_timeout = None;
        // Calls that wait (the common approval marks, external tools, the session's own rule)
        // wait on awakeables; without an `Approval` nobody would hear of one, so they are
        // refused, unless the config brings an approver of its own.
        match &setup.approval {
            Some(approval) => {
                if let Some(rule) = approval.rule_hook() {
                    config.before_tool_call = Some(rule);
                }
                config.approver = Some(approval.approver(journal.clone(), Arc::clone(&session_id)));
                config.approval_timeout = approval::TIMEOUT;
            }
            None if config.approver.is_none() => config.approver = Some(refusing_approver()),
            None => {}
        }
        if setup.steering {
            let journal = journal.clone();
            let inbox = Target::Object {
                name: INBOX_OBJECT.to_owned(),
                key: session_id.to_string(),
                handler: "take".to_owned(),
            };
            config = config.steering(move || {
                let journal = journal.clone();
                let inbox = inbox.clone();
                async move {
                    let taken = journal.call(inbox, Value::Null, None).await;
                    taken
                        .ok()
                        .and_then(|value| serde_json::from_value(value).ok())
                        .unwrap_or_default()
                }
            });
        }
        let model: Arc<dyn Model> =
            Arc::new(DurableModel::new(Arc::clone(&setup.model), journal.clone()));
        drop(journal);
        let events = agent_loop(prompts, context, config, model, abort.clone());
        let new_messages = drive(ctx, steps, new_messages(events), &abort).await;

        let first_stamps = stamps_of(&new_messages);
        let stamps = ctx
            .run(move || async move { Ok(Json(first_stamps)) })
            .name("stamps")
            .await?
            .into_inner();
        let new_messages = apply_stamps(new_messages, &stamps);

        let mut transcript = stored;
        transcript.extend(new_messages.iter().cloned());
        ctx.set(TRANSCRIPT_KEY, Json(transcript));
        ctx.clear(RUNNING_KEY);
        Ok(RunOutcome { new_messages })
    }

    /// The loop's context for one invocation: every tool wrapped to run durably.
    fn context(
        &self,
        journal: &Journal,
        session_id: &Arc<str>,
        stored: Vec<Message>,
    ) -> AgentContext {
        let setup = &*self.setup;
        let mut offered = ToolRegistry::new();
        let limits = setup.config.call_limits();
        let scope = CallScope {
            session_id: Arc::clone(session_id),
            prompt: stored.len(),
        };
        for tool in setup.tools.tools() {
            let wrapped =
                DurableTool::new(Arc::clone(tool), journal.clone(), scope.clone(), limits);
            offered.register_arc(Arc::new(wrapped) as Arc<dyn AgentTool>);
        }
        for remote in &setup.remote {
            let wrapped = RemoteTool::new(Arc::clone(remote), journal.clone(), scope.clone());
            offered.register_arc(Arc::new(wrapped) as Arc<dyn AgentTool>);
        }
        let mut context = AgentContext::new(setup.system_prompt.clone())
            .with_registry(offered)
            .with_messages(stored);
        let mut state = StateMap::new();
        state.extend(setup.tools.state());
        context.state = state;
        context
    }
}

/// Drains the loop's events to the messages its run added.
async fn new_messages(mut events: AgentStream) -> Vec<Arc<Message>> {
    let mut added = Vec::new();
    while let Some(event) = events.next().await {
        if let AgentEvent::AgentEnd { messages } = event {
            added = messages;
        }
    }
    added
}

#[restate_sdk::object]
impl PiSession {
    /// Appends the prompt and runs the loop until the model stops.
    #[handler]
    async fn prompt(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<PromptRequest>,
    ) -> Result<Json<RunOutcome>, HandlerError> {
        self.run(&ctx, request.into_inner().into_messages())
            .await
            .map(Json)
    }

    /// A prompt that queues behind the running one.
    #[handler(name = "followUp")]
    async fn follow_up(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<PromptRequest>,
    ) -> Result<Json<RunOutcome>, HandlerError> {
        self.run(&ctx, request.into_inner().into_messages())
            .await
            .map(Json)
    }

    /// The stored transcript.
    #[handler]
    async fn transcript(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> Result<Json<Vec<Message>>, HandlerError> {
        Ok(ctx
            .get::<Json<Vec<Message>>>(TRANSCRIPT_KEY)
            .await?
            .unwrap_or_default())
    }

    /// Queues a steering message for the running prompt (it reaches the model before the next
    /// request); needs [`with_steering`](Self::with_steering).
    #[handler]
    async fn steer(
        &self,
        ctx: SharedObjectContext<'_>,
        request: Json<PromptRequest>,
    ) -> Result<(), HandlerError> {
        for message in request.into_inner().into_messages() {
            ctx.request::<Json<Message>, ()>(
                RequestTarget::object(INBOX_OBJECT, ctx.key(), "push"),
                Json(message),
            )
            .call()
            .await?;
        }
        Ok(())
    }

    /// Cancels the running prompt, if any; returns whether there was one.
    #[handler]
    async fn abort(&self, ctx: SharedObjectContext<'_>) -> Result<bool, HandlerError> {
        let Some(running) = ctx.get::<String>(RUNNING_KEY).await? else {
            return Ok(false);
        };
        ctx.invocation_handle(running).cancel();
        Ok(true)
    }
}

impl fmt::Debug for PiSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PiSession")
            .field("model", &self.setup.model.id())
            .field("system_prompt", &self.setup.system_prompt)
            .field("tools", &self.setup.tools.names().collect::<Vec<_>>())
            .field("remote_tools", &self.setup.remote.len())
            .field("approval", &self.setup.approval.is_some())
            .finish()
    }
}
