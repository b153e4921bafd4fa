//! The transcript: user, assistant and tool-result messages, with pi's JSON shapes.

use std::time::{SystemTime, UNIX_EPOCH};

use pi_tool::{Content, ToolCall, Usage};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// Milliseconds since the Unix epoch: the `timestamp` of every message.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// One entry of the transcript. Serializes with pi's `role` tag: `user`, `assistant`,
/// `toolResult`, or `custom` for application messages the model never sees unless
/// `convert_to_llm` turns them into something it does.
///
/// Not `#[non_exhaustive]`: these are pi's four roles, and a new kind of message is a new
/// `kind` of [`CustomMessage`], so a `match` over the roles stays complete.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// What the user (or the host on the user's behalf) said.
    User(UserMessage),
    /// What the model answered.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    ToolResult(ToolResultMessage),
    /// An application message (a notification, a UI marker); not sent to a model by default.
    Custom(CustomMessage),
}

impl Message {
    /// A user message with one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User(UserMessage::text(text))
    }

    /// The role as pi spells it: `user`, `assistant`, `toolResult`, `custom`.
    pub fn role(&self) -> &'static str {
        match self {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
            Message::Custom(_) => "custom",
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Message::Assistant(message) => Some(message),
            _ => None,
        }
    }

    /// The tool result, if this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            Message::ToolResult(message) => Some(message),
            _ => None,
        }
    }

    /// The timestamp (ms since the epoch).
    pub fn timestamp(&self) -> i64 {
        match self {
            Message::User(m) => m.timestamp,
            Message::Assistant(m) => m.timestamp,
            Message::ToolResult(m) => m.timestamp,
            Message::Custom(m) => m.timestamp,
        }
    }
}

/// A user turn: text and images.
///
/// Built with [`UserMessage::text`] or [`UserMessage::new`]; `#[non_exhaustive]`, so a field
/// added later is not a breaking change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UserMessage {
    /// Text and image blocks (pi also accepts a bare string, read here as one text block).
    #[serde(deserialize_with = "string_or_blocks")]
    pub content: Vec<Content>,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: i64,
}

impl UserMessage {
    /// A user message with one text block, stamped now.
    pub fn text(text: impl Into<String>) -> Self {
        UserMessage::new(vec![Content::text(text)])
    }

    /// A user message with the given text and image blocks, stamped now.
    pub fn new(content: Vec<Content>) -> Self {
        UserMessage {
            content,
            timestamp: now_ms(),
        }
    }

    /// The same message with another timestamp (ms since the epoch).
    #[must_use]
    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }
}

fn string_or_blocks<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Content>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Text(String),
        Blocks(Vec<Content>),
    }
    Ok(match Either::deserialize(deserializer)? {
        Either::Text(text) => vec![Content::Text { text }],
        Either::Blocks(blocks) => blocks,
    })
}

/// Why the model stopped. `#[non_exhaustive]`: APIs add reasons (a refusal, a paused turn), so
/// a `match` needs a `_` arm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum StopReason {
    /// A natural end of the answer.
    #[default]
    Stop,
    /// The output token limit was hit: the answer (and any tool call in it) may be truncated.
    Length,
    /// The model asked for tool calls.
    ToolUse,
    /// The request failed; see `error_message`.
    Error,
    /// The run was aborted.
    Aborted,
}

/// A block of an assistant message.
///
/// `#[non_exhaustive]`, and so are its `Text` and `Thinking` variants: models gain kinds of
/// blocks and blocks gain fields, so a `match` needs a `_` arm and a variant's pattern a `..`.
/// Build blocks with [`text`](Self::text), [`thinking`](Self::thinking),
/// [`tool_call`](Self::tool_call) and their `with_*` methods.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum AssistantContent {
    /// Visible text.
    #[non_exhaustive]
    Text {
        /// The text.
        text: String,
        /// Provider-opaque signature to send back with the text (OpenAI Responses item id).
        #[serde(
            default,
            rename = "textSignature",
            skip_serializing_if = "Option::is_none"
        )]
        text_signature: Option<String>,
    },
    /// Reasoning the model showed (or an opaque, redacted form of it).
    #[non_exhaustive]
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// Provider-opaque signature that must accompany the thinking when replayed.
        #[serde(
            default,
            rename = "thinkingSignature",
            skip_serializing_if = "Option::is_none"
        )]
        thinking_signature: Option<String>,
        /// The provider returned the reasoning encrypted; `thinking_signature` holds it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
    /// A call of a tool.
    ToolCall(ToolCallBlock),
    /// A block the API's own server produced: a hosted tool's call or result (Anthropic's
    /// `server_tool_use`, `tool_search_tool_result`; OpenAI's `tool_search_call`,
    /// `tool_search_output`, `program`). Kept as the API sent it and sent back unchanged on the
    /// next request to the same API (the API needs it to know what it searched and loaded);
    /// other APIs never see it.
    Provider(ProviderBlock),
}

