//! What the loop reports as it runs (pi's `AgentEvent`).

use std::sync::Arc;

use pi_tool::ToolResult;
use serde_json::Value;

use crate::message::Message;
use crate::model::AssistantEvent;

/// One step of a run, in the order pi emits them:
/// `AgentStart`, `TurnStart`, `MessageStart`/`MessageEnd` per message (with `MessageUpdate`s
/// while an assistant message streams), `ToolExecutionStart`/`Update`/`End` per tool call,
/// `TurnEnd`, and finally `AgentEnd`.
///
/// Messages are shared (`Arc`), so an event never copies the transcript.
#[derive(Clone, Debug)]
pub enum AgentEvent {
    /// The run began.
    AgentStart,
    /// The run ended; `messages` are the messages this run added.
    AgentEnd {
        /// The new messages, in order.
        messages: Vec<Arc<Message>>,
    },
    /// A turn (one model response and its tool calls) began.
    TurnStart,
    /// The turn ended.
    TurnEnd {
        /// The assistant message of this turn.
        message: Arc<Message>,
        /// Its tool results, in the order of the calls.
        tool_results: Vec<Arc<Message>>,
    },
    /// A message began (a prompt, the assistant's response, a tool result).
    MessageStart {
        /// The message (for a streaming assistant response: its start, without content).
        message: Arc<Message>,
    },
    /// The assistant response streamed more content.
    MessageUpdate {
        /// The streamed event.
        event: AssistantEvent,
    },
    /// A message is complete and in the transcript.
    MessageEnd {
        /// The complete message.
        message: Arc<Message>,
    },
    /// A tool call is about to be prepared and run.
    ToolExecutionStart {
        /// The call id.
        tool_call_id: String,
        /// The tool name.
        tool_name: String,
        /// The arguments as the model sent them.
        args: Value,
    },
    /// A running tool streamed a partial result.
    ToolExecutionUpdate {
        /// The call id.
        tool_call_id: String,
        /// The tool name.
        tool_name: String,
        /// The arguments as the model sent them.
        args: Value,
        /// The partial result.
        partial_result: ToolResult,
    },
    /// A tool call finished (successfully or not).
    ToolExecutionEnd {
        /// The call id.
        tool_call_id: String,
        /// The tool name.
        tool_name: String,
        /// The final result (after `after_tool_call`).
        result: ToolResult,
        /// Whether it counts as an error.
        is_error: bool,
        /// Preparation plus execution time, in milliseconds.
        duration_ms: u64,
    },
}

impl AgentEvent {
    /// pi's name for the event: `agent_start`, `tool_execution_end`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
        }
    }
}
