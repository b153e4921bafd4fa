//! Mistral's API against a local server speaking its wire: the request body (9-character tool
//! call ids, no strict tools unless asked, `any` for a forced call, error results marked,
//! thinking), the stream (whole calls in one chunk, usage, `model_length`), its error shapes,
//! and sign-in failures; and the decoder on Mistral's real recorded streams.
#![cfg(feature = "http")]

mod stream_end;
use stream_end::last;
mod recorded;
mod sdk_types;
mod wire_server;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use pi_runtime::providers::MistralChat;
use pi_runtime::{
    AssistantContent, AssistantEvent, AssistantMessage, Context, Message, Model, StopReason,
    StreamOptions, ThinkingLevel, ToolChoice, ToolResultMessage, UserMessage,
};
use pi_tool::{Content, ToolSpec};
use serde_json::{Value, json};
use wire_server::{Reply, Server};

/// A Mistral stream as its API sends it: a role chunk, a whole tool call in one chunk without
/// an `index`, the usage on the finishing chunk, then `[DONE]`.
const TOOL_STREAM: &str = concat!(
    "data: {\"id\":\"cmpl1\",\"object\":\"chat.completion.chunk\",\"model\":\"mistral-small-latest\",",
    "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"cmpl1\",\"object\":\"chat.completion.chunk\",\"model\":\"mistral-small-latest\",",
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Checking.\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"cmpl1\",\"object\":\"chat.completion.chunk\",\"model\":\"mistral-small-latest\",",
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":null,\"tool_calls\":[{\"id\":\"D681PevKs\",",
    "\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\": \\\"Z\u{fc}rich\\\"}\"}}]},",
    "\"finish_reason\":\"tool_calls\"}],",
    "\"usage\":{\"prompt_tokens\":84,\"total_tokens\":104,\"completion_tokens\":20}}\n\n",
    "data: [DONE]\n\n",
);

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Weather in a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"]}),
    }
}

/// A conversation with calls from another model (OpenAI Responses ids) and from Mistral itself.
fn conversation() -> Vec<Arc<Message>> {
    let foreign = AssistantMessage::new(
        vec![
            AssistantContent::thinking("let me look"),
            AssistantContent::text("Looking."),
            AssistantContent::tool_call("call_1|fc_1", "get_weather", json!({"city": "Oslo"})),
            AssistantContent::tool_call("call_2|fc_2", "get_weather", json!({"city": "Rome"})),
        ],
        StopReason::ToolUse,
    )
    .with_api("openai-responses")
    .with_provider("openai")
    .with_model("gpt-5");
    let own = AssistantMessage::new(
        vec![
            AssistantContent::thinking("again"),
            AssistantContent::tool_call("D681PevKs", "get_weather", json!({"city": "Bern"})),
        ],
        StopReason::ToolUse,
    )
    .with_api("mistral-conversations")
    .with_provider("mistral")
    .with_model("magistral-medium-latest");
    vec![
        Arc::new(Message::user("Weather in Oslo and Rome?")),
        Arc::new(Message::Assistant(foreign)),
        Arc::new(Message::ToolResult(ToolResultMessage::new(
            "call_1|fc_1",
            "get_weather",
            vec![Content::text("Sunny"), Content::image("AAAA", "image/png")],
        ))),
        // call_2 has no result: it gets pi's "No result provided" error result.
        Arc::new(Message::user("And Bern?")),
        Arc::new(Message::Assistant(own)),
        Arc::new(Message::ToolResult(ToolResultMessage::error(
            "D681PevKs",
            "get_weather",
            "city not found",
        ))),
    ]
}

/// Default options with some set (`StreamOptions` is `#[non_exhaustive]`).
fn options(set: impl FnOnce(&mut StreamOptions)) -> StreamOptions {
    let mut options = StreamOptions::default();
    set(&mut options);
    options
}

fn body(model: &MistralChat, options: &StreamOptions) -> Value {
    let messages = conversation();
    let tools = [weather_tool()];
    model.request_body(
        Context {
            system_prompt: "Be brief.",
            messages: &messages,
            tools: &tools,
        },
        options,
    )
}

