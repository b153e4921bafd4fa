//! Turning a provider's response body into [`AssistantEvent`]s, without HTTP: bytes in, events
//! out. The HTTP clients feed it, and so can a test or a replay of a recorded stream.

use super::assemble::Assembler;
use super::sse::{SseDecoder, SseEvent};
use crate::message::{AssistantMessage, StopReason};
use crate::model::AssistantEvent;

/// What one wire format does with the server-sent events of its stream.
pub(crate) trait WireDecoder: Send + Sync {
    /// Handles one event.
    fn event(&mut self, event: &SseEvent, out: &mut Assembler);
    /// The body ended. Ends the response when the format says how it ended, and reports a cut
    /// stream otherwise.
    fn end(&mut self, out: &mut Assembler);
}

/// Why a stream that ended early is an error.
pub(crate) const STREAM_CUT: &str = "The connection closed before the response was complete";

/// Decodes one streamed response body into [`AssistantEvent`]s: feed it the bytes as they
/// arrive with [`push`](Self::push), then call [`finish`](Self::finish) when the body ends.
///
/// Every provider returns one from its `decoder()` method, so a recorded stream can be replayed
/// without a server:
///
/// ```
/// use pi_runtime::AssistantEvent;
/// use pi_runtime::providers::OpenAiCompletions;
///
/// let model = OpenAiCompletions::new("gpt-4o-mini");
/// let mut decoder = model.decoder();
/// let mut events = decoder.push(br#"data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}
///
/// data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
///
/// data: [DONE]
///
/// "#);
/// events.extend(decoder.finish());
/// assert!(matches!(events.last(), Some(AssistantEvent::Done { message, .. }) if message.text() == "Hi"));
/// ```
pub struct ResponseDecoder {
    sse: Framing,
    wire: Box<dyn WireDecoder>,
    out: Assembler,
    /// The start of the body while no event has arrived: shown when the body is not a stream.
    head: Option<Vec<u8>>,
}

/// How much of a body that is not an event stream is kept for the error message.
const HEAD_LIMIT: usize = 500;

impl std::fmt::Debug for ResponseDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseDecoder")
            .field("message", self.out.message())
            .finish_non_exhaustive()
    }
}

impl ResponseDecoder {
    pub(crate) fn new(wire: Box<dyn WireDecoder>, api: &str, provider: &str, model: &str) -> Self {
        ResponseDecoder {
            sse: Framing::Sse(SseDecoder::new()),
            wire,
            out: Assembler::new(api, provider, model),
            head: Some(Vec::new()),
        }
    }

    /// A decoder of AWS's binary event stream (Bedrock): each message reaches the wire decoder
    /// as an event named by its `:event-type` (or `exception:<type>`), its payload as data.
    #[cfg(feature = "bedrock")]
    pub(crate) fn event_stream(
        wire: Box<dyn WireDecoder>,
        api: &str,
        provider: &str,
        model: &str,
    ) -> Self {
        let mut decoder = Self::new(wire, api, provider, model);
        decoder.sse = Framing::EventStream(super::bedrock_stream::EventStreamFramer::default());
        decoder
    }

    /// Sets how many bytes of one tool call's argument text are kept (the provider's
    /// `max_argument_bytes`).
    pub(crate) fn with_max_argument_bytes(mut self, max_bytes: usize) -> Self {
        self.out.set_max_argument_bytes(max_bytes);
        self
    }

    /// Feeds body bytes (any split); returns the events they complete. The first call also
    /// returns `Start`.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<AssistantEvent> {
        if let Some(head) = &mut self.head {
            let room = HEAD_LIMIT.saturating_sub(head.len());
            head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        }
        for event in self.sse.push(bytes) {
            self.head = None;
            if self.out.is_finished() {
                break;
            }
            self.wire.event(&event, &mut self.out);
        }
        self.out.take_events()
    }

    /// The body ended: returns the remaining events, ending with `Done` or `Error` (a stream
    /// cut before the provider said it was complete is an `Error`).
    pub fn finish(&mut self) -> Vec<AssistantEvent> {
        if let Some(event) = self.sse.finish() {
            self.head = None;
            if !self.out.is_finished() {
                self.wire.event(&event, &mut self.out);
            }
        }
        // A server that fails midway may write a plain JSON error after the events.
        if !self.out.is_finished()
            && self.head.is_none()
            && let Some(message) = unframed_error(self.sse.unframed())
        {
            self.out.fail(StopReason::Error, message);
        }
        if !self.out.is_finished() {
            self.wire.end(&mut self.out);
        }
        if !self.out.is_finished() {
            match self
                .head
                .take()
                .filter(|head| !head.iter().all(u8::is_ascii_whitespace))
            {
                // Not an event stream at all (a proxy's error page, a JSON error with status 200).
                Some(head) => {
                    let text = String::from_utf8_lossy(&head);
                    self.out.fail(
                        StopReason::Error,
                        format!("Unexpected response from the provider: {}", text.trim()),
                    );
                }
                None => self.out.fail(StopReason::Error, STREAM_CUT),
            }
        }
        self.out.take_events()
    }

    /// Ends the response with an error (or, with [`StopReason::Aborted`], an abort), keeping
    /// what arrived; returns the remaining events, ending with `Error`.
    pub fn fail(&mut self, reason: StopReason, message: impl Into<String>) -> Vec<AssistantEvent> {
        self.out.fail(reason, message);
        self.out.take_events()
    }

    /// Whether the response has ended (`Done` or `Error` was returned).
    pub fn is_finished(&self) -> bool {
        self.out.is_finished()
    }

    /// The message so far.
    pub fn message(&self) -> &AssistantMessage {
        self.out.message()
    }
}

