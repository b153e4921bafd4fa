//! pi's `transformMessages`, applied before every request: what of the transcript a provider
//! may see, and in which shape.
//!
//! - custom messages are skipped, failed or aborted assistant messages dropped;
//! - thinking, text signatures and tool-call thought signatures are kept only for the model that
//!   produced them; the API's own blocks (a hosted search's call and result), a call's and a
//!   response's provider fields only for models of the API that produced them;
//! - images become pi's placeholder texts for a model that does not read images;
//! - a tool call without a result before the next user or assistant message (or the end) gets
//!   `No result provided` as an error result;
//! - tool-call ids from another model are normalized for the target API, and their results
//!   remapped.

use std::collections::HashMap;
use std::sync::Arc;

use pi_tool::Content;

use crate::message::{AssistantContent, AssistantMessage, Message, StopReason, ToolResultMessage};

/// pi's text for a user image sent to a model that cannot read it.
pub(crate) const USER_IMAGE_OMITTED: &str = "(image omitted: model does not support images)";
/// pi's text for a tool-result image sent to a model that cannot read it.
pub(crate) const TOOL_IMAGE_OMITTED: &str = "(tool image omitted: model does not support images)";
/// pi's text of the synthetic result of an orphaned tool call.
pub(crate) const NO_RESULT: &str = "No result provided";

/// How tool-call ids from another model must be rewritten for the target API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdRule {
    /// `[^a-zA-Z0-9_-]` replaced by `_`, at most 64 characters (Anthropic, Gemini).
    Sanitize64,
    /// The part before `|`, sanitized, at most 40 characters (OpenAI Chat Completions).
    OpenAiCompletions,
}

/// The model a transcript is being sent to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub(crate) api: &'a str,
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    pub(crate) accepts_images: bool,
    pub(crate) id_rule: IdRule,
}

impl Target<'_> {
    fn produced(&self, message: &AssistantMessage) -> bool {
        message.api == self.api && message.provider == self.provider && message.model == self.model
    }
}

/// The transcript as the target may see it.
pub(crate) fn transform(messages: &[Arc<Message>], target: Target<'_>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut id_map: HashMap<String, String> = HashMap::new();
    // Calls of the last assistant message still waiting for a result: (id, name).
    let mut pending: Vec<(String, String)> = Vec::new();
    for message in messages {
        match message.as_ref() {
            Message::Custom(custom) => {
                // The one kind of custom message a model reads: the loop's note that the tools
                // changed, sent as the user's side of the conversation (where a steering
                // message would be), which every API accepts after tool results.
                if let Some(note) = custom.model_note() {
                    answer_orphans(&mut pending, &mut out);
                    out.push(Message::User(crate::message::UserMessage {
                        content: vec![Content::text(note)],
                        timestamp: custom.timestamp,
                    }));
                }
            }
            Message::User(user) => {
                answer_orphans(&mut pending, &mut out);
                let mut user = user.clone();
                if !target.accepts_images {
                    replace_images(&mut user.content, USER_IMAGE_OMITTED);
                }
                out.push(Message::User(user));
            }
            Message::Assistant(assistant) => {
                if matches!(
                    assistant.stop_reason,
                    StopReason::Error | StopReason::Aborted
                ) {
                    continue;
                }
                answer_orphans(&mut pending, &mut out);
                let assistant = assistant_for(assistant, target, &mut id_map);
                pending = assistant
                    .tool_calls()
                    .map(|block| (block.call.id.clone(), block.call.name.clone()))
                    .collect();
                out.push(Message::Assistant(assistant));
            }
            Message::ToolResult(result) => {
                let mut result = result.clone();
                if let Some(id) = id_map.get(&result.tool_call_id) {
                    result.tool_call_id.clone_from(id);
                }
                pending.retain(|(id, _)| *id != result.tool_call_id);
                if !target.accepts_images {
                    replace_images(&mut result.content, TOOL_IMAGE_OMITTED);
                }
                out.push(Message::ToolResult(result));
            }
        }
    }
    answer_orphans(&mut pending, &mut out);
    out
}

fn assistant_for(
    message: &AssistantMessage,
    target: Target<'_>,
    id_map: &mut HashMap<String, String>,
) -> AssistantMessage {
    let same_model = target.produced(message);
    let same_api = message.api == target.api;
    let mut message = message.clone();
    if same_model {
        return message;
    }
    if !same_api {
        message.provider_fields.clear();
    }
    message.content = std::mem::take(&mut message.content)
        .into_iter()
        .filter_map(|block| match block {
            AssistantContent::Thinking { .. } => None,
            AssistantContent::Text { text, .. } => Some(AssistantContent::text(text)),
            // The API's own blocks mean something to any model of that API (what it searched
            // and loaded), to no other.
            AssistantContent::Provider(block) => {
                (block.api == target.api).then_some(AssistantContent::Provider(block))
            }
            AssistantContent::ToolCall(mut call) => {
                call.thought_signature = None;
                if !same_api {
                    call.provider_fields.clear();
                }
                let normalized = normalize_id(&call.call.id, target.id_rule);
                if normalized != call.call.id {
                    id_map.insert(call.call.id.clone(), normalized.clone());
                    call.call.id = normalized;
                }
                Some(AssistantContent::ToolCall(call))
            }
        })
        .collect();
    message
}

