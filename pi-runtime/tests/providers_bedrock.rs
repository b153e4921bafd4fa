//! AWS Bedrock's ConverseStream against a local server speaking its wire: the request body
//! (toolSpec, toolUse, toolResult, reasoning replayed with its signature, images, cachePoint,
//! thinking), the SigV4 signature (checked again from what the server received) and the
//! Bedrock API key, the binary event stream (split at every byte), exceptions, sign-in errors;
//! and the decoder on Bedrock streams other projects recorded (shared recordings,
//! `providers-more/bedrock`).
#![cfg(feature = "bedrock")]

mod stream_end;
use stream_end::{error_text, last};
mod recorded;
mod sdk_types;
mod wire_server;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_smithy_types::event_stream::{Header, HeaderValue, Message as Frame};
use futures_util::StreamExt;
use pi_runtime::providers::{AwsCredentials, BedrockConverse};
use pi_runtime::{
    AssistantContent, AssistantEvent, AssistantMessage, Context, Message, Model, StopReason,
    StreamOptions, ThinkingLevel, ToolChoice, ToolResultMessage, UserMessage,
};
use pi_tool::{Content, ToolSpec};
use serde_json::{Value, json};
use wire_server::{Reply, Seen, Server};

const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// One event-stream message as Bedrock frames it.
fn frame(event_type: &str, payload: &Value) -> Vec<u8> {
    let message = Frame::new(payload.to_string().into_bytes())
        .add_header(Header::new(
            ":event-type",
            HeaderValue::String(event_type.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ))
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".into()),
        ));
    let mut out = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut out).unwrap();
    out
}

fn exception(kind: &str, message: &str) -> Vec<u8> {
    let frame = Frame::new(json!({"message": message}).to_string().into_bytes())
        .add_header(Header::new(
            ":exception-type",
            HeaderValue::String(kind.to_owned().into()),
        ))
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("exception".into()),
        ));
    let mut out = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&frame, &mut out).unwrap();
    out
}

/// A Claude answer on Bedrock: reasoning with its signature, text, a tool call in two pieces,
/// the stop reason, then usage with cache reads (as Bedrock sends `metadata` last).
fn tool_stream() -> Vec<u8> {
    [
        frame("messageStart", &json!({"role": "assistant", "p": "abcdefgh"})),
        frame(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "The user wants weather."}}}),
        ),
        frame(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "EqoBCkgIARABGAIiQL"}}}),
        ),
        frame("contentBlockStop", &json!({"contentBlockIndex": 0})),
        frame(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 1, "delta": {"text": "Checking Zürich."}}),
        ),
        frame("contentBlockStop", &json!({"contentBlockIndex": 1})),
        frame(
            "contentBlockStart",
            &json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "get_weather"}}}),
        ),
        frame(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"city\": \"Z"}}}),
        ),
        frame(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "ürich\"}"}}}),
        ),
        frame("contentBlockStop", &json!({"contentBlockIndex": 2})),
        frame("messageStop", &json!({"stopReason": "tool_use"})),
        frame(
            "metadata",
            &json!({"usage": {"inputTokens": 412, "outputTokens": 57, "totalTokens": 1269,
                              "cacheReadInputTokens": 800, "cacheWriteInputTokens": 0},
                    "metrics": {"latencyMs": 1422}}),
        ),
    ]
    .concat()
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Weather in a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"]}),
    }
}

/// A conversation with an earlier Bedrock answer (reasoning, a call) and its result, an image.
fn conversation(model: &str) -> Vec<Arc<Message>> {
    let earlier = AssistantMessage::new(
        vec![
            AssistantContent::thinking("Need the weather.").with_signature("sig-1"),
            AssistantContent::tool_call("tooluse_1", "get_weather", json!({"city": "Oslo"})),
        ],
        StopReason::ToolUse,
    )
    .with_api("bedrock-converse-stream")
    .with_provider("amazon-bedrock")
    .with_model(model);
    vec![
        Arc::new(Message::User(UserMessage::new(vec![
            Content::text("Weather in Oslo? See the map."),
            Content::image("iVBORw0KGgo=", "image/png"),
        ]))),
        Arc::new(Message::Assistant(earlier)),
        Arc::new(Message::ToolResult(ToolResultMessage::error(
            "tooluse_1",
            "get_weather",
            "timeout",
        ))),
    ]
}

