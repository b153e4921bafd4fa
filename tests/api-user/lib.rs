//! An application's use of the public API, compiled by the workspace's build: building
//! messages and results with their constructors, matching events, blocks and stop reasons with
//! a `_` arm (as a user must for `#[non_exhaustive]` enums), and answering a tool call itself
//! before resuming a run. A change to pi-tool or pi-runtime that makes this stop compiling
//! breaks users' code too.

use std::sync::Arc;

use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, AssistantContent, AssistantEvent, AssistantMessage,
    CustomMessage, Message, ProviderBlock, StopReason, ToolCallBlock, ToolResultMessage,
    UserMessage,
};
use pi_tool::{Content, Cost, ToolCall, ToolResult, Usage};
use serde_json::{Value, json};

/// A transcript as an application keeps one: a prompt with an image, the model's answer with
/// text, reasoning and a signed tool call, and a note of its own.
pub fn transcript() -> Vec<Message> {
    let prompt = UserMessage::new(vec![
        Content::text("What is in this picture?"),
        Content::image("iVBORw0KGgo=", "image/png"),
    ])
    .with_timestamp(1);
    let call = ToolCallBlock::new("call_1", "describe", json!({"detail": "high"}))
        .with_thought_signature("sig");
    let answer = AssistantMessage::new(
        vec![
            AssistantContent::thinking("Look first.").with_signature("thinking-sig"),
            AssistantContent::text("Let me look."),
            AssistantContent::ToolCall(call),
            AssistantContent::Provider(ProviderBlock::new(
                "anthropic-messages",
                json!({"type": "server_tool_use"}),
            )),
        ],
        StopReason::ToolUse,
    )
    .with_api("anthropic-messages")
    .with_provider("anthropic")
    .with_model("claude-haiku")
    .with_response_id("msg_1")
    .with_usage(
        Usage::new(120, 30)
            .with_cache(100, 0)
            .with_cost(Cost::new(0.001, 0.002).with_cache(0.0001, 0.0)),
    )
    .with_timestamp(2);
    let note = CustomMessage::new("notification", json!({"text": "looking"})).with_timestamp(3);
    vec![
        Message::User(prompt),
        Message::Assistant(answer),
        Message::Custom(note),
    ]
}

/// The application answers the model's call itself (a person approved it, or another system
/// ran it), as it does before resuming a paused run.
pub fn answer_call(call: &ToolCallBlock, text: &str) -> ToolResultMessage {
    ToolResultMessage::new(
        call.call.id.clone(),
        call.call.name.clone(),
        vec![Content::text(text)],
    )
    .with_details(json!({"answeredBy": "the application"}))
    .with_duration_ms(5)
}

/// A refusal the application sends instead of running the call.
pub fn refuse_call(call: &ToolCallBlock) -> ToolResultMessage {
    ToolResultMessage::error(
        call.call.id.clone(),
        call.call.name.clone(),
        "the user declined",
    )
}

/// What a tool of the application returns.
pub fn tool_result() -> ToolResult {
    ToolResult::new(vec![Content::text("done")], json!({"rows": 3}))
        .with_usage(Usage::new(10, 2))
        .with_terminate(false)
}

/// A tool's result made into the message that answers its call.
pub fn tool_result_message() -> ToolResultMessage {
    let call = ToolCall::new("call_2", "count", json!({}));
    ToolResultMessage::from_result(&call, tool_result())
}

/// One line for a log, per event of a run: the events an application cares about, and a `_`
/// arm for the rest, including events added in later versions.
pub fn log_line(event: &AgentEvent) -> Option<String> {
    match event {
        AgentEvent::AgentStart => Some("run started".into()),
        AgentEvent::MessageUpdate { event } => stream_text(event).map(str::to_owned),
        AgentEvent::ToolExecutionEnd { call, is_error, .. } => {
            Some(format!("{} finished (error: {is_error})", call.name()))
        }
        AgentEvent::AgentEnd { messages } => Some(format!("{} new messages", messages.len())),
        _ => None,
    }
}

/// The text a streamed event adds, if any.
pub fn stream_text(event: &AssistantEvent) -> Option<&str> {
    match event {
        AssistantEvent::TextDelta { delta, .. } | AssistantEvent::ThinkingDelta { delta, .. } => {
            Some(delta)
        }
        _ => None,
    }
}

/// How a UI shows a block of an answer.
pub fn render(block: &AssistantContent) -> String {
    match block {
        AssistantContent::Text { text, .. } => text.clone(),
        AssistantContent::Thinking { thinking, .. } => format!("({thinking})"),
        AssistantContent::ToolCall(call) => format!("-> {}", call.call.name),
        _ => String::new(),
    }
}

