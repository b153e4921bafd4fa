//! Message conversion: streamed responses replayed to each API (round trips), transcripts
//! moved between providers, tool lowering, options, and `null`-means-absent through pi-tool.

use std::collections::HashMap;
use std::sync::Arc;

use pi_runtime::providers::{
    AnthropicMessages, CompatibilityReport, GoogleGenerativeAi, OpenAiCompletions, OpenAiResponses,
    OptionConflict, ResponseDecoder, SchemaMode, lower_schema,
};
use pi_runtime::{
    AssistantContent, AssistantEvent, AssistantMessage, Context, CustomMessage, Message,
    StopReason, StreamOptions, ThinkingLevel, ToolChoice, ToolResultMessage, UserMessage,
};
use pi_tool::{AgentTool, Content, ToolCall, ToolRegistry, ToolSpec, tool, validate_arguments};
use serde_json::{Value, json};

const COMPLETIONS_TOOLS: &str = include_str!("fixtures/providers/openai_completions_tools.sse");
const RESPONSES_TOOLS: &str = include_str!("fixtures/providers/openai_responses_tools.sse");
const ANTHROPIC_TOOLS: &str = include_str!("fixtures/providers/anthropic_tools.sse");
const GOOGLE_TOOLS: &str = include_str!("fixtures/providers/google_tools.sse");

/// Get the weather for a city.
#[tool]
async fn get_weather(
    /// City name
    city: String,
    /// Days of forecast (default 1)
    days: Option<u8>,
) -> String {
    format!("{city}: {days:?}")
}

/// One step of a plan.
#[derive(Debug, serde::Deserialize, pi_tool::schemars::JsonSchema)]
#[schemars(crate = "pi_tool::schemars")]
pub struct Step {
    /// What to do.
    pub action: String,
    /// How often (default 1).
    #[serde(default = "one")]
    pub count: u32,
}

fn one() -> u32 {
    1
}

/// Make a plan.
#[tool]
async fn plan(
    /// The steps, in order
    steps: Vec<Step>,
    /// Most steps to run (default: all)
    #[serde(default)]
    limit: u32,
) -> String {
    format!("{steps:?} limit={limit}")
}

/// The time now.
#[tool]
async fn now() -> String {
    "noon".into()
}

/// Tag a document.
#[tool]
async fn tag(
    /// Labels by key
    labels: HashMap<String, String>,
) -> String {
    format!("{} labels", labels.len())
}

fn decoded(mut decoder: ResponseDecoder, body: &str) -> AssistantMessage {
    let mut events = decoder.push(body.as_bytes());
    events.extend(decoder.finish());
    match events.pop() {
        Some(AssistantEvent::Done { message, .. }) => message,
        other => panic!("{other:?}"),
    }
}

fn result(id: &str, name: &str, content: Vec<Content>, is_error: bool) -> Arc<Message> {
    Arc::new(Message::ToolResult(
        ToolResultMessage::new(id, name, content)
            .with_is_error(is_error)
            .with_timestamp(0),
    ))
}

/// user, the assistant's calls, a result per call (the first failed, the last with an image).
fn transcript(assistant: &AssistantMessage) -> Vec<Arc<Message>> {
    let calls: Vec<_> = assistant.tool_calls().map(|c| c.call.clone()).collect();
    let mut messages = vec![
        Arc::new(Message::user("Weather in Zürich?")),
        Arc::new(Message::Assistant(assistant.clone())),
    ];
    for (i, call) in calls.iter().enumerate() {
        let content = if i + 1 == calls.len() {
            vec![
                Content::text("sunny"),
                Content::image("iVBORw0KGgo=", "image/png"),
            ]
        } else {
            vec![Content::text("no such city")]
        };
        messages.push(result(
            &call.id,
            &call.name,
            content,
            i == 0 && calls.len() > 1,
        ));
    }
    messages
}

