//! The calls tools make of each other inside a run ([`ToolContext::call_tool`]): they run
//! through pi-tool's pipeline over the run's tools and limits, with the run's `before_tool_call`
//! and `after_tool_call` around them (which see the parent call in `parent_tool_call`), and emit
//! none of the loop's events.
//!
//! A batch's [`BatchHost`](super::host::BatchHost) makes one on the first nested call of any of
//! its calls, so a batch without nested calls pays nothing for them.
//!
//! A nested call that needs a decision waits as the model's calls do: the approver decides it
//! in process, or the run pauses with the outer call waiting, and the outer call runs again on
//! resume with its completed nested calls answered from a journal (`nested_wait.rs`).

use std::sync::Arc;

use pi_tool::{
    AgentTool, BeforeCall, BoxFuture, CallHooks, CallLimits, CancellationToken, NestedHost,
    ToolCall, ToolContext, ToolHost, ToolResult, WaitKind, prepare_call_within, run_nested_call,
};
use serde_json::Value;

use super::approve::{Asked, ask};
use super::context::ToolSet;
use super::hooks;
use super::nested_wait::{
    NestedRecords, NestedResume, Replayed, pausing_message, record_finish, record_start,
    records_in_store, replayed_approval, root_id,
};
use crate::config::{
    AfterToolCallContext, AfterToolCallHook, ApprovalTimeout, Approver, BeforeToolCallContext,
    BeforeToolCallHook,
};
use crate::message::{AssistantContent, Message};
use crate::transcript::Transcript;
use crate::wait::{Decision, WaitingCall};

/// What nested calls of one batch's calls share: the run's tools, limits, hooks and signal, and
/// the batch's message (whose calls are the top-level parents).
pub(super) struct LoopNested {
    pub(super) tools: Arc<ToolSet>,
    pub(super) limits: CallLimits,
    pub(super) before: Option<BeforeToolCallHook>,
    pub(super) after: Option<AfterToolCallHook>,
    pub(super) message: Arc<Message>,
    /// The transcript the hooks see (set when there is a hook).
    pub(super) hook_messages: Option<Transcript>,
    pub(super) signal: CancellationToken,
    /// Decides a nested call that waits, in process.
    pub(super) approver: Option<Approver>,
    pub(super) approval_timeout: ApprovalTimeout,
    /// On resume: the journals and decisions of the calls that waited on a nested call.
    pub(super) resume: Option<Arc<NestedResume>>,
    /// What the batch's calls' nested calls did (journals, pauses, recorded values).
    pub(super) records: NestedRecords,
}

impl LoopNested {
    /// The call that made a nested call: a nested call itself, or one of the batch's.
    fn parent_call(&self, parent: &ToolContext) -> Option<ToolCall> {
        if let Some(call) = parent.nested_call() {
            return Some(call.clone());
        }
        let id = parent.tool_call_id();
        self.message
            .as_assistant()?
            .content
            .iter()
            .find_map(|block| match block {
                AssistantContent::ToolCall(block) if block.call.id == id => {
                    Some(block.call.clone())
                }
                _ => None,
            })
    }

    fn hook_messages(&self) -> Transcript {
        self.hook_messages.clone().unwrap_or_default()
    }
}

impl ToolHost for LoopNested {
    fn tool(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        self.tools.get(name)
    }

    fn tool_names(&self) -> Vec<&str> {
        self.tools.names().collect()
    }

    fn limits(&self) -> &CallLimits {
        &self.limits
    }
}

impl NestedHost for LoopNested {
    fn run_nested<'a>(
        &'a self,
        call: &'a ToolCall,
        parent: &'a ToolContext,
        ctx: ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let root = root_id(&call.id, ctx.nesting_depth());
            if let Some(refusal) = self.records.refusal(root, &call.name) {
                return refusal;
            }
            if let Some(resume) = &self.resume {
                let policy = self.tools.get(&call.name).and_then(|tool| tool.replay());
                if let Replayed::Answered(result) = self.records.replay(resume, root, call, policy)
                {
                    return *result;
                }
            }
            // The approved call records its start when it is decided; one made after it here.
            let recorded = records_in_store(self.resume.as_deref(), root);
            if recorded
                && replayed_approval(self.resume.as_deref(), root, &call.id).is_none()
                && let Err(refusal) = record_start(self.resume.as_deref(), call)
            {
                return ToolResult::error(refusal);
            }
            let result = run_nested_call(self, Some(self), call, parent, ctx).await;
            if self.records.completed(root, call, &result) && recorded {
                record_finish(self.resume.as_deref(), call, &result);
            }
            result
        })
    }

    fn limits(&self) -> &CallLimits {
        &self.limits
    }

    fn replays(&self) -> bool {
        true
    }

    fn recorded_value(&self, ctx: &ToolContext, name: &str) -> Option<Value> {
        let root = root_id(ctx.tool_call_id(), ctx.nesting_depth());
        let (wait, _) = self.resume.as_ref()?.waits.get(root)?;
        wait.values.get(ctx.tool_call_id())?.get(name).cloned()
    }

    fn record_value(&self, ctx: &ToolContext, name: &str, value: Value) {
        let id = ctx.tool_call_id();
        let root = root_id(id, ctx.nesting_depth());
        self.records.record_value(root, id, name, value);
    }
}

