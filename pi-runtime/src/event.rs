//! What the loop reports as it runs (pi's `AgentEvent`).

use std::fmt;
use std::sync::Arc;

use pi_tool::{ToolResult, Usage};
use serde_json::Value;

use crate::message::{AssistantContent, AssistantMessage, Message, ToolCallBlock};
use crate::model::AssistantEvent;
use crate::wait::WaitingCall;

/// One step of a run, in the order pi emits them:
/// `AgentStart`, `TurnStart`, `MessageStart`/`MessageEnd` per message (with `MessageUpdate`s
/// while an assistant message streams), `ToolExecutionStart`/`Update`/`End` per tool call,
/// `TurnEnd`, and finally `AgentEnd`.
///
/// Messages are shared (`Arc`), and tool events point into the assistant message that made the
/// call ([`ToolCallRef`]), so an event never copies the transcript, a call or its arguments.
///
/// `#[non_exhaustive]`: the loop gains steps (a run that waits for an approval, say), so a
/// `match` needs a `_` arm.
#[derive(Clone, Debug)]
#[non_exhaustive]
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
        /// The streamed event (boxed: deltas are rare next to the other events, and small
        /// events keep the whole stream cheap).
        event: Box<AssistantEvent>,
    },
    /// A message is complete and in the transcript.
    MessageEnd {
        /// The complete message.
        message: Arc<Message>,
    },
    /// A tool call is about to be prepared and run.
    ToolExecutionStart {
        /// The call: id, tool name and the arguments as the model sent them.
        call: ToolCallRef,
    },
    /// A running tool streamed a partial result.
    ToolExecutionUpdate {
        /// The call.
        call: ToolCallRef,
        /// The partial result.
        partial_result: Box<ToolResult>,
    },
    /// A tool call finished (successfully or not).
    ToolExecutionEnd {
        /// The call.
        call: ToolCallRef,
        /// The tool-result message that answers the call (after `after_tool_call`): its
        /// content, details, `is_error` and `duration_ms`. The same `Arc` is later emitted in
        /// `MessageStart`/`MessageEnd` and appended to the transcript.
        result: Arc<Message>,
        /// Whether it counts as an error.
        is_error: bool,
        /// Whether the result asked the loop to stop after this batch.
        terminate: bool,
        /// Token usage of the tool itself, when it reported one.
        usage: Option<Box<Usage>>,
        /// Preparation plus execution time, in milliseconds.
        duration_ms: u64,
    },
    /// A call did not run: it waits for approval, or for an answer from outside. It gets no
    /// `ToolExecutionEnd` and no result in the transcript until it is decided; when the batch
    /// is done the run pauses ([`RunPaused`](Self::RunPaused)).
    ToolCallWaiting {
        /// The call.
        call: ToolCallRef,
        /// What waits: the arguments as they would run, why, and for what (boxed: it is rare
        /// next to the other events, and small events keep the whole stream cheap).
        waiting: Box<WaitingCall>,
    },
    /// The run paused because calls wait; `AgentEnd` follows. The state to resume from is
    /// [`AgentStream::take_paused`](crate::AgentStream::take_paused).
    RunPaused {
        /// The calls that wait, in call order.
        waiting: Vec<WaitingCall>,
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
            AgentEvent::ToolCallWaiting { .. } => "tool_call_waiting",
            AgentEvent::RunPaused { .. } => "run_paused",
        }
    }

    /// The tool call a `ToolExecution*` event is about.
    pub fn tool_call(&self) -> Option<&ToolCallRef> {
        match self {
            AgentEvent::ToolExecutionStart { call }
            | AgentEvent::ToolExecutionUpdate { call, .. }
            | AgentEvent::ToolExecutionEnd { call, .. }
            | AgentEvent::ToolCallWaiting { call, .. } => Some(call),
            _ => None,
        }
    }

    /// The message of a `MessageStart`/`MessageEnd` event.
    pub fn message(&self) -> Option<&Arc<Message>> {
        match self {
            AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                Some(message)
            }
            _ => None,
        }
    }
}

/// A tool call inside the assistant message that made it: a shared pointer to that message and
/// the index of the call's block. Cloning costs one reference count, never a copy of the
/// arguments.
#[derive(Clone)]
pub struct ToolCallRef {
    message: Arc<Message>,
    index: usize,
}

impl ToolCallRef {
    /// Points at the tool-call block `index` of `message`, or `None` when `message` is not an
    /// assistant message or that block is not a tool call.
    pub fn new(message: Arc<Message>, index: usize) -> Option<Self> {
        match message.as_assistant()?.content.get(index)? {
            AssistantContent::ToolCall(_) => Some(ToolCallRef { message, index }),
            _ => None,
        }
    }

    /// The tool-call block (id, name, raw arguments, provider signature).
    pub fn block(&self) -> &ToolCallBlock {
        // `new` checked that the block exists and is a tool call, and messages are immutable.
        match self
            .message
            .as_assistant()
            .and_then(|m| m.content.get(self.index))
        {
            Some(AssistantContent::ToolCall(block)) => block,
            _ => unreachable!("a ToolCallRef always points at a tool-call block"),
        }
    }

    /// The call id.
    pub fn id(&self) -> &str {
        &self.block().call.id
    }

    /// The name of the called tool.
    pub fn name(&self) -> &str {
        &self.block().call.name
    }

    /// The arguments as the model sent them (before `prepare_arguments` and validation).
    pub fn arguments(&self) -> &Value {
        &self.block().call.arguments
    }

    /// The assistant message that made the call.
    pub fn assistant_message(&self) -> &AssistantMessage {
        match self.message.as_assistant() {
            Some(message) => message,
            None => unreachable!("a ToolCallRef always points into an assistant message"),
        }
    }

    /// The assistant message, shared.
    pub fn message(&self) -> &Arc<Message> {
        &self.message
    }

    /// The position of the tool-call block in its message's content.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// The index of the call's block in the message's content.
    pub fn content_index(&self) -> usize {
        self.index
    }
}

impl fmt::Debug for ToolCallRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCallRef")
            .field("id", &self.id())
            .field("name", &self.name())
            .field("arguments", self.arguments())
            .finish()
    }
}

impl PartialEq for ToolCallRef {
    fn eq(&self, other: &Self) -> bool {
        self.block() == other.block()
    }
}