fn context(messages: &[Arc<Message>]) -> Context<'_> {
    Context {
        system_prompt: "Be brief.",
        messages,
        tools: &[],
    }
}

#[test]
fn completions_round_trip() {
    let model = OpenAiCompletions::new("gpt-4o-mini");
    let assistant = decoded(model.decoder(), COMPLETIONS_TOOLS);
    let messages = transcript(&assistant);
    let body = model.request_body(context(&messages), &StreamOptions::default());
    let wire = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = wire.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "tool", "user"]
    );
    let calls = wire[2]["tool_calls"].as_array().unwrap();
    assert_eq!(wire[2]["content"], Value::Null);
    assert_eq!(calls[0]["id"], "call_weather1");
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    let arguments: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"city": "Zürich", "days": null}));
    assert_eq!(
        wire[3],
        json!({"role": "tool", "tool_call_id": "call_weather1", "content": "no such city"})
    );
    assert_eq!(
        wire[4],
        json!({"role": "tool", "tool_call_id": "call_time2", "content": "sunny"})
    );
    assert_eq!(
        wire[5]["content"],
        json!([{"type": "text", "text": "Attached image(s) from tool result:"},
               {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}])
    );
}

#[test]
fn responses_round_trip_replays_reasoning_and_item_ids() {
    let model = OpenAiResponses::new("gpt-5-mini");
    let assistant = decoded(model.decoder(), RESPONSES_TOOLS);
    let messages = transcript(&assistant);
    let body = model.request_body(context(&messages), &StreamOptions::default());
    let input = body["input"].as_array().unwrap();
    assert_eq!(
        input[1],
        json!({"role": "user", "content": [{"type": "input_text", "text": "Weather in Zürich?"}]})
    );
    assert_eq!(input[2]["type"], "reasoning");
    assert_eq!(input[2]["encrypted_content"], "gAAAAEncrypted");
    assert_eq!(input[3]["id"], "msg_1");
    assert_eq!(input[3]["content"][0]["text"], "Checking Zürich.");
    assert_eq!(input[4]["type"], "function_call");
    assert_eq!(
        (input[4]["call_id"].as_str(), input[4]["id"].as_str()),
        (Some("call_w1"), Some("fc_1"))
    );
    assert_eq!(input[5]["type"], "function_call_output");
    assert_eq!(input[5]["call_id"], "call_w1");
    assert_eq!(
        input[5]["output"],
        json!([{"type": "input_text", "text": "sunny"},
               {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,iVBORw0KGgo="}])
    );
    assert_eq!(body["store"], false);

    // Reasoning without its encrypted content cannot be replayed, and then item ids point at
    // nothing: both are left out.
    let mut plain = assistant.clone();
    if let AssistantContent::Thinking {
        thinking_signature, ..
    } = &mut plain.content[0]
    {
        *thinking_signature = Some(r#"{"id":"rs_1","type":"reasoning","summary":[]}"#.into());
    }
    let messages = transcript(&plain);
    let body = model.request_body(context(&messages), &StreamOptions::default());
    let input = body["input"].as_array().unwrap();
    assert_eq!(input[2]["type"], "message");
    assert!(input[2].get("id").is_none());
    assert_eq!(input[3]["type"], "function_call");
    assert!(input[3].get("id").is_none());
    assert_eq!(input[3]["call_id"], "call_w1");
}

#[test]
fn anthropic_round_trip_merges_results_with_is_error() {
    let model = AnthropicMessages::new("claude-sonnet-4-5");
    let assistant = decoded(model.decoder(), ANTHROPIC_TOOLS);
    let messages = transcript(&assistant);
    let body = model.request_body(context(&messages), &StreamOptions::default());
    let wire = body["messages"].as_array().unwrap();
    assert_eq!(
        wire.len(),
        3,
        "user, assistant, one user message with every result"
    );
    let blocks = wire[1]["content"].as_array().unwrap();
    assert_eq!(
        blocks[0],
        json!({"type": "thinking", "thinking": "The user wants weather.",
               "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"})
    );
    assert_eq!(
        blocks[1],
        json!({"type": "text", "text": "Let me check Zürich and Paris."})
    );
    assert_eq!(
        blocks[2],
        json!({"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Zürich"}})
    );
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]),
        "the system prompt and the last user message are cache breakpoints"
    );
    let results = wire[2]["content"].as_array().unwrap();
    assert_eq!(results[1]["cache_control"], json!({"type": "ephemeral"}));
    assert!(results[0].get("cache_control").is_none());
    let uncached = model
        .clone()
        .prompt_caching(false)
        .request_body(context(&messages), &StreamOptions::default());
    assert_eq!(
        uncached["system"],
        json!([{"type": "text", "text": "Be brief."}])
    );
    assert!(
        uncached["messages"][2]["content"][1]
            .get("cache_control")
            .is_none()
    );
    assert_eq!(
        results[0],
        json!({"type": "tool_result", "tool_use_id": "toolu_01A", "content": "no such city", "is_error": true})
    );
    assert_eq!(results[1]["tool_use_id"], "toolu_01B");
    assert_eq!(results[1]["is_error"], false);
    assert_eq!(
        results[1]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
    );
}