/// A block kept for the API that produced it (see [`AssistantContent::Provider`]). Built with
/// [`ProviderBlock::new`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProviderBlock {
    /// The wire API it belongs to (`anthropic-messages`, `openai-responses`).
    pub api: String,
    /// The block (Anthropic) or output item (OpenAI) as received. Key order is kept, so it
    /// serializes to the bytes the API sent.
    pub block: Value,
}

impl ProviderBlock {
    /// The block `block` (as the API sent it) of the wire API `api`.
    pub fn new(api: impl Into<String>, block: Value) -> Self {
        ProviderBlock {
            api: api.into(),
            block,
        }
    }

    /// The block's `type` (`server_tool_use`, `tool_search_call`, ...).
    pub fn kind(&self) -> &str {
        self.block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

impl AssistantContent {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        AssistantContent::Text {
            text: text.into(),
            text_signature: None,
        }
    }

    /// A thinking block.
    pub fn thinking(thinking: impl Into<String>) -> Self {
        AssistantContent::Thinking {
            thinking: thinking.into(),
            thinking_signature: None,
            redacted: false,
        }
    }

    /// A redacted thinking block: the provider sent the reasoning encrypted, as `signature`.
    pub fn redacted_thinking(signature: impl Into<String>) -> Self {
        AssistantContent::Thinking {
            thinking: String::new(),
            thinking_signature: Some(signature.into()),
            redacted: true,
        }
    }

    /// A tool-call block.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        AssistantContent::ToolCall(ToolCallBlock::new(id, name, arguments))
    }

    /// The same block with the provider's signature: `text_signature` of a text block,
    /// `thinking_signature` of a thinking block, `thought_signature` of a tool call; other
    /// blocks are returned unchanged.
    #[must_use]
    pub fn with_signature(mut self, signature: impl Into<String>) -> Self {
        match &mut self {
            AssistantContent::Text { text_signature, .. } => {
                *text_signature = Some(signature.into())
            }
            AssistantContent::Thinking {
                thinking_signature, ..
            } => *thinking_signature = Some(signature.into()),
            AssistantContent::ToolCall(block) => block.thought_signature = Some(signature.into()),
            AssistantContent::Provider(_) => {}
        }
        self
    }
}

/// A tool call inside an assistant message: `{"type":"toolCall","id","name","arguments"}`.
///
/// Built with [`ToolCallBlock::new`] (or [`from_call`](Self::from_call)) and the `with_*`
/// methods; `#[non_exhaustive]`, so a field added later is not a breaking change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallBlock {
    /// Id, tool name and raw arguments.
    #[serde(flatten)]
    pub call: ToolCall,
    /// Provider-opaque signature bound to the call (Gemini `thoughtSignature`).
    #[serde(
        default,
        rename = "thoughtSignature",
        skip_serializing_if = "Option::is_none"
    )]
    pub thought_signature: Option<String>,
    /// Fields of the call the API sent besides its id, name and arguments, sent back with the
    /// call to the same API: Anthropic's `caller` (who made the call: the model, or code it
    /// ran), OpenAI's `caller` and `namespace`. Dropped for another API.
    #[serde(
        default,
        rename = "providerFields",
        skip_serializing_if = "Map::is_empty"
    )]
    pub provider_fields: Map<String, Value>,
}

