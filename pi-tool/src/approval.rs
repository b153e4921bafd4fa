//! Calls that wait for a decision before they run: a tool's approval rule
//! ([`AgentTool::needs_approval`]), external tools answered from outside the process
//! ([`AgentTool::external`]), and the registry-wide policy that wraps chosen tools
//! ([`ToolRegistry::require_approval`]). Hosts decide what waiting means (the agent loop pauses
//! the run; see `pi-runtime`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    AgentTool, ArgumentValidator, BoxFuture, ExecutionMode, Replay, ToolAnnotations, ToolCallers,
    ToolContext, ToolError, ToolRegistry, ToolResult, ToolSpec,
};

/// Why a call waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WaitKind {
    /// Someone must approve (or deny) the call before it runs.
    Approval,
    /// The tool has no body here: the call is answered from outside (a browser, an app).
    External,
}

impl WaitKind {
    /// `approval` or `external`.
    pub const fn as_str(self) -> &'static str {
        match self {
            WaitKind::Approval => "approval",
            WaitKind::External => "external",
        }
    }
}

/// A tool's approval rule: given the arguments as they would run (after `prepare_arguments`
/// and validation) and the call's context, whether this call needs a decision.
pub type ApprovalRule = Arc<dyn Fn(&Value, &ToolContext) -> bool + Send + Sync>;

/// The reason a call of `tool` waits for approval, when nothing more specific says why.
pub fn approval_reason(tool: &str) -> String {
    format!("Tool {tool} needs approval before it runs")
}

/// The reason a call of the external tool `tool` waits.
pub fn external_reason(tool: &str) -> String {
    format!("Tool {tool} is external: its call is answered from outside")
}

/// The error result of an external tool's call in a host that cannot wait for an answer.
pub fn external_unanswered_message(tool: &str) -> String {
    format!(
        "Tool {tool} is external: its calls are answered from outside this process, and this host \
         cannot wait for an answer"
    )
}

/// A tool made to need approval for every call by its host ([`ToolRegistry::require_approval`]),
/// without touching its code. Every other [`AgentTool`] method is forwarded.
#[derive(Clone)]
pub struct ApprovalRequired(Arc<dyn AgentTool>);

impl ApprovalRequired {
    /// The tool, needing approval for every call.
    pub fn wrap(tool: Arc<dyn AgentTool>) -> Arc<dyn AgentTool> {
        Arc::new(ApprovalRequired(tool))
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &Arc<dyn AgentTool> {
        &self.0
    }
}

// Keep in step with `AgentTool`, like `Deferred`.
impl AgentTool for ApprovalRequired {
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
        self.0.deferred()
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
    fn needs_approval(&self, _args: &Value, _ctx: &ToolContext) -> bool {
        true
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

impl fmt::Debug for ApprovalRequired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ApprovalRequired")
            .field(&self.0.spec().name)
            .finish()
    }
}

impl ToolRegistry {
    /// Makes every call of each tool now in the registry that `policy` picks wait for approval
    /// (e.g. every tool whose annotations say it is destructive). Tools registered later are
    /// not affected: call it once the registry is complete.
    ///
    /// ```
    /// use pi_tool::{tool, ToolRegistry};
    ///
    /// /// Delete a file.
    /// #[tool(destructive)]
    /// async fn delete(path: String) -> String { path }
    ///
    /// /// Read a file.
    /// #[tool(read_only)]
    /// async fn read(path: String) -> String { path }
    ///
    /// let tools = ToolRegistry::new()
    ///     .with(DeleteTool)
    ///     .with(ReadTool)
    ///     .require_approval(|tool| tool.annotations().destructive == Some(true));
    /// let ctx = pi_tool::ToolContext::new("c1");
    /// let args = serde_json::json!({"path": "a"});
    /// assert!(tools.get("delete").unwrap().needs_approval(&args, &ctx));
    /// assert!(!tools.get("read").unwrap().needs_approval(&args, &ctx));
    /// ```
    #[must_use]
    pub fn require_approval(mut self, policy: impl Fn(&dyn AgentTool) -> bool) -> Self {
        let names: Vec<String> = self
            .tools()
            .filter(|tool| policy(tool.as_ref()))
            .map(|tool| tool.spec().name.clone())
            .collect();
        for name in names {
            if let Some(tool) = self.remove(&name) {
                self.register_arc(ApprovalRequired::wrap(tool));
            }
        }
        self
    }
}

/// How `approval = path` calls its fn: with the raw arguments (`fn(&Value, &ToolContext) ->
/// bool`) or with the tool's parameter struct (`fn(&XxxParams, &ToolContext) -> bool`). The
/// marker `M` keeps the two impls apart.
#[doc(hidden)]
pub trait ApprovalFn<P, M> {
    fn needs_approval(&self, args: &Value, ctx: &ToolContext) -> bool;
}

#[doc(hidden)]
pub struct ByValue;
#[doc(hidden)]
pub struct ByParams;

impl<P, F> ApprovalFn<P, ByValue> for F
where
    F: Fn(&Value, &ToolContext) -> bool,
{
    fn needs_approval(&self, args: &Value, ctx: &ToolContext) -> bool {
        self(args, ctx)
    }
}

impl<P, F> ApprovalFn<P, ByParams> for F
where
    P: DeserializeOwned,
    F: Fn(&P, &ToolContext) -> bool,
{
    fn needs_approval(&self, args: &Value, ctx: &ToolContext) -> bool {
        // The arguments were validated against `P`'s schema; should they still not read as
        // `P`, the call waits rather than running unchecked.
        match P::deserialize(args) {
            Ok(params) => self(&params, ctx),
            Err(_) => true,
        }
    }
}

/// Calls an `approval = path` fn (used by `#[tool]`).
#[doc(hidden)]
pub fn check_approval<P, M, F: ApprovalFn<P, M>>(
    rule: &F,
    args: &Value,
    ctx: &ToolContext,
) -> bool {
    rule.needs_approval(args, ctx)
}
