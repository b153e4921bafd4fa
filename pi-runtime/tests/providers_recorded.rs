//! Every recorded provider stream (real API responses kept by the Vercel AI SDK, the official
//! OpenAI and Anthropic SDKs and Firebase's Gemini test data; origins in
//! `fixtures/providers/recorded/README.md`) through our decoders: each ends exactly once, keeps
//! the text and the tool calls the recording holds, and decodes the same however the bytes are
//! split.
//!
//! What a recording holds is read here straight from its JSON, without our decoders.

mod recorded;

use pi_runtime::AssistantEvent;
use recorded::{Api, Recording, check_event_grammar, final_message, text};
use serde_json::Value;

/// What a recording holds, read from its chunks.
#[derive(Debug, Default)]
struct Holds {
    /// The answer text (refusals included), in order.
    text: String,
    /// How many function calls (the kind a client runs; not built-in server tools).
    calls: usize,
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn holds(recording: &Recording) -> Holds {
    let mut holds = Holds::default();
    let payloads = recording.payloads();
    match recording.api {
        Api::Completions => {
            let mut calls = std::collections::BTreeSet::new();
            for chunk in &payloads {
                let choices = chunk.get("choices").and_then(Value::as_array);
                let first = choices
                    .into_iter()
                    .flatten()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0);
                let Some(delta) = first.and_then(|c| c.get("delta")) else {
                    continue;
                };
                match delta.get("content") {
                    Some(Value::String(text)) => holds.text.push_str(text),
                    Some(Value::Array(parts)) => {
                        for part in parts.iter().filter(|p| str_at(p, "/type") == "text") {
                            holds.text.push_str(str_at(part, "/text"));
                        }
                    }
                    _ => {}
                }
                holds.text.push_str(str_at(delta, "/refusal"));
                for call in delta
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    calls.insert(call.get("index").map(Value::to_string));
                }
            }
            holds.calls = calls.len();
        }
        Api::Responses => {
            let completed = payloads.iter().rev().find_map(|event| {
                (str_at(event, "/type") == "response.completed")
                    .then(|| event.pointer("/response/output").and_then(Value::as_array))
                    .flatten()
            });
            match completed {
                Some(output) => {
                    for item in output {
                        match str_at(item, "/type") {
                            "message" => {
                                for part in item
                                    .get("content")
                                    .and_then(Value::as_array)
                                    .into_iter()
                                    .flatten()
                                {
                                    holds.text.push_str(str_at(part, "/text"));
                                    holds.text.push_str(str_at(part, "/refusal"));
                                }
                            }
                            "function_call" => holds.calls += 1,
                            _ => {}
                        }
                    }
                }
                None => {
                    for event in &payloads {
                        match str_at(event, "/type") {
                            "response.output_text.delta" | "response.refusal.delta" => {
                                holds.text.push_str(str_at(event, "/delta"))
                            }
                            "response.output_item.added"
                                if str_at(event, "/item/type") == "function_call" =>
                            {
                                holds.calls += 1
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        Api::Anthropic => {
            for event in &payloads {
                match str_at(event, "/type") {
                    "content_block_start" => match str_at(event, "/content_block/type") {
                        "text" => holds.text.push_str(str_at(event, "/content_block/text")),
                        "tool_use" => holds.calls += 1,
                        _ => {}
                    },
                    "content_block_delta" if str_at(event, "/delta/type") == "text_delta" => {
                        holds.text.push_str(str_at(event, "/delta/text"))
                    }
                    _ => {}
                }
            }
        }
        Api::Google => {
            for chunk in &payloads {
                let chunk = chunk.as_array().and_then(|a| a.first()).unwrap_or(chunk);
                for part in chunk
                    .pointer("/candidates/0/content/parts")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if part.get("functionCall").is_some() {
                        holds.calls += 1;
                    } else if part.get("thought").and_then(Value::as_bool) != Some(true) {
                        holds.text.push_str(str_at(part, "/text"));
                    }
                }
            }
        }
    }
    holds
}

#[test]
fn every_recording_ends_once_and_keeps_its_text_and_calls() {
    let recordings = Recording::all();
    assert!(recordings.len() >= 85, "{} recordings", recordings.len());
    for recording in &recordings {
        let name = recording.name.as_str();
        let events = recording.decode(usize::MAX);
        check_event_grammar(name, &events);
        let message = final_message(&events);
        let holds = holds(recording);
        if !holds.text.is_empty() {
            assert!(!text(message).is_empty(), "{name}: the text is lost");
        }
        if let Some(AssistantEvent::Done { .. }) = events.last() {
            assert_eq!(text(message), holds.text, "{name}: text");
            let calls: Vec<_> = message.tool_calls().collect();
            assert_eq!(calls.len(), holds.calls, "{name}: calls");
            for call in calls {
                assert!(!call.call.name.is_empty(), "{name}: a call without a name");
                assert!(
                    call.call.arguments.is_object(),
                    "{name}: arguments {:?}",
                    call.call.arguments
                );
            }
        }
    }
}

#[test]
fn every_recording_decodes_the_same_however_its_bytes_are_split() {
    for recording in Recording::all() {
        let whole = recording.decode(usize::MAX);
        for piece in [1, 2, 7, 61, 509] {
            assert_eq!(
                recording.decode(piece),
                whole,
                "{}: pieces of {piece} bytes",
                recording.name
            );
        }
    }
}

#[test]
fn every_recording_cut_anywhere_ends_once_and_keeps_what_arrived() {
    for recording in Recording::all() {
        let whole = recording.decode(usize::MAX);
        let whole_text = text(final_message(&whole));
        let len = recording.body.len();
        for cut in (1..20).map(|n| len * n / 20) {
            let name = format!("{} cut at byte {cut}", recording.name);
            let events = recorded::decode(recording.api, &recording.body[..cut], usize::MAX);
            let ends = events
                .iter()
                .filter(|e| {
                    matches!(
                        e,
                        AssistantEvent::Done { .. } | AssistantEvent::Error { .. }
                    )
                })
                .count();
            assert_eq!(ends, 1, "{name}");
            assert!(
                matches!(events.first(), Some(AssistantEvent::Start { .. })),
                "{name}"
            );
            let message = final_message(&events);
            assert!(
                whole_text.starts_with(&text(message)),
                "{name}: {:?} is not the start of {whole_text:?}",
                text(message)
            );
            for call in message.tool_calls() {
                let arguments = &call.call.arguments;
                assert!(
                    arguments.is_object() || arguments.is_string(),
                    "{name}: {arguments}"
                );
            }
        }
    }
}
