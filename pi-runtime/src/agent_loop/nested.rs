//! The calls tools make of each other inside a run ([`ToolContext::call_tool`]): they run
//! through pi-tool's pipeline over the run's tools and limits, with the run's `before_tool_call`
//! and `after_tool_call` around them (which see the parent call in `parent_tool_call`), and emit
//! none of the loop's events.
//!
//! A batch's [`BatchHost`](super::host::BatchHost) makes one on the first nested call of any of
//! its calls, so a batch without nested calls pays nothing for them.

use std::sync::Arc;

use pi_tool::{
    AgentTool, BeforeCall, BoxFuture, CallHooks, CallLimits, CancellationToken, NestedHost,
    ToolCall, ToolContext, ToolHost, ToolResult, run_nested_call,
};
use serde_json::Value;

use super::context::ToolSet;
use super::hooks;
use crate::config::{
    AfterToolCallContext, AfterToolCallHook, BeforeToolCallContext, BeforeToolCallHook,
};
use crate::message::{AssistantContent, Message};
use crate::transcript::Transcript;

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
        let hooks: Option<&dyn CallHooks> =
            (self.before.is_some() || self.after.is_some()).then_some(self);
        Box::pin(run_nested_call(self, hooks, call, parent, ctx))
    }

    fn limits(&self) -> &CallLimits {
        &self.limits
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
                // A call made from code cannot pause the run (yet): it is refused, saying why.
                hooks::Before::Wait(reason, _) => BeforeCall::Answer(ToolResult::error(format!(
                    "Tool {} was not run: it needs approval ({reason}), and a call made from code cannot wait for one",
                    call.name
                ))),
            }
        })
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
