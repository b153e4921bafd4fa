//! Models without a network: [`ScriptedModel`] replays prepared responses, [`FnModel`] answers
//! with a closure. Both are for tests, examples and benchmarks.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use pi_tool::{CancellationToken, ToolSpec};
use serde_json::Value;

use crate::message::{AssistantContent, AssistantMessage, StopReason};
use crate::model::{AssistantEvent, Context, Model, StreamOptions};
use crate::transcript::{Transcript, snapshot_of};

/// The text of the error a [`ScriptedModel`] answers with once its script is used up.
pub const SCRIPT_EXHAUSTED: &str = "ScriptedModel: the script has no more responses";

/// One request a model received: an owned snapshot of its context.
///
/// Taken from the loop, it costs the same whatever the transcript's length: `messages` shares
/// the run's transcript, and `tools` is shared with the model's previous request when the
/// offered tools did not change (they are compared, not copied).
#[derive(Clone, Debug)]
pub struct ModelRequest {
    /// The system prompt.
    pub system_prompt: String,
    /// The transcript the model saw: a snapshot sharing the run's (see [`Transcript`]; a
    /// context built by hand, outside the loop, is copied, one pointer per message).
    pub messages: Transcript,
    /// The tools offered.
    pub tools: Arc<[ToolSpec]>,
    /// The request's abort signal.
    pub signal: CancellationToken,
    /// The API key given in the options, if any.
    pub api_key: Option<String>,
    /// The session id given in the options, if any.
    pub session_id: Option<String>,
    /// How many requests came before this one.
    pub index: usize,
    /// The offered tools the request marks deferred (with the API's own tool search, see
    /// [`ToolSearchMode`](crate::ToolSearchMode)): an API with a search would send them with
    /// `defer_loading`.
    pub deferred: Vec<String>,
}

impl ModelRequest {
    fn capture(
        context: &Context<'_>,
        options: &StreamOptions,
        index: usize,
        tools: &SharedSpecs,
    ) -> Self {
        ModelRequest {
            system_prompt: context.system_prompt.to_owned(),
            messages: snapshot_of(context.messages),
            tools: tools.share(context.tools),
            signal: options.signal.clone(),
            api_key: options.api_key.clone(),
            session_id: options.session_id.clone(),
            index,
            deferred: context
                .tools
                .iter()
                .filter(|t| options.tool_search.is_native() && options.tools.is_deferred(&t.name))
                .map(|t| t.name.clone())
                .collect(),
        }
    }

    /// The roles of the messages, in order (`user`, `assistant`, `toolResult`, `custom`).
    pub fn roles(&self) -> Vec<&'static str> {
        self.messages.iter().map(|m| m.role()).collect()
    }

    /// The names of the offered tools.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }
}

/// The tool list of a model's last request, shared by its following requests while the
/// offered tools stay the same (a request compares its specs with it instead of cloning them).
#[derive(Default)]
struct SharedSpecs(Mutex<Option<Arc<[ToolSpec]>>>);

impl SharedSpecs {
    fn share(&self, tools: &[ToolSpec]) -> Arc<[ToolSpec]> {
        let mut last = lock(&self.0);
        match &*last {
            Some(shared) if **shared == *tools => Arc::clone(shared),
            _ => {
                let shared: Arc<[ToolSpec]> = tools.into();
                *last = Some(Arc::clone(&shared));
                shared
            }
        }
    }
}

/// How a [`ScriptedModel`] streams each response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScriptedStreaming {
    /// `Start` (metadata, no content) then `Done` with the whole message, like pi's benchmark
    /// stream function.
    #[default]
    Whole,
    /// `Start`, then start/delta/end events for every block, then `Done`.
    Deltas,
}

/// A model that replays prepared assistant messages, one per request; built with
/// [`recording`](Self::recording) it also records every request it was given. When the
/// script is used up it answers with an error message (`stop_reason` `Error`, text
/// [`SCRIPT_EXHAUSTED`]).
///
/// A model from [`new`](Self::new) costs the same per request however long the run: a
/// recording one keeps every request, and each kept request holds its transcript, so a run's
/// later requests cost it a copy of the transcript's pointers each (records of 10,000 turns
/// hold about 1.6 GB).
///
/// ```
/// use pi_runtime::{AssistantContent, AssistantMessage, ScriptedModel, StopReason};
///
/// let model = ScriptedModel::new([AssistantMessage::new(vec![AssistantContent::text("hi")], StopReason::Stop)]);
/// assert_eq!(model.remaining(), 1);
/// assert_eq!(model.calls(), 0);
/// ```
pub struct ScriptedModel {
    script: Mutex<VecDeque<AssistantMessage>>,
    requests: Mutex<Vec<ModelRequest>>,
    tools: SharedSpecs,
    calls: AtomicUsize,
    record: bool,
    streaming: ScriptedStreaming,
    api: String,
    provider: String,
    id: String,
}