#[test]
fn google_round_trip_keeps_signatures_and_merges_responses() {
    let model = GoogleGenerativeAi::new("gemini-2.5-flash");
    let assistant = decoded(model.decoder(), GOOGLE_TOOLS);
    let messages = transcript(&assistant);
    let body = model.request_body(context(&messages), &StreamOptions::default());
    let contents = body["contents"].as_array().unwrap();
    let roles: Vec<&str> = contents
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "model", "user", "user"],
        "responses merged; gemini 2.5 images in their own turn"
    );
    let parts = contents[1]["parts"].as_array().unwrap();
    assert_eq!(
        parts[0],
        json!({"text": "I'll check both cities.", "thought": true, "thoughtSignature": "c2lnLXRoaW5r"})
    );
    assert_eq!(parts[1], json!({"text": "Looking up Zürich"}));
    assert_eq!(
        parts[2],
        json!({"functionCall": {"name": "get_weather", "args": {"city": "Zürich"}}, "thoughtSignature": "c2lnLWNhbGw="})
    );
    let responses = contents[2]["parts"].as_array().unwrap();
    assert_eq!(
        responses[0],
        json!({"functionResponse": {"name": "get_weather", "response": {"error": "no such city"}}})
    );
    assert_eq!(
        responses[1],
        json!({"functionResponse": {"name": "get_weather", "response": {"output": "sunny"}}})
    );
    assert_eq!(
        contents[3]["parts"],
        json!([{"text": "Tool result image:"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}])
    );

    let gemini3 = GoogleGenerativeAi::new("gemini-3-pro-preview");
    let body = gemini3.request_body(context(&messages), &StreamOptions::default());
    let responses = body["contents"][2]["parts"].as_array().unwrap();
    assert_eq!(
        responses[1]["functionResponse"]["parts"][0]["inlineData"]["mimeType"],
        "image/png"
    );
    assert_eq!(body["contents"].as_array().unwrap().len(), 3);
}

