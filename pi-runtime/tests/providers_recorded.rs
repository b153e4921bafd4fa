//! Every recorded provider stream (real API responses kept by the Vercel AI SDK, the official
//! OpenAI and Anthropic SDKs and Firebase's Gemini test data) through our decoders: each ends
//! exactly once, keeps the text and the tool calls the recording holds, and decodes the same
//! however the bytes are split. The recordings are read from `shared/recordings/` beside the
//! repository (or `$PI_RECORDINGS`): `providers/` (origins in its README) and `providers-more/`
//! (origins in its SOURCES.md); see `recorded/mod.rs`.
//!
//! What a recording holds is read here straight from its JSON, without our decoders.

mod recorded;

use pi_runtime::{AssistantEvent, StopReason};
use recorded::{Api, Recording, check_event_grammar, final_message, text, thinking};
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

/// The total token count the recording states last (`None` where the API states none:
/// Anthropic's usage has no total).
fn stated_total(recording: &Recording) -> Option<u64> {
    let pointers: &[&str] = match recording.api {
        Api::Completions => &["/usage/total_tokens", "/choices/0/usage/total_tokens"],
        Api::Responses => &["/response/usage/total_tokens"],
        Api::Anthropic => &[],
        Api::Google => &[
            "/usageMetadata/totalTokenCount",
            "/0/usageMetadata/totalTokenCount",
        ],
    };
    recording.payloads().iter().rev().find_map(|payload| {
        pointers
            .iter()
            .find_map(|pointer| payload.pointer(pointer).and_then(Value::as_u64))
    })
}

/// The stop reason the recording states for a finished response (`None` where it states none
/// we map: an unknown reason, or no end).
fn stated_stop(recording: &Recording, holds: &Holds) -> Option<StopReason> {
    let payloads = recording.payloads();
    let called = holds.calls > 0;
    let reason = match recording.api {
        Api::Completions => payloads
            .iter()
            .rev()
            .find_map(|chunk| chunk.pointer("/choices/0/finish_reason")?.as_str()),
        Api::Anthropic => payloads
            .iter()
            .rev()
            .find_map(|event| event.pointer("/delta/stop_reason")?.as_str()),
        Api::Google => payloads.iter().rev().find_map(|chunk| {
            let chunk = chunk.as_array().and_then(|a| a.first()).unwrap_or(chunk);
            chunk.pointer("/candidates/0/finishReason")?.as_str()
        }),
        Api::Responses => payloads
            .iter()
            .rev()
            .find_map(|event| match str_at(event, "/type") {
                "response.completed" => Some("completed"),
                "response.incomplete" => event
                    .pointer("/response/incomplete_details/reason")?
                    .as_str(),
                _ => None,
            }),
    }?;
    match reason {
        "stop" | "end_turn" | "stop_sequence" | "STOP" | "completed" if called => {
            Some(StopReason::ToolUse)
        }
        "stop" | "end_turn" | "stop_sequence" | "STOP" | "completed" => Some(StopReason::Stop),
        "tool_calls" | "tool_use" => Some(StopReason::ToolUse),
        "length" | "max_tokens" | "MAX_TOKENS" | "max_output_tokens" => Some(StopReason::Length),
        _ => None,
    }
}

/// Whether the recording streams any reasoning text (summaries included).
fn streams_thinking(recording: &Recording) -> bool {
    let nonempty =
        |value: Option<&Value>| value.and_then(Value::as_str).is_some_and(|t| !t.is_empty());
    recording
        .payloads()
        .iter()
        .any(|payload| match recording.api {
            Api::Completions => {
                ["reasoning_content", "reasoning", "reasoning_text"]
                    .iter()
                    .any(|field| nonempty(payload.pointer(&format!("/choices/0/delta/{field}"))))
                    || payload
                        .pointer("/choices/0/delta/reasoning_details")
                        .and_then(Value::as_array)
                        .is_some_and(|details| !details.is_empty())
                    || payload
                        .pointer("/choices/0/delta/content")
                        .and_then(Value::as_array)
                        .is_some_and(|parts| parts.iter().any(|p| str_at(p, "/type") == "thinking"))
            }
            Api::Responses => {
                str_at(payload, "/type").starts_with("response.reasoning")
                    && str_at(payload, "/type").ends_with(".delta")
                    && nonempty(payload.get("delta"))
            }
            Api::Anthropic => nonempty(payload.pointer("/delta/thinking")),
            Api::Google => {
                let chunk = payload
                    .as_array()
                    .and_then(|a| a.first())
                    .unwrap_or(payload);
                chunk
                    .pointer("/candidates/0/content/parts")
                    .and_then(Value::as_array)
                    .is_some_and(|parts| {
                        parts.iter().any(|part| {
                            part.get("thought").and_then(Value::as_bool) == Some(true)
                                && nonempty(part.get("text"))
                        })
                    })
            }
        })
}

#[test]
fn every_recording_ends_once_and_keeps_its_text_and_calls() {
    if !recorded::present() {
        return;
    }
    let recordings = Recording::all();
    let more = recordings
        .iter()
        .filter(|r| r.name.starts_with("providers-more/"))
        .count();
    // 88 in `providers/`, 99 streams in `providers-more/` (and one HTTP error body).
    assert!(
        recordings.len() - more >= 88 && more >= 99,
        "{} recordings, {more} of them in providers-more",
        recordings.len()
    );
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
            if let (Some(AssistantEvent::Done { reason, .. }), Some(stated)) =
                (events.last(), stated_stop(recording, &holds))
            {
                assert_eq!(*reason, stated, "{name}: the stop reason");
            }
            assert_eq!(
                !thinking(message).is_empty(),
                streams_thinking(recording),
                "{name}: thinking"
            );
            if let Some(total) = stated_total(recording) {
                let usage = &message.usage;
                assert_eq!(
                    (
                        usage.input + usage.output + usage.cache_read + usage.cache_write,
                        usage.total_tokens
                    ),
                    (total, total),
                    "{name}: the usage adds up to the stated total ({usage:?})"
                );
            }
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
    if !recorded::present() {
        return;
    }
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
    if !recorded::present() {
        return;
    }
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