impl ScriptedModel {
    /// A model answering with `responses` in order, recording no request. Each response is
    /// stamped with this model's api, provider and id (`scripted`, `scripted`, `scripted-1`)
    /// unless it already has them.
    pub fn new(responses: impl IntoIterator<Item = AssistantMessage>) -> Self {
        ScriptedModel {
            script: Mutex::new(responses.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
            tools: SharedSpecs::default(),
            calls: AtomicUsize::new(0),
            record: false,
            streaming: ScriptedStreaming::Whole,
            api: "scripted".to_owned(),
            provider: "scripted".to_owned(),
            id: "scripted-1".to_owned(),
        }
    }

    /// A model like [`new`](Self::new)'s that records every request it is given, for
    /// [`requests`](Self::requests).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures_util::StreamExt;
    /// use pi_runtime::{agent_loop, AgentContext, AgentLoopConfig, AssistantContent, AssistantMessage,
    ///                  Message, ScriptedModel, StopReason};
    /// use pi_tool::CancellationToken;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let model = Arc::new(ScriptedModel::recording([
    ///     AssistantMessage::new(vec![AssistantContent::text("hi")], StopReason::Stop),
    /// ]));
    /// let run = agent_loop(vec![Message::user("hello")], AgentContext::new("Be brief."),
    ///                      AgentLoopConfig::new(), model.clone(), CancellationToken::new());
    /// run.count().await;
    /// assert_eq!(model.requests()[0].roles(), ["user"]);
    /// assert_eq!(model.requests()[0].system_prompt, "Be brief.");
    /// # });
    /// ```
    pub fn recording(responses: impl IntoIterator<Item = AssistantMessage>) -> Self {
        ScriptedModel {
            record: true,
            ..ScriptedModel::new(responses)
        }
    }

    /// Records no requests (what [`new`](Self::new) gives; for a model from
    /// [`recording`](Self::recording)).
    #[must_use]
    pub fn without_recording(mut self) -> Self {
        self.record = false;
        self
    }

    /// Sets how responses are streamed.
    #[must_use]
    pub fn streaming(mut self, streaming: ScriptedStreaming) -> Self {
        self.streaming = streaming;
        self
    }

    /// Sets the api, provider and model id the model reports.
    #[must_use]
    pub fn with_identity(
        mut self,
        api: impl Into<String>,
        provider: impl Into<String>,
        id: impl Into<String>,
    ) -> Self {
        self.api = api.into();
        self.provider = provider.into();
        self.id = id.into();
        self
    }

    /// Appends a response to the script.
    pub fn push(&self, response: AssistantMessage) {
        lock(&self.script).push_back(response);
    }

    /// How many requests the model received.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    /// How many responses are left.
    pub fn remaining(&self) -> usize {
        lock(&self.script).len()
    }

    /// The requests received so far (empty unless the model is [`recording`](Self::recording)).
    pub fn requests(&self) -> Vec<ModelRequest> {
        lock(&self.requests).clone()
    }

    fn stamp(&self, mut message: AssistantMessage) -> AssistantMessage {
        if message.api.is_empty() {
            message.api.clone_from(&self.api);
        }
        if message.provider.is_empty() {
            message.provider.clone_from(&self.provider);
        }
        if message.model.is_empty() {
            message.model.clone_from(&self.id);
        }
        message
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("remaining", &self.remaining())
            .field("calls", &self.calls())
            .field("record", &self.record)
            .field("streaming", &self.streaming)
            .finish()
    }
}

impl Model for ScriptedModel {
    fn api(&self) -> &str {
        &self.api
    }

    /// A scripted stand-in for an API with a search of its own (its identity, see
    /// [`ScriptedModel::with_identity`], is `anthropic-messages` or `openai-responses`) has one.
    fn native_tool_search(&self) -> bool {
        matches!(self.api.as_str(), "anthropic-messages" | "openai-responses")
    }

    /// A scripted stand-in for an API that runs the model's code (Anthropic Messages, OpenAI
    /// Responses) does, as the API does.
    fn native_code_calls(&self) -> bool {
        matches!(self.api.as_str(), "anthropic-messages" | "openai-responses")
    }

    fn provider(&self) -> &str {
        &self.provider
    }

