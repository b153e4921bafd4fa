//! A Restate service serving a [`ToolRegistry`]: one tool call in, one [`ToolResult`] out.

use pi_tool::{ToolCall, ToolRegistry, ToolResult, ToolSpec};
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
    /// `<session id>/<tool call id>`: handed to the tool in its
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
/// idempotency key (at-least-once); once the call returned, its result is journaled in the
/// caller's journal and never recomputed.
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
        _ctx: Context<'_>,
        call: Json<RemoteCall>,
    ) -> Result<Json<ToolResult>, HandlerError> {
        Ok(Json(self.run_call(call.into_inner()).await))
    }

    /// The specs of every served tool, sorted by name.
    #[handler]
    async fn list(&self, _ctx: Context<'_>) -> Result<Json<Vec<ToolSpec>>, HandlerError> {
        Ok(Json(self.tools.specs().cloned().collect()))
    }
}
