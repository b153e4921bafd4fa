//! Builds the assistant message from a provider's stream and emits the matching events, so each
//! wire format only says what happened (a text delta, a tool call began, ...).

use pi_tool::Usage;
use serde_json::{Map, Value};

use super::partial_json::parse_arguments;
use crate::message::{AssistantContent, AssistantMessage, ProviderBlock, StopReason};
use crate::model::AssistantEvent;

/// The message under construction and the events not yet handed out.
#[derive(Debug)]
pub(crate) struct Assembler {
    message: AssistantMessage,
    /// Per content index: still open, and the raw argument text of a tool call.
    blocks: Vec<BlockState>,
    events: Vec<AssistantEvent>,
    finished: bool,
    /// How much argument text one call keeps; see [`Assembler::set_max_argument_bytes`].
    max_argument_bytes: usize,
}

#[derive(Debug, Default)]
struct BlockState {
    open: bool,
    arguments: String,
    /// The argument text went past the limit: the rest of it is dropped.
    over_limit: bool,
    /// Arguments that arrived whole (Anthropic's `input`, Gemini's `args`), used when no
    /// argument text streamed.
    seeded: Option<Value>,
}

impl Assembler {
    /// Starts a message for the given API, provider and model; emits `Start`.
    pub(crate) fn new(api: &str, provider: &str, model: &str) -> Self {
        let mut message = AssistantMessage::empty();
        message.api = api.to_owned();
        message.provider = provider.to_owned();
        message.model = model.to_owned();
        let start = AssistantEvent::Start {
            partial: message.clone(),
        };
        Assembler {
            message,
            blocks: Vec::new(),
            events: vec![start],
            finished: false,
            max_argument_bytes: pi_tool::DEFAULT_MAX_ARGUMENT_BYTES,
        }
    }

    /// Past `max_bytes` of a call's argument text, the rest is dropped (no more deltas are
    /// emitted) and the call ends with the text so far as a string, which the agent loop's
    /// argument limit refuses: a runaway stream does not fill memory.
    pub(crate) fn set_max_argument_bytes(&mut self, max_bytes: usize) {
        self.max_argument_bytes = max_bytes;
    }

    /// Events emitted since the last call.
    pub(crate) fn take_events(&mut self) -> Vec<AssistantEvent> {
        std::mem::take(&mut self.events)
    }

