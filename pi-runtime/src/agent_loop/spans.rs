//! `tracing` spans after the OpenTelemetry GenAI semantic conventions: one `invoke_agent` span
//! per run, one `chat {model}` span per model request and one `execute_tool {name}` span per
//! tool call (children of the run's span; a tool's own spans are children of its call's).
//!
//! The fields are the ones `tracing-opentelemetry` turns into span properties (`otel.name`,
//! `otel.kind`, `otel.status_code`, `otel.status_description`) and attributes (every other
//! field). Without a subscriber interested in them, creating a span is one check of a global
//! level filter and no field is computed: no name is formatted and no attribute is collected.
//!
//! `error.type` values: `tool_error` (the call's result is an error result: invalid arguments,
//! unknown tool, a failing or panicking tool, a blocked or aborted call), and on `chat` and
//! `invoke_agent` the stop reason of a failed response: `error` or `aborted`.

use tracing::Span;
use tracing::field::Empty;

use crate::event::ToolCallRef;
use crate::message::{AssistantMessage, Message, StopReason, ToolResultMessage};
use crate::model::Model;

/// The span of one run (the `invoke_agent` span of the GenAI agent conventions; `INTERNAL`:
/// the agent runs in this process).
pub(super) fn agent_span(model: &dyn Model) -> Span {
    tracing::info_span!(
        "invoke_agent",
        otel.name = "invoke_agent",
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = model.provider(),
        gen_ai.request.model = model.id(),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
    )
}

/// The span of one model request (`chat {model}`, `CLIENT`: the model is a remote service).
pub(super) fn chat_span(model: &dyn Model) -> Span {
    tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {}", model.id()),
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = model.provider(),
        gen_ai.request.model = model.id(),
        gen_ai.response.model = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
    )
}

/// The span of one tool call (`execute_tool {name}`, `INTERNAL`). It covers the whole call:
/// preparation (so invalid or unknown calls are traced too), execution and `after_tool_call`.
pub(super) fn tool_span<'a>(
    call: &ToolCallRef,
    description: impl FnOnce() -> Option<&'a str>,
) -> Span {
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", call.name()),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name(),
        gen_ai.tool.call.id = call.id(),
        gen_ai.tool.type = "function",
        gen_ai.tool.description = Empty,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
    );
    if !span.is_disabled()
        && let Some(description) = description()
    {
        span.record("gen_ai.tool.description", description);
    }
    span
}

/// Records how a call ended. With `content` (the user's opt-in) also the arguments, the result
/// of a successful call, and the text of a failed one as the status description.
pub(super) fn record_tool_outcome(
    span: &Span,
    call: &ToolCallRef,
    message: &Message,
    content: bool,
) {
    if span.is_disabled() {
        return;
    }
    let Some(result) = message.as_tool_result() else {
        return;
    };
    if result.is_error {
        span.record("otel.status_code", "error");
        span.record("error.type", "tool_error");
    }
    if !content {
        return;
    }
    span.record(
        "gen_ai.tool.call.arguments",
        call.arguments().to_string().as_str(),
    );
    if result.is_error {
        span.record("otel.status_description", result.text().as_str());
    } else {
        span.record("gen_ai.tool.call.result", result_text(result).as_str());
    }
}

/// A result as one string: its text when it is only text, else its content as JSON.
fn result_text(result: &ToolResultMessage) -> String {
    if result
        .content
        .iter()
        .all(|content| content.as_text().is_some())
    {
        result.text()
    } else {
        serde_json::to_string(&result.content).unwrap_or_default()
    }
}

/// Records what a model request returned: the response model and id, the finish reason, the
/// token usage, and for a failed response its error type.
pub(super) fn record_response(span: &Span, message: &AssistantMessage) {
    if span.is_disabled() {
        return;
    }
    if !message.model.is_empty() {
        span.record("gen_ai.response.model", message.model.as_str());
    }
    if let Some(id) = message.response_id.as_deref() {
        span.record("gen_ai.response.id", id);
    }
    let reason = finish_reason(message.stop_reason);
    span.record(
        "gen_ai.response.finish_reasons",
        format_args!("[\"{reason}\"]").to_string().as_str(),
    );
    span.record("gen_ai.usage.input_tokens", tokens(message.usage.input));
    span.record("gen_ai.usage.output_tokens", tokens(message.usage.output));
    if let Some(error) = error_type(message.stop_reason) {
        span.record("otel.status_code", "error");
        span.record("error.type", error);
        if let Some(text) = message.error_message.as_deref() {
            span.record("otel.status_description", text);
        }
    }
}

/// Records a finished run: the tokens of every response it received, and how it ended when
/// its last response failed.
pub(super) fn record_run(span: &Span, new_messages: &[std::sync::Arc<Message>]) {
    if span.is_disabled() {
        return;
    }
    let responses = || new_messages.iter().filter_map(|m| m.as_assistant());
    let input: u64 = responses().map(|m| m.usage.input).sum();
    let output: u64 = responses().map(|m| m.usage.output).sum();
    span.record("gen_ai.usage.input_tokens", tokens(input));
    span.record("gen_ai.usage.output_tokens", tokens(output));
    if let Some(error) = responses()
        .next_back()
        .and_then(|m| error_type(m.stop_reason))
    {
        span.record("otel.status_code", "error");
        span.record("error.type", error);
    }
}

/// A token count as an OpenTelemetry int (`i64`; `tracing-opentelemetry` records a `u64` as a
/// string).
fn tokens(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The finish reason as the conventions spell the common ones (`stop`, `length`,
/// `tool_call`), and `error` / `aborted` for a failed response.
fn finish_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ToolUse => "tool_call",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
    }
}

/// `error.type` of a response, when it failed.
fn error_type(reason: StopReason) -> Option<&'static str> {
    match reason {
        StopReason::Error => Some("error"),
        StopReason::Aborted => Some("aborted"),
        StopReason::Stop | StopReason::Length | StopReason::ToolUse => None,
    }
}