impl ToolCallBlock {
    /// A call with the given id, tool name and arguments, with no signature or provider fields.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCallBlock::from_call(ToolCall::new(id, name, arguments))
    }

    /// The block for `call`, with no signature or provider fields.
    pub fn from_call(call: ToolCall) -> Self {
        ToolCallBlock {
            call,
            thought_signature: None,
            provider_fields: Map::new(),
        }
    }

    /// The same block with a provider signature (Gemini `thoughtSignature`).
    #[must_use]
    pub fn with_thought_signature(mut self, signature: impl Into<String>) -> Self {
        self.thought_signature = Some(signature.into());
        self
    }

    /// The same block with the API's own fields of the call (see
    /// [`provider_fields`](Self::provider_fields)).
    #[must_use]
    pub fn with_provider_fields(mut self, fields: Map<String, Value>) -> Self {
        self.provider_fields = fields;
        self
    }
}

/// What the model answered, with where it came from and how it ended.
///
/// Built with [`AssistantMessage::new`], [`empty`](Self::empty) or [`failed`](Self::failed)
/// and the `with_*` methods; `#[non_exhaustive]`, so a field added later is not a breaking
/// change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AssistantMessage {
    /// Text, thinking and tool calls, in the order the model produced them.
    pub content: Vec<AssistantContent>,
    /// The wire API (`openai-completions`, `anthropic-messages`, ...).
    #[serde(default)]
    pub api: String,
    /// The provider (`openai`, `anthropic`, `google`, ...).
    #[serde(default)]
    pub provider: String,
    /// The model id.
    #[serde(default)]
    pub model: String,
    /// The provider's id for the response, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// Tokens and cost.
    #[serde(default)]
    pub usage: Usage,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// What went wrong, when `stop_reason` is `Error` or `Aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: i64,
    /// Fields of the response that the next request to the same API needs, kept as the API
    /// sent them: Anthropic's `container` (`{"id", "expires_at"}`, the code-execution
    /// container its code runs in; a program paused on a tool call continues only in it).
    /// Dropped for another API.
    #[serde(
        default,
        rename = "providerFields",
        skip_serializing_if = "Map::is_empty"
    )]
    pub provider_fields: Map<String, Value>,
}

impl AssistantMessage {
    /// An empty message (no content, zero usage, `Stop`), stamped now.
    pub fn empty() -> Self {
        AssistantMessage {
            content: Vec::new(),
            api: String::new(),
            provider: String::new(),
            model: String::new(),
            response_id: None,
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp: now_ms(),
            provider_fields: Map::new(),
        }
    }

    /// A message with the given content and stop reason.
    pub fn new(content: Vec<AssistantContent>, stop_reason: StopReason) -> Self {
        AssistantMessage {
            content,
            stop_reason,
            ..AssistantMessage::empty()
        }
    }

    /// A failed response: empty text, `stop_reason` `Error` (or `Aborted`), and the message.
    pub fn failed(stop_reason: StopReason, error_message: impl Into<String>) -> Self {
        AssistantMessage {
            content: vec![AssistantContent::text("")],
            stop_reason,
            error_message: Some(error_message.into()),
            ..AssistantMessage::empty()
        }
    }

    /// The same message from another wire API (`anthropic-messages`, ...).
    #[must_use]
    pub fn with_api(mut self, api: impl Into<String>) -> Self {
        self.api = api.into();
        self
    }

    /// The same message from another provider (`anthropic`, ...).
    #[must_use]
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = provider.into();
        self
    }

    /// The same message from another model id.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// The same message with the provider's id for the response.
    #[must_use]
    pub fn with_response_id(mut self, response_id: impl Into<String>) -> Self {
        self.response_id = Some(response_id.into());
        self
    }

    /// The same message with its token usage and cost.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// The same message with what went wrong.
    #[must_use]
    pub fn with_error_message(mut self, error_message: impl Into<String>) -> Self {
        self.error_message = Some(error_message.into());
        self
    }

    /// The same message with another timestamp (ms since the epoch).
    #[must_use]
    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }

    /// The same message with the API's own fields of the response (see
    /// [`provider_fields`](Self::provider_fields)).
    #[must_use]
    pub fn with_provider_fields(mut self, fields: Map<String, Value>) -> Self {
        self.provider_fields = fields;
        self
    }

    /// The tool calls, in content order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCallBlock> {
        self.content.iter().filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The text blocks joined with `\n`.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                AssistantContent::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// The result of one tool call, as appended to the transcript and sent to the model.
