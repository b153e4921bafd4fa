//! Typed results in the same run as tools (issue 32 part 5): each API's structured output on
//! the wire (checked against the APIs' own SDK types), answers validated and sent back when
//! invalid, the typed error once the retries are spent, and the output tool.

mod sdk_types;
mod wire_server;

use std::sync::Arc;

use pi_runtime::providers::{
    AnthropicMessages, GoogleGenerativeAi, MistralChat, OpenAiCompletions, OpenAiResponses,
};
use pi_runtime::{
    Agent, AgentContext, AgentLoopConfig, AssistantContent, AssistantMessage, Context, Message,
    Model, OutputError, OutputFormat, OutputMode, OutputOptions, ScriptedModel, StopReason,
    StreamOptions, agent_loop_output,
};
use pi_tool::{CancellationToken, ToolRegistry, tool};
use sdk_types::{ANTHROPIC_MESSAGES, OPENAI_RESPONSES, RequestType, type_check};
use serde_json::{Value, json};
use wire_server::{Reply, Server};

/// OpenAI's Chat Completions request (`openai` 7.59.0).
const OPENAI_CHAT: RequestType = RequestType {
    module: "openai/resources/chat/completions/completions",
    name: "ChatCompletionCreateParamsStreaming",
    marker: "openai/resources/chat/completions/completions.d.ts",
};

/// Gemini's generation config (`@google/genai` 1.52.0): where the response schema goes.
const GEMINI_GENERATION: RequestType = RequestType {
    module: "@google/genai",
    name: "GenerationConfig",
    marker: "@google/genai/dist/genai.d.ts",
};

/// The typed answer of these runs.
#[derive(Debug, PartialEq, serde::Deserialize, pi_tool::schemars::JsonSchema)]
#[schemars(crate = "pi_tool::schemars")]
struct Forecast {
    city: String,
    high_c: i32,
    /// Anything worth saying.
    note: Option<String>,
}

/// Look up the weather in a city.
#[tool]
async fn lookup_weather(city: String) -> String {
    format!("{city}: sunny, 21 C")
}

fn registry() -> ToolRegistry {
    ToolRegistry::new().with(LookupWeatherTool)
}

const VALID: &str = r#"{"city": "Zürich", "high_c": 21, "note": null}"#;
const MISSING_HIGH: &str = r#"{"city": "Zürich"}"#;

// ---- the four wires, as the local server answers them --------------------------------------

fn sse(events: &[Value], named: bool) -> String {
    let mut body = String::new();
    for event in events {
        if named {
            body.push_str(&format!("event: {}\n", event["type"].as_str().unwrap()));
        }
        body.push_str(&format!("data: {event}\n\n"));
    }
    body
}

fn responses_reply(text: Option<&str>, call: Option<Call<'_>>) -> Reply {
    let mut events = vec![
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}}),
    ];
    if let Some(text) = text {
        events.push(json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}));
        events.push(json!({"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}));
        events.push(json!({"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": {"id": "msg_1", "type": "message", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}], "role": "assistant"}}));
    }
    if let Some((id, name, args)) = call {
        let args = args.to_string();
        events.push(json!({"type": "response.output_item.added", "sequence_number": 4, "output_index": 1, "item": {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": id, "name": name}}));
        events.push(json!({"type": "response.function_call_arguments.done", "sequence_number": 5, "item_id": "fc_1", "output_index": 1, "arguments": args}));
        events.push(json!({"type": "response.output_item.done", "sequence_number": 6, "output_index": 1, "item": {"id": "fc_1", "type": "function_call", "status": "completed", "arguments": args, "call_id": id, "name": name}}));
    }
    events.push(json!({"type": "response.completed", "sequence_number": 7, "response": {"id": "resp_1", "object": "response", "status": "completed", "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}));
    Reply::stream(&sse(&events, true), 64)
}

fn completions_reply(text: Option<&str>, call: Option<Call<'_>>) -> Reply {
    let chunk = |delta: Value, finish: Value| json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if let Some(text) = text {
        events.push(chunk(json!({"content": text}), Value::Null));
    }
    let finish = match call {
        Some((id, name, args)) => {
            events.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}),
                Value::Null,
            ));
            "tool_calls"
        }
        None => "stop",
    };
    events.push(chunk(json!({}), json!(finish)));
    let mut body = sse(&events, false);
    body.push_str("data: [DONE]\n\n");
    Reply::stream(&body, 64)
}

fn anthropic_reply(text: Option<&str>, call: Option<Call<'_>>) -> Reply {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    ];
    let mut index = 0;
    if let Some(text) = text {
        events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}));
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    let stop = match call {
        Some((id, name, args)) => {
            events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
            events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": args.to_string()}}));
            events.push(json!({"type": "content_block_stop", "index": index}));
            "tool_use"
        }
        None => "end_turn",
    };
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}));
    events.push(json!({"type": "message_stop"}));
    Reply::stream(&sse(&events, true), 64)
}

