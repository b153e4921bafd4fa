//! An [`AgentTool`] whose every execution is one journaled step.

use std::sync::Arc;

use pi_tool::{
    AgentTool, ArgumentValidator, BoxFuture, CallLimits, ExecutionMode, PreparedArguments,
    ToolAnnotations, ToolContext, ToolError, ToolResult, ToolSpec, execute_within,
};
use serde_json::Value;

use crate::journal::Journal;

/// The idempotency key of one tool call: `<session id>/<tool call id>`. The same on every
/// retry of the call, so a side-effecting tool can deduplicate with it.
pub fn idempotency_key(session_id: &str, tool_call_id: &str) -> String {
    format!("{session_id}/{tool_call_id}")
}

/// Wraps a local tool for a durable session: the tool runs inside `ctx.run`, its
/// [`ToolResult`] is journaled, and its context carries the call's idempotency key.
///
/// A call that completed is never run again (a replay reads its result from the journal); a
/// call interrupted by a crash runs again, with the same key (at-least-once).
///
/// The tool's timeout and `blocking` apply inside the step (with the session's
/// [`CallLimits`]), so what is journaled is what the call came to, a timeout included; the loop
/// sees a tool with neither.
pub struct DurableTool {
    inner: Arc<dyn AgentTool>,
    journal: Journal,
    session_id: Arc<str>,
    limits: CallLimits,
}

impl DurableTool {
    pub(crate) fn new(
        inner: Arc<dyn AgentTool>,
        journal: Journal,
        session_id: Arc<str>,
        limits: CallLimits,
    ) -> Self {
        DurableTool {
            inner,
            journal,
            session_id,
            limits,
        }
    }
}

impl AgentTool for DurableTool {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    fn label(&self) -> &str {
        self.inner.label()
    }

    fn execution_mode(&self) -> Option<ExecutionMode> {
        self.inner.execution_mode()
    }

    fn annotations(&self) -> ToolAnnotations {
        self.inner.annotations()
    }

    /// A deferred tool stays deferred in a durable session; what was loaded comes back with the
    /// journaled transcript.
    fn deferred(&self) -> bool {
        self.inner.deferred()
    }

    fn output_schema(&self) -> Option<&Value> {
        self.inner.output_schema()
    }

    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        self.inner.prepare_arguments(args)
    }

    fn rewrites_arguments(&self) -> bool {
        self.inner.rewrites_arguments()
    }

    fn validator(&self) -> Option<&ArgumentValidator> {
        self.inner.validator()
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        let key = idempotency_key(&self.session_id, ctx.tool_call_id());
        let ctx = ctx.with_idempotency_key(key);
        let tool = Arc::clone(&self.inner);
        let journal = self.journal.clone();
        let limits = self.limits;
        Box::pin(async move {
            // `execute_within` turns an `Err`, a panic or a timeout into an error result, so
            // what is journaled is exactly what the loop would have made of the call in process.
            let work = execute_within(&tool, &args, PreparedArguments::default(), ctx, &limits);
            journal
                .run("tool", work)
                .await
                .map_err(|err| ToolError::new(err.to_string()))
        })
    }
}