///
/// Built with [`ToolResultMessage::new`] (or [`from_result`](Self::from_result), from what a
/// tool returned) and the `with_*` methods, e.g. to answer a call yourself before resuming a
/// run; `#[non_exhaustive]`, so a field added later is not a breaking change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Text and image blocks for the model.
    pub content: Vec<Content>,
    /// Structured data for a UI or logs; not sent to the model.
    #[serde(default)]
    pub details: Value,
    /// The call failed; the content explains why.
    #[serde(default)]
    pub is_error: bool,
    /// How long preparation and execution took, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: i64,
}

impl ToolResultMessage {
    /// The answer to call `tool_call_id` of tool `tool_name`: `content` for the model, no
    /// details, not an error, no duration, stamped now.
    pub fn new(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: Vec<Content>,
    ) -> Self {
        ToolResultMessage {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            content,
            details: Value::Null,
            is_error: false,
            duration_ms: None,
            timestamp: now_ms(),
        }
    }

    /// An error answer to call `tool_call_id` of `tool_name`: one text block saying why.
    pub fn error(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        ToolResultMessage::new(tool_call_id, tool_name, vec![Content::text(text)])
            .with_is_error(true)
    }

    /// The answer to `call` made of what its tool returned: content, details and `is_error`.
    pub fn from_result(call: &ToolCall, result: pi_tool::ToolResult) -> Self {
        ToolResultMessage::new(call.id.clone(), call.name.clone(), result.content)
            .with_details(result.details)
            .with_is_error(result.is_error)
    }

    /// The same result with structured details (for a UI or logs; not sent to the model).
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// The same result, marked as failed (or not).
    #[must_use]
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// The same result with how long preparing and running the call took.
    #[must_use]
    pub fn with_duration_ms(mut self, duration_ms: u64) -> Self {
        self.duration_ms = Some(duration_ms);
        self
    }

    /// The same result with another timestamp (ms since the epoch).
    #[must_use]
    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }

    /// The text blocks joined with `\n`.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self.content.iter().filter_map(Content::as_text).collect();
        texts.join("\n")
    }
}

/// An application message kept in the transcript (pi's custom `AgentMessage` types). Built
/// with [`CustomMessage::new`]; `#[non_exhaustive]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CustomMessage {
    /// The application's name for this kind of message (`notification`, ...).
    pub kind: String,
    /// Its payload.
    #[serde(default)]
    pub data: Value,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: i64,
}

impl CustomMessage {
    /// The [`kind`](Self::kind) of the record the agent loop appends when the tools offered to
    /// the model change during a run (see [`TurnUpdate`](crate::TurnUpdate)).
    pub const TOOLS_CHANGED: &'static str = "tools_changed";

    /// A message of the application's `kind` with its payload, stamped now.
    pub fn new(kind: impl Into<String>, data: Value) -> Self {
        CustomMessage {
            kind: kind.into(),
            data,
            timestamp: now_ms(),
        }
    }