fn google_reply(text: Option<&str>, call: Option<Call<'_>>) -> Reply {
    let mut parts = Vec::new();
    if let Some(text) = text {
        parts.push(json!({"text": text}));
    }
    if let Some((id, name, args)) = call {
        parts.push(json!({"functionCall": {"id": id, "name": name, "args": args}}));
    }
    let event = json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}, "modelVersion": "gemini-3-pro-preview", "responseId": "r1"});
    Reply::stream(&sse(&[event], false), 64)
}

/// A call the model makes: its id, the tool, the arguments.
type Call<'a> = (&'a str, &'a str, Value);

/// One API under test: its model on the server, how it answers, and where its request
/// carries the answer's schema.
struct Wire {
    name: &'static str,
    model: fn(&str) -> Arc<dyn Model>,
    reply: fn(Option<&str>, Option<Call<'_>>) -> Reply,
    schema_of: fn(&Value) -> Option<&Value>,
}

const WIRES: [Wire; 5] = [
    Wire {
        name: "openai-responses",
        model: |url| Arc::new(OpenAiResponses::new("gpt-5").base_url(url).api_key("k")),
        reply: responses_reply,
        schema_of: |body| body.pointer("/text/format/schema"),
    },
    Wire {
        name: "openai-completions",
        model: |url| Arc::new(OpenAiCompletions::new("gpt-5").base_url(url).api_key("k")),
        reply: completions_reply,
        schema_of: |body| body.pointer("/response_format/json_schema/schema"),
    },
    Wire {
        name: "anthropic-messages",
        model: |url| {
            Arc::new(
                AnthropicMessages::new("claude-sonnet-4-5")
                    .base_url(url)
                    .api_key("k"),
            )
        },
        reply: anthropic_reply,
        schema_of: |body| body.pointer("/output_config/format/schema"),
    },
    Wire {
        name: "google-generative-ai",
        model: |url| {
            Arc::new(
                GoogleGenerativeAi::new("gemini-3-pro-preview")
                    .base_url(url)
                    .api_key("k"),
            )
        },
        reply: google_reply,
        schema_of: |body| body.pointer("/generationConfig/responseJsonSchema"),
    },
    Wire {
        name: "mistral-conversations",
        model: |url| {
            Arc::new(
                MistralChat::new("mistral-large-latest")
                    .base_url(url)
                    .api_key("k"),
            )
        },
        // Mistral streams Chat Completions' chunks.
        reply: completions_reply,
        schema_of: |body| body.pointer("/response_format/json_schema/schema"),
    },
];

// ---- request bodies ------------------------------------------------------------------------

fn bodies_with_output(strict: bool) -> [Value; 5] {
    let messages = vec![Arc::new(Message::user("Weather in Zürich?"))];
    let registry = registry();
    let specs: Vec<pi_tool::ToolSpec> = registry.tools().map(|t| t.spec().clone()).collect();
    let context = Context {
        system_prompt: "You forecast.",
        messages: &messages,
        tools: &specs,
    };
    let mut options = StreamOptions::default();
    options.output = Some(Arc::new(OutputFormat::new(
        "forecast",
        pi_tool::schema_for::<Forecast>(),
    )));
    [
        OpenAiResponses::new("gpt-5")
            .strict(strict)
            .request_body(context, &options),
        OpenAiCompletions::new("gpt-5").request_body(context, &options),
        AnthropicMessages::new("claude-sonnet-4-5").request_body(context, &options),
        GoogleGenerativeAi::new("gemini-3-pro-preview").request_body(context, &options),
        MistralChat::new("mistral-large-latest").request_body(context, &options),
    ]
}

#[test]
fn each_api_carries_the_answers_schema_beside_its_tools() {
    let [responses, completions, anthropic, google, mistral] = bodies_with_output(true);
    let format = &responses["text"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["name"], "forecast");
    assert_eq!(
        format["strict"], true,
        "the schema qualifies for strict mode"
    );
    // Strict: every property required, the optional one nullable, objects closed.
    assert_eq!(
        format["schema"]["required"],
        json!(["city", "high_c", "note"])
    );
    assert_eq!(format["schema"]["additionalProperties"], false);
    assert_eq!(responses["tools"][0]["name"], "lookup_weather");

    let format = &completions["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "forecast");
    assert!(format["json_schema"]["schema"]["properties"]["high_c"].is_object());
    assert_eq!(
        completions["tools"][0]["function"]["name"],
        "lookup_weather"
    );

    let format = &anthropic["output_config"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["schema"]["additionalProperties"], false);
    assert_eq!(anthropic["tools"][0]["name"], "lookup_weather");

    let generation = &google["generationConfig"];
    assert_eq!(generation["responseMimeType"], "application/json");
    assert_eq!(
        generation["responseJsonSchema"]["required"],
        json!(["city", "high_c"])
    );
    assert!(google["tools"][0]["functionDeclarations"].is_array());

    let format = &mistral["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "forecast");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["city", "high_c", "note"])
    );
    assert_eq!(mistral["tools"][0]["function"]["name"], "lookup_weather");

    // Without strict tools, Responses sends the schema as it is, not strict.
    let [plain, ..] = bodies_with_output(false);
    assert_eq!(plain["text"]["format"]["strict"], false);
    assert_eq!(
        plain["text"]["format"]["schema"]["required"],
        json!(["city", "high_c"])
    );
}

#[test]
fn the_sdks_accept_the_structured_output_fields() {
    let [responses, completions, anthropic, google, _] = bodies_with_output(true);
    let checks: [(&RequestType, Value); 4] = [
        (&OPENAI_RESPONSES, responses),
        (&OPENAI_CHAT, completions),
        (&ANTHROPIC_MESSAGES, anthropic),
        (&GEMINI_GENERATION, google["generationConfig"].clone()),
    ];
    for (request, body) in checks {
        let Some(deps) = sdk_types::with_sdk(request) else {
            return;
        };
        if let Err(report) = type_check(&deps, request, &[&body]) {
            panic!("{} refuses the body:\n{report}\n{body:#}", request.name);
        }
        // A misspelt field is refused, so the check can fail.
        let mut wrong = body.clone();
        let field = [
            "text",
            "response_format",
            "output_config",
            "responseJsonSchema",
        ]
        .into_iter()
        .find(|field| wrong.get(field).is_some())
        .unwrap();
        let moved = wrong.as_object_mut().unwrap().remove(field).unwrap();
        wrong[format!("{field}_typo")] = moved;
        assert!(
            type_check(&deps, request, &[&wrong]).is_err(),
            "{} accepts {field}_typo",
            request.name
        );
    }
}

/// Mistral's SDK (a Zod schema, not TypeScript types) takes the response format as we send it,
/// with the schema's property names (`high_c`) unchanged; a misnamed field is refused.
#[test]
fn mistrals_sdk_takes_the_response_format_with_the_schema_unchanged() {
    let [.., mistral] = bodies_with_output(true);
    let Some(checked) = sdk_types::mistral_check(&[&mistral]) else {
        return;
    };
    if let Err(report) = checked {
        panic!("Mistral's SDK refuses the body:\n{report}\n{mistral:#}");
    }
    let mut misnamed = mistral.clone();
    let json_schema = misnamed["response_format"]["json_schema"]
        .as_object_mut()
        .unwrap();
    let schema = json_schema.remove("schema").unwrap();
    json_schema.insert("schema_definition".into(), schema);
    assert!(
        sdk_types::mistral_check(&[&misnamed]).unwrap().is_err(),
        "the SDK's own name for the field is not the wire's"
    );
    let mut typo = mistral.clone();
    let format = typo.as_object_mut().unwrap().remove("response_format");
    typo["response_format_typo"] = format.unwrap();
    assert!(sdk_types::mistral_check(&[&typo]).unwrap().is_err());
}

// ---- runs over the wire --------------------------------------------------------------------

#[tokio::test]
async fn a_run_calls_a_tool_then_answers_with_a_typed_value_on_every_api() {
    for wire in &WIRES {
        let server = Server::start(vec![
            (wire.reply)(
                None,
                Some(("call_1", "lookup_weather", json!({"city": "Zürich"}))),
            ),
            (wire.reply)(Some(VALID), None),
        ])
        .await;
        let agent = Agent::new((wire.model)(&server.url)).with_tools(registry());
        let forecast: Forecast = agent
            .prompt_output("Weather in Zürich?")
            .await
            .unwrap_or_else(|error| panic!("{}: {error}", wire.name));
        assert_eq!(
            forecast,
            Forecast {
                city: "Zürich".into(),
                high_c: 21,
                note: None
            },
            "{}",
            wire.name
        );
        let seen = server.seen();
        assert_eq!(seen.len(), 2, "{}", wire.name);
        for request in &seen {
            let schema = (wire.schema_of)(&request.body)
                .unwrap_or_else(|| panic!("{}: no schema in {:#}", wire.name, request.body));
            assert!(schema["properties"]["high_c"].is_object(), "{}", wire.name);
            if let Some(name) = request.body.pointer("/text/format/name") {
                assert_eq!(name, "Forecast", "the schema is named after the type");
            }
        }
        // The tool ran and its result went into the second request.
        let second = seen[1].body.to_string();
        assert!(second.contains("sunny, 21 C"), "{}: {second}", wire.name);
        let tools = seen[1].body["tools"].to_string();
        assert!(!tools.contains("final_result"), "{}: {tools}", wire.name);
    }
}

#[tokio::test]
async fn an_invalid_answer_goes_back_with_the_validation_message() {
    let server = Server::start(vec![
        completions_reply(Some(MISSING_HIGH), None),
        completions_reply(Some(&format!("```json\n{VALID}\n```")), None),
    ])
    .await;
    let model = Arc::new(OpenAiCompletions::new("gpt-5").base_url(&server.url));
    let agent = Agent::new(model);
    let forecast: Forecast = agent.prompt_output("Weather in Zürich?").await.unwrap();
    assert_eq!(forecast.high_c, 21);

    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    let messages = seen[1].body["messages"].as_array().unwrap();
    let retry = messages.last().unwrap();
    assert_eq!(retry["role"], "user");
    let text = retry["content"].as_str().unwrap();
    assert!(
        text.contains("high_c") && text.contains("missing"),
        "the validator's message: {text}"
    );
    assert_eq!(messages[messages.len() - 2]["content"], MISSING_HIGH);
}

#[tokio::test]
async fn the_output_tool_when_asked_validates_its_arguments_and_ends_the_run() {
    let server = Server::start(vec![
        anthropic_reply(
            Some("Done."),
            Some(("toolu_1", "final_result", json!({"city": "Zürich"}))),
        ),
        anthropic_reply(
            None,
            Some((
                "toolu_2",
                "final_result",
                json!({"city": "Zürich", "high_c": "21"}),
            )),
        ),
    ])
    .await;
    let model = Arc::new(
        AnthropicMessages::new("claude-sonnet-4-5")
            .base_url(&server.url)
            .api_key("k"),
    );
    let agent = Agent::new(model).with_tools(registry());
    let options = OutputOptions::new().mode(OutputMode::Tool);
    let forecast: Forecast = agent
        .prompt_output_with("Weather in Zürich?", options)
        .await
        .unwrap();
    // The validator coerced "21" as it does for every tool's arguments.
    assert_eq!(forecast.high_c, 21);

    let seen = server.seen();
    assert_eq!(seen.len(), 2, "the accepted call ends the run");
    for request in &seen {
        assert!(request.body.get("output_config").is_none());
        let tools: Vec<&str> = request.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(tools, ["lookup_weather", "final_result"]);
    }
    // The refused call's result told the model what was wrong.
    let second = seen[1].body["messages"].as_array().unwrap();
    let result = &second.last().unwrap()["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["is_error"], true);
    assert!(result["content"].to_string().contains("high_c"), "{result}");
}

// ---- runs on a scripted model --------------------------------------------------------------

fn text(text: &str) -> AssistantMessage {
    AssistantMessage::new(vec![AssistantContent::text(text)], StopReason::Stop)
}

fn call(id: &str, name: &str, args: Value) -> AssistantMessage {
    AssistantMessage::new(
        vec![AssistantContent::tool_call(id, name, args)],
        StopReason::ToolUse,
    )
}

#[tokio::test]
async fn spent_retries_end_in_a_typed_error_with_the_last_answer() {
    let model = Arc::new(ScriptedModel::recording([
        text("sunny"),
        text(MISSING_HIGH),
        text("never asked"),
    ]));
    let agent = Agent::new(model.clone());
    let options = OutputOptions::new().mode(OutputMode::Native).max_retries(1);
    let error = agent
        .prompt_output_with::<Forecast>("Weather?", options)
        .await
        .unwrap_err();
    match error {
        OutputError::Invalid {
            raw,
            message,
            attempts,
        } => {
            assert_eq!(raw, MISSING_HIGH);
            assert!(message.contains("high_c"), "{message}");
            assert_eq!(attempts, 2);
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
    assert_eq!(model.calls(), 2, "one answer and one retry");
    // The first answer was not JSON: the model was told so.
    let retry = model.requests()[1].messages.last().unwrap().clone();
    assert_eq!(retry.role(), "user");
}

#[tokio::test]
async fn by_default_two_retries_then_the_error() {
    let model = Arc::new(ScriptedModel::recording([
        text("{}"),
        text("{}"),
        text("{}"),
        text(VALID),
    ]));
    let error = Agent::new(model.clone())
        .prompt_output_with::<Forecast>("Weather?", OutputOptions::new().mode(OutputMode::Native))
        .await
        .unwrap_err();
    assert!(
        matches!(error, OutputError::Invalid { attempts: 3, .. }),
        "{error:?}"
    );
    assert_eq!(model.calls(), 3);
}

#[tokio::test]
async fn without_structured_output_the_output_tool_is_offered() {
    // A scripted model has no structured output: Auto picks the output tool.
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "lookup_weather", json!({"city": "Zürich"})),
        text("It is sunny."),
        call(
            "c2",
            "final_result",
            json!({"city": "Zürich", "high_c": 21}),
        ),
    ]));
    let run = agent_loop_output::<Forecast>(
        vec![Message::user("Weather?")],
        AgentContext::new("You forecast.").with_registry(registry()),
        AgentLoopConfig::new(),
        model.clone(),
        CancellationToken::new(),
        OutputOptions::new(),
    )
    .unwrap();
    let (messages, forecast) = run.outcome().await;
    assert_eq!(forecast.unwrap().high_c, 21);
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].tool_names(), ["lookup_weather", "final_result"]);
    // The text answer was sent back: the answer goes through the tool.
    let nudge = requests[2].messages.last().unwrap();
    assert_eq!(nudge.role(), "user");
    assert!(
        matches!(&**nudge, Message::User(user) if format!("{:?}", user.content).contains("final_result"))
    );
    assert_eq!(messages.last().unwrap().role(), "toolResult");
}

