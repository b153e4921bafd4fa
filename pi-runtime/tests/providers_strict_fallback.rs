//! Requests that recover when an API refuses strict tools (issue 35 item 6, pi 1.6's `prefer`):
//! a local server answers the first request with the API's real error body, and the test
//! checks the second request (the tools that may fall back sent without `strict`, the required
//! ones still strict), the session's memory, the report, and the cases that are not retried.
#![cfg(feature = "http")]

mod stream_end;
use stream_end::error_text;
mod wire_server;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use pi_runtime::providers::{
    AnthropicMessages, AzureOpenAiResponses, OpenAiCompletions, OpenAiResponses, StrictPreference,
    StrictTools,
};
use pi_runtime::{AssistantEvent, Context, Message, Model, StopReason, StreamOptions};
use pi_tool::ToolSpec;
use serde_json::{Value, json};
use wire_server::{Reply, Server};

const ANTHROPIC_TOOLS: &str = include_str!("fixtures/providers/anthropic_tools.sse");
const RESPONSES_TOOLS: &str = include_str!("fixtures/providers/openai_responses_tools.sse");
const COMPLETIONS_TOOLS: &str = include_str!("fixtures/providers/openai_completions_tools.sse");

/// Anthropic's answer when the strict tools' grammar is too large (the text of
/// anthropics/anthropic-sdk-typescript#885 and vercel/ai#13789, in the API's error shape).
const ANTHROPIC_GRAMMAR_TOO_LARGE: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"The compiled grammar is too large, which would cause performance issues. Simplify your tool schemas or reduce the number of strict tools."},"request_id":"req_011CXh6aGxDAFrbBfqEkZqHr"}"#;

/// Anthropic's (and Bedrock's) answer past 20 strict tools (datarobot-oss/datarobot-genai#547).
const TOO_MANY_STRICT_TOOLS: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"Too many strict tools (21). The maximum number of strict tools supported is 20"}}"#;

/// OpenAI's answer to a strict schema it does not take (github/github-mcp-server#1548).
const OPENAI_INVALID_SCHEMA: &str = r#"{"error":{"message":"Invalid schema for function 'get_me': In context=(), object schema missing properties.","type":"invalid_request_error","param":"tools[0].parameters","code":"invalid_function_parameters"}}"#;

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("The {name} tool"),
        parameters: json!({"type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"]}),
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![tool("get_me"), tool("edit"), tool("read")]
}

fn session(id: &str) -> StreamOptions {
    let mut options = StreamOptions::default();
    options.session_id = Some(id.into());
    options
}

async fn run(model: &dyn Model, options: &StreamOptions) -> Vec<AssistantEvent> {
    let messages = vec![Arc::new(Message::user("Read src/main.rs"))];
    let tools = tools();
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

/// `name -> strict` of a body's tools (`None`: no `strict` sent).
fn strictness(body: &Value) -> Vec<(String, Option<bool>)> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            let holder = tool.get("function").unwrap_or(tool);
            (
                holder["name"].as_str().unwrap().to_owned(),
                holder.get("strict").and_then(Value::as_bool),
            )
        })
        .collect()
}

fn named(pairs: &[(&str, Option<bool>)]) -> Vec<(String, Option<bool>)> {
    pairs.iter().map(|(n, s)| ((*n).to_owned(), *s)).collect()
}

fn ended_done(events: &[AssistantEvent]) -> bool {
    matches!(events.last(), Some(AssistantEvent::Done { reason, .. }) if *reason == StopReason::ToolUse)
}

