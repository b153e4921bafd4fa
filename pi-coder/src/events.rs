//! What a [`CodingAgent`](crate::CodingAgent) reports as it runs: the loop's events, plus pi's
//! session events (compaction, the steering queue), and pi's JSON for each, the lines of
//! `--mode json` and `--mode rpc` (`AgentSessionEvent` in pi 0.73.1's `agent-session.ts`).

use pi_runtime::{AgentEvent, AssistantEvent, AssistantMessage, Message, WaitingCall};
use pi_tool::ToolResult;
use serde_json::{Value, json};

use crate::compaction::{CompactionReason, CompactionResult};

/// How a compaction ended (pi's `compaction_end`).
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionEnd {
    /// Why it ran.
    pub reason: CompactionReason,
    /// What it wrote, when it wrote something.
    pub result: Option<CompactionResult>,
    /// Whether it was cancelled.
    pub aborted: bool,
    /// Whether the turn that overflowed is tried again now.
    pub will_retry: bool,
    /// What went wrong, when something did.
    pub error_message: Option<String>,
}

/// Receives a run's events. Only [`agent_event`](Self::agent_event) is required.
pub trait Observer {
    /// A loop event (messages, streamed deltas, tool calls, turns).
    fn agent_event(&mut self, event: &AgentEvent);

    /// A compaction started.
    fn compaction_start(&mut self, reason: CompactionReason) {
        let _ = reason;
    }

    /// A compaction ended.
    fn compaction_end(&mut self, end: &CompactionEnd) {
        let _ = end;
    }

    /// The steering or follow-up queue changed (pi's `queue_update`).
    fn queue_update(&mut self, steering: &[String], follow_up: &[String]) {
        let _ = (steering, follow_up);
    }

    /// A tool call spent `ms` waiting for the user's approval (left out of the time shown).
    fn approval_wait(&mut self, call_id: &str, ms: u64) {
        let _ = (call_id, ms);
    }
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ignore;

impl Observer for Ignore {
    fn agent_event(&mut self, _event: &AgentEvent) {}
}

/// A message as pi writes it: `details` left out when a tool gave none.
pub fn message_json(message: &Message) -> Value {
    let mut value = serde_json::to_value(message).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value
        && map.get("details").is_some_and(Value::is_null)
    {
        map.remove("details");
    }
    value
}

/// A tool's result as pi's `AgentToolResult`: `{content, details?}`.
fn tool_result_json(content: &[pi_tool::Content], details: &Value) -> Value {
    let mut result = json!({ "content": content });
    if !details.is_null() {
        result["details"] = details.clone();
    }
    result
}

/// Turns events into pi's JSON lines, following each streamed answer so that every
/// `message_update` carries the message so far (`partial`), as pi's do.
#[derive(Debug, Default)]
pub struct PiJson {
    partial: Option<AssistantMessage>,
}

impl PiJson {
    /// A new encoder.
    pub fn new() -> Self {
        PiJson::default()
    }

    /// pi's JSON for a loop event.
    pub fn agent_event(&mut self, event: &AgentEvent) -> Value {
        match event {
            AgentEvent::AgentStart => json!({"type": "agent_start"}),
            AgentEvent::AgentEnd { messages } => json!({
                "type": "agent_end",
                "messages": messages.iter().map(|m| message_json(m)).collect::<Vec<_>>(),
            }),
            AgentEvent::TurnStart => json!({"type": "turn_start"}),
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => json!({
                "type": "turn_end",
                "message": message_json(message),
                "toolResults": tool_results.iter().map(|m| message_json(m)).collect::<Vec<_>>(),
            }),
            AgentEvent::MessageStart { message } => {
                if let Some(assistant) = message.as_assistant() {
                    self.partial = Some(assistant.clone());
                }
                json!({"type": "message_start", "message": message_json(message)})
            }
            AgentEvent::MessageUpdate { event } => {
                let partial = self.partial.get_or_insert_with(AssistantMessage::empty);
                partial.apply(event);
                let partial = message_json(&Message::Assistant(partial.clone()));
                let mut update = assistant_event_json(event);
                update["partial"] = partial.clone();
                json!({"type": "message_update", "assistantMessageEvent": update, "message": partial})
            }
            AgentEvent::MessageEnd { message } => {
                if message.as_assistant().is_some() {
                    self.partial = None;
                }
                json!({"type": "message_end", "message": message_json(message)})
            }
            AgentEvent::ToolExecutionStart { call } => json!({
                "type": "tool_execution_start",
                "toolCallId": call.id(),
                "toolName": call.name(),
                "args": call.arguments(),
            }),
            AgentEvent::ToolExecutionUpdate {
                call,
                partial_result,
            } => json!({
                "type": "tool_execution_update",
                "toolCallId": call.id(),
                "toolName": call.name(),
                "args": call.arguments(),
                "partialResult": partial_result_json(partial_result),
            }),
            AgentEvent::ToolExecutionEnd {
                call,
                result,
                is_error,
                ..
            } => {
                let result = match result.as_tool_result() {
                    Some(r) => tool_result_json(&r.content, &r.details),
                    None => json!({"content": []}),
                };
                json!({
                    "type": "tool_execution_end",
                    "toolCallId": call.id(),
                    "toolName": call.name(),
                    "result": result,
                    "isError": is_error,
                })
            }
            // Events pi does not have (a client that does not know them skips them): a call
            // that waits for a decision, and the run pausing with the calls that wait.
            AgentEvent::ToolCallWaiting { call, waiting } => json!({
                "type": "tool_call_waiting",
                "toolCallId": call.id(),
                "toolName": call.name(),
                "args": waiting.arguments,
                "reason": waiting.reason,
                "kind": waiting.kind.as_str(),
            }),
            AgentEvent::RunPaused { waiting } => json!({
                "type": "run_paused",
                "waiting": waiting.iter().map(Self::waiting_call).collect::<Vec<_>>(),
            }),
            // Any other event pi does not have: its name only.
            other => json!({"type": other.kind()}),
        }
    }

