//! Bedrock's ConverseStream response: AWS's binary event stream (each message framed with its
//! length, headers and CRCs, read by `aws-smithy-eventstream`), whose JSON payloads are
//! `messageStart`, `contentBlockStart`/`Delta`/`Stop`, `messageStop` and `metadata` events, or
//! an exception (`throttlingException`, `validationException`, ...).

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::HeaderValue;
use bytes::BytesMut;
use serde_json::Value;

use super::assemble::Assembler;
use super::decode::{STREAM_CUT, WireDecoder, parse_json};
use super::sse::SseEvent;
use crate::message::StopReason;

/// The event name a framing error reaches the wire decoder under.
const FRAMING_ERROR: &str = ":framing-error";

/// Cuts an event stream into its messages, as [`SseEvent`]s: the `:event-type` header as the
/// event (`exception:<:exception-type>` for an exception), the payload as the data.
#[derive(Debug, Default)]
pub(crate) struct EventStreamFramer {
    buffer: BytesMut,
    frames: MessageFrameDecoder,
    /// A broken frame was met: the rest of the body cannot be read.
    broken: bool,
}

impl EventStreamFramer {
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if self.broken {
            return events;
        }
        self.buffer.extend_from_slice(bytes);
        loop {
            match self.frames.decode_frame(&mut self.buffer) {
                Ok(DecodedFrame::Complete(message)) => {
                    let header = |name: &str| {
                        message
                            .headers()
                            .iter()
                            .find(|h| h.name().as_str() == name)
                            .and_then(|h| match h.value() {
                                HeaderValue::String(value) => Some(value.as_str().to_owned()),
                                _ => None,
                            })
                    };
                    let event = match header(":message-type").as_deref() {
                        Some("exception") => format!(
                            "exception:{}",
                            header(":exception-type").unwrap_or_default()
                        ),
                        Some("error") => {
                            format!("exception:{}", header(":error-code").unwrap_or_default())
                        }
                        _ => header(":event-type").unwrap_or_default(),
                    };
                    let data = String::from_utf8_lossy(message.payload()).into_owned();
                    let data = match header(":error-message") {
                        Some(text) if data.is_empty() => {
                            serde_json::json!({ "message": text }).to_string()
                        }
                        _ => data,
                    };
                    events.push(SseEvent { event, data });
                }
                Ok(DecodedFrame::Incomplete) => break,
                Err(err) => {
                    self.broken = true;
                    events.push(SseEvent {
                        event: FRAMING_ERROR.to_owned(),
                        data: format!("The response's event stream is broken: {err}"),
                    });
                    break;
                }
            }
        }
        events
    }

    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        None
    }
}

/// Decodes ConverseStream events.
#[derive(Debug, Default)]
pub(crate) struct BedrockDecoder {
    /// Bedrock's content block index to ours.
    blocks: std::collections::HashMap<u64, usize>,
    stop_reason: Option<String>,
}

impl BedrockDecoder {
    /// The block at Bedrock's index, opened as text or thinking when a delta is its first word.
    fn block(&mut self, at: u64, thinking: bool, out: &mut Assembler) -> usize {
        if let Some(index) = self.blocks.get(&at) {
            return *index;
        }
        out.close_prose();
        let index = if thinking {
            out.thinking_start()
        } else {
            out.text_start()
        };
        self.blocks.insert(at, index);
        index
    }
}

impl WireDecoder for BedrockDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Assembler) {
        if event.event == FRAMING_ERROR {
            out.fail(StopReason::Error, event.data.clone());
            return;
        }
        if let Some(kind) = event.event.strip_prefix("exception:") {
            let message = serde_json::from_str::<Value>(&event.data)
                .ok()
                .and_then(|v| {
                    v.get("message")
                        .or_else(|| v.get("Message"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| event.data.clone());
            out.fail(StopReason::Error, format!("{kind}: {message}"));
            return;
        }
        let Some(data) = parse_json(event, out) else {
            return;
        };
        let at = data
            .get("contentBlockIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        match event.event.as_str() {
            "contentBlockStart" => {
                if let Some(tool) = data.pointer("/start/toolUse") {
                    let text = |field: &str| tool.get(field).and_then(Value::as_str).unwrap_or("");
                    out.close_prose();
                    let index = out.tool_start(text("toolUseId"), text("name"));
                    self.blocks.insert(at, index);
                }
            }
            "contentBlockDelta" => {
                let Some(delta) = data.get("delta") else {
                    return;
                };
                if let Some(text) = delta.get("text").and_then(Value::as_str) {
                    let index = self.block(at, false, out);
                    out.text_delta(index, text);
                } else if let Some(input) = delta.pointer("/toolUse/input").and_then(Value::as_str)
                {
                    if let Some(index) = self.blocks.get(&at).copied() {
                        out.tool_delta(index, input);
                    }
                } else if let Some(reasoning) = delta.get("reasoningContent") {
                    let index = self.block(at, true, out);
                    if let Some(text) = reasoning.get("text").and_then(Value::as_str) {
                        out.thinking_delta(index, text);
                    }
                    if let Some(signature) = reasoning.get("signature").and_then(Value::as_str) {
                        out.add_thinking_signature(index, signature, false);
                    }
                    if let Some(redacted) = reasoning.get("redactedContent").and_then(Value::as_str)
                    {
                        out.add_thinking_signature(index, redacted, true);
                    }
                }
            }
            "contentBlockStop" => {
                if let Some(index) = self.blocks.get(&at).copied() {
                    out.end_block(index);
                }
            }
            "messageStop" => {
                self.stop_reason = data
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            "metadata" => {
                if let Some(usage) = data.get("usage") {
                    let number =
                        |field: &str| usage.get(field).and_then(Value::as_u64).unwrap_or(0);
                    let reported = out.usage_mut();
                    reported.input = number("inputTokens");
                    reported.output = number("outputTokens");
                    reported.cache_read = number("cacheReadInputTokens");
                    reported.cache_write = number("cacheWriteInputTokens");
                    reported.total_tokens = number("totalTokens").max(
                        reported.input
                            + reported.output
                            + reported.cache_read
                            + reported.cache_write,
                    );
                }
            }
            _ => {}
        }
    }

    /// The body ended: the stop reason decides (`metadata` may follow `messageStop` or come
    /// first, so the end of the body is the end of the response).
    fn end(&mut self, out: &mut Assembler) {
        match self.stop_reason.as_deref() {
            Some("end_turn" | "stop_sequence") => out.done(StopReason::Stop),
            Some("tool_use") => out.done(StopReason::ToolUse),
            Some("max_tokens" | "model_context_window_exceeded") => out.done(StopReason::Length),
            Some(other @ ("guardrail_intervened" | "content_filtered")) => out.fail(
                StopReason::Error,
                format!("Bedrock stopped the response: {other}"),
            ),
            Some(other) => out.fail(StopReason::Error, format!("Provider stop_reason: {other}")),
            None => out.fail(StopReason::Error, STREAM_CUT),
        }
    }
}