#[tokio::test]
async fn a_non_object_type_is_wrapped_and_unwrapped() {
    let model = Arc::new(ScriptedModel::recording([call(
        "c1",
        "final_result",
        json!({"value": ["a", "b"]}),
    )]));
    let cities: Vec<String> = Agent::new(model.clone())
        .prompt_output("Two cities?")
        .await
        .unwrap();
    assert_eq!(cities, ["a", "b"]);
}

#[tokio::test]
async fn a_failed_model_and_a_taken_tool_name_are_typed_errors() {
    let model = Arc::new(ScriptedModel::recording([AssistantMessage::failed(
        StopReason::Error,
        "overloaded",
    )]));
    let error = Agent::new(model)
        .prompt_output::<Forecast>("Weather?")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OutputError::Model(text) if text == "overloaded"),
        "{error:?}"
    );

    let model = Arc::new(ScriptedModel::recording([text(VALID)]));
    let agent = Agent::new(model.clone()).with_tools(registry());
    let options = OutputOptions::new().tool_name("lookup_weather");
    let error = agent
        .prompt_output_with::<Forecast>("Weather?", options)
        .await
        .unwrap_err();
    assert!(matches!(error, OutputError::OutputTool(_)), "{error:?}");
    assert_eq!(model.calls(), 0, "nothing ran");
    assert!(!agent.is_running());
}

