//! What a batch's tool calls share: one [`CallHost`] per batch holds their ids, receives their
//! partial results, lends them the run's signal and state and keeps each call's [`CallSlot`],
//! so a call's context allocates nothing: no id copy, no update closure, no clones.

use std::sync::Arc;

use pi_tool::{CallHost, CallSlot, CancellationToken, StateMap, ToolResult};

use super::emitter::Shared;
use crate::event::{AgentEvent, ToolCallRef};
use crate::message::{AssistantContent, Message};

/// The calls of one assistant message; call number `n` is its content block `n`.
pub(super) struct BatchHost {
    message: Arc<Message>,
    shared: Arc<Shared>,
    signal: CancellationToken,
    state: StateMap,
    /// One per content block of the message (only the tool calls' are used): allocated once for
    /// the whole batch.
    slots: Box<[CallSlot]>,
}

impl BatchHost {
    /// The host of the calls of `message`.
    pub(super) fn for_message(
        message: &Arc<Message>,
        shared: &Arc<Shared>,
        signal: &CancellationToken,
        state: &StateMap,
    ) -> Arc<dyn CallHost> {
        let blocks = message.as_assistant().map_or(0, |m| m.content.len());
        Arc::new(BatchHost {
            slots: (0..blocks).map(|_| CallSlot::new()).collect(),
            message: Arc::clone(message),
            shared: Arc::clone(shared),
            signal: signal.clone(),
            state: state.clone(),
        })
    }
}

impl CallHost for BatchHost {
    fn tool_call_id(&self, call: usize) -> &str {
        // The loop hands out only the positions of tool-call blocks.
        match self
            .message
            .as_assistant()
            .and_then(|m| m.content.get(call))
        {
            Some(AssistantContent::ToolCall(block)) => &block.call.id,
            _ => "",
        }
    }

    fn signal(&self) -> Option<&CancellationToken> {
        Some(&self.signal)
    }

    fn state(&self) -> Option<&StateMap> {
        Some(&self.state)
    }

    fn call_slot(&self, call: usize) -> Option<&CallSlot> {
        self.slots.get(call)
    }

    fn update(&self, call: usize, partial: ToolResult) {
        if let Some(call) = ToolCallRef::new(Arc::clone(&self.message), call) {
            self.shared.push_now(AgentEvent::ToolExecutionUpdate {
                call,
                partial_result: Box::new(partial),
            });
        }
    }
}