/// A tool-call id rewritten for the target API.
pub(crate) fn normalize_id(id: &str, rule: IdRule) -> String {
    let sanitize = |text: &str, limit: usize| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(limit)
            .collect()
    };
    match rule {
        IdRule::Sanitize64 => sanitize(id, 64),
        IdRule::OpenAiCompletions => sanitize(id.split('|').next().unwrap_or(id), 40),
    }
}

fn answer_orphans(pending: &mut Vec<(String, String)>, out: &mut Vec<Message>) {
    for (id, name) in pending.drain(..) {
        out.push(Message::ToolResult(ToolResultMessage {
            tool_call_id: id,
            tool_name: name,
            content: vec![Content::text(NO_RESULT)],
            details: serde_json::Value::Null,
            is_error: true,
            duration_ms: None,
            timestamp: crate::message::now_ms(),
        }));
    }
}

fn replace_images(content: &mut [Content], placeholder: &str) {
    for block in content {
        if matches!(block, Content::Image { .. }) {
            *block = Content::text(placeholder);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::UserMessage;
    use serde_json::json;

    fn target(rule: IdRule, images: bool) -> Target<'static> {
        Target {
            api: "anthropic-messages",
            provider: "anthropic",
            model: "claude",
            accepts_images: images,
            id_rule: rule,
        }
    }

    fn assistant(model: &str, content: Vec<AssistantContent>, stop: StopReason) -> Arc<Message> {
        let mut message = AssistantMessage::new(content, stop);
        message.api = "openai-responses".into();
        message.provider = "openai".into();
        message.model = model.into();
        Arc::new(Message::Assistant(message))
    }

    #[test]
    fn orphans_are_answered_and_foreign_ids_remapped() {
        let messages = vec![
            Arc::new(Message::user("hi")),
            assistant(
                "gpt",
                vec![
                    AssistantContent::thinking("hmm"),
                    AssistantContent::tool_call("call_1|fc_1", "a", json!({})),
                    AssistantContent::tool_call("call_2|fc_2", "b", json!({})),
                ],
                StopReason::ToolUse,
            ),
            Arc::new(Message::ToolResult(ToolResultMessage {
                tool_call_id: "call_1|fc_1".into(),
                tool_name: "a".into(),
                content: vec![Content::text("ok"), Content::image("AAAA", "image/png")],
                details: json!(null),
                is_error: false,
                duration_ms: None,
                timestamp: 0,
            })),
            assistant("gpt", vec![AssistantContent::text("x")], StopReason::Error),
            Arc::new(Message::User(UserMessage {
                content: vec![Content::image("AAAA", "image/png")],
                timestamp: 0,
            })),
        ];
        let out = transform(&messages, target(IdRule::Sanitize64, false));
        let roles: Vec<&str> = out.iter().map(Message::role).collect();
        assert_eq!(
            roles,
            ["user", "assistant", "toolResult", "toolResult", "user"]
        );
        let Message::Assistant(assistant) = &out[1] else {
            panic!()
        };
        assert_eq!(
            assistant.content.len(),
            2,
            "thinking of another model is dropped"
        );
        let ids: Vec<&str> = assistant.tool_calls().map(|c| c.call.id.as_str()).collect();
        assert_eq!(ids, ["call_1_fc_1", "call_2_fc_2"]);
        let first = out[2].as_tool_result().unwrap();
        assert_eq!(first.tool_call_id, "call_1_fc_1");
        assert_eq!(first.content[1], Content::text(TOOL_IMAGE_OMITTED));
        let orphan = out[3].as_tool_result().unwrap();
        assert_eq!(
            (
                orphan.tool_call_id.as_str(),
                orphan.text().as_str(),
                orphan.is_error
            ),
            ("call_2_fc_2", NO_RESULT, true)
        );
        let Message::User(user) = &out[4] else {
            panic!()
        };
        assert_eq!(user.content, vec![Content::text(USER_IMAGE_OMITTED)]);
    }

    #[test]
    fn the_same_model_keeps_thinking_and_ids() {
        let mut message = AssistantMessage::new(
            vec![
                AssistantContent::thinking("t"),
                AssistantContent::tool_call("a|b", "x", json!({})),
            ],
            StopReason::ToolUse,
        );
        message.api = "anthropic-messages".into();
        message.provider = "anthropic".into();
        message.model = "claude".into();
        let out = transform(
            &[Arc::new(Message::Assistant(message.clone()))],
            target(IdRule::Sanitize64, true),
        );
        assert_eq!(out[0], Message::Assistant(message));
        assert_eq!(
            out[1].as_tool_result().map(|r| r.tool_call_id.as_str()),
            Some("a|b")
        );
    }

    #[test]
    fn completions_ids_take_the_call_part_cut_to_40() {
        let long = format!("call_{}|fc_1", "x".repeat(60));
        assert_eq!(normalize_id(&long, IdRule::OpenAiCompletions).len(), 40);
        assert_eq!(
            normalize_id("call.1|fc", IdRule::OpenAiCompletions),
            "call_1"
        );
    }
}
