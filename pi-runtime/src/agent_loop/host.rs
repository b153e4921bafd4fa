//! What a batch's tool calls share: one [`CallHost`] per batch holds their ids, receives their
//! partial results and lends them the run's signal and state, so a call's context needs no id
//! copy, no update closure and no clones of its own.

use std::sync::Arc;

use pi_tool::{CallHost, CancellationToken, StateMap, ToolResult};

use super::emitter::Shared;
use crate::event::{AgentEvent, ToolCallRef};
use crate::message::{AssistantContent, Message};

/// The calls of one assistant message; call number `n` is its content block `n`.
pub(super) struct BatchHost {
    message: Arc<Message>,
    shared: Arc<Shared>,
    signal: CancellationToken,
    state: StateMap,
}

impl BatchHost {
    /// The host of the calls of `message`.
    pub(super) fn for_message(
        message: &Arc<Message>,
        shared: &Arc<Shared>,
        signal: &CancellationToken,
        state: &StateMap,
    ) -> Arc<dyn CallHost> {
        Arc::new(BatchHost {
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

    fn update(&self, call: usize, partial: ToolResult) {
        if let Some(call) = ToolCallRef::new(Arc::clone(&self.message), call) {
            self.shared.push_now(AgentEvent::ToolExecutionUpdate {
                call,
                partial_result: Box::new(partial),
            });
        }
    }
}