#[tokio::test]
async fn hooks_that_replace_the_tools_or_the_options_keep_the_answers_tool_and_format() {
    // The tools replaced after the first turn: the output tool stays offered.
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "lookup_weather", json!({"city": "Zürich"})),
        call(
            "c2",
            "final_result",
            json!({"city": "Zürich", "high_c": 21}),
        ),
    ]));
    let config = AgentLoopConfig::new().prepare_next_turn(|_turn| async {
        Some(pi_runtime::TurnUpdate::new().tools(registry().tools().cloned().collect()))
    });
    let forecast = agent_loop_output::<Forecast>(
        vec![Message::user("Weather?")],
        AgentContext::new("You forecast.").with_registry(registry()),
        config,
        model.clone(),
        CancellationToken::new(),
        OutputOptions::new(),
    )
    .unwrap()
    .output()
    .await
    .unwrap();
    assert_eq!(forecast.high_c, 21);
    assert_eq!(
        model.requests()[1].tool_names(),
        ["lookup_weather", "final_result"]
    );

    // The request options replaced before every request: the format stays in the body.
    let server = Server::start(vec![completions_reply(Some(VALID), None)]).await;
    let model = Arc::new(OpenAiCompletions::new("gpt-5").base_url(&server.url));
    let config = AgentLoopConfig::new().prepare_request(|_request| async {
        Some(pi_runtime::TurnUpdate::new().stream_options(StreamOptions::default()))
    });
    let agent = Agent::new(model).with_config(config);
    let forecast: Forecast = agent.prompt_output("Weather?").await.unwrap();
    assert_eq!(forecast.city, "Zürich");
    let body = &server.seen()[0].body;
    assert_eq!(body["response_format"]["type"], "json_schema", "{body:#}");
}

