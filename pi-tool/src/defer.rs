//! Deferring tools chosen by the host rather than by their author: a wrapper that answers
//! `deferred() == true` and forwards everything else, and the registry-level choices built on it
//! ("defer every tool of this registry", "defer them all past N tools or K bytes of schema").

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::{
    AgentTool, ArgumentValidator, BoxFuture, ExecutionMode, Replay, ToolAnnotations, ToolCallers,
    ToolContext, ToolError, ToolRegistry, ToolResult, ToolSpec,
};

/// A tool made deferred by its host (an MCP import, a plugin set) without touching its code.
///
/// Every [`AgentTool`] method is forwarded to the wrapped tool, except
/// [`deferred`](AgentTool::deferred), which answers `true`. Built by [`Deferred::wrap`] or the
/// [`ToolRegistry`] methods [`defer_all`](ToolRegistry::defer_all) and
/// [`defer_when_more_than`](ToolRegistry::defer_when_more_than).
#[derive(Clone)]
pub struct Deferred(Arc<dyn AgentTool>);

impl Deferred {
    /// The tool, deferred. A tool that is deferred already is returned as it is (no second
    /// wrapper).
    pub fn wrap(tool: Arc<dyn AgentTool>) -> Arc<dyn AgentTool> {
        if tool.deferred() {
            tool
        } else {
            Arc::new(Deferred(tool))
        }
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &Arc<dyn AgentTool> {
        &self.0
    }
}

// Keep in step with `AgentTool`: a method added there must be forwarded here, or a deferred
// tool would silently lose its override.
impl AgentTool for Deferred {
    fn spec(&self) -> &ToolSpec {
        self.0.spec()
    }
    fn label(&self) -> &str {
        self.0.label()
    }
    fn execution_mode(&self) -> Option<ExecutionMode> {
        self.0.execution_mode()
    }
    fn timeout(&self) -> Option<Duration> {
        self.0.timeout()
    }
    fn blocking(&self) -> bool {
        self.0.blocking()
    }
    fn deferred(&self) -> bool {
        true
    }
    fn input_examples(&self) -> &[Value] {
        self.0.input_examples()
    }
    fn keywords(&self) -> &[String] {
        self.0.keywords()
    }
    fn state_types(&self) -> Vec<crate::StateType> {
        self.0.state_types()
    }
    fn eager_input_streaming(&self) -> bool {
        self.0.eager_input_streaming()
    }
    fn callers(&self) -> ToolCallers {
        self.0.callers()
    }
    fn replay(&self) -> Option<Replay> {
        self.0.replay()
    }
    fn aborted_message(&self) -> &str {
        self.0.aborted_message()
    }
    fn needs_approval(&self, args: &Value, ctx: &ToolContext) -> bool {
        self.0.needs_approval(args, ctx)
    }
    fn may_need_approval(&self) -> bool {
        self.0.may_need_approval()
    }
    fn external(&self) -> bool {
        self.0.external()
    }
    fn annotations(&self) -> ToolAnnotations {
        self.0.annotations()
    }
    fn output_schema(&self) -> Option<&Value> {
        self.0.output_schema()
    }
    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        self.0.prepare_arguments(args)
    }
    fn rewrites_arguments(&self) -> bool {
        self.0.rewrites_arguments()
    }
    fn validator(&self) -> Option<&ArgumentValidator> {
        self.0.validator()
    }
    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        self.0.execute(args, ctx)
    }
    fn execute_borrowed(
        &self,
        args: &Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        self.0.execute_borrowed(args, ctx)
    }
}

impl fmt::Debug for Deferred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Deferred")
            .field(&self.0.spec().name)
            .finish()
    }
}

impl ToolRegistry {
    /// Defers every tool now in the registry ("defer every tool of this server"): the model
    /// sees none of their schemas until it loads them with `tool_search` or calls one by name.
    /// Tools registered later are not affected.
    ///
    /// ```
    /// use pi_tool::{tool_fn, ToolRegistry};
    /// use serde_json::json;
    ///
    /// let ping = tool_fn("ping", "Answer pong.", json!({"type": "object"}), |_, _| async { "pong" })?;
    /// let tools = ToolRegistry::new().with(ping).defer_all();
    /// assert!(tools.get("ping").unwrap().deferred());
    /// # Ok::<(), pi_tool::RegistryError>(())
    /// ```
    #[must_use]
    pub fn defer_all(mut self) -> Self {
        self.wrap_each(Deferred::wrap);
        self
    }

    /// A policy: [`defer_all`](Self::defer_all) when the registry holds more than `max_sent`
    /// tools, else nothing. Below the threshold every schema is cheap enough to send; past it
    /// the model finds tools with `tool_search` instead.
    #[must_use]
    pub fn defer_when_more_than(self, max_sent: usize) -> Self {
        if self.len() > max_sent {
            self.defer_all()
        } else {
            self
        }
    }

    /// A policy by size: [`defer_all`](Self::defer_all) when the tools' specs (name,
    /// description and parameter schema, as compact JSON) take more than `max_bytes` together,
    /// else nothing. Bytes are what a request pays per turn, whatever the number of tools.
    ///
    /// ```
    /// use pi_tool::{tool_fn, ToolRegistry};
    /// use serde_json::json;
    ///
    /// let ping = tool_fn("ping", "Answer pong.", json!({"type": "object"}), |_, _| async { "pong" })?;
    /// let tools = ToolRegistry::new().with(ping);
    /// // {"name":"ping","description":"Answer pong.","parameters":{"type":"object"}}
    /// assert_eq!(tools.schema_bytes(), 75);
    /// assert!(!tools.clone().defer_when_schemas_exceed(75).get("ping").unwrap().deferred());
    /// assert!(tools.defer_when_schemas_exceed(74).get("ping").unwrap().deferred());
    /// # Ok::<(), pi_tool::RegistryError>(())
    /// ```
    #[must_use]
    pub fn defer_when_schemas_exceed(self, max_bytes: usize) -> Self {
        if self.schema_bytes() > max_bytes {
            self.defer_all()
        } else {
            self
        }
    }

    /// The size of every tool's spec as compact JSON, added up: about what sending them all
    /// costs a request (each API wraps them a little differently).
    pub fn schema_bytes(&self) -> usize {
        self.specs()
            .map(|spec| serde_json::to_vec(spec).map_or(0, |bytes| bytes.len()))
            .sum()
    }
}