    fn id(&self) -> &str {
        &self.id
    }

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> BoxStream<'a, AssistantEvent> {
        let index = self.calls.fetch_add(1, Ordering::Relaxed);
        if self.record {
            let request = ModelRequest::capture(&context, options, index, &self.tools);
            lock(&self.requests).push(request);
        }
        let next = lock(&self.script).pop_front();
        let Some(message) = next else {
            let error = self.stamp(AssistantMessage::failed(
                StopReason::Error,
                SCRIPT_EXHAUSTED,
            ));
            return stream::iter([AssistantEvent::Error {
                reason: StopReason::Error,
                error,
            }])
            .boxed();
        };
        let message = self.stamp(message);
        let partial = AssistantMessage {
            content: Vec::new(),
            api: message.api.clone(),
            provider: message.provider.clone(),
            model: message.model.clone(),
            ..AssistantMessage::empty()
        };
        if self.streaming == ScriptedStreaming::Whole {
            return stream::iter([AssistantEvent::Start { partial }, final_event(message)]).boxed();
        }
        let mut events = vec![AssistantEvent::Start { partial }];
        push_block_events(&message, &mut events);
        events.push(final_event(message));
        stream::iter(events).boxed()
    }
}

/// `Done`, or `Error` for a message that stopped with `Error`/`Aborted`.
fn final_event(message: AssistantMessage) -> AssistantEvent {
    match message.stop_reason {
        StopReason::Error | StopReason::Aborted => AssistantEvent::Error {
            reason: message.stop_reason,
            error: message,
        },
        reason => AssistantEvent::Done { reason, message },
    }
}