#[test]
fn ids_become_nine_characters_the_same_for_a_call_and_its_result() {
    let body = body(
        &MistralChat::new("magistral-medium-latest"),
        &StreamOptions::default(),
    );
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "user",
            "assistant",
            "tool"
        ]
    );
    let call_ids: Vec<&str> = [&messages[2], &messages[6]]
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().unwrap())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let result_ids: Vec<&str> = [3, 4, 7]
        .iter()
        .map(|&i| messages[i]["tool_call_id"].as_str().unwrap())
        .collect();
    // pi 0.73.1 maps `call_1|fc_1` to `198dty0p9` too; Mistral's own id stays.
    assert_eq!(call_ids[0], "198dty0p9");
    assert_eq!(call_ids[2], "D681PevKs");
    assert_eq!(call_ids, result_ids);
    for id in &call_ids {
        assert!(
            id.len() == 9 && id.chars().all(|c| c.is_ascii_alphanumeric()),
            "{id}"
        );
    }
    // The same ids in the next request of the conversation.
    let again = self::body(
        &MistralChat::new("magistral-medium-latest"),
        &StreamOptions::default(),
    );
    assert_eq!(again["messages"], body["messages"]);
}

#[test]
fn messages_take_mistrals_shapes() {
    let body = body(
        &MistralChat::new("magistral-medium-latest"),
        &StreamOptions::default(),
    );
    let messages = body["messages"].as_array().unwrap();
    // Another model's thinking is dropped; its text goes as a text part.
    assert_eq!(
        messages[2]["content"],
        json!([{"type": "text", "text": "Looking."}])
    );
    assert_eq!(
        messages[2]["tool_calls"][0]["function"],
        json!({"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"})
    );
    // A result's images go in the tool message, after its text.
    assert_eq!(
        messages[3]["content"],
        json!([{"type": "text", "text": "Sunny"},
               {"type": "image_url", "image_url": "data:image/png;base64,AAAA"}])
    );
    assert_eq!(messages[3]["name"], "get_weather");
    // No error flag on Mistral's tool messages: an error says so in its text.
    assert_eq!(
        messages[4]["content"],
        json!([{"type": "text", "text": "[tool error] No result provided"}])
    );
    assert_eq!(
        messages[7]["content"],
        json!([{"type": "text", "text": "[tool error] city not found"}])
    );
    // The same model's thinking is replayed as a thinking part; no text means no text part.
    assert_eq!(
        messages[6]["content"],
        json!([{"type": "thinking", "thinking": [{"type": "text", "text": "again"}]}])
    );
    assert_eq!(messages[1]["content"], "Weather in Oslo and Rome?");
}