    /// The same message with another timestamp (ms since the epoch).
    #[must_use]
    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }

    /// A [`TOOLS_CHANGED`](Self::TOOLS_CHANGED) record: `data` is
    /// `{"added": [names], "removed": [names]}`. Unlike other custom messages, providers send it
    /// to the model, as the note [`model_note`](Self::model_note) gives.
    pub fn tools_changed(added: Vec<String>, removed: Vec<String>) -> Self {
        CustomMessage {
            kind: Self::TOOLS_CHANGED.to_owned(),
            data: serde_json::json!({"added": added, "removed": removed}),
            timestamp: now_ms(),
        }
    }

    /// For a [`TOOLS_CHANGED`](Self::TOOLS_CHANGED) record: the names it says were added and
    /// removed (names that are not strings are skipped); `None` for every other kind.
    pub fn changed_tools(&self) -> Option<(Vec<&str>, Vec<&str>)> {
        if self.kind != Self::TOOLS_CHANGED {
            return None;
        }
        let names = |field: &str| -> Vec<&str> {
            self.data
                .get(field)
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default()
        };
        Some((names("added"), names("removed")))
    }

    /// The text a model reads for this message: a note naming the added and removed tools for
    /// a [`TOOLS_CHANGED`](Self::TOOLS_CHANGED) record; `None` for every other kind, which
    /// models never see (unless `convert_to_llm` turns them into something they do).
    pub fn model_note(&self) -> Option<String> {
        let (added, removed) = self.changed_tools()?;
        let mut note = String::from("[The tools available to you changed.");
        if !added.is_empty() {
            note.push_str(" New tools: ");
            note.push_str(&added.join(", "));
            note.push('.');
        }
        if !removed.is_empty() {
            note.push_str(" Removed tools, which can no longer be called: ");
            note.push_str(&removed.join(", "));
            note.push('.');
        }
        note.push(']');
        Some(note)
    }
}

impl AssistantMessage {
    /// Applies one streamed event, so a listener can follow a response as it grows (each call
    /// costs the size of the event, not of the message).
    pub fn apply(&mut self, event: &crate::AssistantEvent) {
        use crate::AssistantEvent as E;
        match event {
            E::Start { partial } => *self = partial.clone(),
            E::TextStart { content_index } => {
                self.block_at(*content_index, || AssistantContent::text(""))
            }
            E::TextDelta {
                content_index,
                delta,
            } => {
                self.block_at(*content_index, || AssistantContent::text(""));
                if let Some(AssistantContent::Text { text, .. }) =
                    self.content.get_mut(*content_index)
                {
                    text.push_str(delta);
                }
            }
            E::TextEnd {
                content_index,
                content,
            } => {
                self.block_at(*content_index, || AssistantContent::text(""));
                if let Some(AssistantContent::Text { text, .. }) =
                    self.content.get_mut(*content_index)
                {
                    text.clone_from(content);
                }
            }
            E::ThinkingStart { content_index } => {
                self.block_at(*content_index, || AssistantContent::thinking(""))
            }
            E::ThinkingDelta {
                content_index,
                delta,
            } => {
                self.block_at(*content_index, || AssistantContent::thinking(""));
                if let Some(AssistantContent::Thinking { thinking, .. }) =
                    self.content.get_mut(*content_index)
                {
                    thinking.push_str(delta);
                }
            }
            E::ThinkingEnd {
                content_index,
                content,
            } => {
                self.block_at(*content_index, || AssistantContent::thinking(""));
                if let Some(AssistantContent::Thinking { thinking, .. }) =
                    self.content.get_mut(*content_index)
                {
                    thinking.clone_from(content);
                }
            }
            E::ToolCallStart {
                content_index,
                id,
                name,
            } => self.block_at(*content_index, || {
                AssistantContent::tool_call(
                    id.clone(),
                    name.clone(),
                    Value::Object(Default::default()),
                )
            }),
            E::ToolCallDelta { .. } => {}
            E::ToolCallEnd {
                content_index,
                tool_call,
            } => {
                self.replace_at(
                    *content_index,
                    AssistantContent::ToolCall(tool_call.clone()),
                );
            }
            E::ProviderBlock {
                content_index,
                block,
            } => self.replace_at(*content_index, AssistantContent::Provider(block.clone())),
            E::Done { message, .. } => *self = message.clone(),
            E::Error { error, .. } => *self = error.clone(),
        }
    }

    /// Makes sure a block exists at `index` (pushing `make()` when the index is new).
    fn block_at(&mut self, index: usize, make: impl FnOnce() -> AssistantContent) {
        if index >= self.content.len() {
            self.content.push(make());
        }
    }

    /// Puts `block` at `index`: replaces the block there, or pushes it when the index is new.
    /// An index past the end (events that skip one) appends rather than panics.
    fn replace_at(&mut self, index: usize, block: AssistantContent) {
        match self.content.get_mut(index) {
            Some(slot) => *slot = block,
            None => self.content.push(block),
        }
    }
}
