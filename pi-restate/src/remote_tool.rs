//! An [`AgentTool`] that runs on a [`PiTools`](crate::PiTools) elsewhere, called by
//! durable RPC.

use std::sync::Arc;

use pi_tool::{
    AgentTool, BoxFuture, ExecutionMode, Replay, ToolAnnotations, ToolCallers, ToolContext,
    ToolError, ToolResult, ToolSpec,
};
use serde_json::Value;

use crate::durable_tool::CallScope;
use crate::journal::{Journal, Target};
use crate::tool_service::{CALL_HANDLER, RemoteCall};

/// Where a remote tool lives: its spec (what the model sees), what the loop asks of it besides
/// (each [`AgentTool`] answer it needs on this side), and the Restate service that serves it.
///
/// Build it from the tool ([`of`](Self::of), [`all_of`](Self::all_of)), so nothing the tool
/// says is lost on the way; or from a spec alone ([`new`](Self::new)) and set the fields.
/// What the service applies itself is not here: arguments are prepared and validated against
/// its own copy, the call runs with its timeout and state, and a `State<T>` is checked there.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RemoteToolSpec {
    /// What the model sees; the service validates against its own copy.
    pub spec: ToolSpec,
    /// The tool's label.
    pub label: String,
    /// `Some(Sequential)` keeps batches that call it sequential, as in process.
    pub execution_mode: Option<ExecutionMode>,
    /// The Restate service name (a [`PiTools`](crate::PiTools)'s name).
    pub service: String,
    /// [`AgentTool::deferred`]: its schema is sent only once loaded.
    pub deferred: bool,
    /// [`AgentTool::input_examples`].
    pub input_examples: Vec<Value>,
    /// [`AgentTool::keywords`], for tool search.
    pub keywords: Vec<String>,
    /// [`AgentTool::eager_input_streaming`].
    pub eager_input_streaming: bool,
    /// [`AgentTool::callers`].
    pub callers: ToolCallers,
    /// [`AgentTool::replay`].
    pub replay: Option<Replay>,
    /// [`AgentTool::aborted_message`].
    pub aborted_message: String,
    /// [`AgentTool::external`]: its calls are answered from outside.
    pub external: bool,
    /// [`AgentTool::annotations`].
    pub annotations: ToolAnnotations,
    /// [`AgentTool::output_schema`].
    pub output_schema: Option<Value>,
}

impl RemoteToolSpec {
    /// A tool with `spec` served by `service`, labelled with its name, and every other answer
    /// the trait's default.
    pub fn new(spec: ToolSpec, service: &str) -> Self {
        RemoteToolSpec {
            label: spec.name.clone(),
            spec,
            execution_mode: None,
            service: service.to_owned(),
            deferred: false,
            input_examples: Vec::new(),
            keywords: Vec::new(),
            eager_input_streaming: false,
            callers: ToolCallers::default(),
            replay: None,
            aborted_message: pi_tool::ABORTED.to_owned(),
            external: false,
            annotations: ToolAnnotations::new(),
            output_schema: None,
        }
    }

    /// Describes `tool` as served by the service `service`, with its answers.
    pub fn of(service: &str, tool: &dyn AgentTool) -> Self {
        RemoteToolSpec {
            spec: tool.spec().clone(),
            label: tool.label().to_owned(),
            execution_mode: tool.execution_mode(),
            service: service.to_owned(),
            deferred: tool.deferred(),
            input_examples: tool.input_examples().to_vec(),
            keywords: tool.keywords().to_vec(),
            eager_input_streaming: tool.eager_input_streaming(),
            callers: tool.callers(),
            replay: tool.replay(),
            aborted_message: tool.aborted_message().to_owned(),
            external: tool.external(),
            annotations: tool.annotations(),
            output_schema: tool.output_schema().cloned(),
        }
    }

    /// Describes every tool of `tools` as served by the service `service`.
    pub fn all_of(service: &str, tools: &pi_tool::ToolRegistry) -> Vec<RemoteToolSpec> {
        tools
            .tools()
            .map(|tool| RemoteToolSpec::of(service, tool.as_ref()))
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

    fn deferred(&self) -> bool {
        self.remote.deferred
    }

    fn input_examples(&self) -> &[Value] {
        &self.remote.input_examples
    }

    fn keywords(&self) -> &[String] {
        &self.remote.keywords
    }

    fn eager_input_streaming(&self) -> bool {
        self.remote.eager_input_streaming
    }

    fn callers(&self) -> ToolCallers {
        self.remote.callers
    }

    fn replay(&self) -> Option<Replay> {
        self.remote.replay
    }

    fn aborted_message(&self) -> &str {
        &self.remote.aborted_message
    }

    fn external(&self) -> bool {
        self.remote.external
    }

    fn annotations(&self) -> ToolAnnotations {
        self.remote.annotations
    }

    fn output_schema(&self) -> Option<&Value> {
        self.remote.output_schema.as_ref()
    }

    fn rewrites_arguments(&self) -> bool {
        false
    }

    /// It never asks for approval itself (a host's rule, such as
    /// `ToolRegistry::require_approval`, still can), so hosts skip the question.
    fn may_need_approval(&self) -> bool {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::probe_tool::Probe;

    /// A remote tool answers the loop's questions as the tool does in its service, but those
    /// the service answers itself (timeout, blocking, state, approval, arguments).
    #[test]
    fn a_remote_tool_answers_as_the_tool_it_describes() {
        let probe = Probe::new();
        let (journal, _steps) = Journal::new();
        let scope = CallScope {
            session_id: Arc::from("s1"),
            prompt: 0,
        };
        let remote = RemoteTool::new(
            Arc::new(RemoteToolSpec::of("tools", &probe)),
            journal,
            scope,
        );
        let ctx = ToolContext::new("c1");
        assert_eq!(remote.spec(), probe.spec());
        assert_eq!(remote.label(), "Probe");
        assert_eq!(remote.execution_mode(), Some(ExecutionMode::Sequential));
        assert!(remote.deferred());
        assert_eq!(remote.input_examples(), probe.input_examples());
        assert_eq!(remote.keywords(), probe.keywords());
        assert!(remote.eager_input_streaming());
        assert_eq!(remote.callers(), ToolCallers::Code);
        assert_eq!(remote.replay(), Some(Replay::Never));
        assert_eq!(remote.aborted_message(), "Probe aborted");
        assert!(remote.external());
        assert_eq!(remote.annotations(), probe.annotations());
        assert_eq!(remote.output_schema(), probe.output_schema());
        // The service's own: its state, its timeout, its pipeline.
        assert!(remote.state_types().is_empty());
        assert_eq!(remote.timeout(), None);
        assert!(!remote.blocking());
        assert!(!remote.needs_approval(&json!({}), &ctx));
        assert!(!remote.may_need_approval());
        assert!(!remote.rewrites_arguments());

        let plain = RemoteToolSpec::new(probe.spec().clone(), "tools");
        assert_eq!(plain.label, "probe");
        assert_eq!(plain.aborted_message, pi_tool::ABORTED);
        assert!(!plain.deferred && plain.keywords.is_empty());
    }
}