/// How a body is cut into events.
enum Framing {
    /// Server-sent events (every provider but Bedrock).
    Sse(SseDecoder),
    /// AWS's binary event stream (`application/vnd.amazon.eventstream`).
    #[cfg(feature = "bedrock")]
    EventStream(super::bedrock_stream::EventStreamFramer),
}

impl Framing {
    fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        match self {
            Framing::Sse(sse) => sse.push(bytes),
            #[cfg(feature = "bedrock")]
            Framing::EventStream(frames) => frames.push(bytes),
        }
    }

    fn finish(&mut self) -> Option<SseEvent> {
        match self {
            Framing::Sse(sse) => sse.finish(),
            #[cfg(feature = "bedrock")]
            Framing::EventStream(frames) => frames.finish(),
        }
    }

    /// Text after the last event that was no event (an error object written unframed).
    fn unframed(&self) -> &str {
        match self {
            Framing::Sse(sse) => sse.unframed(),
            #[cfg(feature = "bedrock")]
            Framing::EventStream(_) => "",
        }
    }
}

/// Reads a JSON event, reporting a body that is not JSON as the response's error.
pub(crate) fn parse_json(event: &SseEvent, out: &mut Assembler) -> Option<serde_json::Value> {
    match serde_json::from_str(&event.data) {
        Ok(value) => Some(value),
        Err(err) => {
            let mut shown: String = event.data.chars().take(200).collect();
            if shown.len() < event.data.len() {
                shown.push_str("...");
            }
            out.fail(
                StopReason::Error,
                format!("Invalid JSON in the response stream ({err}): {shown}"),
            );
            None
        }
    }
}

/// The message of a provider's error object written outside the event stream (`{"error": ..}`,
/// or Gemini's `[{"error": ..}]`).
fn unframed_error(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    let value = match value {
        serde_json::Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        other => other,
    };
    error_message(&value)
}

/// The `error.message` (or `message`) of a provider's error object, if the value is one; also
/// Mistral's `{"object": "error", "message": ..}`, whose message may be a validation `detail`.
pub(crate) fn error_message(value: &serde_json::Value) -> Option<String> {
    if value.get("object").and_then(serde_json::Value::as_str) == Some("error") {
        return Some(match value.get("message") {
            Some(serde_json::Value::String(text)) => text.clone(),
            Some(message) => validation_detail(message).unwrap_or_else(|| message.to_string()),
            None => value.to_string(),
        });
    }
    let error = value.get("error")?;
    let message = error
        .get("message")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .or_else(|| error.as_str().map(str::to_owned))
        .unwrap_or_else(|| error.to_string());
    Some(message)
}

/// A validation error's `detail` list (`[{"loc": ["body", "model"], "msg": "Field required"}]`)
/// as `body.model: Field required`, one entry a line.
fn validation_detail(message: &serde_json::Value) -> Option<String> {
    let entries = message.get("detail")?.as_array()?;
    let lines: Vec<String> = entries
        .iter()
        .filter_map(|entry| {
            let text = entry.get("msg")?.as_str()?;
            let place: Vec<String> = entry
                .get("loc")
                .and_then(serde_json::Value::as_array)
                .into_iter()
                .flatten()
                .map(|part| match part {
                    serde_json::Value::String(name) => name.clone(),
                    other => other.to_string(),
                })
                .collect();
            Some(if place.is_empty() {
                text.to_owned()
            } else {
                format!("{}: {text}", place.join("."))
            })
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}
