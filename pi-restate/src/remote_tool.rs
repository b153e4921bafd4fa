//! An [`AgentTool`] that runs on a [`PiTools`](crate::PiTools) elsewhere, called by
//! durable RPC.

use std::sync::Arc;

use pi_tool::{AgentTool, BoxFuture, ExecutionMode, ToolContext, ToolError, ToolResult, ToolSpec};
use serde_json::Value;

use crate::durable_tool::CallScope;
use crate::journal::{Journal, Target};
use crate::tool_service::{CALL_HANDLER, RemoteCall};

/// Where a remote tool lives: its spec (what the model sees), its execution mode, and the
/// Restate service that serves it.
#[derive(Clone, Debug)]
pub struct RemoteToolSpec {
    /// What the model sees; the service validates against its own copy.
    pub spec: ToolSpec,
    /// The tool's label.
    pub label: String,
    /// `Some(Sequential)` keeps batches that call it sequential, as in process.
    pub execution_mode: Option<ExecutionMode>,
    /// The Restate service name (a [`PiTools`](crate::PiTools)'s name).
    pub service: String,
}

impl RemoteToolSpec {
    /// Describes every tool of `tools` as served by the service `service`.
    pub fn all_of(service: &str, tools: &pi_tool::ToolRegistry) -> Vec<RemoteToolSpec> {
        tools
            .tools()
            .map(|tool| RemoteToolSpec {
                spec: tool.spec().clone(),
                label: tool.label().to_owned(),
                execution_mode: tool.execution_mode(),
                service: service.to_owned(),
            })
            .collect()
    }
}

/// A tool the loop calls like any other, whose call is a durable request to a tool service.
///
/// Restate journals the request and its response: a completed call is never sent again, and
/// the tool service's own retries (after it crashed mid-call) run the tool again with the same
/// idempotency key.
pub struct RemoteTool {
    remote: Arc<RemoteToolSpec>,
    journal: Journal,
    scope: CallScope,
}

impl RemoteTool {
    pub(crate) fn new(remote: Arc<RemoteToolSpec>, journal: Journal, scope: CallScope) -> Self {
        RemoteTool {
            remote,
            journal,
            scope,
        }
    }
}

impl AgentTool for RemoteTool {
    fn spec(&self) -> &ToolSpec {
        &self.remote.spec
    }

    fn label(&self) -> &str {
        &self.remote.label
    }

    fn execution_mode(&self) -> Option<ExecutionMode> {
        self.remote.execution_mode
    }

    fn rewrites_arguments(&self) -> bool {
        false
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        let key = self.scope.key(ctx.tool_call_id());
        let call = RemoteCall {
            tool: self.remote.spec.name.clone(),
            tool_call_id: ctx.tool_call_id().to_owned(),
            arguments: args,
            idempotency_key: key.clone(),
        };
        let target = Target::Service {
            name: self.remote.service.clone(),
            handler: CALL_HANDLER.to_owned(),
        };
        let journal = self.journal.clone();
        Box::pin(async move {
            let payload = serde_json::to_value(call).map_err(ToolError::from)?;
            let value = journal
                .call(target, payload, Some(key))
                .await
                .map_err(|err| ToolError::new(err.to_string()))?;
            serde_json::from_value(value).map_err(|err| {
                ToolError::new(format!(
                    "the tool service's answer is not a tool result: {err}"
                ))
            })
        })
    }
}
