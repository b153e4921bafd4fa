//! What a batch's tool calls share: one [`CallHost`] per batch holds their ids, receives their
//! partial results, lends them the run's signal and state and keeps each call's [`CallSlot`],
//! so a call's context allocates nothing: no id copy, no update closure, no clones.

use std::sync::{Arc, OnceLock};

use pi_tool::{CallHost, CallSlot, CancellationToken, NestedHost, StateMap, ToolResult};

use super::emitter::Shared;
use super::nested::LoopNested;
use super::nested_wait::{NestedEnd, NestedRecords, NestedResume};
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
    /// What the calls' nested calls need, taken (reference counts only) when the batch starts.
    nested_parts: NestedParts,
    /// The pipeline of the calls' nested calls, made on the first one (and the same as
    /// itself, for what it recorded of them).
    nested: OnceLock<(Arc<dyn NestedHost>, Arc<LoopNested>)>,
}

/// What a batch's nested calls run with: the run's tools, limits and hooks, and the
/// transcript the hooks see.
pub(super) struct NestedParts {
    pub(super) tools: Arc<super::context::ToolSet>,
    pub(super) limits: pi_tool::CallLimits,
    pub(super) before: Option<crate::config::BeforeToolCallHook>,
    pub(super) after: Option<crate::config::AfterToolCallHook>,
    pub(super) approver: Option<crate::config::Approver>,
    pub(super) approval_timeout: crate::config::ApprovalTimeout,
    /// On resume: what the calls that waited on a nested call replay.
    pub(super) resume: Option<Arc<NestedResume>>,
    pub(super) hook_messages: Option<crate::transcript::Transcript>,
}

impl BatchHost {
    /// The host of the calls of `message`.
    pub(super) fn for_message(
        message: &Arc<Message>,
        shared: &Arc<Shared>,
        signal: &CancellationToken,
        state: &StateMap,
        nested_parts: NestedParts,
    ) -> Arc<BatchHost> {
        let blocks = message.as_assistant().map_or(0, |m| m.content.len());
        Arc::new(BatchHost {
            slots: (0..blocks).map(|_| CallSlot::new()).collect(),
            message: Arc::clone(message),
            shared: Arc::clone(shared),
            signal: signal.clone(),
            state: state.clone(),
            nested_parts,
            nested: OnceLock::new(),
        })
    }

    /// How the nested calls of the batch's call `id` (which returned) ended, when it matters:
    /// one waits (the call waits with it), or a replay diverged (the call's error).
    pub(super) fn nested_end(&self, id: &str) -> Option<NestedEnd> {
        let (_, nested) = self.nested.get()?;
        nested.records.end(id)
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

    fn nested_host(&self) -> Option<&Arc<dyn NestedHost>> {
        let (host, _) = self.nested.get_or_init(|| {
            let parts = &self.nested_parts;
            let nested = Arc::new(LoopNested {
                tools: Arc::clone(&parts.tools),
                limits: parts.limits,
                before: parts.before.clone(),
                after: parts.after.clone(),
                message: Arc::clone(&self.message),
                hook_messages: parts.hook_messages.clone(),
                signal: self.signal.clone(),
                approver: parts.approver.clone(),
                approval_timeout: parts.approval_timeout,
                resume: parts.resume.clone(),
                records: NestedRecords::default(),
            });
            (Arc::clone(&nested) as Arc<dyn NestedHost>, nested)
        });
        Some(host)
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