const CLAUDE: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

async fn run(model: &dyn Model, options: &StreamOptions) -> Vec<AssistantEvent> {
    let messages = conversation(CLAUDE);
    let tools = [weather_tool()];
    let context = Context {
        system_prompt: "Be brief.",
        messages: &messages,
        tools: &tools,
    };
    tokio::time::timeout(
        Duration::from_secs(20),
        model.stream(context, options).collect::<Vec<_>>(),
    )
    .await
    .expect("the stream ends")
}

fn credentials() -> AwsCredentials {
    AwsCredentials::new(
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        Some("IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN".into()),
    )
}

#[test]
fn the_request_body_is_converse() {
    let model = BedrockConverse::new(CLAUDE).max_tokens(1024);
    let messages = conversation(CLAUDE);
    let tools = [weather_tool()];
    let context = Context {
        system_prompt: "Be brief.",
        messages: &messages,
        tools: &tools,
    };
    let mut options = StreamOptions::default();
    options.thinking = Some(ThinkingLevel::Low);
    options.tool_choice = Some(ToolChoice::Tool("get_weather".into()));
    options.temperature = Some(0.3);
    let body = model.request_body(context, &options);
    assert_eq!(
        body["messages"][0]["content"],
        json!([{"text": "Weather in Oslo? See the map."},
               {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}])
    );
    assert_eq!(
        body["messages"][1]["content"],
        json!([{"reasoningContent": {"reasoningText": {"text": "Need the weather.", "signature": "sig-1"}}},
               {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Oslo"}}}])
    );
    assert_eq!(
        body["messages"][2]["content"],
        json!([{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "timeout"}], "status": "error"}},
               {"cachePoint": {"type": "default"}}])
    );
    assert_eq!(
        body["system"],
        json!([{"text": "Be brief."}, {"cachePoint": {"type": "default"}}])
    );
    assert_eq!(
        body["toolConfig"],
        json!({"tools": [{"toolSpec": {"name": "get_weather", "description": "Weather in a city",
                    "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}},
                                             "required": ["city"]}}}},
                         {"cachePoint": {"type": "default"}}],
               "toolChoice": {"tool": {"name": "get_weather"}}})
    );
    // Thinking: Anthropic's budget on top of the answer's, and no temperature with it.
    assert_eq!(
        body["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": 2048}})
    );
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": 3072}));
    assert!(body.get("modelId").is_none() && body.get("model").is_none());

    // Another model: no cache points, no thinking budget, the temperature sent.
    let nova = BedrockConverse::new("meta.llama3-70b-instruct-v1:0").max_tokens(512);
    let body = nova.request_body(context, &options);
    assert!(body.get("additionalModelRequestFields").is_none());
    assert_eq!(
        body["inferenceConfig"],
        json!({"maxTokens": 512, "temperature": 0.3})
    );
    assert!(!body.to_string().contains("cachePoint"));
    // Reasoning of another model is not replayed with a signature it cannot check.
    assert!(!body.to_string().contains("sig-1"));
    assert_eq!(
        body["messages"][1]["content"][0]["toolUse"]["toolUseId"],
        "tooluse_1"
    );
}

