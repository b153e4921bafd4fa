//! The loop's `tracing` spans as OpenTelemetry sees them: exported through `tracing-opentelemetry`
//! into the SDK's in-memory exporter, then checked against the GenAI semantic conventions
//! (span names, kinds, statuses, attributes and the parent/child structure).

use std::sync::Arc;

use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::{SpanId, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use pi_runtime::{
    AgentContext, AgentLoopConfig, AssistantContent, AssistantMessage, Message, ScriptedModel,
    StopReason, ToolExecution, agent_loop,
};
use pi_tool::{CancellationToken, Usage, tool};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

/// Look up a city's weather.
#[tool]
async fn lookup(city: String) -> String {
    // Pending a few times, so the other call of the batch is polled in between: this span must
    // still be a child of this call's span.
    for _ in 0..3 {
        tokio::task::yield_now().await;
    }
    tracing::info_span!("lookup_inner").in_scope(|| format!("sunny in {city}"))
}

/// Always fails.
#[tool]
async fn explode(reason: String) -> Result<String, pi_tool::ToolError> {
    tokio::task::yield_now().await;
    Err(pi_tool::ToolError::new(format!("exploded: {reason}")))
}

fn response(
    content: Vec<AssistantContent>,
    stop: StopReason,
    input: u64,
    output: u64,
) -> AssistantMessage {
    let mut message = AssistantMessage::new(content, stop);
    message.usage = Usage::new(input, output);
    message.response_id = Some(format!("resp-{input}"));
    message
}

/// Runs one prompt with two parallel calls (one failing) and two model requests, inside a
/// `caller` span, and returns the exported spans.
async fn traced_run(config: AgentLoopConfig) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("traces-test")));
    let _guard = tracing::subscriber::set_default(subscriber);

    let model = Arc::new(
        ScriptedModel::new([
            response(
                vec![
                    AssistantContent::tool_call("c1", "lookup", json!({"city": "Paris"})),
                    AssistantContent::tool_call("c2", "explode", json!({"reason": "boom"})),
                ],
                StopReason::ToolUse,
                10,
                5,
            ),
            response(
                vec![AssistantContent::text("done")],
                StopReason::Stop,
                20,
                7,
            ),
        ])
        .with_identity("openai-completions", "openai", "gpt-test"),
    );
    let context = AgentContext::new("sys")
        .with_tool(LookupTool)
        .with_tool(ExplodeTool);
    let caller = tracing::info_span!("caller");
    let stream = caller.in_scope(|| {
        agent_loop(
            vec![Message::user("weather?")],
            context,
            config.tool_execution(ToolExecution::Parallel),
            model,
            CancellationToken::new(),
        )
    });
    drop(caller);
    // Polled outside the caller's scope: the run's span keeps the parent it was created with.
    let messages = stream.messages().await;
    assert_eq!(messages.len(), 5, "user, assistant, 2 results, assistant");
    provider.force_flush().expect("flush");
    exporter.get_finished_spans().expect("spans")
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    let mut found: Vec<&SpanData> = spans.iter().filter(|s| s.name == name).collect();
    found.sort_by_key(|s| s.start_time);
    found
}

fn one<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "exactly one span named {name:?}");
    found[0]
}