#[test]
fn a_transcript_moves_between_providers() {
    let responses = OpenAiResponses::new("gpt-5-mini");
    let assistant = decoded(responses.decoder(), RESPONSES_TOOLS);
    let messages = transcript(&assistant);

    let anthropic = AnthropicMessages::new("claude-sonnet-4-5")
        .request_body(context(&messages), &StreamOptions::default());
    let blocks = anthropic["messages"][1]["content"].as_array().unwrap();
    assert_eq!(
        blocks[0],
        json!({"type": "text", "text": "Checking Zürich."}),
        "foreign reasoning is dropped"
    );
    assert_eq!(
        blocks[1]["id"], "call_w1_fc_1",
        "ids sanitized for Anthropic"
    );
    assert_eq!(
        anthropic["messages"][2]["content"][0]["tool_use_id"], "call_w1_fc_1",
        "results remapped"
    );

    let completions = OpenAiCompletions::new("gpt-4o-mini")
        .request_body(context(&messages), &StreamOptions::default());
    assert_eq!(completions["messages"][2]["tool_calls"][0]["id"], "call_w1");
    assert_eq!(completions["messages"][2]["content"], "Checking Zürich.");
    assert_eq!(completions["messages"][3]["tool_call_id"], "call_w1");

    let google = GoogleGenerativeAi::new("gemini-2.5-flash")
        .request_body(context(&messages), &StreamOptions::default());
    let parts = google["contents"][1]["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "text and call, no reasoning");
    assert!(parts[1].get("thoughtSignature").is_none());
}

#[test]
fn orphans_failures_custom_messages_and_images() {
    let mut failed = AssistantMessage::failed(StopReason::Error, "boom");
    failed.content = vec![AssistantContent::text("half an answer")];
    let mut calls = AssistantMessage::new(
        vec![AssistantContent::tool_call(
            "toolu_1",
            "get_weather",
            json!({"city": "Oslo"}),
        )],
        StopReason::ToolUse,
    );
    calls.api = "anthropic-messages".into();
    calls.provider = "anthropic".into();
    calls.model = "claude-haiku".into();
    let messages = vec![
        Arc::new(Message::User(
            UserMessage::new(vec![
                Content::text("look"),
                Content::image("AAAA", "image/jpeg"),
            ])
            .with_timestamp(0),
        )),
        Arc::new(Message::Assistant(failed)),
        Arc::new(Message::Custom(
            CustomMessage::new("note", json!({})).with_timestamp(0),
        )),
        Arc::new(Message::Assistant(calls)),
        Arc::new(Message::user("never mind")),
    ];
    let model = AnthropicMessages::new("claude-haiku").images(false);
    let body = model.request_body(context(&messages), &StreamOptions::default());
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "look"},
                {"type": "text", "text": "(image omitted: model does not support images)"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "No result provided", "is_error": true}]},
            {"role": "user", "content": [{"type": "text", "text": "never mind", "cache_control": {"type": "ephemeral"}}]}
        ])
    );
}

