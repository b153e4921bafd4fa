//! What particular recorded provider streams (read from `shared/recordings/` beside the
//! repository, or `$PI_RECORDINGS`; origins in `providers/README.md` and
//! `providers-more/SOURCES.md` there) must decode to: each case is a server behaviour a decoder
//! got wrong once (issue 8, "Correct at the borders", and issue 24).
//!
//! Where no recording of a behaviour was found, a real recording is changed in the one way the
//! behaviour differs (say, the same reasoning sent in two fields), and the test says so.

mod recorded;

use pi_runtime::{AssistantEvent, AssistantMessage, StopReason};
use recorded::{Api, Recording, decode, final_message, kinds, text, thinking};
use serde_json::{Value, json};

fn done(events: &[AssistantEvent]) -> (StopReason, &AssistantMessage) {
    match events.last() {
        Some(AssistantEvent::Done { reason, message }) => (*reason, message),
        other => panic!("expected Done, got {other:?}"),
    }
}

fn error_of(events: &[AssistantEvent]) -> &str {
    match events.last() {
        Some(AssistantEvent::Error { error, .. }) => error.error_message.as_deref().unwrap_or(""),
        other => panic!("expected Error, got {other:?}"),
    }
}

// Item 3: Chat Completions `delta.refusal`.

#[test]
fn a_chat_completions_refusal_is_the_answer() {
    if !recorded::present() {
        return;
    }
    // gpt-4o-2024-08-06 declining a structured-output request (openai-python's recordings).
    for (path, refusal) in [
        (
            "providers/openai-python/openai-completions/parse-pydantic-model-refusal.sse",
            "I'm sorry, I can't assist with that request.",
        ),
        (
            "providers/openai-python/openai-completions/refusal-logprobs-events.sse",
            "I'm very sorry, but I can't assist with that.",
        ),
    ] {
        let events = Recording::open(path).decode(usize::MAX);
        let (reason, message) = done(&events);
        assert_eq!(
            (reason, text(message).as_str()),
            (StopReason::Stop, refusal),
            "{path}"
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, AssistantEvent::TextDelta { delta, .. } if delta == "I'm")),
            "{path}: the refusal streams"
        );
    }
}

// Item 4: Responses events follow the output item by `output_index`.

const COPILOT: &str =
    "providers/vercel-ai/openai-responses/github-copilot-id-rotation.1.chunks.txt";
const COPILOT_TEXT: &str = "There are **3** letter **“r”**s in **“strawberry.”**\n\nBreakdown: **s t r a w b e r r y**  \nYou can see **r** at positions **3, 8, and 9**.";

#[test]
fn responses_text_and_thinking_survive_an_item_id_on_every_event() {
    if !recorded::present() {
        return;
    }
    // GitHub Copilot's Responses endpoint sends a new `item_id` on every event.
    let events = Recording::open(COPILOT).decode(usize::MAX);
    let (reason, message) = done(&events);
    assert_eq!(reason, StopReason::Stop);
    assert_eq!(kinds(message), ["thinking", "text"]);
    assert_eq!(text(message), COPILOT_TEXT);
    assert_eq!(thinking(message), "**Counting character occurrences**\n\n");
    let deltas = events
        .iter()
        .filter(|e| matches!(e, AssistantEvent::TextDelta { .. }))
        .count();
    assert!(deltas > 50, "the text streams: {deltas} deltas");
}

#[test]
fn responses_items_sent_whole_are_read_from_their_done_event() {
    if !recorded::present() {
        return;
    }
    // The Copilot recording with every delta taken out: the items arrive only whole.
    let recording = Recording::open(COPILOT);
    let body = recording.edited(|event| {
        let kind = event["type"].as_str().unwrap_or_default();
        (!kind.ends_with(".delta")).then_some(event)
    });
    let events = decode(Api::Responses, &body, usize::MAX);
    let (reason, message) = done(&events);
    assert_eq!(reason, StopReason::Stop);
    assert_eq!(text(message), COPILOT_TEXT);
    assert_eq!(thinking(message), "**Counting character occurrences**\n\n");
}