impl LoopNested {
    /// Decides a nested call that must wait: a decision replayed on resume, the approver's,
    /// or a pause of the run (the call is answered with an error, the outer call waits).
    async fn decide(
        &self,
        call: &ToolCall,
        waiting: WaitingCall,
        parent: &ToolContext,
    ) -> BeforeCall {
        let root = root_id(&call.id, parent.nesting_depth() + 1);
        if let Some(decision) = replayed_approval(self.resume.as_deref(), root, &call.id) {
            if let Err(refusal) = record_start(self.resume.as_deref(), call) {
                return BeforeCall::Answer(ToolResult::error(refusal));
            }
            return self.apply(root, call, decision.clone());
        }
        if self.records.approved(root, &call.id) {
            return BeforeCall::Run;
        }
        if let Some(approver) = &self.approver {
            match ask(
                approver,
                self.approval_timeout,
                waiting.clone(),
                &self.signal,
            )
            .await
            {
                Asked::Decided(decision) => return self.apply(root, call, decision),
                Asked::Refused(result) => return BeforeCall::Answer(result),
                Asked::Pause => {}
            }
        }
        self.records.pause(root, waiting, call.arguments.clone());
        BeforeCall::Answer(ToolResult::error(pausing_message(&call.name)))
    }

    /// A decision on a nested call, as what the pipeline does with it.
    fn apply(&self, root: &str, call: &ToolCall, decision: Decision) -> BeforeCall {
        let arguments = match decision {
            Decision::Deny { reason } => {
                let refusal = Decision::denied_message(&call.name, &reason);
                return BeforeCall::Answer(ToolResult::error(refusal));
            }
            Decision::Answer { result } => return BeforeCall::Answer(result),
            Decision::Approve => None,
            Decision::ApproveWith { arguments } => Some(arguments),
        };
        let Some(tool) = self.tools.get(&call.name) else {
            return BeforeCall::Answer(ToolResult::error("the tool is gone"));
        };
        if tool.external() {
            return BeforeCall::Answer(ToolResult::error(pi_tool::external_needs_answer_message(
                &call.name,
            )));
        }
        self.records.approve(root, &call.id);
        let Some(arguments) = arguments else {
            return BeforeCall::Run;
        };
        // Arguments a person gave are validated as the code's are.
        match prepare_call_within(tool.as_ref(), &arguments, &self.limits.arguments) {
            Ok(prepared) if prepared.is_unchanged() => BeforeCall::RunWith(arguments),
            Ok(prepared) => BeforeCall::RunWith(prepared.get(&arguments).clone()),
            Err(err) => BeforeCall::Answer(ToolResult::error(err.message())),
        }
    }
}

impl CallHooks for LoopNested {
    fn before_call<'a>(
        &'a self,
        call: &'a ToolCall,
        arguments: &'a Value,
        parent: &'a ToolContext,
    ) -> BoxFuture<'a, BeforeCall> {
        Box::pin(async move {
            let Some(hook) = &self.before else {
                return BeforeCall::Run;
            };
            let ctx = BeforeToolCallContext {
                assistant_message: Arc::clone(&self.message),
                tool_call: call.clone(),
                args: arguments.clone(),
                messages: self.hook_messages(),
                signal: self.signal.clone(),
                parent_tool_call: self.parent_call(parent),
            };
            match hooks::before(hook, ctx).await {
                hooks::Before::Run(None) => BeforeCall::Run,
                hooks::Before::Run(Some(replaced)) => BeforeCall::RunWith(replaced),
                hooks::Before::Refused(result) => BeforeCall::Answer(result),
                // A call made from code waits as the model's do.
                hooks::Before::Wait(reason, replaced) => {
                    let arguments = replaced.as_ref().unwrap_or(arguments).clone();
                    let waiting = WaitingCall::new(
                        call.id.as_str(),
                        call.name.as_str(),
                        arguments,
                        reason,
                        WaitKind::Approval,
                    );
                    match self.decide(call, waiting, parent).await {
                        BeforeCall::Run => replaced.map_or(BeforeCall::Run, BeforeCall::RunWith),
                        other => other,
                    }
                }
            }
        })
    }

    fn has_before_call(&self) -> bool {
        self.before.is_some()
    }

    fn wait<'a>(
        &'a self,
        call: &'a ToolCall,
        waiting: WaitingCall,
        parent: &'a ToolContext,
    ) -> BoxFuture<'a, BeforeCall> {
        Box::pin(self.decide(call, waiting, parent))
    }

    fn has_after_call(&self) -> bool {
        self.after.is_some()
    }

    fn after_call<'a>(
        &'a self,
        call: &'a ToolCall,
        arguments: &'a Value,
        mut result: ToolResult,
        parent: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let Some(hook) = &self.after else {
                return result;
            };
            let ctx = AfterToolCallContext {
                assistant_message: Arc::clone(&self.message),
                tool_call: call.clone(),
                args: arguments.clone(),
                is_error: result.is_error,
                result: result.clone(),
                messages: self.hook_messages(),
                signal: self.signal.clone(),
                parent_tool_call: self.parent_call(parent),
            };
            hooks::after(hook, ctx, &mut result).await;
            result
        })
    }
}