/// Refund an order; a manager approves each refund.
#[tool(approval)]
async fn refund(order: u32) -> String {
    format!("refunded order {order}")
}

/// The typed answer of a refund run.
#[derive(Debug, PartialEq, serde::Deserialize, pi_tool::schemars::JsonSchema)]
#[schemars(crate = "pi_tool::schemars")]
struct Receipt {
    order: u32,
    refunded: bool,
}

#[tokio::test]
async fn a_typed_run_that_waits_for_approval_resumes_typed() {
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "refund", json!({"order": 7})),
        call("c2", "final_result", json!({"order": 7, "refunded": true})),
    ]));
    let agent = Agent::new(model.clone()).with_tools(ToolRegistry::new().with(RefundTool));
    let error = agent
        .prompt_output::<Receipt>("Refund order 7")
        .await
        .unwrap_err();
    let OutputError::Paused(mut state) = error else {
        panic!("expected Paused, got {error:?}");
    };
    assert_eq!(state.waiting()[0].tool, "refund");
    state.approve("c1").unwrap();

    let receipt: Receipt = agent
        .resume_output(pi_runtime::Resume::new(*state))
        .await
        .unwrap();
    assert_eq!(
        receipt,
        Receipt {
            order: 7,
            refunded: true
        }
    );
    let requests = model.requests();
    assert_eq!(requests[1].tool_names(), ["refund", "final_result"]);
    assert!(requests[1].messages.iter().any(|m| {
        m.as_tool_result()
            .is_some_and(|r| r.text() == "refunded order 7")
    }));
}

#[tokio::test]
async fn agent_loop_resume_output_resumes_a_paused_typed_run_in_a_fresh_context() {
    let context =
        || AgentContext::new("You refund.").with_registry(ToolRegistry::new().with(RefundTool));
    let model = Arc::new(ScriptedModel::recording([call(
        "c1",
        "refund",
        json!({"order": 7}),
    )]));
    let run = agent_loop_output::<Receipt>(
        vec![Message::user("Refund order 7")],
        context(),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
        OutputOptions::new(),
    )
    .unwrap();
    let Err(OutputError::Paused(mut state)) = run.output().await else {
        panic!("the refund waits");
    };
    // Stored and loaded again, as another process would.
    let json = serde_json::to_string(&state).unwrap();
    *state = serde_json::from_str(&json).unwrap();
    state.deny("c1", "not this one").unwrap();

    let model = Arc::new(ScriptedModel::recording([call(
        "c2",
        "final_result",
        json!({"order": 7, "refunded": false}),
    )]));
    let receipt = pi_runtime::agent_loop_resume_output::<Receipt>(
        pi_runtime::Resume::new(*state),
        context(),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
        OutputOptions::new(),
    )
    .unwrap()
    .output()
    .await
    .unwrap();
    assert!(!receipt.refunded);
}
