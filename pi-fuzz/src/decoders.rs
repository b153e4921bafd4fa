//! Targets: the stream decoders of the four wire APIs (OpenAI Chat Completions, OpenAI
//! Responses, Anthropic Messages, Google Generative AI).

use crate::recorded::{Api, check_event_grammar, decode};

/// The decoder targets: (target name, the API it decodes).
pub const DECODER_TARGETS: [(&str, crate::Target); 4] = [
    ("decode_openai_completions", decode_openai_completions),
    ("decode_openai_responses", decode_openai_responses),
    ("decode_anthropic", decode_anthropic),
    ("decode_google", decode_google),
];

/// The decoder target for OpenAI Chat Completions (input and invariants as in `decode_stream` below: a mode byte, then a body; the recorded-stream grammar, split-independent events).
pub fn decode_openai_completions(data: &[u8]) {
    decode_stream(Api::Completions, data);
}

/// The decoder target for OpenAI Responses (input and invariants as in `decode_stream` below: a mode byte, then a body; the recorded-stream grammar, split-independent events).
pub fn decode_openai_responses(data: &[u8]) {
    decode_stream(Api::Responses, data);
}

/// The decoder target for Anthropic Messages (input and invariants as in `decode_stream` below: a mode byte, then a body; the recorded-stream grammar, split-independent events).
pub fn decode_anthropic(data: &[u8]) {
    decode_stream(Api::Anthropic, data);
}

/// The decoder target for Google Generative AI (input and invariants as in `decode_stream` below: a mode byte, then a body; the recorded-stream grammar, split-independent events).
pub fn decode_google(data: &[u8]) {
    decode_stream(Api::Google, data);
}

/// Input: a mode byte, then a body. The mode's low bit says how the body is framed: `0`, a raw
/// `text/event-stream` body; `1`, one JSON event per line (as the Vercel AI SDK records
/// streams), each sent as a `data:` event. The other bits pick a piece size (1 to 128 bytes).
///
/// Asserts the grammar of the recorded-stream tests (`Start` first, exactly one `Done` or
/// `Error`, last; the events rebuild the final message; a `Done` message's text, thinking and
/// calls all streamed before it), and that the events do not depend on how the body was split.
fn decode_stream(api: Api, data: &[u8]) {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let body = if mode & 1 == 1 {
        frame_lines(body)
    } else {
        body.to_vec()
    };
    let whole = decode(api, &body, body.len());
    check_event_grammar("whole body", &whole);
    let piece = usize::from(mode >> 1) + 1;
    let split = decode(api, &body, piece);
    check_event_grammar("split body", &split);
    assert_eq!(
        split, whole,
        "the events depend on the split ({piece}-byte pieces)"
    );
}

/// Each non-blank line as one `data:` event.
fn frame_lines(body: &[u8]) -> Vec<u8> {
    let mut framed = Vec::with_capacity(body.len() + 64);
    for line in body.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        framed.extend_from_slice(b"data: ");
        framed.extend_from_slice(line);
        framed.extend_from_slice(b"\n\n");
    }
    framed
}