/// The bodies as the AWS SDK's `ConverseStreamRequest` (`tsc --strict`): every field and value
/// we send is one the SDK declares. The SDK's input has the model id (the wire puts it in the
/// path) and blobs (image bytes, redacted reasoning) as `Uint8Array` where the wire has base64,
/// so those are put back.
#[test]
fn request_bodies_are_the_aws_sdks_converse_stream_request() {
    let Some(deps) = sdk_types::with_sdk(&sdk_types::BEDROCK_CONVERSE_STREAM) else {
        return;
    };
    let messages = conversation(CLAUDE);
    let tools = [weather_tool()];
    let mut redacted = conversation(CLAUDE);
    redacted[1] = Arc::new(Message::Assistant(
        AssistantMessage::new(
            vec![
                AssistantContent::redacted_thinking("cnNuX3BVUGgx"),
                AssistantContent::tool_call("tooluse_1", "get_weather", json!({"city": "Oslo"})),
            ],
            StopReason::ToolUse,
        )
        .with_api("bedrock-converse-stream")
        .with_provider("amazon-bedrock")
        .with_model(CLAUDE),
    ));
    let mut bodies = Vec::new();
    for (model, messages, choice, thinking) in [
        (
            CLAUDE,
            &messages,
            Some(ToolChoice::Tool("get_weather".into())),
            Some(ThinkingLevel::High),
        ),
        (CLAUDE, &redacted, Some(ToolChoice::Required), None),
        (
            "amazon.nova-pro-v1:0",
            &messages,
            Some(ToolChoice::Auto),
            None,
        ),
        ("meta.llama3-70b-instruct-v1:0", &messages, None, None),
    ] {
        let context = Context {
            system_prompt: "Be brief.",
            messages,
            tools: &tools,
        };
        let mut options = StreamOptions::default();
        options.tool_choice = choice;
        options.thinking = thinking;
        options.temperature = Some(0.2);
        // One with strict tools (`toolSpec.strict`).
        let mut body = BedrockConverse::new(model)
            .max_tokens(1000)
            .strict(thinking.is_some())
            .request_body(context, &options);
        body["modelId"] = json!(model);
        bodies.push(body);
    }
    /// The wire's base64 blobs as the SDK's `Uint8Array`.
    fn sdk_literal(value: &Value) -> String {
        fn mark(value: &mut Value) {
            match value {
                Value::Object(map) => {
                    for (key, inner) in map.iter_mut() {
                        if (key == "bytes" || key == "redactedContent") && inner.is_string() {
                            *inner = json!("__BYTES__");
                        } else {
                            mark(inner);
                        }
                    }
                }
                Value::Array(items) => items.iter_mut().for_each(mark),
                _ => {}
            }
        }
        let mut value = value.clone();
        mark(&mut value);
        value
            .to_string()
            .replace("\"__BYTES__\"", "new Uint8Array(0)")
    }
    assert_eq!(
        bodies[0]["toolConfig"]["tools"][0]["toolSpec"]["strict"],
        true
    );
    let literals: Vec<String> = bodies.iter().map(sdk_literal).collect();
    assert!(literals[0].contains("new Uint8Array(0)"));
    let import = "import type { ConverseStreamRequest } from \"@aws-sdk/client-bedrock-runtime\";";
    if let Err(report) =
        sdk_types::type_check_literals(&deps, "bedrock", import, "ConverseStreamRequest", &literals)
    {
        panic!("the AWS SDK refuses a body:\n{report}");
    }
    // The check can fail: a field the SDK does not have is refused.
    let mut wrong = bodies[0].clone();
    wrong["toolConfig"]["tools"][0]["toolSpec"]["input_schema"] = json!({});
    assert!(
        sdk_types::type_check_literals(
            &deps,
            "bedrock-wrong",
            import,
            "ConverseStreamRequest",
            &[sdk_literal(&wrong)],
        )
        .is_err()
    );
}

/// Signs the request the server received again, with the `x-amz-date` it carries: the
/// signature matches only if the body bytes, host and signed headers are the ones sent.
fn resign(seen: &Seen, url_root: &str) -> String {
    let amz_date = seen.header("x-amz-date").unwrap();
    let stamp = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &amz_date[0..4],
        &amz_date[4..6],
        &amz_date[6..8],
        &amz_date[9..11],
        &amz_date[11..13],
        &amz_date[13..15]
    );
    let time = SystemTime::try_from(
        aws_smithy_types::DateTime::from_str(&stamp, aws_smithy_types::date_time::Format::DateTime)
            .unwrap(),
    )
    .unwrap();
    let identity = aws_credential_types::Credentials::new(
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        Some("IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN".into()),
        None,
        "test",
    )
    .into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region("eu-central-1")
        .name("bedrock")
        .time(time)
        .settings(aws_sigv4::http_request::SigningSettings::default())
        .build()
        .unwrap()
        .into();
    let url = format!("{url_root}{}", seen.target);
    let request = aws_sigv4::http_request::SignableRequest::new(
        "POST",
        &url,
        [("content-type", seen.header("content-type").unwrap())].into_iter(),
        aws_sigv4::http_request::SignableBody::Bytes(&seen.raw),
    )
    .unwrap();
    let (instructions, _) = aws_sigv4::http_request::sign(request, &params)
        .unwrap()
        .into_parts();
    instructions
        .headers()
        .find(|(n, _)| *n == "authorization")
        .map(|(_, v)| v.to_owned())
        .unwrap()
}

