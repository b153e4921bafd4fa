//! Decoding each API's documented stream format, whole and split at every awkward byte
//! boundary, without HTTP.

mod recorded;

use pi_runtime::providers::{
    AnthropicMessages, GoogleGenerativeAi, OpenAiCompletions, OpenAiResponses, ResponseDecoder,
};
use pi_runtime::{AssistantContent, AssistantEvent, AssistantMessage, StopReason};
use serde_json::json;

const COMPLETIONS_TEXT: &str = include_str!("fixtures/providers/openai_completions_text.sse");
const COMPLETIONS_TOOLS: &str = include_str!("fixtures/providers/openai_completions_tools.sse");
const RESPONSES_TOOLS: &str = include_str!("fixtures/providers/openai_responses_tools.sse");
const ANTHROPIC_TOOLS: &str = include_str!("fixtures/providers/anthropic_tools.sse");
const GOOGLE_TOOLS: &str = include_str!("fixtures/providers/google_tools.sse");

fn decode(mut decoder: ResponseDecoder, chunks: &[&[u8]]) -> Vec<AssistantEvent> {
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(decoder.push(chunk));
    }
    events.extend(decoder.finish());
    normalize(events)
}

/// Zeroes timestamps and the time part of generated ids, so two decodes compare equal.
fn normalize(events: Vec<AssistantEvent>) -> Vec<AssistantEvent> {
    fn message(mut m: AssistantMessage) -> AssistantMessage {
        m.timestamp = 0;
        for block in &mut m.content {
            if let AssistantContent::ToolCall(call) = block {
                call.call.id = id(&call.call.id);
            }
        }
        m
    }
    fn id(id: &str) -> String {
        // Gemini calls without an id get `<name>_<ms>_<n>`.
        match id.rsplit_once('_') {
            Some((head, n)) if head.starts_with("get_weather_") => format!("get_weather_T_{n}"),
            _ => id.to_owned(),
        }
    }
    events
        .into_iter()
        .map(|event| match event {
            AssistantEvent::Start { partial } => AssistantEvent::Start {
                partial: message(partial),
            },
            AssistantEvent::Done { reason, message: m } => AssistantEvent::Done {
                reason,
                message: message(m),
            },
            AssistantEvent::Error { reason, error } => AssistantEvent::Error {
                reason,
                error: message(error),
            },
            AssistantEvent::ToolCallStart {
                content_index,
                id: call_id,
                name,
            } => AssistantEvent::ToolCallStart {
                content_index,
                id: id(&call_id),
                name,
            },
            AssistantEvent::ToolCallEnd {
                content_index,
                mut tool_call,
            } => {
                tool_call.call.id = id(&tool_call.call.id);
                AssistantEvent::ToolCallEnd {
                    content_index,
                    tool_call,
                }
            }
            other => other,
        })
        .collect()
}

fn final_message(events: &[AssistantEvent]) -> &AssistantMessage {
    match events.last() {
        Some(AssistantEvent::Done { message, .. }) => message,
        other => panic!("expected Done, got {other:?}"),
    }
}

type Make = fn() -> ResponseDecoder;

const CASES: [(&str, &str, Make); 5] = [
    ("completions text", COMPLETIONS_TEXT, || {
        OpenAiCompletions::new("gpt-4o-mini").decoder()
    }),
    ("completions tools", COMPLETIONS_TOOLS, || {
        OpenAiCompletions::new("gpt-4o-mini").decoder()
    }),
    ("responses tools", RESPONSES_TOOLS, || {
        OpenAiResponses::new("gpt-5-mini").decoder()
    }),
    ("anthropic tools", ANTHROPIC_TOOLS, || {
        AnthropicMessages::new("claude-sonnet-4-5").decoder()
    }),
    ("google tools", GOOGLE_TOOLS, || {
        GoogleGenerativeAi::new("gemini-2.5-flash").decoder()
    }),
];

#[test]
fn every_split_of_every_stream_gives_the_same_events() {
    for (name, fixture, make) in CASES {
        let bytes = fixture.as_bytes();
        let whole = decode(make(), &[bytes]);
        final_message(&whole); // a `Done`
        recorded::check_event_grammar(name, &whole);
        // Two pieces, split at every byte (inside UTF-8 characters and `\n\n` too).
        for split in 1..bytes.len() {
            let (a, b) = bytes.split_at(split);
            assert_eq!(
                decode(make(), &[a, b]),
                whole,
                "{name}: split at byte {split}"
            );
        }
        // Many small pieces.
        for size in [1, 2, 3, 5, 7, 64] {
            let chunks: Vec<&[u8]> = bytes.chunks(size).collect();
            assert_eq!(decode(make(), &chunks), whole, "{name}: chunks of {size}");
        }
    }
}