#[test]
fn responses_output_only_in_the_completed_event_is_read_from_it() {
    if !recorded::present() {
        return;
    }
    // The Copilot recording with only the response's own events left.
    let recording = Recording::open(COPILOT);
    let body = recording.edited(|event| {
        let kind = event["type"].as_str().unwrap_or_default();
        matches!(
            kind,
            "response.created" | "response.in_progress" | "response.completed"
        )
        .then_some(event)
    });
    let events = decode(Api::Responses, &body, usize::MAX);
    let (_, message) = done(&events);
    assert_eq!(kinds(message), ["thinking", "text"]);
    assert_eq!(text(message), COPILOT_TEXT);
    assert_eq!(thinking(message), "**Counting character occurrences**");
}

#[test]
fn responses_calls_keep_their_arguments_when_item_ids_rotate() {
    if !recorded::present() {
        return;
    }
    // A real function-call stream (gpt-5.6), its `item_id`s rewritten the way Copilot sends
    // them: a new one on every event.
    let recording = Recording::open(
        "providers/vercel-ai/openai-responses/programmatic-tool-calling.2.chunks.txt",
    );
    let expected = done(&recording.decode(usize::MAX)).1.clone();
    let mut rotated = 0;
    let body = recording.edited(|mut event| {
        if event.get("item_id").is_some() {
            rotated += 1;
            event["item_id"] = json!(format!("rotated-{rotated}"));
        }
        if let Some(item) = event.get_mut("item").and_then(Value::as_object_mut) {
            rotated += 1;
            item.insert("id".into(), json!(format!("rotated-{rotated}")));
        }
        Some(event)
    });
    assert!(rotated >= 4);
    let events = decode(Api::Responses, &body, usize::MAX);
    let (reason, message) = done(&events);
    assert_eq!(reason, StopReason::ToolUse);
    let call = message.tool_calls().next().expect("a call");
    assert_eq!(call.call.name, "getDemand");
    assert_eq!(call.call.arguments, json!({"sku": "sku_123"}));
    assert_eq!(
        message
            .tool_calls()
            .map(|c| &c.call.arguments)
            .collect::<Vec<_>>(),
        expected
            .tool_calls()
            .map(|c| &c.call.arguments)
            .collect::<Vec<_>>()
    );
}

#[test]
fn an_incomplete_response_ends_by_its_reason() {
    if !recorded::present() {
        return;
    }
    // The Copilot recording ended as `response.incomplete` for each reason instead.
    let recording = Recording::open(COPILOT);
    let ended_by = |reason: &str| {
        let body = recording.edited(|mut event| {
            if event["type"] == "response.completed" {
                event["type"] = json!("response.incomplete");
                event["response"]["status"] = json!("incomplete");
                event["response"]["incomplete_details"] = json!({ "reason": reason });
            }
            Some(event)
        });
        decode(Api::Responses, &body, usize::MAX)
    };
    let events = ended_by("max_output_tokens");
    let (reason, message) = done(&events);
    assert_eq!(
        (reason, text(message).as_str()),
        (StopReason::Length, COPILOT_TEXT)
    );

    let events = ended_by("content_filter");
    assert_eq!(
        error_of(&events),
        "The provider's content filter stopped the response"
    );
    assert_eq!(
        text(final_message(&events)),
        COPILOT_TEXT,
        "what arrived is kept"
    );

    let events = ended_by("something_new");
    assert_eq!(
        error_of(&events),
        "The response is incomplete: something_new"
    );
}

// Item 5: reasoning sent in several fields is read once.

const DEEPSEEK: &str = "providers/vercel-ai/openai-completions/deepseek-tool-call.chunks.txt";