#[tokio::test]
async fn a_signed_request_streams_reasoning_text_and_a_call() {
    let server = Server::start(vec![Reply::binary(&tool_stream(), 7, EVENT_STREAM)]).await;
    let model = BedrockConverse::new(CLAUDE)
        .base_url(&server.url)
        .region("eu-central-1")
        .credentials(credentials())
        .max_retries(0);
    let events = run(&model, &StreamOptions::default()).await;
    let (message, reason) = last(&events);
    assert_eq!(reason, Some(StopReason::ToolUse), "{message:?}");
    assert_eq!(
        (message.api.as_str(), message.provider.as_str()),
        ("bedrock-converse-stream", "amazon-bedrock")
    );
    match &message.content[0] {
        AssistantContent::Thinking {
            thinking,
            thinking_signature,
            redacted,
            ..
        } => {
            assert_eq!(thinking, "The user wants weather.");
            assert_eq!(thinking_signature.as_deref(), Some("EqoBCkgIARABGAIiQL"));
            assert!(!redacted);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(message.text(), "Checking Zürich.");
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.call.id, "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q");
    assert_eq!(call.call.arguments, json!({"city": "Zürich"}));
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.cache_read
        ),
        (412, 57, 800)
    );

    let seen = &server.seen()[0];
    assert_eq!(
        seen.target,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    let authorization = seen.header("authorization").unwrap();
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/")
            && authorization.contains("/eu-central-1/bedrock/aws4_request")
            && authorization
                .contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"),
        "{authorization}"
    );
    assert_eq!(
        seen.header("x-amz-security-token"),
        Some("IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN")
    );
    assert_eq!(
        authorization,
        resign(seen, &server.url),
        "the signature covers what was sent"
    );
    assert_eq!(seen.body["messages"][0]["role"], "user");
}

#[tokio::test]
async fn every_split_of_the_event_stream_decodes_alike() {
    let body = tool_stream();
    let model = BedrockConverse::new(CLAUDE);
    let decode = |pieces: &[&[u8]]| {
        let mut decoder = model.stream_decoder();
        let mut events = Vec::new();
        for piece in pieces {
            events.extend(decoder.push(piece));
        }
        events.extend(decoder.finish());
        let (message, reason) = match events.last() {
            Some(AssistantEvent::Done { message, reason }) => (message.clone(), Some(*reason)),
            other => panic!("{other:?}"),
        };
        (message.content, message.usage, reason, events.len())
    };
    let whole = decode(&[&body]);
    for cut in 0..=body.len() {
        let (a, b) = body.split_at(cut);
        assert_eq!(decode(&[a, b]), whole, "cut at byte {cut}");
    }
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(decode(&bytes), whole, "one byte at a time");

    // Cut short: the response did not end.
    let mut decoder = model.stream_decoder();
    let mut events = decoder.push(&body[..body.len() / 2]);
    events.extend(decoder.finish());
    assert!(matches!(events.last(), Some(AssistantEvent::Error { .. })));
    // A broken frame (its CRC changed) ends the stream with an error.
    let mut broken = body.clone();
    broken[20] ^= 0xff;
    let mut decoder = model.stream_decoder();
    let mut events = decoder.push(&broken);
    events.extend(decoder.finish());
    match events.last() {
        Some(AssistantEvent::Error { error, .. }) => assert!(
            error
                .error_message
                .as_deref()
                .unwrap()
                .starts_with("The response's event stream is broken"),
            "{error:?}"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_api_key_is_a_bearer_token_and_exceptions_end_the_stream() {
    let body = [
        frame("messageStart", &json!({"role": "assistant"})),
        frame(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"text": "Part"}}),
        ),
        exception(
            "throttlingException",
            "Too many tokens, please wait before trying again.",
        ),
    ]
    .concat();
    let server = Server::start(vec![Reply::binary(&body, 16, EVENT_STREAM)]).await;
    let model = BedrockConverse::new(CLAUDE)
        .base_url(&server.url)
        .region("us-east-1")
        .api_key("ABSKQmVkcm9ja0FQSUtleS1example")
        .max_retries(0);
    let events = run(&model, &StreamOptions::default()).await;
    assert_eq!(
        error_text(&events),
        "throttlingException: Too many tokens, please wait before trying again."
    );
    let (message, _) = last(&events);
    assert_eq!(message.text(), "Part", "what arrived is kept");
    let seen = &server.seen()[0];
    assert_eq!(
        seen.header("authorization"),
        Some("Bearer ABSKQmVkcm9ja0FQSUtleS1example")
    );
    assert!(seen.header("x-amz-date").is_none());
}

