//! The HTTP clients against a local server that replays each API's stream: requests, headers,
//! retries on 429/5xx, errors, a connection cut mid-stream, first-byte timeouts and aborts.
#![cfg(feature = "http")]

mod recorded;
mod wire_server;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use pi_runtime::providers::{
    AnthropicMessages, GoogleGenerativeAi, OpenAiCompletions, OpenAiResponses,
};
use pi_runtime::{
    AssistantEvent, AssistantMessage, Context, Message, Model, StopReason, StreamOptions,
};
use pi_tool::CancellationToken;
use tokio::net::TcpListener;
use wire_server::{End, Reply, Server};

const COMPLETIONS_TEXT: &str = include_str!("fixtures/providers/openai_completions_text.sse");
const COMPLETIONS_TOOLS: &str = include_str!("fixtures/providers/openai_completions_tools.sse");
const RESPONSES_TOOLS: &str = include_str!("fixtures/providers/openai_responses_tools.sse");
const ANTHROPIC_TOOLS: &str = include_str!("fixtures/providers/anthropic_tools.sse");
const GOOGLE_TOOLS: &str = include_str!("fixtures/providers/google_tools.sse");

async fn run(model: &dyn Model, options: &StreamOptions) -> Vec<AssistantEvent> {
    let messages = vec![Arc::new(Message::user("What is the weather in Zürich?"))];
    let context = Context {
        system_prompt: "You are terse.",
        messages: &messages,
        tools: &[],
    };
    model.stream(context, options).collect().await
}

fn done(events: &[AssistantEvent]) -> &AssistantMessage {
    match events.last() {
        Some(AssistantEvent::Done { message, .. }) => message,
        other => panic!("expected Done, got {other:?}"),
    }
}

fn failed(events: &[AssistantEvent]) -> (StopReason, &AssistantMessage) {
    match events.last() {
        Some(AssistantEvent::Error { reason, error }) => (*reason, error),
        other => panic!("expected Error, got {other:?}"),
    }
}

fn failure(events: Vec<AssistantEvent>) -> (StopReason, AssistantMessage) {
    let (reason, error) = failed(&events);
    (reason, error.clone())
}

fn fast_retries(model: OpenAiCompletions) -> OpenAiCompletions {
    model.retry_delay(Duration::from_millis(5))
}

#[tokio::test]
async fn completions_streams_text_over_http() {
    let server = Server::start(vec![Reply::stream(COMPLETIONS_TEXT, 7)]).await;
    let model = OpenAiCompletions::new("gpt-4o-mini")
        .base_url(format!("{}/v1", server.url))
        .api_key("sk-test");
    let events = run(&model, &StreamOptions::default()).await;
    assert!(matches!(events.first(), Some(AssistantEvent::Start { .. })));
    let message = done(&events);
    assert_eq!(message.text(), "Hello, wörld!");
    assert_eq!(message.usage.total_tokens, 16);

    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].target, "/v1/chat/completions");
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(seen[0].header("accept"), Some("text/event-stream"));
    assert_eq!(seen[0].body["model"], "gpt-4o-mini");
    assert_eq!(seen[0].body["stream"], true);
    assert_eq!(
        seen[0].body["messages"][0],
        serde_json::json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(
        seen[0].body["messages"][1]["content"],
        "What is the weather in Zürich?"
    );
}

#[tokio::test]
async fn completions_parallel_calls_arrive_byte_by_byte() {
    let server = Server::start(vec![Reply::stream(COMPLETIONS_TOOLS, 1)]).await;
    let model = OpenAiCompletions::new("gpt-4o-mini").base_url(&server.url);
    let events = run(&model, &StreamOptions::default()).await;
    let message = done(&events);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let names: Vec<&str> = message.tool_calls().map(|c| c.call.name.as_str()).collect();
    assert_eq!(names, ["get_weather", "get_time"]);
    assert_eq!(
        server.seen()[0].header("authorization"),
        None,
        "a local server needs no key"
    );
}