#[test]
fn options_reach_every_api() {
    let messages = vec![Arc::new(Message::user("hi"))];
    let specs = vec![GetWeatherTool.spec().clone()];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &specs,
    };
    let mut options = StreamOptions::default();
    options.max_tokens = Some(500);
    options.temperature = Some(0.5);
    options.tool_choice = Some(ToolChoice::Tool("get_weather".into()));

    let completions = OpenAiCompletions::new("gpt-4o-mini").request_body(context, &options);
    assert_eq!(completions["max_completion_tokens"], 500);
    assert_eq!(completions["temperature"], 0.5);
    assert_eq!(
        completions["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    assert!(
        completions.get("messages").unwrap()[0]["role"] == "user",
        "no empty system prompt"
    );
    let local = OpenAiCompletions::new("llama")
        .base_url("http://localhost:8080/v1")
        .request_body(context, &options);
    assert_eq!(
        local["max_tokens"], 500,
        "compatible servers get max_tokens"
    );

    let responses = OpenAiResponses::new("gpt-5").request_body(context, &options);
    assert_eq!(
        (
            responses["max_output_tokens"].clone(),
            responses["tool_choice"].clone()
        ),
        (
            json!(500),
            json!({"type": "function", "name": "get_weather"})
        )
    );

    let anthropic = AnthropicMessages::new("claude").request_body(context, &options);
    assert_eq!(
        (
            anthropic["max_tokens"].clone(),
            anthropic["temperature"].clone()
        ),
        (json!(500), json!(0.5))
    );
    assert_eq!(
        anthropic["tool_choice"],
        json!({"type": "tool", "name": "get_weather"})
    );

    let google = GoogleGenerativeAi::new("gemini").request_body(context, &options);
    assert_eq!(
        google["generationConfig"],
        json!({"maxOutputTokens": 500, "temperature": 0.5})
    );
    assert_eq!(
        google["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}})
    );

    options.thinking = Some(ThinkingLevel::Medium);
    options.tool_choice = Some(ToolChoice::Auto);
    let anthropic = AnthropicMessages::new("claude").request_body(context, &options);
    assert_eq!(
        anthropic["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192})
    );
    assert_eq!(
        anthropic["max_tokens"], 8692,
        "the budget comes on top of the answer's limit"
    );
    assert!(
        anthropic.get("temperature").is_none(),
        "no temperature with thinking"
    );
    assert_eq!(
        OptionConflict::of(AnthropicMessages::API, &options, true),
        [OptionConflict::AnthropicTemperatureWithThinking],
        "the dropped temperature is reported"
    );
    assert_eq!(anthropic["tool_choice"], json!({"type": "auto"}));

    // Anthropic refuses thinking with a forced tool choice: the forced choice is kept, thinking
    // is left out (and the temperature, allowed again, is sent).
    options.tool_choice = Some(ToolChoice::Required);
    assert_eq!(
        OptionConflict::of(AnthropicMessages::API, &options, true),
        [OptionConflict::AnthropicThinkingWithForcedTool]
    );
    let anthropic = AnthropicMessages::new("claude").request_body(context, &options);
    assert!(anthropic.get("thinking").is_none(), "{anthropic}");
    assert_eq!(anthropic["max_tokens"], 500);
    assert_eq!(anthropic["temperature"], 0.5);
    assert_eq!(anthropic["tool_choice"], json!({"type": "any"}));
    options.tool_choice = Some(ToolChoice::Tool("get_weather".into()));
    let anthropic = AnthropicMessages::new("claude").request_body(context, &options);
    assert!(anthropic.get("thinking").is_none(), "{anthropic}");
    assert_eq!(
        anthropic["tool_choice"],
        json!({"type": "tool", "name": "get_weather"})
    );
    // Without tools no tool choice is sent, so thinking stays; other APIs accept the mix.
    let no_tools = Context {
        tools: &[],
        ..context
    };
    assert_eq!(
        OptionConflict::of(AnthropicMessages::API, &options, false),
        [OptionConflict::AnthropicTemperatureWithThinking]
    );
    let anthropic = AnthropicMessages::new("claude").request_body(no_tools, &options);
    assert_eq!(anthropic["thinking"]["budget_tokens"], 8192);
    assert!(anthropic.get("temperature").is_none(), "{anthropic}");
    for api in [
        OpenAiCompletions::API,
        OpenAiResponses::API,
        GoogleGenerativeAi::API,
    ] {
        assert!(OptionConflict::of(api, &options, true).is_empty(), "{api}");
    }
    options.tool_choice = Some(ToolChoice::Required);
    let responses = OpenAiResponses::new("gpt-5").request_body(context, &options);
    assert_eq!(
        responses["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    let completions = OpenAiCompletions::new("o4-mini").request_body(context, &options);
    assert_eq!(
        (
            completions["reasoning_effort"].clone(),
            completions["tool_choice"].clone()
        ),
        (json!("medium"), json!("required"))
    );
}

#[test]
fn claude_models_that_take_no_sampling_parameters_get_no_temperature() {
    // Issue 19 item 10: the API's own SDK (`anthropic` 2.14.0) defines no `temperature`,
    // `top_p` or `top_k` on `MessageCreateParams` (removed in 1.0: "Current models do not use
    // these sampling parameters"; models that predate the change still honour them), and the
    // API answers "`temperature` is deprecated for this model" from Claude Opus 4.7 and
    // generation 5 on. With a forced tool choice the temperature went out anyway.
    let messages = vec![Arc::new(Message::user("hi"))];
    let tools = [ToolSpec {
        name: "get_weather".into(),
        description: "Weather".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &tools,
    };
    let mut options = StreamOptions::default();
    options.temperature = Some(0.2);
    options.tool_choice = Some(ToolChoice::Required);
    options.thinking = Some(ThinkingLevel::High);
    for model in [
        "claude-opus-4-7",
        "claude-opus-4-8",
        "claude-sonnet-5",
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
        "claude-opus-5",
        "claude-fable-5-2",
        "claude-mythos-preview",
        "anthropic.claude-opus-4-7",
        "claude-opus-4-7@20260416",
    ] {
        let body = AnthropicMessages::new(model).request_body(context, &options);
        assert!(body.get("temperature").is_none(), "{model}: {body}");
        assert_eq!(body["tool_choice"], json!({"type": "any"}), "{model}");
        assert_eq!(
            OptionConflict::of_model(AnthropicMessages::API, model, &options, true),
            [
                OptionConflict::AnthropicThinkingWithForcedTool,
                OptionConflict::AnthropicSamplingNotTakenByModel
            ],
            "{model}"
        );
    }
    for model in [
        "claude-sonnet-4-5",
        "claude-sonnet-4-5-20250929",
        "claude-sonnet-4-6",
        "claude-opus-4-6",
        "claude-opus-4-1-20250805",
        "claude-haiku-4-5-20251001",
        "claude-3-5-haiku-20241022",
        "claude-3-7-sonnet-latest",
        "MiniMax-M2",
    ] {
        let body = AnthropicMessages::new(model).request_body(context, &options);
        assert_eq!(body["temperature"], 0.2, "{model}: {body}");
        assert_eq!(
            OptionConflict::of_model(AnthropicMessages::API, model, &options, true),
            [OptionConflict::AnthropicThinkingWithForcedTool],
            "{model}"
        );
    }
    // Other APIs keep their temperature, whatever the model is called.
    for api in [
        OpenAiCompletions::API,
        OpenAiResponses::API,
        GoogleGenerativeAi::API,
    ] {
        assert!(
            OptionConflict::of_model(api, "claude-opus-4-7", &options, true).is_empty(),
            "{api}"
        );
    }
    assert!(
        OptionConflict::AnthropicSamplingNotTakenByModel
            .to_string()
            .contains("without the temperature")
    );
}

#[test]
fn temperature_goes_out_as_written() {
    let messages = vec![Arc::new(Message::user("hi"))];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &[],
    };
    for (written, sent) in [
        (0.3_f32, "0.3"),
        (0.7, "0.7"),
        (1.0, "1.0"),
        (0.1, "0.1"),
        (1.15, "1.15"),
    ] {
        let mut options = StreamOptions::default();
        options.temperature = Some(written);
        let bodies = [
            OpenAiCompletions::new("m").request_body(context, &options)["temperature"].clone(),
            OpenAiResponses::new("m").request_body(context, &options)["temperature"].clone(),
            AnthropicMessages::new("m").request_body(context, &options)["temperature"].clone(),
            GoogleGenerativeAi::new("m").request_body(context, &options)["generationConfig"]
                ["temperature"]
                .clone(),
        ];
        for body in bodies {
            assert_eq!(serde_json::to_string(&body).unwrap(), sent);
        }
    }
    // JSON has no NaN: such a temperature is left out rather than sent as `null`.
    let mut options = StreamOptions::default();
    options.temperature = Some(f32::NAN);
    let body = OpenAiCompletions::new("m").request_body(context, &options);
    assert!(body.get("temperature").is_none(), "{body}");
}

#[test]
fn tools_are_lowered_per_api_and_strict_per_tool() {
    let specs = vec![GetWeatherTool.spec().clone(), TagTool.spec().clone()];
    let messages = vec![Arc::new(Message::user("hi"))];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &specs,
    };
    let options = StreamOptions::default();

    let completions = OpenAiCompletions::new("gpt-4o-mini").request_body(context, &options);
    let weather = &completions["tools"][0]["function"];
    assert_eq!(weather["strict"], true);
    assert_eq!(weather["parameters"]["required"], json!(["city", "days"]));
    assert_eq!(weather["parameters"]["additionalProperties"], false);
    assert!(
        weather["parameters"]["properties"]["days"]["type"]
            .as_array()
            .unwrap()
            .contains(&json!("null"))
    );
    let tag = &completions["tools"][1]["function"];
    assert_eq!(tag["strict"], false, "a map cannot be strict");
    assert_eq!(
        tag["parameters"],
        TagTool.spec().parameters,
        "so the schema goes as it is"
    );

    let responses = OpenAiResponses::new("gpt-5")
        .strict(false)
        .request_body(context, &options);
    assert_eq!(
        responses["tools"][0]["strict"], false,
        "Responses always says strict explicitly"
    );
    assert_eq!(
        responses["tools"][0]["parameters"],
        GetWeatherTool.spec().parameters
    );

    let anthropic = AnthropicMessages::new("claude").request_body(context, &options);
    assert_eq!(anthropic["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(anthropic["tools"][0]["name"], "get_weather");

    let google = GoogleGenerativeAi::new("gemini").request_body(context, &options);
    let declarations = google["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap();
    assert_eq!(
        declarations[0]["parameters"]["properties"]["days"]["nullable"],
        true
    );
    assert!(
        declarations[0]["parameters"]["properties"]["days"]
            .get("format")
            .is_none()
    );
    assert_eq!(
        declarations[1]["parametersJsonSchema"],
        TagTool.spec().parameters,
        "maps fall back to JSON Schema"
    );
}

#[test]
fn the_compatibility_report_says_why_not() {
    let report = CompatibilityReport::of(TagTool.spec());
    assert_eq!(
        report.to_string(),
        "tool \"tag\":\n  OpenAI strict mode: does not qualify\n    - labels: a map is an open object, not allowed in OpenAI strict mode\n  \
         Anthropic: qualifies\n  Gemini parameters: does not qualify\n    - labels: a map is an open object; Gemini parameters cannot describe its values"
    );
    CompatibilityReport::of(GetWeatherTool.spec()).assert_qualifies(SchemaMode::OpenAiStrict);
    let root = ToolSpec {
        name: "raw".into(),
        description: "d".into(),
        parameters: json!({"type": "string"}),
    };
    let report = CompatibilityReport::of(&root);
    assert!(!report.qualifies(SchemaMode::Anthropic));
    assert_eq!(
        report.problems(SchemaMode::OpenAiStrict)[0].message,
        "the root must be an object schema in OpenAI strict mode"
    );
    let panic =
        std::panic::catch_unwind(|| report.assert_qualifies(SchemaMode::Gemini)).unwrap_err();
    let text = panic.downcast_ref::<String>().unwrap();
    assert!(text.starts_with("tool \"raw\":"), "{text}");
}

#[tokio::test]
async fn a_null_for_an_optional_field_means_absent() {
    // A strict-mode model must send every property; it sends `null` for the ones it omits.
    let message = decoded(
        OpenAiCompletions::new("gpt-4o-mini").decoder(),
        COMPLETIONS_TOOLS,
    );
    let call = message.tool_calls().next().unwrap().call.clone();
    assert_eq!(call.arguments, json!({"city": "Zürich", "days": null}));
    let validated = validate_arguments(&GetWeatherTool, &call.arguments).unwrap();
    assert_eq!(validated, json!({"city": "Zürich"}));
    let registry = ToolRegistry::new().with(GetWeatherTool);
    let result = registry
        .run(&ToolCall::new(call.id, call.name, call.arguments))
        .await;
    assert!(!result.is_error, "{}", result.text_content());
    assert_eq!(result.text_content(), "Zürich: None");
}

#[tokio::test]
async fn nested_and_defaulted_optionals_also_read_null_as_absent() {
    let lowered = lower_schema(&PlanTool.spec().parameters, SchemaMode::OpenAiStrict);
    assert!(lowered.qualifies(), "{:?}", lowered.problems);
    let step = &lowered.schema["properties"]["steps"]["items"];
    assert_eq!(step["required"], json!(["action", "count"]));
    assert_eq!(
        step["properties"]["count"]["type"],
        json!(["integer", "null"])
    );
    assert!(
        step["properties"]["count"].get("default").is_none(),
        "strict mode rejects `default`"
    );
    assert_eq!(lowered.schema["required"], json!(["steps", "limit"]));

    let call = ToolCall::new(
        "c1",
        "plan",
        json!({"steps": [{"action": "boil", "count": null}], "limit": null}),
    );
    let result = ToolRegistry::new().with(PlanTool).run(&call).await;
    assert_eq!(
        result.text_content(),
        r#"[Step { action: "boil", count: 1 }] limit=0"#
    );
}

#[test]
fn debug_output_hides_the_key() {
    let model = AnthropicMessages::new("claude")
        .api_key("sk-ant-secret")
        .header("x-secret", "hunter2");
    let shown = format!("{model:?}");
    assert!(
        shown.contains("claude") && shown.contains("<hidden>"),
        "{shown}"
    );
    assert!(
        !shown.contains("sk-ant-secret") && !shown.contains("hunter2"),
        "{shown}"
    );
}

#[test]
fn gemini_gets_no_parameters_for_a_tool_without_any() {
    let specs = vec![NowTool.spec().clone()];
    let messages = vec![Arc::new(Message::user("hi"))];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &specs,
    };
    let body = GoogleGenerativeAi::new("gemini").request_body(context, &StreamOptions::default());
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0],
        json!({"name": "now", "description": "The time now."})
    );
    let open = ToolSpec {
        name: "meta".into(),
        description: "d".into(),
        parameters: json!({"type": "object", "properties": {"extra": {"type": "object"}}}),
    };
    assert_eq!(
        CompatibilityReport::of(&open).problems(SchemaMode::Gemini)[0].to_string(),
        "extra: an object without properties cannot be described to Gemini"
    );
}

/// pi's request to a compatible server (`openai-completions.ts` `buildParams`): `store: false`,
/// the system prompt as `developer` for a reasoning model, and `xhigh` passed as it is named.
#[test]
fn compat_flags_send_store_developer_role_and_xhigh_as_pi_does() {
    let messages = vec![Arc::new(Message::user("hi"))];
    let context = Context {
        system_prompt: "Be brief.",
        messages: &messages,
        tools: &[],
    };
    let local = OpenAiCompletions::new("qwen").base_url("http://localhost:8080/v1");
    let plain = local.request_body(context, &StreamOptions::default());
    assert!(
        plain.get("store").is_none(),
        "off by default for a compatible server"
    );
    assert_eq!(plain["messages"][0]["role"], "system");
    assert_eq!(
        OpenAiCompletions::new("gpt-4o").request_body(context, &StreamOptions::default())["store"],
        false,
        "on for OpenAI's endpoint"
    );

    let mut compat = local.compat_flags();
    compat.store = true;
    compat.developer_role = true;
    let mut options = StreamOptions::default();
    options.thinking = Some(ThinkingLevel::XHigh);
    let body = local.compat(compat).request_body(context, &options);
    assert_eq!(body["store"], false);
    assert_eq!(
        body["messages"][0],
        json!({"role": "developer", "content": "Be brief."})
    );
    assert_eq!(body["reasoning_effort"], "xhigh");
    let anthropic = AnthropicMessages::new("claude").request_body(context, &options);
    assert_eq!(
        anthropic["thinking"]["budget_tokens"], 16384,
        "xhigh is high"
    );
    assert_eq!(ThinkingLevel::parse("xhigh"), Some(ThinkingLevel::XHigh));
    assert_eq!(ThinkingLevel::XHigh.to_string(), "xhigh");
}