#[tokio::test]
async fn anthropic_refusal_is_sent_again_without_strict_and_remembered_for_the_session() {
    let server = Server::start(vec![
        Reply::status(400, ANTHROPIC_GRAMMAR_TOO_LARGE),
        Reply::stream(ANTHROPIC_TOOLS, 16),
        Reply::stream(ANTHROPIC_TOOLS, 16),
        Reply::stream(ANTHROPIC_TOOLS, 16),
    ])
    .await;
    let policy = StrictTools::new().require("edit");
    let model = AnthropicMessages::new("claude-sonnet-4-5")
        .base_url(&server.url)
        .api_key("sk-ant-test-key")
        .strict(true)
        .max_retries(0)
        .strict_tools(policy.clone());

    let events = run(&model, &session("s1")).await;
    assert!(ended_done(&events), "{:?}", events.last());
    // One Start only: the refused attempt's events are not shown.
    let starts = events
        .iter()
        .filter(|e| matches!(e, AssistantEvent::Start { .. }))
        .count();
    assert_eq!(starts, 1);

    let seen = server.seen();
    assert_eq!(seen.len(), 2, "sent once more after the refusal");
    assert_eq!(
        strictness(&seen[0].body),
        named(&[
            ("get_me", Some(true)),
            ("edit", Some(true)),
            ("read", Some(true))
        ])
    );
    assert_eq!(
        strictness(&seen[1].body),
        named(&[("get_me", None), ("edit", Some(true)), ("read", None)]),
        "the required tool stays strict"
    );
    // A tool without strict gets Anthropic's own schema (optional fields stay optional).
    let get_me = &seen[1].body["tools"][0];
    assert_eq!(get_me["input_schema"]["required"], json!(["path"]));
    assert_eq!(
        seen[0].body["tools"][0]["input_schema"]["required"],
        json!(["path", "limit"]),
        "the strict schema had every field required"
    );

    // The session remembers: the next request goes without strict at once.
    let fallback = policy.fallback(Some("s1")).expect("remembered");
    assert_eq!(
        fallback.tools.iter().collect::<Vec<_>>(),
        ["get_me", "read"]
    );
    assert!(fallback.refusal.contains("compiled grammar is too large"));
    let events = run(&model, &session("s1")).await;
    assert!(ended_done(&events));
    let seen = server.seen();
    assert_eq!(seen.len(), 3, "no refused attempt this time");
    assert_eq!(
        strictness(&seen[2].body),
        named(&[("get_me", None), ("edit", Some(true)), ("read", None)])
    );

    // Another session starts strict again.
    let events = run(&model, &session("s2")).await;
    assert!(ended_done(&events));
    assert_eq!(
        strictness(&server.seen()[3].body),
        named(&[
            ("get_me", Some(true)),
            ("edit", Some(true)),
            ("read", Some(true))
        ])
    );

    // The compatibility report says what happened.
    let report = policy.report(&tools()[0], Some("s1"));
    assert!(
        report
            .strict_fallback()
            .is_some_and(|r| r.contains("compiled grammar is too large"))
    );
    assert!(
        report.to_string().contains(
            "sent without strict in this session: the API refused strict tools (400 Bad Request: The compiled grammar is too large"
        ),
        "{report}"
    );
    assert!(
        policy
            .report(&tools()[1], Some("s1"))
            .strict_fallback()
            .is_none()
    );
    assert!(
        policy
            .report(&tools()[0], Some("s2"))
            .strict_fallback()
            .is_none()
    );
    assert_eq!(policy.preference("edit"), StrictPreference::Require);
}

#[tokio::test]
async fn a_refusal_only_required_tools_could_answer_is_not_retried() {
    let server = Server::start(vec![Reply::status(400, TOO_MANY_STRICT_TOOLS)]).await;
    let policy = StrictTools::new()
        .require("get_me")
        .require("edit")
        .require("read");
    let model = AnthropicMessages::new("claude-sonnet-4-5")
        .base_url(&server.url)
        .api_key("sk-ant-test-key")
        .strict(true)
        .max_retries(0)
        .strict_tools(policy.clone());
    let events = run(&model, &session("s1")).await;
    assert_eq!(
        error_text(&events),
        "400 Bad Request: Too many strict tools (21). The maximum number of strict tools supported is 20 (not retried without strict: required strict tools get_me, edit, read)"
    );
    assert_eq!(server.seen().len(), 1);
    assert!(policy.fallback(Some("s1")).is_none());
}

#[tokio::test]
async fn a_second_refusal_ends_the_request() {
    let server = Server::start(vec![
        Reply::status(400, TOO_MANY_STRICT_TOOLS),
        Reply::status(400, TOO_MANY_STRICT_TOOLS),
        Reply::stream(ANTHROPIC_TOOLS, 16),
    ])
    .await;
    // "edit" stays strict, so the second attempt is refused too: sent once more only.
    let model = AnthropicMessages::new("claude-sonnet-4-5")
        .base_url(&server.url)
        .api_key("sk-ant-test-key")
        .strict(true)
        .max_retries(0)
        .strict_tools(StrictTools::new().require("edit"));
    let events = run(&model, &StreamOptions::default()).await;
    assert!(error_text(&events).contains("Too many strict tools"));
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn other_bad_requests_are_not_retried() {
    let server = Server::start(vec![
        Reply::status(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}"#,
        ),
        Reply::stream(ANTHROPIC_TOOLS, 16),
    ])
    .await;
    let model = AnthropicMessages::new("claude-sonnet-4-5")
        .base_url(&server.url)
        .api_key("sk-ant-test-key")
        .strict(true)
        .max_retries(0);
    let events = run(&model, &StreamOptions::default()).await;
    assert_eq!(
        error_text(&events),
        "400 Bad Request: max_tokens: Field required"
    );
    assert_eq!(server.seen().len(), 1);
    assert!(model.strict_tools_policy().fallback(None).is_none());
}