#[tokio::test]
async fn every_provider_sends_its_own_request_shape() {
    let server = Server::start(vec![
        Reply::stream(RESPONSES_TOOLS, 13),
        Reply::stream(ANTHROPIC_TOOLS, 13),
        Reply::stream(GOOGLE_TOOLS, 13),
    ])
    .await;
    let options = StreamOptions::default();

    let responses = OpenAiResponses::new("gpt-5-mini")
        .base_url(&server.url)
        .api_key("sk-r");
    assert_eq!(
        done(&run(&responses, &options).await).tool_calls().count(),
        1
    );
    let anthropic = AnthropicMessages::new("claude-sonnet-4-5")
        .base_url(&server.url)
        .api_key("sk-ant");
    assert_eq!(
        done(&run(&anthropic, &options).await).tool_calls().count(),
        2
    );
    let google = GoogleGenerativeAi::new("gemini-2.5-flash")
        .base_url(&server.url)
        .api_key("g-key");
    assert_eq!(done(&run(&google, &options).await).tool_calls().count(), 2);

    let seen = server.seen();
    assert_eq!(seen[0].target, "/responses");
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-r"));
    assert_eq!(
        seen[0].body["input"][0],
        serde_json::json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(seen[1].target, "/messages");
    assert_eq!(seen[1].header("x-api-key"), Some("sk-ant"));
    assert_eq!(seen[1].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(seen[1].body["system"][0]["text"], "You are terse.");
    assert_eq!(seen[1].body["max_tokens"], 8192);
    assert_eq!(
        seen[2].target,
        "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(seen[2].header("x-goog-api-key"), Some("g-key"));
    assert_eq!(
        seen[2].body["systemInstruction"]["parts"][0]["text"],
        "You are terse."
    );
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried() {
    let server = Server::start(vec![
        Reply::status(
            429,
            r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#,
        )
        .header("retry-after", "0"),
        Reply::status(503, "upstream unavailable"),
        Reply::stream(COMPLETIONS_TEXT, 64),
    ])
    .await;
    let model = fast_retries(OpenAiCompletions::new("m").base_url(&server.url));
    let events = run(&model, &StreamOptions::default()).await;
    assert_eq!(done(&events).text(), "Hello, wörld!");
    assert_eq!(server.seen().len(), 3);
}

#[tokio::test]
async fn retries_run_out_with_the_providers_message() {
    let limit = r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#;
    let server = Server::start(vec![
        Reply::status(429, limit),
        Reply::status(429, limit),
        Reply::status(429, limit),
    ])
    .await;
    let model = fast_retries(OpenAiCompletions::new("m").base_url(&server.url)).max_retries(1);
    let events = run(&model, &StreamOptions::default()).await;
    let (reason, error) = failed(&events);
    assert_eq!(reason, StopReason::Error);
    assert_eq!(
        error.error_message.as_deref(),
        Some("429 Too Many Requests: Rate limit reached")
    );
    assert_eq!(server.seen().len(), 2, "one try and one retry");
}

#[tokio::test]
async fn a_retry_after_beyond_a_minute_fails_at_once() {
    let server = Server::start(vec![
        Reply::status(429, r#"{"error":{"message":"Quota exceeded"}}"#)
            .header("retry-after", "3600"),
    ])
    .await;
    let model = OpenAiCompletions::new("m").base_url(&server.url);
    let (_, error) = failure(run(&model, &StreamOptions::default()).await);
    assert_eq!(
        error.error_message.as_deref(),
        Some("429 Too Many Requests: Quota exceeded (the provider asks to retry in 3600 s)")
    );
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = Server::start(vec![Reply::status(
        400,
        r#"{"error":{"message":"Invalid schema for function 'get_weather'","type":"invalid_request_error"}}"#,
    )])
    .await;
    let model = fast_retries(OpenAiCompletions::new("m").base_url(&server.url));
    let events = run(&model, &StreamOptions::default()).await;
    let (reason, error) = failed(&events);
    assert_eq!(reason, StopReason::Error);
    assert_eq!(
        error.error_message.as_deref(),
        Some("400 Bad Request: Invalid schema for function 'get_weather'")
    );
    assert_eq!(server.seen().len(), 1);
    assert!(
        matches!(events.first(), Some(AssistantEvent::Start { .. })),
        "the stream still starts"
    );
}

#[tokio::test]
async fn a_connection_cut_mid_stream_ends_with_an_error_keeping_the_text() {
    let cut_at = COMPLETIONS_TEXT.find(", w").unwrap() + 2;
    let reply = Reply::stream(&COMPLETIONS_TEXT[..cut_at], 16).ending(End::Cut);
    let server = Server::start(vec![reply]).await;
    let model = OpenAiCompletions::new("m").base_url(&server.url);
    let events = run(&model, &StreamOptions::default()).await;
    let (reason, error) = failed(&events);
    assert_eq!(reason, StopReason::Error);
    assert_eq!(error.text(), "Hello");
    let message = error.error_message.as_deref().unwrap();
    assert!(
        message.starts_with("Connection error while streaming"),
        "{message}"
    );
}

#[tokio::test]
async fn a_stream_closed_before_its_end_is_an_error() {
    let cut_at = ANTHROPIC_TOOLS.find("event: message_delta").unwrap();
    let server = Server::start(vec![Reply::stream(&ANTHROPIC_TOOLS[..cut_at], 100)]).await;
    let model = AnthropicMessages::new("claude")
        .base_url(&server.url)
        .api_key("k");
    let (_, error) = failure(run(&model, &StreamOptions::default()).await);
    assert_eq!(
        error.error_message.as_deref(),
        Some("The connection closed before the response was complete")
    );
    assert_eq!(error.tool_calls().count(), 2, "complete calls are kept");
}

#[tokio::test]
async fn a_silent_server_hits_the_first_byte_timeout() {
    // The server answers with headers, then says nothing: the body's first byte never comes
    // (`providers_stall.rs` covers each stall and provider).
    let server = Server::start(vec![Reply::stream("", 1).ending(End::Hang)]).await;
    let model = OpenAiCompletions::new("m")
        .base_url(&server.url)
        .first_byte_timeout(Duration::from_millis(500))
        .max_retries(0);
    let (_, error) = failure(run(&model, &StreamOptions::default()).await);
    assert_eq!(
        error.error_message.as_deref(),
        Some("No response from the provider within 500ms (first_byte_timeout)")
    );
}

#[tokio::test]
async fn the_signal_aborts_a_stream_in_flight() {
    let first_event = COMPLETIONS_TEXT.find("\n\n").unwrap() + 2;
    let second_event = first_event + COMPLETIONS_TEXT[first_event..].find("\n\n").unwrap() + 2;
    let reply = Reply::stream(&COMPLETIONS_TEXT[..second_event], 4096).ending(End::Hang);
    let server = Server::start(vec![reply]).await;
    let model = OpenAiCompletions::new("m").base_url(&server.url);
    let signal = CancellationToken::new();
    let options = StreamOptions::with_signal(signal.clone());
    let messages = vec![Arc::new(Message::user("hi"))];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &[],
    };
    let mut stream = model.stream(context, &options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantEvent::TextDelta { .. }) {
            signal.cancel();
        }
        events.push(event);
    }
    let (reason, error) = failed(&events);
    assert_eq!(reason, StopReason::Aborted);
    assert_eq!(error.stop_reason, StopReason::Aborted);
    assert_eq!(error.error_message.as_deref(), Some("Request was aborted"));
    assert_eq!(error.text(), "Hello");
}

#[tokio::test]
async fn the_signal_aborts_a_retry_wait() {
    let server = Server::start(vec![
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", "50"),
    ])
    .await;
    let model = OpenAiCompletions::new("m").base_url(&server.url);
    let signal = CancellationToken::new();
    let options = StreamOptions::with_signal(signal.clone());
    let canceller = signal.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let (reason, _) = failure(run(&model, &options).await);
    assert_eq!(reason, StopReason::Aborted);
    assert!(server.seen().len() <= 1);
}

#[tokio::test]
async fn an_aborted_signal_sends_nothing() {
    let server = Server::start(vec![Reply::stream(COMPLETIONS_TEXT, 64)]).await;
    let model = OpenAiCompletions::new("m").base_url(&server.url);
    let signal = CancellationToken::new();
    signal.cancel();
    let (reason, _) = failure(run(&model, &StreamOptions::with_signal(signal)).await);
    assert_eq!(reason, StopReason::Aborted);
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn a_refused_connection_is_an_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let model = OpenAiCompletions::new("m").base_url(url).max_retries(0);
    let (_, error) = failure(run(&model, &StreamOptions::default()).await);
    assert!(
        error
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Connection error: "),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_missing_key_says_which_variable_to_set() {
    let model = OpenAiCompletions::new("gpt-4o-mini").api_key_env("PI_TEST_NO_SUCH_KEY_VARIABLE");
    let (_, error) = failure(run(&model, &StreamOptions::default()).await);
    assert_eq!(
        error.error_message.as_deref(),
        Some(
            "No API key for provider \"openai\": set PI_TEST_NO_SUCH_KEY_VARIABLE (or pass one with .api_key(..))"
        )
    );
    let model = AnthropicMessages::new("claude").api_key_env("PI_TEST_NO_SUCH_KEY_VARIABLE");
    let (_, error) = failure(run(&model, &StreamOptions::default()).await);
    assert!(
        error
            .error_message
            .as_deref()
            .unwrap()
            .contains("PI_TEST_NO_SUCH_KEY_VARIABLE")
    );
}

#[tokio::test]
async fn the_per_request_key_and_headers_win() {
    let server = Server::start(vec![Reply::stream(COMPLETIONS_TEXT, 64)]).await;
    let model = OpenAiCompletions::new("m")
        .base_url(&server.url)
        .api_key("builder-key")
        .header("x-team", "a");
    let mut options = StreamOptions::default();
    options.api_key = Some("request-key".into());
    options.headers.insert("x-request".into(), "b".into());
    done(&run(&model, &options).await);
    let seen = &server.seen()[0];
    assert_eq!(seen.header("authorization"), Some("Bearer request-key"));
    assert_eq!(
        (seen.header("x-team"), seen.header("x-request")),
        (Some("a"), Some("b"))
    );
    assert_eq!(
        seen.header("user-agent"),
        Some(pi_runtime::providers::USER_AGENT)
    );
    assert!(pi_runtime::providers::USER_AGENT.starts_with("pi-tool/0."));
}

#[tokio::test]
async fn a_user_agent_header_replaces_the_default() {
    let server = Server::start(vec![Reply::stream(COMPLETIONS_TEXT, 64)]).await;
    let model = OpenAiCompletions::new("m")
        .base_url(&server.url)
        .header("User-Agent", "my-app/2");
    done(&run(&model, &StreamOptions::default()).await);
    assert_eq!(server.seen()[0].header("user-agent"), Some("my-app/2"));
}

#[tokio::test]
async fn a_compatible_server_gets_no_strict_field_unless_asked() {
    let server = Server::start(vec![
        Reply::stream(COMPLETIONS_TEXT, 64),
        Reply::stream(COMPLETIONS_TEXT, 64),
    ])
    .await;
    let specs = vec![pi_tool::AgentTool::spec(&GetWeatherTool).clone()];
    let messages = vec![Arc::new(Message::user("hi"))];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &specs,
    };
    let options = StreamOptions::default();
    let default = OpenAiCompletions::new("m").base_url(&server.url);
    done(&default.stream(context, &options).collect::<Vec<_>>().await);
    let strict = OpenAiCompletions::new("m")
        .base_url(&server.url)
        .strict(true);
    done(&strict.stream(context, &options).collect::<Vec<_>>().await);
    let seen = server.seen();
    let function = |i: usize| seen[i].body["tools"][0]["function"].clone();
    assert!(function(0).get("strict").is_none(), "{}", function(0));
    assert_eq!(function(1)["strict"], true, "{}", function(1));
    for request in &seen {
        assert_eq!(
            request.header("user-agent"),
            Some(pi_runtime::providers::USER_AGENT)
        );
    }
}

/// Get the weather for a city.
#[pi_tool::tool]
async fn get_weather(
    /// City name
    city: String,
    /// Days of forecast (default 1)
    days: Option<u8>,
) -> String {
    format!("{city}: sunny for {} day(s)", days.unwrap_or(1))
}

#[tokio::test]
async fn the_agent_runs_tools_through_a_real_provider() {
    let answer = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Sunny in Zürich.\"}}]}\n\n\
        data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = Server::start(vec![
        Reply::stream(COMPLETIONS_TOOLS, 9),
        Reply::stream(answer, 9),
    ])
    .await;
    // A local server gets no `strict` by default: ask for it, as for OpenAI.
    let model = OpenAiCompletions::new("gpt-4o-mini")
        .base_url(&server.url)
        .strict(true);
    let tools = pi_tool::ToolRegistry::new().with(GetWeatherTool);
    let agent = pi_runtime::Agent::new(Arc::new(model))
        .with_system_prompt("Be brief.")
        .with_tools(tools);
    agent.prompt("Weather in Zürich?").await.unwrap();
    assert_eq!(agent.error(), None);

    let roles: Vec<&str> = agent.messages().iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "toolResult", "assistant"]
    );
    let messages = agent.messages();
    let weather = messages[2].as_tool_result().unwrap();
    assert_eq!(
        (weather.is_error, weather.text().as_str()),
        (false, "Zürich: sunny for 1 day(s)"),
        "null days = absent"
    );
    let unknown = messages[3].as_tool_result().unwrap();
    assert!(
        unknown.is_error && unknown.text().starts_with("Tool get_time not found"),
        "{}",
        unknown.text()
    );
    assert_eq!(
        messages[4].as_assistant().unwrap().text(),
        "Sunny in Zürich."
    );

    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    let tools = &seen[0].body["tools"][0]["function"];
    assert_eq!(
        (tools["name"].as_str(), tools["strict"].as_bool()),
        (Some("get_weather"), Some(true))
    );
    let second: Vec<&str> = seen[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(second, ["system", "user", "assistant", "tool", "tool"]);
    assert_eq!(
        seen[1].body["messages"][3]["content"],
        "Zürich: sunny for 1 day(s)"
    );
}