    /// Whether `Done` or `Error` was emitted.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    pub(crate) fn message(&self) -> &AssistantMessage {
        &self.message
    }

    pub(crate) fn set_response_id(&mut self, id: &str) {
        if !id.is_empty() {
            self.message.response_id = Some(id.to_owned());
        }
    }

    /// Keeps a field of the response for the next request to the same API (see
    /// [`AssistantMessage::provider_fields`]).
    pub(crate) fn set_message_field(&mut self, key: &str, value: Value) {
        self.message.provider_fields.insert(key.to_owned(), value);
    }

    pub(crate) fn set_usage(&mut self, usage: Usage) {
        self.message.usage = usage;
    }

    pub(crate) fn usage_mut(&mut self) -> &mut Usage {
        &mut self.message.usage
    }

    fn push_block(&mut self, block: AssistantContent) -> usize {
        self.message.content.push(block);
        self.blocks.push(BlockState {
            open: true,
            ..BlockState::default()
        });
        self.message.content.len() - 1
    }

    /// Whether the block at `index` is still open.
    pub(crate) fn is_open(&self, index: usize) -> bool {
        self.blocks.get(index).is_some_and(|b| b.open)
    }

    /// Whether the block at `index` has received nothing yet (no text, no thinking, no
    /// argument text or whole arguments).
    pub(crate) fn is_empty_block(&self, index: usize) -> bool {
        let Some(state) = self.blocks.get(index) else {
            return false;
        };
        match &self.message.content[index] {
            AssistantContent::Text { text, .. } => text.is_empty(),
            AssistantContent::Thinking { thinking, .. } => thinking.is_empty(),
            AssistantContent::ToolCall(_) => state.arguments.is_empty() && state.seeded.is_none(),
            AssistantContent::Provider(_) => false,
        }
    }

    /// The last block, when it is an open text block.
    pub(crate) fn open_text(&self) -> Option<usize> {
        let index = self.message.content.len().checked_sub(1)?;
        (self.is_open(index)
            && matches!(self.message.content[index], AssistantContent::Text { .. }))
        .then_some(index)
    }

    /// The last block, when it is an open thinking block.
    pub(crate) fn open_thinking(&self) -> Option<usize> {
        let index = self.message.content.len().checked_sub(1)?;
        (self.is_open(index)
            && matches!(
                self.message.content[index],
                AssistantContent::Thinking { .. }
            ))
        .then_some(index)
    }

    pub(crate) fn text_start(&mut self) -> usize {
        let index = self.push_block(AssistantContent::text(""));
        self.events.push(AssistantEvent::TextStart {
            content_index: index,
        });
        index
    }

    pub(crate) fn text_delta(&mut self, index: usize, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if let Some(AssistantContent::Text { text, .. }) = self.message.content.get_mut(index) {
            text.push_str(delta);
            self.events.push(AssistantEvent::TextDelta {
                content_index: index,
                delta: delta.to_owned(),
            });
        }
    }

    /// Appends text to the open text block, opening one (and closing any other open block)
    /// when the last block is something else.
    pub(crate) fn append_text(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let index = match self.open_text() {
            Some(index) => index,
            None => {
                self.close_all();
                self.text_start()
            }
        };
        self.text_delta(index, delta);
    }

    /// Appends reasoning to the open thinking block, opening one when needed.
    pub(crate) fn append_thinking(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let index = match self.open_thinking() {
            Some(index) => index,
            None => {
                self.close_all();
                self.thinking_start()
            }
        };
        self.thinking_delta(index, delta);
    }

    pub(crate) fn set_text_signature(&mut self, index: usize, signature: &str) {
        if let Some(AssistantContent::Text { text_signature, .. }) =
            self.message.content.get_mut(index)
        {
            *text_signature = Some(signature.to_owned());
        }
    }

    pub(crate) fn thinking_start(&mut self) -> usize {
        let index = self.push_block(AssistantContent::thinking(""));
        self.events.push(AssistantEvent::ThinkingStart {
            content_index: index,
        });
        index
    }

    pub(crate) fn thinking_delta(&mut self, index: usize, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if let Some(AssistantContent::Thinking { thinking, .. }) =
            self.message.content.get_mut(index)
        {
            thinking.push_str(delta);
            self.events.push(AssistantEvent::ThinkingDelta {
                content_index: index,
                delta: delta.to_owned(),
            });
        }
    }

    /// Adds to (or sets) the thinking block's signature; `redacted` marks encrypted reasoning.
    pub(crate) fn add_thinking_signature(&mut self, index: usize, part: &str, redacted: bool) {
        if let Some(AssistantContent::Thinking {
            thinking_signature,
            redacted: is_redacted,
            ..
        }) = self.message.content.get_mut(index)
        {
            thinking_signature
                .get_or_insert_with(String::new)
                .push_str(part);
            *is_redacted |= redacted;
        }
    }

    pub(crate) fn tool_start(&mut self, id: &str, name: &str) -> usize {
        let index = self.push_block(AssistantContent::tool_call(
            id,
            name,
            Value::Object(Map::new()),
        ));
        self.events.push(AssistantEvent::ToolCallStart {
            content_index: index,
            id: id.to_owned(),
            name: name.to_owned(),
        });
        index
    }

    /// Fills in an id or name that arrived after the call began (some servers send them late).
    pub(crate) fn tool_fill(&mut self, index: usize, id: &str, name: &str) {
        if let Some(AssistantContent::ToolCall(block)) = self.message.content.get_mut(index) {
            if block.call.id.is_empty() {
                block.call.id = id.to_owned();
            }
            if block.call.name.is_empty() {
                block.call.name = name.to_owned();
            }
        }
    }

    pub(crate) fn tool_delta(&mut self, index: usize, delta: &str) {
        if delta.is_empty()
            || !matches!(
                self.message.content.get(index),
                Some(AssistantContent::ToolCall(_))
            )
        {
            return;
        }
        if let Some(state) = self.blocks.get_mut(index) {
            if state.over_limit {
                return;
            }
            state.arguments.push_str(delta);
            // The delta that crosses the limit is kept, so the text is over it and says so.
            state.over_limit = state.arguments.len() > self.max_argument_bytes;
            self.events.push(AssistantEvent::ToolCallDelta {
                content_index: index,
                delta: delta.to_owned(),
            });
        }
    }

    /// Replaces the argument text of the call at `index` (a provider's final text that does not
    /// extend what streamed), without a delta event.
    pub(crate) fn tool_set_arguments(&mut self, index: usize, arguments: &str) {
        if let Some(state) = self.blocks.get_mut(index) {
            state.over_limit = arguments.len() > self.max_argument_bytes;
            let kept = if state.over_limit {
                prefix_over(arguments, self.max_argument_bytes)
            } else {
                arguments
            };
            kept.clone_into(&mut state.arguments);
        }
    }

    /// The argument text streamed so far for the call at `index`.
    pub(crate) fn tool_arguments(&self, index: usize) -> &str {
        self.blocks.get(index).map_or("", |b| b.arguments.as_str())
    }

    /// Arguments that arrived whole; used when no argument text streams.
    pub(crate) fn tool_seed(&mut self, index: usize, arguments: Value) {
        if let Some(state) = self.blocks.get_mut(index) {
            state.seeded = Some(arguments);
        }
    }

    /// Opens a block of the API's own (see [`AssistantContent::Provider`]). It is emitted as it
    /// began, so its index is taken in content order even when other blocks start before it
    /// ends, and emitted again when it ends, after [`Assembler::provider_set`] may have
    /// completed it.
    pub(crate) fn provider_start(&mut self, block: Value) -> usize {
        let api = self.message.api.clone();
        let started = ProviderBlock { api, block };
        let index = self.push_block(AssistantContent::Provider(started.clone()));
        self.events.push(AssistantEvent::ProviderBlock {
            content_index: index,
            block: started,
        });
        index
    }

    /// Replaces the block of an open provider block (its finished form).
    pub(crate) fn provider_set(&mut self, index: usize, block: Value) {
        if !self.is_open(index) {
            return;
        }
        if let Some(AssistantContent::Provider(provider)) = self.message.content.get_mut(index) {
            provider.block = block;
        }
    }

    /// The JSON of an open provider block, to complete in place.
    pub(crate) fn provider_block_mut(&mut self, index: usize) -> Option<&mut Value> {
        if !self.is_open(index) {
            return None;
        }
        match self.message.content.get_mut(index) {
            Some(AssistantContent::Provider(provider)) => Some(&mut provider.block),
            _ => None,
        }
    }

    /// Sets the fields a call carries besides id, name and arguments (see
    /// [`ToolCallBlock::provider_fields`](crate::ToolCallBlock::provider_fields)).
    pub(crate) fn set_provider_fields(&mut self, index: usize, fields: Map<String, Value>) {
        if fields.is_empty() {
            return;
        }
        if let Some(AssistantContent::ToolCall(block)) = self.message.content.get_mut(index) {
            block.provider_fields = fields;
        }
    }

    pub(crate) fn set_thought_signature(&mut self, index: usize, signature: &str) {
        if let Some(AssistantContent::ToolCall(block)) = self.message.content.get_mut(index) {
            block.thought_signature = Some(signature.to_owned());
        }
    }

    /// Closes the block at `index`: emits its end event (a tool call's arguments parsed once,
    /// here).
    pub(crate) fn end_block(&mut self, index: usize) {
        let Some(state) = self.blocks.get_mut(index).filter(|s| s.open) else {
            return;
        };
        state.open = false;
        let raw = std::mem::take(&mut state.arguments);
        let over_limit = std::mem::take(&mut state.over_limit);
        let seeded = state.seeded.take();
        let event = match &mut self.message.content[index] {
            AssistantContent::Text { text, .. } => AssistantEvent::TextEnd {
                content_index: index,
                content: text.clone(),
            },
            AssistantContent::Thinking { thinking, .. } => AssistantEvent::ThinkingEnd {
                content_index: index,
                content: thinking.clone(),
            },
            AssistantContent::ToolCall(block) => {
                block.call.arguments = match seeded {
                    Some(arguments) if raw.trim().is_empty() => arguments,
                    // Not parsed: the text is cut, and the loop refuses it by its length.
                    _ if over_limit => Value::String(raw),
                    _ => parse_arguments(&raw),
                };
                AssistantEvent::ToolCallEnd {
                    content_index: index,
                    tool_call: block.clone(),
                }
            }
            AssistantContent::Provider(block) => AssistantEvent::ProviderBlock {
                content_index: index,
                block: block.clone(),
            },
        };
        self.events.push(event);
    }

    /// Closes open text and thinking blocks (a tool call is starting; calls stay open, since
    /// parallel calls may interleave their argument deltas, and so do provider blocks, which
    /// end when the API says).
    pub(crate) fn close_prose(&mut self) {
        for index in 0..self.blocks.len() {
            if !matches!(
                self.message.content[index],
                AssistantContent::ToolCall(_) | AssistantContent::Provider(_)
            ) {
                self.end_block(index);
            }
        }
    }

    /// Closes every open block, in content order.
    pub(crate) fn close_all(&mut self) {
        for index in 0..self.blocks.len() {
            self.end_block(index);
        }
    }

    /// Ends the response normally. A `Stop` with tool calls becomes `ToolUse`.
    pub(crate) fn done(&mut self, reason: StopReason) {
        if self.finished {
            return;
        }
        self.close_all();
        let has_calls = self.message.tool_calls().next().is_some();
        let reason = if reason == StopReason::Stop && has_calls {
            StopReason::ToolUse
        } else {
            reason
        };
        if matches!(reason, StopReason::Error | StopReason::Aborted) {
            self.fail(reason, "the provider ended the response with an error");
            return;
        }
        self.message.stop_reason = reason;
        self.finished = true;
        self.events.push(AssistantEvent::Done {
            reason,
            message: self.message.clone(),
        });
    }

    /// Ends the response with an error (or an abort), keeping what arrived.
    pub(crate) fn fail(&mut self, reason: StopReason, error_message: impl Into<String>) {
        if self.finished {
            return;
        }
        let reason = if reason == StopReason::Aborted {
            reason
        } else {
            StopReason::Error
        };
        // Calls cut short keep a best-effort view of their arguments, without end events.
        for (index, state) in self.blocks.iter_mut().enumerate() {
            if let (true, AssistantContent::ToolCall(block)) =
                (state.open, &mut self.message.content[index])
            {
                if state.over_limit {
                    block.call.arguments = Value::String(std::mem::take(&mut state.arguments));
                    continue;
                }
                let mut partial = super::PartialJson::new();
                partial.push(&state.arguments);
                block.call.arguments = match state.seeded.take() {
                    Some(seeded) if state.arguments.is_empty() => seeded,
                    _ => partial.partial(),
                };
            }
        }
        if self.message.content.is_empty() {
            self.message.content.push(AssistantContent::text(""));
        }
        self.message.stop_reason = reason;
        self.message.error_message = Some(error_message.into());
        self.finished = true;
        self.events.push(AssistantEvent::Error {
            reason,
            error: self.message.clone(),
        });
    }
}

/// The shortest prefix of `text` longer than `limit` bytes (ending on a character boundary).
fn prefix_over(text: &str, limit: usize) -> &str {
    let mut cut = limit.saturating_add(1).min(text.len());
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    &text[..cut]
}