/// The reasoning a recording sends in `reasoning_content`, joined.
fn reasoning_content(recording: &Recording) -> String {
    recording
        .payloads()
        .iter()
        .filter_map(|chunk| {
            chunk
                .pointer("/choices/0/delta/reasoning_content")?
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// The recording with each `reasoning_content` moved to (or copied into) other fields.
fn reasoning_as(
    recording: &Recording,
    fields: impl Fn(&str) -> Vec<(&'static str, Value)>,
    keep: bool,
) -> Vec<u8> {
    recording.edited(|mut chunk| {
        if let Some(delta) = chunk
            .pointer_mut("/choices/0/delta")
            .and_then(Value::as_object_mut)
            && let Some(Value::String(text)) = delta.get("reasoning_content").cloned()
        {
            if !keep {
                delta.remove("reasoning_content");
            }
            for (field, value) in fields(&text) {
                delta.insert(field.to_owned(), value);
            }
        }
        Some(chunk)
    })
}

#[test]
fn reasoning_sent_in_two_fields_is_read_once() {
    if !recorded::present() {
        return;
    }
    // DeepSeek's real stream (`reasoning_content`), changed to also carry each piece in the
    // field other servers use: chutes.ai sends `reasoning_content` and `reasoning` (pi's
    // comment), OpenRouter `reasoning` and `reasoning_details`.
    let recording = Recording::open(DEEPSEEK);
    let expected = reasoning_content(&recording);
    assert!(expected.len() > 100);
    let plain = done(&recording.decode(usize::MAX)).1.clone();
    assert_eq!(thinking(&plain), expected);

    let cases: [(&str, Vec<u8>); 5] = [
        (
            "reasoning_content + reasoning",
            reasoning_as(&recording, |t| vec![("reasoning", json!(t))], true),
        ),
        (
            "reasoning only",
            reasoning_as(&recording, |t| vec![("reasoning", json!(t))], false),
        ),
        (
            "reasoning_text only",
            reasoning_as(&recording, |t| vec![("reasoning_text", json!(t))], false),
        ),
        (
            "OpenRouter: reasoning + reasoning_details",
            reasoning_as(
                &recording,
                |t| {
                    vec![
                        ("reasoning", json!(t)),
                        (
                            "reasoning_details",
                            json!([{"type": "reasoning.text", "text": t, "format": "unknown", "index": 0}]),
                        ),
                    ]
                },
                false,
            ),
        ),
        (
            "reasoning_details only",
            reasoning_as(
                &recording,
                |t| {
                    vec![(
                        "reasoning_details",
                        json!([{"type": "reasoning.text", "text": t}]),
                    )]
                },
                false,
            ),
        ),
    ];
    for (name, body) in cases {
        let events = decode(Api::Completions, &body, usize::MAX);
        let (reason, message) = done(&events);
        assert_eq!(reason, StopReason::ToolUse, "{name}");
        assert_eq!(thinking(message), expected, "{name}");
        assert_eq!(message.content.len(), plain.content.len(), "{name}");
    }
}

// Item 6: content as typed parts (Mistral Magistral), usage inside the choice (Moonshot).

#[test]
fn magistral_content_parts_give_thinking_and_text() {
    if !recorded::present() {
        return;
    }
    let events =
        Recording::open("providers/vercel-ai/openai-completions/mistral-reasoning.chunks.txt")
            .decode(usize::MAX);
    let (reason, message) = done(&events);
    assert_eq!(reason, StopReason::Stop);
    assert_eq!(kinds(message), ["thinking", "text"]);
    assert_eq!(
        thinking(message),
        "The user is asking for 2+2. This is basic arithmetic. 2+2=4."
    );
    assert_eq!(text(message), "2 + 2 = 4");
    assert_eq!((message.usage.input, message.usage.output), (10, 46));
}

#[test]
fn usage_inside_the_choice_is_read() {
    if !recorded::present() {
        return;
    }
    // Mistral's real stream, its usage moved into `choices[0]`, where Moonshot's moonshot-v1
    // models report it (pi reads it there for Moonshot).
    let recording =
        Recording::open("providers/vercel-ai/openai-completions/mistral-text.chunks.txt");
    let expected = done(&recording.decode(usize::MAX)).1.usage.clone();
    assert_eq!(
        (expected.input, expected.output, expected.total_tokens),
        (13, 8, 21)
    );
    let mut moved = false;
    let body = recording.edited(|mut chunk| {
        if let Some(usage) = chunk.as_object_mut().and_then(|c| c.remove("usage"))
            && usage.is_object()
        {
            chunk["choices"][0]["usage"] = usage;
            moved = true;
        }
        Some(chunk)
    });
    assert!(moved);
    let events = decode(Api::Completions, &body, usize::MAX);
    assert_eq!(done(&events).1.usage, expected);
}

// Item 7: a prompt Gemini blocked.

#[test]
fn a_blocked_prompt_says_it_was_blocked_and_why() {
    if !recorded::present() {
        return;
    }
    let events = Recording::open(
        "providers/vertexai-sdk-test-data/google/googleai-streaming-failure-prompt-blocked-safety.sse",
    )
    .decode(usize::MAX);
    assert_eq!(
        error_of(&events),
        "The provider blocked the prompt (SAFETY)"
    );
    let events = Recording::open(
        "providers/vertexai-sdk-test-data/google/vertexai-streaming-failure-prompt-blocked-safety-with-message.sse",
    )
    .decode(usize::MAX);
    assert_eq!(
        error_of(&events),
        "The provider blocked the prompt (SAFETY): Reasons"
    );
}

// Item 8: a call cut by the output limit.

#[test]
fn a_call_cut_by_max_tokens_keeps_its_partial_arguments() {
    if !recorded::present() {
        return;
    }
    // Claude 3.7 Sonnet writing a file until `max_tokens` (anthropic-sdk-python's recording):
    // the call never gets its `content_block_stop`.
    let events = Recording::open(
        "providers/anthropic-sdk-python/anthropic/incomplete-partial-json-response.sse",
    )
    .decode(usize::MAX);
    let (reason, message) = done(&events);
    assert_eq!(reason, StopReason::Length);
    let call = message.tool_calls().next().expect("the cut call");
    assert_eq!(call.call.name, "make_file");
    assert_eq!(
        call.call.arguments,
        json!({
            "filename": "taxes.txt",
            "lines_of_text": [
                "# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s",
                "",
                "## INTRODUCTION",
                "",
                "Filing taxes"
            ]
        })
    );
}

// Stop reasons the recordings show.

#[test]
fn the_output_limit_is_length() {
    if !recorded::present() {
        return;
    }
    // gpt-4o stopped by `max_tokens: 1` (openai-python's recording).
    let events =
        Recording::open("providers/openai-python/openai-completions/parse-max-tokens-reached.sse")
            .decode(usize::MAX);
    assert_eq!(done(&events).0, StopReason::Length);
}

#[test]
fn only_the_first_of_several_choices_is_the_answer() {
    if !recorded::present() {
        return;
    }
    // gpt-4o asked for three choices (`n=3`): their chunks interleave.
    let recording = Recording::open(
        "providers/openai-python/openai-completions/parse-pydantic-model-multiple-choices.sse",
    );
    let first: String = recording
        .payloads()
        .iter()
        .filter_map(|chunk| {
            let choice = chunk.pointer("/choices/0")?;
            (choice["index"] == 0).then(|| {
                choice
                    .pointer("/delta/content")?
                    .as_str()
                    .map(str::to_owned)
            })?
        })
        .collect();
    let events = recording.decode(usize::MAX);
    assert_eq!(text(done(&events).1), first);
    assert!(serde_json::from_str::<Value>(&first).is_ok(), "{first}");
}

#[test]
fn an_error_written_into_the_stream_midway_ends_it_with_its_message() {
    if !recorded::present() {
        return;
    }
    // Vertex AI cancelling a stream after two chunks: a plain JSON error follows the events.
    let recording = Recording::open(
        "providers/vertexai-sdk-test-data/google/vertexai-streaming-failure-error-mid-stream.sse",
    );
    for piece in [usize::MAX, 1, 13] {
        let events = recording.decode(piece);
        assert_eq!(error_of(&events), "The operation was cancelled.");
        assert_eq!(
            text(final_message(&events)),
            "First Second ",
            "what arrived is kept"
        );
    }
}

// Issue 24: what `providers-more/` found, and issue 19 item 11.

#[test]
fn grok_reasoning_tokens_count_as_output() {
    // xAI reports reasoning tokens beside `completion_tokens` (its total has both); OpenAI
    // counts them inside. Grok: vercel/ai `packages/openai-compatible/src/chat/__fixtures__/
    // xai-text.chunks.txt`; OpenAI: Azure's model router, `packages/openai/src/chat/__fixtures__/
    // azure-model-router.1.chunks.txt`.
    if !recorded::present() {
        return;
    }
    let usage = |path: &str| {
        done(&Recording::open(path).decode(usize::MAX))
            .1
            .usage
            .clone()
    };
    let grok = usage("providers-more/openai-completions/vercel_grok_reasoning_text.sse");
    // prompt 12 (11 cached), completion 2, reasoning 340, total 354.
    assert_eq!(
        (grok.input, grok.cache_read, grok.output, grok.total_tokens),
        (1, 11, 342, 354)
    );
    let openai = usage("providers-more/openai-completions/vercel_azure_model_router.sse");
    // prompt 15, completion 78 of which 64 reasoning, total 93.
    assert_eq!(
        (openai.input, openai.output, openai.total_tokens),
        (15, 78, 93)
    );
}

#[test]
fn gemini_tool_use_prompt_tokens_count_as_input() {
    // Gemini running code (Firebase's test data, `mock-responses/googleai/
    // streaming-success-code-execution.txt`): prompt 21, tool-use prompt 243, candidates 126,
    // thoughts 95, total 485.
    if !recorded::present() {
        return;
    }
    let events = Recording::open("providers-more/google/firebase_code_execution_parts.sse")
        .decode(usize::MAX);
    let usage = &done(&events).1.usage;
    assert_eq!(
        (usage.input, usage.output, usage.total_tokens),
        (264, 221, 485)
    );
}

#[test]
fn an_error_chunk_keeps_its_usage() {
    // Issue 19 item 11. No recording of OpenRouter's mid-stream error is in the shared
    // recordings, so DeepSeek's real stream stopped by `length` (vercel/ai
    // `packages/deepseek/src/chat/__fixtures__/deepseek-text.chunks.txt`) is changed in the one
    // way OpenRouter's differs: its last chunk, which carries the usage, also carries
    // OpenRouter's documented mid-stream `error` and `finish_reason: "error"`.
    if !recorded::present() {
        return;
    }
    let recording =
        Recording::open("providers-more/openai-completions/vercel_deepseek_text_length.sse");
    let plain_events = recording.decode(usize::MAX);
    let (reason, plain) = done(&plain_events);
    assert_eq!(reason, StopReason::Length);
    let mut edited = 0;
    let body = recording.edited(|mut chunk| {
        if chunk["usage"].is_object() {
            chunk["error"] = json!({"code": 502, "message": "Provider returned error"});
            chunk["choices"][0]["finish_reason"] = json!("error");
            edited += 1;
        }
        Some(chunk)
    });
    assert_eq!(edited, 1);
    let events = decode(Api::Completions, &body, usize::MAX);
    assert_eq!(error_of(&events), "Provider returned error");
    let message = final_message(&events);
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.total_tokens
        ),
        (13, 400, 413)
    );
    assert_eq!(message.usage, plain.usage);
    assert_eq!(text(message), text(plain), "what arrived is kept");
}

#[test]
fn reasoning_sent_in_two_fields_by_a_real_server_shape_is_read_once() {
    // `providers-more`'s derived recording: Groq's reasoning stream with every `reasoning`
    // delta also sent as `reasoning_content` (as NVIDIA's and chutes.ai's servers do).
    if !recorded::present() {
        return;
    }
    let thinking_of = |path: &str| thinking(done(&Recording::open(path).decode(usize::MAX)).1);
    let plain = thinking_of("providers-more/openai-completions/vercel_groq_reasoning.sse");
    assert!(plain.len() > 1000);
    assert_eq!(
        thinking_of("providers-more/openai-completions/derived_dual_reasoning_fields.sse"),
        plain
    );
}

#[test]
fn an_anthropic_error_event_midway_ends_the_stream_keeping_the_text() {
    // `providers-more`'s derived recording: Claude's real text stream, cut after its first
    // deltas by the `overloaded_error` event of Anthropic's streaming docs.
    if !recorded::present() {
        return;
    }
    let recording = Recording::open("providers-more/anthropic/derived_mid_stream_overloaded.sse");
    for piece in [usize::MAX, 1, 13] {
        let events = recording.decode(piece);
        assert_eq!(error_of(&events), "Overloaded");
        assert_eq!(
            text(final_message(&events)),
            "Hello! I'm doing well, thank you for asking"
        );
    }
}