#[tokio::test]
async fn anthropic_overloaded_is_retried() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = Server::start(vec![
        Reply::status(529, overloaded),
        Reply::stream(ANTHROPIC_TOOLS, 50),
    ])
    .await;
    let model = AnthropicMessages::new("claude")
        .base_url(&server.url)
        .api_key("k")
        .retry_delay(Duration::from_millis(5));
    let message = done(&run(&model, &StreamOptions::default()).await).clone();
    assert_eq!(message.tool_calls().count(), 2);
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn a_recorded_gemini_400_gives_its_message() {
    // The Gemini API refusing an image (Firebase's test data, `mock-responses/googleai/
    // streaming-failure-image-rejected.txt`, in `providers-more/`): served with HTTP 400.
    if !recorded::present() {
        return;
    }
    let path = recorded::root().join("providers-more/google/firebase_http_400.json");
    let body = std::fs::read_to_string(path).unwrap();
    let server = Server::start(vec![Reply::status(400, &body)]).await;
    let model = GoogleGenerativeAi::new("gemini-2.5-flash")
        .base_url(&server.url)
        .api_key("g-key");
    let (_, error) = failure(run(&model, &StreamOptions::default()).await);
    assert_eq!(
        error.error_message.as_deref(),
        Some("400 Bad Request: Request contains an invalid argument.")
    );
    assert_eq!(server.seen().len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn google_errors_arrive_as_an_array() {
    let body = r#"[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}]"#;
    let server = Server::start(vec![Reply::status(400, body)]).await;
    let model = GoogleGenerativeAi::new("gemini-2.5-flash")
        .base_url(&server.url)
        .api_key("bad");
    let (_, error) = failure(run(&model, &StreamOptions::default()).await);
    assert_eq!(
        error.error_message.as_deref(),
        Some("400 Bad Request: API key not valid. Please pass a valid API key.")
    );
}