#[test]
fn tools_are_not_strict_unless_asked() {
    let opts = options(|o| {
        o.tool_choice = Some(ToolChoice::Required);
        o.max_tokens = Some(300);
        o.temperature = Some(0.3);
    });
    let plain = body(&MistralChat::new("mistral-large-latest"), &opts);
    assert_eq!(
        plain["tools"][0],
        json!({"type": "function", "function": {"name": "get_weather",
               "description": "Weather in a city", "strict": false,
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}}})
    );
    assert_eq!(plain["tool_choice"], "any");
    assert_eq!(plain["max_tokens"], 300);
    assert_eq!(plain["temperature"], json!(0.3));
    assert_eq!(plain["stream"], true);
    let strict = body(
        &MistralChat::new("mistral-large-latest").strict(true),
        &opts,
    );
    assert_eq!(strict["tools"][0]["function"]["strict"], true);
    assert_eq!(
        strict["tools"][0]["function"]["parameters"]["additionalProperties"],
        false
    );
    let named = options(|o| {
        o.tool_choice = Some(ToolChoice::Tool("get_weather".into()));
    });
    assert_eq!(
        body(&MistralChat::new("mistral-large-latest"), &named)["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
}

#[test]
fn thinking_is_asked_for_as_each_model_takes_it() {
    let thinking = options(|o| {
        o.thinking = Some(ThinkingLevel::Medium);
    });
    let magistral = body(&MistralChat::new("magistral-medium-latest"), &thinking);
    assert_eq!(magistral["prompt_mode"], "reasoning");
    assert!(magistral.get("reasoning_effort").is_none());
    let small = body(&MistralChat::new("mistral-small-latest"), &thinking);
    assert_eq!(small["reasoning_effort"], "high");
    assert!(small.get("prompt_mode").is_none());
    let off = options(|o| {
        o.thinking = Some(ThinkingLevel::Off);
    });
    let none = body(&MistralChat::new("magistral-medium-latest"), &off);
    assert!(none.get("prompt_mode").is_none() && none.get("reasoning_effort").is_none());
}

async fn run(model: &dyn Model, options: &StreamOptions) -> Vec<AssistantEvent> {
    let messages = conversation();
    let tools = [weather_tool()];
    let context = Context {
        system_prompt: "Be brief.",
        messages: &messages,
        tools: &tools,
    };
    let stream = model.stream(context, options);
    tokio::time::timeout(Duration::from_secs(20), stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends")
}

#[tokio::test]
async fn a_tool_call_streams_over_http() {
    let server = Server::start(vec![Reply::stream(TOOL_STREAM, 7)]).await;
    let model = MistralChat::new("mistral-small-latest")
        .base_url(&server.url)
        .api_key("test-mistral-key");
    let opts = options(|o| {
        o.session_id = Some("session-7".into());
    });
    let events = run(&model, &opts).await;
    let (message, reason) = last(&events);
    assert_eq!(reason, Some(StopReason::ToolUse));
    assert_eq!(message.text(), "Checking.");
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.call.id, "D681PevKs");
    assert_eq!(call.call.arguments, json!({"city": "Zürich"}));
    assert_eq!((message.usage.input, message.usage.output), (84, 20));
    assert_eq!(
        (message.api.as_str(), message.provider.as_str()),
        ("mistral-conversations", "mistral")
    );
    let seen = server.seen();
    assert_eq!(seen[0].target, "/v1/chat/completions");
    assert_eq!(
        seen[0].header("authorization"),
        Some("Bearer test-mistral-key")
    );
    assert_eq!(seen[0].header("x-affinity"), Some("session-7"));
    assert_eq!(seen[0].body["model"], "mistral-small-latest");
}

#[tokio::test]
async fn a_full_context_ends_as_length() {
    let stream = TOOL_STREAM.replace("\"tool_calls\"}", "\"model_length\"}");
    let server = Server::start(vec![Reply::stream(&stream, 64)]).await;
    let model = MistralChat::new("m")
        .base_url(&server.url)
        .api_key("test-mistral-key");
    let events = run(&model, &StreamOptions::default()).await;
    let (_, reason) = last(&events);
    assert_eq!(reason, Some(StopReason::Length));
}

#[tokio::test]
async fn mistral_error_shapes_give_their_message() {
    let invalid = r#"{"object":"error","message":"Tool call id was call_98660886 but must be a-z, A-Z, 0-9, with a length of 9.","type":"invalid_function_call","param":null,"code":"3280"}"#;
    let validation = r#"{"object":"error","message":{"detail":[{"type":"missing","loc":["body","model"],"msg":"Field required","input":{}}]},"type":"invalid_request_error","param":null,"code":null}"#;
    let in_stream = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Par\"}}]}\n\n\
                     data: {\"object\":\"error\",\"message\":\"Service tier capacity exceeded\",\"type\":\"service_tier_capacity_exceeded\",\"code\":\"3505\"}\n\n";
    let server = Server::start(vec![
        Reply::status(400, invalid),
        Reply::status(422, validation),
        Reply::stream(in_stream, 16),
    ])
    .await;
    let model = MistralChat::new("m")
        .base_url(&server.url)
        .api_key("test-mistral-key");
    let mut messages = Vec::new();
    for _ in 0..3 {
        let events = run(&model, &StreamOptions::default()).await;
        let (message, reason) = last(&events);
        assert_eq!(reason, None);
        messages.push((message.error_message.clone().unwrap(), message.text()));
    }
    assert_eq!(
        messages[0].0,
        "400 Bad Request: Tool call id was call_98660886 but must be a-z, A-Z, 0-9, with a length of 9."
    );
    assert_eq!(
        messages[1].0,
        "422 Unprocessable Entity: body.model: Field required"
    );
    assert_eq!(
        messages[2],
        (
            "Service tier capacity exceeded".to_owned(),
            "Par".to_owned()
        )
    );
}

#[tokio::test]
async fn sign_in_failures_say_what_to_set_and_hide_the_key() {
    let model = MistralChat::new("m").api_key_env("PI_TEST_NO_SUCH_MISTRAL_KEY");
    let events = run(&model, &StreamOptions::default()).await;
    assert_eq!(
        last(&events).0.error_message.as_deref(),
        Some(
            "No API key for provider \"mistral\": set PI_TEST_NO_SUCH_MISTRAL_KEY (or pass one with .api_key(..))"
        )
    );
    // A refused key: the server's message echoes it; we do not.
    let secret = "mistral-secret-key-0123456789";
    let echo =
        format!(r#"{{"message":"Unauthorized: key {secret} is not valid","request_id":"r1"}}"#);
    let server = Server::start(vec![Reply::status(401, &echo)]).await;
    let model = MistralChat::new("m").base_url(&server.url).api_key(secret);
    let events = run(&model, &StreamOptions::default()).await;
    let message = last(&events).0.error_message.clone().unwrap();
    assert!(!message.contains(secret), "{message}");
    assert!(message.starts_with("401 Unauthorized: "), "{message}");
    assert!(
        message.ends_with(
            "(sign-in refused: check MISTRAL_API_KEY (or the key passed with .api_key(..)))"
        ),
        "{message}"
    );
    assert!(!format!("{model:?}").contains(secret));
}

/// Mistral's own streams as the Vercel AI SDK recorded them (`packages/mistral/src/__fixtures__`
/// at vercel/ai `ed857f50f112`, origins in the recordings' README), decoded split at every byte.
#[test]
fn recorded_mistral_streams_decode_at_every_split() {
    if !recorded::present() {
        return;
    }
    let cases = [
        (
            "mistral-text",
            "Hello, world! This is a test response.",
            "",
            0,
        ),
        ("mistral-tool-call", "", "", 1),
        (
            "mistral-reasoning",
            "2 + 2 = 4",
            "The user is asking for 2+2.",
            0,
        ),
        // A call streamed in pieces (the name first, then the arguments), with cached tokens.
        ("mistral-incremental-tool-call", "", "", 1),
    ];
    for (name, text, thinking_start, calls) in cases {
        let path = format!("providers/vercel-ai/openai-completions/{name}.chunks.txt");
        let recording = recorded::Recording::open(&path);
        let decode = |piece: usize| {
            let mut decoder = MistralChat::new("recorded").decoder();
            let mut events = Vec::new();
            for chunk in recording.body.chunks(piece) {
                events.extend(decoder.push(chunk));
            }
            events.extend(decoder.finish());
            events
        };
        let whole = decode(recording.body.len());
        recorded::check_event_grammar(name, &whole);
        let (message, reason) = last(&whole);
        assert!(reason.is_some(), "{name}: {:?}", message.error_message);
        assert_eq!(message.text(), text, "{name}");
        assert!(
            recorded::thinking(message).starts_with(thinking_start),
            "{name}"
        );
        assert_eq!(message.tool_calls().count(), calls, "{name}");
        assert!(message.usage.total_tokens > 0, "{name}");
        for piece in 1..=64 {
            let events = decode(piece);
            assert_eq!(
                last(&events).0.content,
                message.content,
                "{name} in {piece}"
            );
        }
    }
    let recording = recorded::Recording::open(
        "providers/vercel-ai/openai-completions/mistral-tool-call.chunks.txt",
    );
    let mut decoder = MistralChat::new("recorded").decoder();
    let mut events = decoder.push(&recording.body);
    events.extend(decoder.finish());
    let call = last(&events).0.tool_calls().next().unwrap().clone();
    assert_eq!(
        (call.call.id.as_str(), call.call.arguments.clone()),
        ("gSIMJiOkT", json!({"location": "San Francisco"}))
    );
    let recording = recorded::Recording::open(
        "providers/vercel-ai/openai-completions/mistral-incremental-tool-call.chunks.txt",
    );
    let mut decoder = MistralChat::new("recorded").decoder();
    let mut events = decoder.push(&recording.body);
    events.extend(decoder.finish());
    let (message, reason) = last(&events);
    assert_eq!(reason, Some(StopReason::ToolUse));
    let call = message.tool_calls().next().unwrap();
    assert_eq!(
        (call.call.name.as_str(), call.call.arguments.clone()),
        ("webSearchTool", json!({"query": "current Berlin weather"}))
    );
    assert_eq!(
        (
            message.usage.input,
            message.usage.cache_read,
            message.usage.output
        ),
        (43, 128, 14)
    );
}

/// Our bodies pass Mistral's own SDK's request schema with every field intact
/// (`tests/sdk_types/mistral_wire.mjs`; the SDK from `.ci/install-test-deps`).
#[test]
fn mistrals_sdk_takes_our_bodies() {
    let forced = options(|o| {
        o.tool_choice = Some(ToolChoice::Required);
        o.max_tokens = Some(300);
        o.temperature = Some(0.3);
        o.thinking = Some(ThinkingLevel::High);
    });
    let named = options(|o| o.tool_choice = Some(ToolChoice::Tool("get_weather".into())));
    let thinking = options(|o| o.thinking = Some(ThinkingLevel::Low));
    let image = vec![Arc::new(Message::User(UserMessage::new(vec![
        Content::text("What is this?"),
        Content::image("AAAA", "image/png"),
    ])))];
    let bodies = [
        body(&MistralChat::new("magistral-medium-latest"), &forced),
        body(
            &MistralChat::new("mistral-large-latest").strict(true),
            &named,
        ),
        body(&MistralChat::new("mistral-small-latest"), &thinking),
        MistralChat::new("pixtral-large-latest").request_body(
            Context {
                system_prompt: "",
                messages: &image,
                tools: &[],
            },
            &StreamOptions::default(),
        ),
    ];
    let bodies: Vec<&Value> = bodies.iter().collect();
    if let Some(Err(report)) = sdk_types::mistral_check(&bodies) {
        panic!("{report}");
    }
}
