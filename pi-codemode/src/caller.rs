//! How the `code` tool runs one nested call: the seam between the engine and the host's pipeline.

use pi_tool::{BoxFuture, ToolCall, ToolContext, ToolRegistry, ToolResult, UpdateSink};
use serde_json::Value;

/// Runs a call of another tool by name with JSON arguments. Never fails: every failure is an
/// error result.
pub(crate) trait NestedCaller: Send + Sync + 'static {
    fn call(
        &self,
        parent: &ToolContext,
        id: String,
        name: String,
        arguments: Value,
        updates: UpdateSink,
    ) -> BoxFuture<'static, ToolResult>;
}

/// Calls through a registry's pipeline, under the parent call's signal.
pub(crate) struct RegistryCaller(pub(crate) ToolRegistry);

impl NestedCaller for RegistryCaller {
    fn call(
        &self,
        parent: &ToolContext,
        id: String,
        name: String,
        arguments: Value,
        updates: UpdateSink,
    ) -> BoxFuture<'static, ToolResult> {
        let registry = self.0.clone();
        let ctx = ToolContext::new(id.clone())
            .with_parent_signal(parent.signal().clone())
            .with_updates(updates);
        Box::pin(async move {
            let call = ToolCall::new(id, name, arguments);
            registry.run_with(&call, ctx).await
        })
    }
}