    /// A call that waits for a decision, as `run_paused` and RPC's `get_waiting_calls` list
    /// it: `toolCallId`, `toolName`, `args`, `reason`, `kind`.
    pub fn waiting_call(call: &WaitingCall) -> Value {
        json!({
            "toolCallId": call.id,
            "toolName": call.tool,
            "args": call.arguments,
            "reason": call.reason,
            "kind": call.kind.as_str(),
        })
    }

    /// pi's `compaction_start`.
    pub fn compaction_start(reason: CompactionReason) -> Value {
        json!({"type": "compaction_start", "reason": reason.as_str()})
    }

    /// pi's `compaction_end`.
    pub fn compaction_end(end: &CompactionEnd) -> Value {
        let mut value = json!({
            "type": "compaction_end",
            "reason": end.reason.as_str(),
            "result": end.result.as_ref().map(CompactionResult::to_json),
            "aborted": end.aborted,
            "willRetry": end.will_retry,
        });
        if let Some(error) = &end.error_message {
            value["errorMessage"] = json!(error);
        }
        value
    }

    /// pi's `queue_update`.
    pub fn queue_update(steering: &[String], follow_up: &[String]) -> Value {
        json!({"type": "queue_update", "steering": steering, "followUp": follow_up})
    }
}

fn partial_result_json(result: &ToolResult) -> Value {
    tool_result_json(&result.content, &result.details)
}

/// pi's `AssistantMessageEvent` (without `partial`, which the caller adds).
fn assistant_event_json(event: &AssistantEvent) -> Value {
    match event {
        AssistantEvent::Start { .. } => json!({"type": "start"}),
        AssistantEvent::TextStart { content_index } => {
            json!({"type": "text_start", "contentIndex": content_index})
        }
        AssistantEvent::TextDelta {
            content_index,
            delta,
        } => json!({"type": "text_delta", "contentIndex": content_index, "delta": delta}),
        AssistantEvent::TextEnd {
            content_index,
            content,
        } => json!({"type": "text_end", "contentIndex": content_index, "content": content}),
        AssistantEvent::ThinkingStart { content_index } => {
            json!({"type": "thinking_start", "contentIndex": content_index})
        }
        AssistantEvent::ThinkingDelta {
            content_index,
            delta,
        } => json!({"type": "thinking_delta", "contentIndex": content_index, "delta": delta}),
        AssistantEvent::ThinkingEnd {
            content_index,
            content,
        } => json!({"type": "thinking_end", "contentIndex": content_index, "content": content}),
        AssistantEvent::ToolCallStart { content_index, .. } => {
            json!({"type": "toolcall_start", "contentIndex": content_index})
        }
        AssistantEvent::ToolCallDelta {
            content_index,
            delta,
        } => json!({"type": "toolcall_delta", "contentIndex": content_index, "delta": delta}),
        AssistantEvent::ToolCallEnd {
            content_index,
            tool_call,
        } => {
            let mut call = serde_json::to_value(tool_call).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut call {
                map.insert("type".into(), json!("toolCall"));
                // pi's block: type first.
                let mut ordered = serde_json::Map::new();
                ordered.insert("type".into(), json!("toolCall"));
                for (k, v) in map.iter() {
                    if k != "type" {
                        ordered.insert(k.clone(), v.clone());
                    }
                }
                *map = ordered;
            }
            json!({"type": "toolcall_end", "contentIndex": content_index, "toolCall": call})
        }
        // Not one of pi's events (pi has no such blocks); a client that does not know it
        // skips it.
        AssistantEvent::ProviderBlock {
            content_index,
            block,
        } => json!({"type": "provider_block", "contentIndex": content_index, "block": block}),
        AssistantEvent::Done { reason, message } => json!({
            "type": "done",
            "reason": reason,
            "message": message_json(&Message::Assistant(message.clone())),
        }),
        AssistantEvent::Error { reason, error } => json!({
            "type": "error",
            "reason": reason,
            "error": message_json(&Message::Assistant(error.clone())),
        }),
        // An event pi does not have; a client that does not know it skips it.
        _ => json!({"type": "unknown"}),
    }
}