#[tokio::test]
async fn openai_responses_relaxes_only_the_tool_it_names() {
    let server = Server::start(vec![
        Reply::status(400, OPENAI_INVALID_SCHEMA),
        Reply::stream(RESPONSES_TOOLS, 16),
    ])
    .await;
    let model = OpenAiResponses::new("gpt-5-mini")
        .base_url(&server.url)
        .api_key("sk-test-key-123")
        .max_retries(0);
    let events = run(&model, &session("s1")).await;
    assert!(ended_done(&events), "{:?}", events.last());
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        strictness(&seen[1].body),
        named(&[
            ("get_me", Some(false)),
            ("edit", Some(true)),
            ("read", Some(true))
        ])
    );
    // Without strict, the tool's own schema (optional `limit` stays optional).
    assert_eq!(
        seen[1].body["tools"][0]["parameters"]["required"],
        json!(["path"])
    );
    let fallback = model
        .strict_tools_policy()
        .fallback(Some("s1"))
        .expect("remembered");
    assert_eq!(fallback.tools.iter().collect::<Vec<_>>(), ["get_me"]);
}

#[tokio::test]
async fn openai_completions_named_tool_that_is_required_is_not_retried() {
    let server = Server::start(vec![
        Reply::status(400, OPENAI_INVALID_SCHEMA),
        Reply::stream(COMPLETIONS_TOOLS, 16),
    ])
    .await;
    let model = OpenAiCompletions::new("gpt-4o")
        .base_url(&server.url)
        .api_key("sk-test-key-123")
        .strict(true)
        .max_retries(0)
        .strict_tools(StrictTools::new().require("get_me"));
    let events = run(&model, &StreamOptions::default()).await;
    assert!(
        error_text(&events).ends_with("(not retried without strict: required strict tools get_me)"),
        "{}",
        error_text(&events)
    );
    assert_eq!(server.seen().len(), 1);

    // Not required: sent again with that one tool not strict.
    let server = Server::start(vec![
        Reply::status(400, OPENAI_INVALID_SCHEMA),
        Reply::stream(COMPLETIONS_TOOLS, 16),
    ])
    .await;
    let model = OpenAiCompletions::new("gpt-4o")
        .base_url(&server.url)
        .api_key("sk-test-key-123")
        .strict(true)
        .max_retries(0);
    let events = run(&model, &StreamOptions::default()).await;
    assert!(
        matches!(events.last(), Some(AssistantEvent::Done { .. })),
        "{:?}",
        events.last()
    );
    let seen = server.seen();
    assert_eq!(
        strictness(&seen[1].body),
        named(&[
            ("get_me", Some(false)),
            ("edit", Some(true)),
            ("read", Some(true))
        ])
    );
}

#[tokio::test]
async fn azure_openai_falls_back_as_openai_does() {
    let server = Server::start(vec![
        Reply::status(400, OPENAI_INVALID_SCHEMA),
        Reply::stream(RESPONSES_TOOLS, 16),
    ])
    .await;
    let model = AzureOpenAiResponses::new("gpt-5")
        .base_url(format!("{}/openai/v1", server.url))
        .deployment("prod-gpt5")
        .api_key("azure-test-key")
        .max_retries(0);
    let events = run(&model, &session("s1")).await;
    assert!(ended_done(&events), "{:?}", events.last());
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].target, "/openai/v1/responses");
    assert_eq!(
        strictness(&seen[1].body),
        named(&[
            ("get_me", Some(false)),
            ("edit", Some(true)),
            ("read", Some(true))
        ])
    );
    assert!(model.strict_tools_policy().fallback(Some("s1")).is_some());
}