#[tokio::test]
async fn refused_sign_ins_and_unknown_models_say_what_to_check() {
    let server = Server::start(vec![
        Reply::status(
            403,
            r#"{"message":"The security token included in the request is invalid: IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN"}"#,
        )
        .header("x-amzn-errortype", "UnrecognizedClientException"),
        Reply::status(
            404,
            r#"{"message":"The provided model identifier is invalid."}"#,
        ),
        Reply::status(
            400,
            r#"{"message":"Too many strict tools (21). The maximum number of strict tools supported is 20"}"#,
        ),
    ])
    .await;
    let model = BedrockConverse::new(CLAUDE)
        .base_url(&server.url)
        .region("us-west-2")
        .credentials(credentials())
        .max_retries(0);
    let text = error_text(&run(&model, &StreamOptions::default()).await);
    assert!(
        text.starts_with(
            "403 Forbidden: The security token included in the request is invalid: <redacted>"
        ),
        "{text}"
    );
    assert!(
        text.contains("check the credentials from .credentials(..)"),
        "{text}"
    );
    assert!(text.contains("region \"us-west-2\""), "{text}");
    assert!(!text.contains("EXAMPLESESSIONTOKEN") && !text.contains("EXAMPLEKEY"));

    let text = error_text(&run(&model, &StreamOptions::default()).await);
    assert!(
        text.starts_with("404 Not Found: The provided model identifier is invalid."),
        "{text}"
    );
    assert!(
        text.contains("check the model id or inference profile \"us.anthropic.claude-sonnet-4-5-20250929-v1:0\""),
        "{text}"
    );

    let text = error_text(&run(&model, &StreamOptions::default()).await);
    assert_eq!(
        text,
        "400 Bad Request: Too many strict tools (21). The maximum number of strict tools supported is 20"
    );
}