/// Whether the run ended as the application wanted.
pub fn ended_well(reason: StopReason) -> bool {
    match reason {
        StopReason::Stop | StopReason::ToolUse => true,
        StopReason::Length | StopReason::Error | StopReason::Aborted => false,
        _ => false,
    }
}

/// How a transcript entry reads in a log. `Message` is the one complete enum: pi's four roles.
pub fn role_line(message: &Message) -> String {
    match message {
        Message::User(user) => format!("user: {} blocks", user.content.len()),
        Message::Assistant(answer) => format!("assistant: {}", answer.text()),
        Message::ToolResult(result) => format!("result: {}", result.text()),
        Message::Custom(custom) => format!("custom: {}", custom.kind),
    }
}

/// Resumes a run whose last answer asked for a call, after the application answered it.
pub async fn resume_with_answer(
    transcript: Vec<Message>,
    answer: ToolResultMessage,
    model: Arc<dyn pi_runtime::Model>,
) -> Vec<Arc<Message>> {
    let mut messages = transcript;
    messages.push(Message::ToolResult(answer));
    let context = AgentContext::new("You describe pictures.").with_messages(messages);
    let stream =
        pi_runtime::agent_loop_continue(context, AgentLoopConfig::new(), model, Default::default())
            .expect("the transcript ends with a tool result");
    stream.messages().await
}

/// The details of a message a UI shows, read from public fields.
pub fn details(message: &ToolResultMessage) -> &Value {
    &message.details
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use pi_runtime::ScriptedModel;

    use super::*;

    #[test]
    fn messages_built_with_constructors_serialize_as_pi_writes_them() {
        let messages = transcript();
        let json = serde_json::to_value(&messages).unwrap();
        assert_eq!(json[0]["role"], "user");
        assert_eq!(json[0]["content"][1]["mimeType"], "image/png");
        assert_eq!(json[1]["content"][2]["thoughtSignature"], "sig");
        assert_eq!(json[1]["usage"]["totalTokens"], 150);
        assert_eq!(json[1]["model"], "claude-haiku");
        assert_eq!(json[2]["kind"], "notification");
        let back: Vec<Message> = serde_json::from_value(json).unwrap();
        assert_eq!(back, messages);
        let answer = messages[1].as_assistant().unwrap();
        let rendered: Vec<String> = answer.content.iter().map(render).collect();
        assert_eq!(
            rendered,
            ["(Look first.)", "Let me look.", "-> describe", ""]
        );
        assert!(ended_well(answer.stop_reason));
        assert_eq!(role_line(&messages[2]), "custom: notification");
    }

    #[test]
    fn results_built_with_constructors_carry_what_was_given() {
        let message = tool_result_message();
        assert_eq!(
            (message.tool_call_id.as_str(), message.tool_name.as_str()),
            ("call_2", "count")
        );
        assert_eq!(message.text(), "done");
        assert_eq!(details(&message), &json!({"rows": 3}));
        assert!(!message.is_error);
        let call = ToolCallBlock::new("c", "describe", json!({}));
        let refusal = refuse_call(&call);
        assert!(refusal.is_error);
        assert_eq!(refusal.text(), "the user declined");
    }

    #[tokio::test]
    async fn a_run_resumes_from_a_call_the_application_answered() {
        let messages = transcript();
        let call = messages[1]
            .as_assistant()
            .unwrap()
            .tool_calls()
            .next()
            .unwrap()
            .clone();
        let answer = answer_call(&call, "a cat on a mat");
        let model = Arc::new(ScriptedModel::recording([AssistantMessage::new(
            vec![AssistantContent::text("It is a cat.")],
            StopReason::Stop,
        )]));
        let added = tokio::time::timeout(
            Duration::from_secs(30),
            resume_with_answer(messages, answer, model.clone()),
        )
        .await
        .expect("the resumed run ends");
        let last = added.last().unwrap().as_assistant().unwrap();
        assert_eq!(last.text(), "It is a cat.");
        // The model saw the application's answer to its call.
        let request = &model.requests()[0];
        let sent = request
            .messages
            .iter()
            .find_map(|m| m.as_tool_result())
            .unwrap();
        assert_eq!(sent.text(), "a cat on a mat");
        assert_eq!(sent.tool_call_id, call.call.id);
    }

    #[test]
    fn a_log_reads_the_events_it_knows_and_skips_the_rest() {
        assert_eq!(
            log_line(&AgentEvent::AgentStart).as_deref(),
            Some("run started")
        );
        assert_eq!(log_line(&AgentEvent::TurnStart), None);
        let delta = AssistantEvent::TextDelta {
            content_index: 0,
            delta: "hi".into(),
        };
        assert_eq!(stream_text(&delta), Some("hi"));
    }
}