/// The start/delta/end events that stream `message`'s blocks (text split in two deltas).
fn push_block_events(message: &AssistantMessage, events: &mut Vec<AssistantEvent>) {
    for (content_index, block) in message.content.iter().enumerate() {
        match block {
            AssistantContent::Text { text, .. } => {
                events.push(AssistantEvent::TextStart { content_index });
                for delta in halves(text) {
                    events.push(AssistantEvent::TextDelta {
                        content_index,
                        delta,
                    });
                }
                events.push(AssistantEvent::TextEnd {
                    content_index,
                    content: text.clone(),
                });
            }
            AssistantContent::Thinking { thinking, .. } => {
                events.push(AssistantEvent::ThinkingStart { content_index });
                for delta in halves(thinking) {
                    events.push(AssistantEvent::ThinkingDelta {
                        content_index,
                        delta,
                    });
                }
                events.push(AssistantEvent::ThinkingEnd {
                    content_index,
                    content: thinking.clone(),
                });
            }
            AssistantContent::ToolCall(block) => {
                events.push(AssistantEvent::ToolCallStart {
                    content_index,
                    id: block.call.id.clone(),
                    name: block.call.name.clone(),
                });
                let json = match &block.call.arguments {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                for delta in halves(&json) {
                    events.push(AssistantEvent::ToolCallDelta {
                        content_index,
                        delta,
                    });
                }
                events.push(AssistantEvent::ToolCallEnd {
                    content_index,
                    tool_call: block.clone(),
                });
            }
            AssistantContent::Provider(block) => events.push(AssistantEvent::ProviderBlock {
                content_index,
                block: block.clone(),
            }),
        }
    }
}

/// `text` in two pieces, split at a char boundary near the middle (one piece when short).
fn halves(text: &str) -> Vec<String> {
    let mut middle = text.len() / 2;
    while !text.is_char_boundary(middle) {
        middle += 1;
    }
    let (a, b) = text.split_at(middle);
    [a, b]
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

type Respond = dyn Fn(ModelRequest) -> futures_util::future::BoxFuture<'static, AssistantMessage>
    + Send
    + Sync;

/// A model that answers each request with a closure (an async fn of the request), for tests
/// whose response depends on the context or the abort signal. A message with `stop_reason`
/// `Error`/`Aborted` ends the stream with `Error`, any other with `Done`.
///
/// The request it hands the closure costs the same whatever the transcript's length (see
/// [`ModelRequest`]). A closure that keeps requests past its answer makes the run copy its
/// transcript's pointers once at its next message (the snapshot keeps its messages).
///
/// ```
/// use pi_runtime::{AssistantContent, AssistantMessage, FnModel, StopReason};
///
/// let model = FnModel::new(|request| async move {
///     let text = format!("you said {} things", request.messages.len());
///     AssistantMessage::new(vec![AssistantContent::text(text)], StopReason::Stop)
/// });
/// # let _ = model;
/// ```
pub struct FnModel {
    respond: Box<Respond>,
    tools: SharedSpecs,
    calls: AtomicUsize,
}

impl FnModel {
    /// A model answering with `respond`.
    pub fn new<F, Fut>(respond: F) -> Self
    where
        F: Fn(ModelRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = AssistantMessage> + Send + 'static,
    {
        FnModel {
            respond: Box::new(move |request| Box::pin(respond(request))),
            tools: SharedSpecs::default(),
            calls: AtomicUsize::new(0),
        }
    }

    /// How many requests the model received.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for FnModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnModel")
            .field("calls", &self.calls())
            .finish()
    }
}

impl Model for FnModel {
    fn api(&self) -> &str {
        "scripted"
    }

    fn provider(&self) -> &str {
        "scripted"
    }

    fn id(&self) -> &str {
        "fn-model"
    }

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> BoxStream<'a, AssistantEvent> {
        let index = self.calls.fetch_add(1, Ordering::Relaxed);
        let request = ModelRequest::capture(&context, options, index, &self.tools);
        let response = (self.respond)(request);
        stream::once(async move {
            let mut message = response.await;
            if message.api.is_empty() {
                message.api = "scripted".to_owned();
                message.provider = "scripted".to_owned();
                message.model = "fn-model".to_owned();
            }
            final_event(message)
        })
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AgentContext, AgentLoopConfig, Message, agent_loop};
    use pi_tool::{AgentTool, FnTool};

    fn call(id: &str) -> AssistantMessage {
        AssistantMessage::new(
            vec![AssistantContent::tool_call(
                id,
                "noop",
                serde_json::json!({}),
            )],
            StopReason::ToolUse,
        )
    }

    fn done() -> AssistantMessage {
        AssistantMessage::new(vec![AssistantContent::text("done")], StopReason::Stop)
    }

    fn noop() -> Arc<dyn AgentTool> {
        let schema = serde_json::json!({"type": "object", "properties": {}});
        Arc::new(
            FnTool::builder("noop", "Does nothing.", schema)
                .build(|_: Value, _| async { "ok" })
                .unwrap(),
        )
    }

    async fn run(model: Arc<dyn Model>, config: AgentLoopConfig) {
        let context = AgentContext::new("").with_tools([noop()]);
        let events = agent_loop(
            vec![Message::user("go")],
            context,
            config,
            model,
            CancellationToken::new(),
        );
        events.count().await;
    }

    /// Issue 37: recording every request made each request cost a copy of the transcript.
    #[tokio::test]
    async fn a_scripted_model_records_only_when_built_recording() {
        let plain = Arc::new(ScriptedModel::new([call("c1"), done()]));
        run(plain.clone(), AgentLoopConfig::new()).await;
        assert_eq!(plain.calls(), 2);
        assert!(plain.requests().is_empty(), "new records nothing");

        let recording = Arc::new(ScriptedModel::recording([call("c1"), done()]));
        run(recording.clone(), AgentLoopConfig::new()).await;
        let requests = recording.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].roles(), ["user", "assistant", "toolResult"]);
        assert!(
            Arc::ptr_eq(&requests[0].tools, &requests[1].tools),
            "the same tools are shared, not cloned per request"
        );
        let quiet = ScriptedModel::recording([done()]).without_recording();
        assert!(!quiet.record);
    }

    /// Issue 37: an `FnModel` request copied the transcript's pointers and cloned every
    /// spec; it now shares the run's transcript (the buffer `prepare_request` saw) and the
    /// previous request's specs.
    #[tokio::test]
    async fn an_fn_model_request_shares_the_transcript_and_the_specs() {
        type Seen<T> = Arc<Mutex<Vec<T>>>;
        let (hook_buffers, model_buffers): (Seen<usize>, Seen<usize>) = Default::default();
        let specs: Seen<Arc<[ToolSpec]>> = Default::default();
        let model = {
            let (model_buffers, specs) = (Arc::clone(&model_buffers), Arc::clone(&specs));
            FnModel::new(move |request| {
                lock(&model_buffers).push(request.messages.as_ptr() as usize);
                lock(&specs).push(Arc::clone(&request.tools));
                async move {
                    match request.index {
                        0 | 1 => call(&format!("c{}", request.index)),
                        _ => done(),
                    }
                }
            })
        };
        let config = {
            let hook_buffers = Arc::clone(&hook_buffers);
            AgentLoopConfig::new().prepare_request(move |ctx| {
                lock(&hook_buffers).push(ctx.messages.as_ptr() as usize);
                async { None }
            })
        };
        run(Arc::new(model), config).await;
        let model_buffers = lock(&model_buffers).clone();
        assert_eq!(model_buffers.len(), 3);
        assert_eq!(*lock(&hook_buffers), model_buffers, "the run's own buffer");
        let specs = lock(&specs);
        assert!(Arc::ptr_eq(&specs[0], &specs[1]) && Arc::ptr_eq(&specs[1], &specs[2]));
        assert_eq!(specs[0][0].name, "noop");
    }

    /// A context built by hand (no run lends its transcript) is copied.
    #[test]
    fn a_request_outside_a_run_copies_its_messages() {
        let messages = vec![Arc::new(Message::user("hi"))];
        let context = Context {
            system_prompt: "",
            messages: &messages,
            tools: &[],
        };
        let request = ModelRequest::capture(
            &context,
            &StreamOptions::default(),
            0,
            &SharedSpecs::default(),
        );
        assert_eq!(request.roles(), ["user"]);
        assert!(Arc::ptr_eq(&request.messages[0], &messages[0]));
    }
}