#[test]
fn completions_text_and_usage() {
    let events = decode(
        OpenAiCompletions::new("gpt-4o-mini").decoder(),
        &[COMPLETIONS_TEXT.as_bytes()],
    );
    let message = final_message(&events);
    assert_eq!(message.text(), "Hello, wörld!");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.response_id.as_deref(), Some("chatcmpl-text1"));
    assert_eq!(
        (
            message.usage.input,
            message.usage.cache_read,
            message.usage.output,
            message.usage.total_tokens
        ),
        (10, 2, 4, 16)
    );
    assert_eq!(
        (
            message.api.as_str(),
            message.provider.as_str(),
            message.model.as_str()
        ),
        ("openai-completions", "openai", "gpt-4o-mini")
    );
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AssistantEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["Hello", ", wörld!"]);
}

#[test]
fn completions_parallel_tool_calls() {
    let events = decode(
        OpenAiCompletions::new("gpt-4o-mini").decoder(),
        &[COMPLETIONS_TOOLS.as_bytes()],
    );
    let message = final_message(&events);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = message
        .tool_calls()
        .map(|c| {
            (
                c.call.id.as_str(),
                c.call.name.as_str(),
                c.call.arguments.clone(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            (
                "call_weather1",
                "get_weather",
                json!({"city": "Zürich", "days": null})
            ),
            ("call_time2", "get_time", json!({"zone": "Europe/Zurich"})),
        ]
    );
    let arguments: String = events
        .iter()
        .filter_map(|e| match e {
            AssistantEvent::ToolCallDelta {
                content_index: 0,
                delta,
            } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(arguments, r#"{"city": "Zürich", "days": null}"#);
}

#[test]
fn responses_reasoning_text_and_call() {
    let events = decode(
        OpenAiResponses::new("gpt-5-mini").decoder(),
        &[RESPONSES_TOOLS.as_bytes()],
    );
    let message = final_message(&events);
    assert_eq!(
        message.stop_reason,
        StopReason::ToolUse,
        "completed with a call is toolUse"
    );
    assert_eq!(message.response_id.as_deref(), Some("resp_abc"));
    let AssistantContent::Thinking {
        thinking,
        thinking_signature,
        ..
    } = &message.content[0]
    else {
        panic!("{:?}", message.content)
    };
    assert_eq!(thinking, "Need the weather.\n\n");
    let item: serde_json::Value =
        serde_json::from_str(thinking_signature.as_deref().unwrap()).unwrap();
    assert_eq!(item["encrypted_content"], "gAAAAEncrypted");
    assert_eq!(
        message.content[1],
        AssistantContent::text("Checking Zürich.").with_signature("msg_1")
    );
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.call.id, "call_w1|fc_1");
    assert_eq!(call.call.arguments, json!({"city": "Zürich", "days": null}));
    assert_eq!(
        (
            message.usage.input,
            message.usage.cache_read,
            message.usage.output
        ),
        (60, 40, 30)
    );
}

#[test]
fn anthropic_thinking_text_and_two_calls() {
    let events = decode(
        AnthropicMessages::new("claude-sonnet-4-5").decoder(),
        &[ANTHROPIC_TOOLS.as_bytes()],
    );
    let message = final_message(&events);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.content[0],
        AssistantContent::thinking("The user wants weather.")
            .with_signature("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds")
    );
    assert_eq!(
        message.content[1],
        AssistantContent::text("Let me check Zürich and Paris.")
    );
    let calls: Vec<_> = message
        .tool_calls()
        .map(|c| (c.call.id.as_str(), c.call.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            ("toolu_01A", json!({"city": "Zürich"})),
            ("toolu_01B", json!({"city": "Paris", "days": 3}))
        ]
    );
    assert_eq!(
        (
            message.usage.input,
            message.usage.cache_read,
            message.usage.output,
            message.usage.total_tokens
        ),
        (472, 100, 89, 661)
    );
}

#[test]
fn google_thoughts_text_and_whole_calls() {
    let events = decode(
        GoogleGenerativeAi::new("gemini-2.5-flash").decoder(),
        &[GOOGLE_TOOLS.as_bytes()],
    );
    let message = final_message(&events);
    assert_eq!(
        message.stop_reason,
        StopReason::ToolUse,
        "STOP with calls is toolUse"
    );
    assert_eq!(
        message.content[0],
        AssistantContent::thinking("I'll check both cities.").with_signature("c2lnLXRoaW5r")
    );
    assert_eq!(
        message.content[1],
        AssistantContent::text("Looking up Zürich")
    );
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(
        calls[0].call.id, "get_weather_T_1",
        "a call without an id gets one"
    );
    assert_eq!(calls[0].thought_signature.as_deref(), Some("c2lnLWNhbGw="));
    assert_eq!(calls[0].call.arguments, json!({"city": "Zürich"}));
    assert_eq!(
        (calls[1].call.id.as_str(), calls[1].call.arguments.clone()),
        ("fc-2", json!({"city": "Paris", "days": 2}))
    );
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.total_tokens
        ),
        (60, 30, 90)
    );
}

#[test]
fn a_stream_that_stops_early_is_an_error_that_keeps_what_arrived() {
    for (name, fixture, make) in CASES {
        // Cut just after the first content event.
        let cut = fixture
            .match_indices("\n\n")
            .nth(2)
            .map_or(fixture.len() / 2, |(i, _)| i + 2);
        let events = decode(make(), &[&fixture.as_bytes()[..cut]]);
        match events.last() {
            Some(AssistantEvent::Error {
                reason: StopReason::Error,
                error,
            }) => {
                assert_eq!(
                    error.error_message.as_deref(),
                    Some("The connection closed before the response was complete"),
                    "{name}"
                );
                assert_eq!(error.stop_reason, StopReason::Error);
            }
            other => panic!("{name}: expected an error, got {other:?}"),
        }
    }
}

#[test]
fn finish_reasons_map_to_stop_reasons() {
    let chunk = |reason: &str| {
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"x\"}},\"finish_reason\":\"{reason}\"}}]}}\n\ndata: [DONE]\n\n"
        )
    };
    let outcome = |reason: &str| {
        let events = decode(
            OpenAiCompletions::new("m").decoder(),
            &[chunk(reason).as_bytes()],
        );
        match events.last() {
            Some(AssistantEvent::Done { reason, .. }) => Ok(*reason),
            Some(AssistantEvent::Error { error, .. }) => {
                Err(error.error_message.clone().unwrap_or_default())
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(outcome("stop"), Ok(StopReason::Stop));
    assert_eq!(outcome("length"), Ok(StopReason::Length));
    assert_eq!(outcome("tool_calls"), Ok(StopReason::ToolUse));
    assert_eq!(
        outcome("content_filter"),
        Err("Provider finish_reason: content_filter".to_owned())
    );

    let anthropic = |reason: &str| {
        let body = format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"m\",\"usage\":{{\"input_tokens\":1}}}}}}\n\n\
             event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{reason}\"}},\"usage\":{{\"output_tokens\":1}}}}\n\n\
             event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        );
        match decode(AnthropicMessages::new("c").decoder(), &[body.as_bytes()]).last() {
            Some(AssistantEvent::Done { reason, .. }) => Ok(*reason),
            Some(AssistantEvent::Error { error, .. }) => {
                Err(error.error_message.clone().unwrap_or_default())
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(anthropic("end_turn"), Ok(StopReason::Stop));
    assert_eq!(anthropic("max_tokens"), Ok(StopReason::Length));
    assert_eq!(
        anthropic("refusal"),
        Err("Provider stop_reason: refusal".to_owned())
    );

    let google = |reason: &str| {
        let body = format!(
            "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":\"x\"}}]}},\"finishReason\":\"{reason}\"}}]}}\n\n"
        );
        match decode(GoogleGenerativeAi::new("g").decoder(), &[body.as_bytes()]).last() {
            Some(AssistantEvent::Done { reason, .. }) => Ok(*reason),
            Some(AssistantEvent::Error { error, .. }) => {
                Err(error.error_message.clone().unwrap_or_default())
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(google("STOP"), Ok(StopReason::Stop));
    assert_eq!(google("MAX_TOKENS"), Ok(StopReason::Length));
    assert_eq!(
        google("SAFETY"),
        Err("Provider finishReason: SAFETY".to_owned())
    );

    let responses = |status: &str| {
        let body = format!(
            "data: {{\"type\":\"response.{status}\",\"response\":{{\"status\":\"{status}\",\"error\":{{\"message\":\"boom\"}}}}}}\n\n"
        );
        match decode(OpenAiResponses::new("r").decoder(), &[body.as_bytes()]).last() {
            Some(AssistantEvent::Done { reason, .. }) => Ok(*reason),
            Some(AssistantEvent::Error { error, .. }) => {
                Err(error.error_message.clone().unwrap_or_default())
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(responses("completed"), Ok(StopReason::Stop));
    assert_eq!(responses("incomplete"), Ok(StopReason::Length));
    assert_eq!(responses("failed"), Err("boom".to_owned()));
}

#[test]
fn errors_inside_the_stream_end_it_with_their_message() {
    let anthropic = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{}}}\n\n\
        event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
        event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hal\"}}\n\n\
        event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let events = decode(
        AnthropicMessages::new("c").decoder(),
        &[anthropic.as_bytes()],
    );
    let Some(AssistantEvent::Error { error, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(error.error_message.as_deref(), Some("Overloaded"));
    assert_eq!(error.text(), "Hal", "what arrived is kept");

    let openai =
        "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n";
    let events = decode(OpenAiCompletions::new("m").decoder(), &[openai.as_bytes()]);
    let Some(AssistantEvent::Error { error, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(
        error.error_message.as_deref(),
        Some("The server had an error")
    );

    let garbage = "data: {not json\n\n";
    let events = decode(OpenAiCompletions::new("m").decoder(), &[garbage.as_bytes()]);
    let Some(AssistantEvent::Error { error, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert!(
        error
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Invalid JSON in the response stream"),
        "{error:?}"
    );
}

#[test]
fn arguments_that_are_not_json_reach_validation_as_text() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\": oops}\"}}]}}]}\n\n\
        data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";
    let events = decode(OpenAiCompletions::new("m").decoder(), &[body.as_bytes()]);
    let message = final_message(&events);
    assert_eq!(
        message.tool_calls().next().unwrap().call.arguments,
        json!("{\"a\": oops}")
    );
}

#[test]
fn a_body_that_is_not_an_event_stream_is_shown_in_the_error() {
    let body = "<html><body>502 Bad Gateway</body></html>\n";
    let events = decode(OpenAiCompletions::new("m").decoder(), &[body.as_bytes()]);
    let Some(AssistantEvent::Error { error, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(
        error.error_message.as_deref(),
        Some("Unexpected response from the provider: <html><body>502 Bad Gateway</body></html>")
    );
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn damaged_streams_end_with_one_done_or_error_and_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (name, fixture, make) in CASES {
        for round in 0..300 {
            let mut bytes = fixture.as_bytes().to_vec();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(bytes.len());
                match rng.below(5) {
                    0 => bytes.truncate(at),
                    1 => {
                        let last = bytes.len().saturating_sub(1);
                        bytes[at.min(last)] = rng.below(256) as u8;
                    }
                    2 => bytes.insert(at, b"\"{}[]\\:,\n"[rng.below(9)]),
                    3 => {
                        let end = (at + rng.below(40)).min(bytes.len());
                        bytes.drain(at..end);
                    }
                    _ => bytes
                        .splice(
                            at..at,
                            b"\n\ndata: {\"type\":\"x\",\"index\":7}\n\n"
                                .iter()
                                .copied(),
                        )
                        .for_each(drop),
                }
                if bytes.is_empty() {
                    break;
                }
            }
            let mut decoder = make();
            let mut events = Vec::new();
            let mut rest = bytes.as_slice();
            while !rest.is_empty() {
                let (chunk, tail) = rest.split_at(1 + rng.below(rest.len().min(50)));
                events.extend(decoder.push(chunk));
                rest = tail;
            }
            events.extend(decoder.finish());
            assert!(
                matches!(events.first(), Some(AssistantEvent::Start { .. })),
                "{name} #{round}"
            );
            let ends: Vec<usize> = events
                .iter()
                .enumerate()
                .filter(|(_, e)| {
                    matches!(
                        e,
                        AssistantEvent::Done { .. } | AssistantEvent::Error { .. }
                    )
                })
                .map(|(i, _)| i)
                .collect();
            assert_eq!(ends, [events.len() - 1], "{name} #{round}: one end, last");
            assert!(decoder.is_finished());
        }
    }
}

#[test]
fn a_chunk_of_unexpected_shape_is_skipped() {
    let body = "data: {\"choices\":{\"odd\":true}}\n\n\
        data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[1]}}]}\n\n\
        data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"still here\"},\"finish_reason\":\"stop\"}]}\n\n";
    let events = decode(OpenAiCompletions::new("m").decoder(), &[body.as_bytes()]);
    assert_eq!(final_message(&events).text(), "still here");
}

#[test]
fn an_anthropic_refusal_says_why() {
    // The shape of anthropic-sdk-python's `tests/lib/streaming/fixtures/refusal_response.txt`
    // (written by the SDK's authors, not recorded).
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-opus-4-7\",\"stop_reason\":null,\"usage\":{\"input_tokens\":20,\"output_tokens\":1}}}\n\n\
        event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\",\"stop_sequence\":null,\"stop_details\":{\"type\":\"refusal\",\"category\":\"cyber\",\"explanation\":\"This request was refused due to policy.\"}},\"usage\":{\"output_tokens\":0}}\n\n\
        event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let events = decode(AnthropicMessages::new("m").decoder(), &[body.as_bytes()]);
    let Some(AssistantEvent::Error { error, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(
        error.error_message.as_deref(),
        Some("Provider stop_reason: refusal: This request was refused due to policy.")
    );
}
