//! A Restate service serving a [`ToolRegistry`]: one tool call in, one [`ToolResult`] out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pi_tool::{Replay, ToolCall, ToolRegistry, ToolResult, ToolSpec, outcome_unknown_message};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The Restate name of the tool service.
pub const TOOL_SERVICE: &str = "PiTools";
/// The handler that runs one call.
pub(crate) const CALL_HANDLER: &str = "call";

/// One call sent to a tool service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteCall {
    /// The tool's name.
    pub tool: String,
    /// The model's id for the call.
    pub tool_call_id: String,
    /// The arguments as the session's loop validated them (validated again here, against
    /// the service's own copy of the tool).
    pub arguments: Value,
    /// `<session id>/<prompt>/<tool call id>` ([`idempotency_key`](crate::idempotency_key)):
    /// handed to the tool in its
    /// [`ToolContext`](pi_tool::ToolContext).
    pub idempotency_key: String,
}

/// Serves the tools of a registry as the Restate service `PiTools` (handlers `call` and
/// `list`). Run as many replicas as you like behind one deployment URL: each call is
/// independent.
///
/// A call goes through `pi-tool`'s pipeline, as in every host (the registry's
/// [`CallLimits`](pi_tool::CallLimits), `prepare_arguments`, normalization, validation, the gate
/// of sequential tools, execution within the call's timeout, the blocking pool, the result-size
/// limit; every failure an error result with the loop's texts). If the
/// process dies mid-call, Restate retries the invocation: the tool runs again with the same
/// idempotency key (at-least-once), unless the tool says `replay = "never"`
/// ([`Replay::Never`]): its start is journaled first, and a retried invocation that finds it
/// answers that the call's outcome is unknown instead of running it again. Once the call
/// returned, its result is journaled in the caller's journal and never recomputed. A tool only
/// code may call is not listed (the session's model is never offered it), but served to the
/// nested calls of the tools that are.
pub struct PiTools {
    tools: ToolRegistry,
}

impl PiTools {
    /// Serves `tools` (their shared state included).
    pub fn new(tools: ToolRegistry) -> Self {
        PiTools { tools }
    }

    /// Runs one call through the tool pipeline ([`ToolRegistry::run_with`]), its context
    /// carrying the call's idempotency key.
    pub async fn run_call(&self, call: RemoteCall) -> ToolResult {
        let ctx = self
            .tools
            .context(&call.tool_call_id)
            .with_idempotency_key(call.idempotency_key);
        let call = ToolCall::new(call.tool_call_id, call.tool, call.arguments);
        self.tools.run_with(&call, ctx).await
    }
}

#[restate_sdk::service]
impl PiTools {
    /// Runs one tool call.
    #[handler]
    async fn call(
        &self,
        ctx: Context<'_>,
        call: Json<RemoteCall>,
    ) -> Result<Json<ToolResult>, HandlerError> {
        let call = call.into_inner();
        let never_twice = self
            .tools
            .get(&call.tool)
            .is_some_and(|tool| tool.replay() == Some(Replay::Never));
        if never_twice {
            // Journaled before the tool runs: a retried invocation finds it and does not run
            // the tool again.
            let fresh = Arc::new(AtomicBool::new(false));
            let marker = Arc::clone(&fresh);
            ctx.run(move || async move {
                marker.store(true, Ordering::SeqCst);
                Ok(())
            })
            .name("tool started")
            .await?;
            if !fresh.load(Ordering::SeqCst) {
                let message = outcome_unknown_message(&call.tool, &call.idempotency_key);
                return Ok(Json(ToolResult::error(message)));
            }
        }
        Ok(Json(self.run_call(call).await))
    }

    /// The specs of every tool the model may call, sorted by name (a tool only code may call
    /// is left out).
    #[handler]
    async fn list(&self, _ctx: Context<'_>) -> Result<Json<Vec<ToolSpec>>, HandlerError> {
        Ok(Json(
            self.tools
                .tools()
                .filter(|tool| tool.callers().allows_model())
                .map(|tool| tool.spec().clone())
                .collect(),
        ))
    }
}