/// Bedrock streams the Vercel AI SDK recorded, framed again as the service sends them (the
/// shared recordings' `providers-more/bedrock`, with its SOURCES.md and the `make.py` that
/// built it): each decodes to one end, alike however it is split (at every byte of its first
/// and last KiB, every 11th between). A shared folder from before that set says it skipped.
#[test]
fn recorded_bedrock_streams_decode_alike_split_at_every_byte() {
    let folder = recorded::root().join("providers-more/bedrock");
    if !folder.is_dir() {
        eprintln!(
            "skipped: no Bedrock recordings in {} (providers-more/bedrock of the shared recordings)",
            folder.display()
        );
        return;
    }
    let mut paths: Vec<_> = std::fs::read_dir(&folder)
        .unwrap_or_else(|err| panic!("{}: {err}", folder.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "eventstream"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no .eventstream files in {folder:?}");
    let model = BedrockConverse::new("recorded");
    let decode = |pieces: &[&[u8]]| {
        let mut decoder = model.stream_decoder();
        let mut events = Vec::new();
        for piece in pieces {
            events.extend(decoder.push(piece));
        }
        events.extend(decoder.finish());
        events
    };
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let body = std::fs::read(&path).unwrap();
        let whole = decode(&[&body]);
        let ends = whole
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
            matches!(whole.last(), Some(AssistantEvent::Done { .. })),
            "{name}: {:?}",
            whole.last()
        );
        let final_of = |events: &[AssistantEvent]| match events.last() {
            Some(AssistantEvent::Done { message, .. }) => (
                message.content.clone(),
                message.usage.clone(),
                message.stop_reason,
            ),
            other => panic!("{name}: {other:?}"),
        };
        let expected = final_of(&whole);
        // Every byte near the ends (the first and last events), every 11th between.
        let cuts =
            (0..=body.len()).filter(|&cut| cut < 1024 || body.len() - cut < 1024 || cut % 11 == 0);
        for cut in cuts {
            let (a, b) = body.split_at(cut);
            assert_eq!(
                final_of(&decode(&[a, b])),
                expected,
                "{name}: cut at byte {cut}"
            );
        }
        // What two of them hold, read from their origin lines.
        let (content, usage, stop) = expected;
        match name.as_str() {
            "amazon-bedrock-json-other-tool.1.eventstream" => {
                assert_eq!(stop, StopReason::ToolUse);
                let AssistantContent::ToolCall(call) = &content[0] else {
                    panic!("{content:?}")
                };
                assert_eq!(call.call.id, "toolu_01PQjhxo3eirCdKNvCJrKc8f");
                assert_eq!(call.call.arguments, json!({"location": "San Francisco"}));
                assert_eq!((usage.input, usage.output), (843, 28));
            }
            "amazon-bedrock-redacted-content.eventstream" => {
                assert!(
                    content.iter().any(|b| matches!(
                        b,
                        AssistantContent::Thinking {
                            redacted: true,
                            thinking_signature: Some(_),
                            ..
                        }
                    )),
                    "{content:?}"
                );
                assert_eq!((usage.input, usage.output), (67, 70));
            }
            _ => {}
        }
    }
}

/// Bedrock's refusal of strict tools (Claude's grammar limits, as Bedrock words them): sent once
/// more without `strict`, signed again for the new body, and remembered for the session.
#[tokio::test]
async fn a_refusal_of_strict_tools_is_signed_and_sent_again_without_them() {
    let server = Server::start(vec![
        Reply::status(
            400,
            r#"{"message":"Too many strict tools (21). The maximum number of strict tools supported is 20"}"#,
        )
        .header("x-amzn-errortype", "ValidationException"),
        Reply::binary(&tool_stream(), 64, EVENT_STREAM),
    ])
    .await;
    let model = BedrockConverse::new(CLAUDE)
        .base_url(&server.url)
        .region("eu-central-1")
        .credentials(credentials())
        .strict(true)
        .max_retries(0);
    let mut options = StreamOptions::default();
    options.session_id = Some("s1".into());
    let events = run(&model, &options).await;
    let (message, reason) = last(&events);
    assert_eq!(reason, Some(StopReason::ToolUse), "{message:?}");
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    let spec = |seen: &Seen| seen.body["toolConfig"]["tools"][0]["toolSpec"].clone();
    assert_eq!(spec(&seen[0])["strict"], true);
    assert_eq!(
        spec(&seen[0])["inputSchema"]["json"]["additionalProperties"],
        false
    );
    assert!(spec(&seen[1]).get("strict").is_none());
    assert_eq!(
        spec(&seen[1])["inputSchema"]["json"],
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    );
    for request in &seen {
        assert_eq!(
            request.header("authorization").unwrap(),
            resign(request, &server.url),
            "each attempt is signed for its own body"
        );
    }
    let fallback = model
        .strict_tools_policy()
        .fallback(Some("s1"))
        .expect("remembered");
    assert!(fallback.tools.contains("get_weather"));
}
