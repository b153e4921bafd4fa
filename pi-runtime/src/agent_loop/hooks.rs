//! What `before_tool_call` and `after_tool_call` decide, applied the same way to the model's calls
//! (`call.rs`) and to the calls tools make of each other (`nested.rs`): a block or a failing or
//! panicking hook becomes the call's error result.

use pi_tool::ToolResult;
use serde_json::Value;

use super::guard::guarded;
use crate::config::{
    AfterToolCallContext, AfterToolCallHook, BeforeToolCallContext, BeforeToolCallHook,
};

/// The text of a blocked call without a reason.
const BLOCKED: &str = "Tool execution was blocked";

/// What `before_tool_call` decided about a call.
pub(super) enum Before {
    /// Run it, with these arguments instead of the prepared ones when `Some`.
    Run(Option<Value>),
    /// Do not run it: this is its result.
    Refused(ToolResult),
    /// Do not run it yet: it waits for approval, for this reason (with these arguments instead
    /// of the prepared ones when `Some`).
    Wait(String, Option<Value>),
}

/// Runs `before_tool_call` on a call.
pub(super) async fn before(hook: &BeforeToolCallHook, ctx: BeforeToolCallContext) -> Before {
    match guarded(|| hook(ctx)).await {
        Ok(Ok(decision)) if decision.block => {
            let reason = decision.reason.unwrap_or_else(|| BLOCKED.to_owned());
            Before::Refused(ToolResult::error(reason).with_terminate(decision.terminate))
        }
        Ok(Ok(decision)) if decision.suspend => Before::Wait(
            decision
                .reason
                .unwrap_or_else(|| "before_tool_call asked for approval".to_owned()),
            decision.args,
        ),
        Ok(Ok(decision)) => Before::Run(decision.args),
        Ok(Err(err)) => Before::Refused(ToolResult::error(err.message())),
        Err(panic) => Before::Refused(ToolResult::error(format!(
            "before_tool_call panicked: {panic}"
        ))),
    }
}

/// Runs `after_tool_call` on a finished call's result (`ctx.result`), applying its overrides.
pub(super) async fn after(
    hook: &AfterToolCallHook,
    ctx: AfterToolCallContext,
    result: &mut ToolResult,
) {
    match guarded(|| hook(ctx)).await {
        Ok(Ok(overrides)) => overrides.apply(result),
        Ok(Err(err)) => *result = ToolResult::error(err.message()),
        Err(panic) => *result = ToolResult::error(format!("after_tool_call panicked: {panic}")),
    }
}