fn attr(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn attr_str(span: &SpanData, key: &str) -> Option<String> {
    attr(span, key).map(|value| value.to_string())
}

fn id(span: &SpanData) -> SpanId {
    span.span_context.span_id()
}

#[tokio::test]
async fn a_parallel_batch_gives_the_genai_spans_and_their_structure() {
    let spans = traced_run(AgentLoopConfig::new()).await;
    let mut names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "caller",
            "chat gpt-test",
            "chat gpt-test",
            "execute_tool explode",
            "execute_tool lookup",
            "invoke_agent",
            "lookup_inner",
        ]
    );
    let trace = spans[0].span_context.trace_id();
    assert!(spans.iter().all(|s| s.span_context.trace_id() == trace));

    let caller = one(&spans, "caller");
    let agent = one(&spans, "invoke_agent");
    let chats = named(&spans, "chat gpt-test");
    let lookup = one(&spans, "execute_tool lookup");
    let explode = one(&spans, "execute_tool explode");
    let inner = one(&spans, "lookup_inner");

    // Structure: caller > invoke_agent > {chat, chat, execute_tool, execute_tool};
    // the tool's own span is a child of its call's span.
    assert_eq!(agent.parent_span_id, id(caller));
    for child in [chats[0], chats[1], lookup, explode] {
        assert_eq!(
            child.parent_span_id,
            id(agent),
            "{} under invoke_agent",
            child.name
        );
    }
    assert_eq!(inner.parent_span_id, id(lookup));
    // The calls ran between the two requests.
    assert!(chats[0].end_time <= lookup.start_time);
    assert!(explode.end_time <= chats[1].start_time && lookup.end_time <= chats[1].start_time);

    // The run.
    assert_eq!(agent.span_kind, SpanKind::Internal);
    assert_eq!(agent.status, Status::Unset);
    assert_eq!(
        attr_str(agent, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(
        attr_str(agent, "gen_ai.provider.name").as_deref(),
        Some("openai")
    );
    assert_eq!(
        attr_str(agent, "gen_ai.request.model").as_deref(),
        Some("gpt-test")
    );
    assert_eq!(
        attr(agent, "gen_ai.usage.input_tokens"),
        Some(Value::I64(30))
    );
    assert_eq!(
        attr(agent, "gen_ai.usage.output_tokens"),
        Some(Value::I64(12))
    );
    assert_eq!(attr(agent, "error.type"), None);

    // The model requests.
    for (chat, (input, output, reason)) in chats.iter().zip([(10, 5, "tool_call"), (20, 7, "stop")])
    {
        assert_eq!(chat.span_kind, SpanKind::Client);
        assert_eq!(chat.status, Status::Unset);
        assert_eq!(
            attr_str(chat, "gen_ai.operation.name").as_deref(),
            Some("chat")
        );
        assert_eq!(
            attr_str(chat, "gen_ai.provider.name").as_deref(),
            Some("openai")
        );
        assert_eq!(
            attr_str(chat, "gen_ai.request.model").as_deref(),
            Some("gpt-test")
        );
        assert_eq!(
            attr_str(chat, "gen_ai.response.model").as_deref(),
            Some("gpt-test")
        );
        assert_eq!(
            attr_str(chat, "gen_ai.response.id"),
            Some(format!("resp-{input}"))
        );
        assert_eq!(
            attr(chat, "gen_ai.usage.input_tokens"),
            Some(Value::I64(input))
        );
        assert_eq!(
            attr(chat, "gen_ai.usage.output_tokens"),
            Some(Value::I64(output))
        );
        assert_eq!(
            attr_str(chat, "gen_ai.response.finish_reasons"),
            Some(format!("[\"{reason}\"]"))
        );
        assert_eq!(attr(chat, "error.type"), None);
    }

    // The tool calls.
    for (span, name, call_id) in [(lookup, "lookup", "c1"), (explode, "explode", "c2")] {
        assert_eq!(span.span_kind, SpanKind::Internal);
        assert_eq!(
            attr_str(span, "gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
        assert_eq!(attr_str(span, "gen_ai.tool.name").as_deref(), Some(name));
        assert_eq!(
            attr_str(span, "gen_ai.tool.call.id").as_deref(),
            Some(call_id)
        );
        assert_eq!(
            attr_str(span, "gen_ai.tool.type").as_deref(),
            Some("function")
        );
        // Content is opt-in.
        assert_eq!(attr(span, "gen_ai.tool.call.arguments"), None);
        assert_eq!(attr(span, "gen_ai.tool.call.result"), None);
    }
    assert_eq!(
        attr_str(lookup, "gen_ai.tool.description").as_deref(),
        Some("Look up a city's weather.")
    );
    assert_eq!(lookup.status, Status::Unset);
    assert_eq!(attr(lookup, "error.type"), None);
    assert_eq!(explode.status, Status::error(""));
    assert_eq!(
        attr_str(explode, "error.type").as_deref(),
        Some("tool_error")
    );
}

#[tokio::test]
async fn tool_arguments_and_results_are_recorded_only_when_opted_in() {
    let spans = traced_run(AgentLoopConfig::new().trace_tool_content(true)).await;
    let lookup = one(&spans, "execute_tool lookup");
    let explode = one(&spans, "execute_tool explode");
    assert_eq!(
        attr_str(lookup, "gen_ai.tool.call.arguments").as_deref(),
        Some(r#"{"city":"Paris"}"#)
    );
    assert_eq!(
        attr_str(lookup, "gen_ai.tool.call.result").as_deref(),
        Some("sunny in Paris")
    );
    assert_eq!(lookup.status, Status::Unset);
    assert_eq!(
        attr_str(explode, "gen_ai.tool.call.arguments").as_deref(),
        Some(r#"{"reason":"boom"}"#)
    );
    // A failed call has no result attribute; its text is the status description.
    assert_eq!(attr(explode, "gen_ai.tool.call.result"), None);
    assert_eq!(explode.status, Status::error("exploded: boom"));
    assert_eq!(
        attr_str(explode, "error.type").as_deref(),
        Some("tool_error")
    );
}
