//! The tool contract: what the agent loop needs of any tool, generated or hand-written.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;

use crate::{
    ArgumentValidator, ExecutionMode, Replay, ToolAnnotations, ToolCallers, ToolContext, ToolError,
    ToolResult, ToolSpec,
};

/// A boxed, sendable future: what [`AgentTool::execute`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool the agent loop can offer to a model and run.
///
/// `#[tool]` implements it for you; implement it by hand for tools whose schema is only known at
/// run time (an MCP server's tools, a plugin). The trait is object-safe: the loop holds
/// `Arc<dyn AgentTool>`. It is [`Any`](std::any::Any) (every `'static` type is), so a host can
/// recognise a tool type of its own in a list of them (the agent loop finds its
/// [`ToolSearch`](crate::ToolSearch) this way: [`ToolSearch::of`](crate::ToolSearch::of)).
///
/// ```
/// use pi_tool::{AgentTool, BoxFuture, ToolContext, ToolError, ToolResult, ToolSpec};
/// use serde_json::{json, Value};
///
/// struct Echo { spec: ToolSpec }
///
/// impl AgentTool for Echo {
///     fn spec(&self) -> &ToolSpec { &self.spec }
///     fn label(&self) -> &str { "Echo" }
///     fn execute(&self, args: Value, _ctx: ToolContext) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
///         Box::pin(async move { Ok(ToolResult::text(args["text"].as_str().unwrap_or_default())) })
///     }
/// }
///
/// let echo = Echo { spec: ToolSpec {
///     name: "echo".into(),
///     description: "Echo the text back.".into(),
///     parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
/// }};
/// assert_eq!(echo.spec().name, "echo");
/// ```
pub trait AgentTool: std::any::Any + Send + Sync + 'static {
    /// Name, description and JSON Schema: exactly what the model sees.
    fn spec(&self) -> &ToolSpec;

    /// A display name for a UI.
    fn label(&self) -> &str;

    /// `Some(Sequential)` makes any batch that calls this tool run one call at a time.
    fn execution_mode(&self) -> Option<ExecutionMode> {
        None
    }

    /// How long one call may run before the agent loop cancels its token and answers it
    /// `Tool <name> timed out after <timeout>` (after the abort grace). `None` (the default)
    /// leaves it to the loop's `tool_timeout`. `#[tool(timeout = "30s")]` sets it.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Whether the tool blocks its thread (CPU work, blocking I/O): the agent loop then runs
    /// the call on tokio's blocking pool (`spawn_blocking`), so it delays neither other calls
    /// nor the event stream. Default `false`; `#[tool(blocking)]` sets it.
    fn blocking(&self) -> bool {
        false
    }

    /// Whether the tool is deferred: known to the agent loop, validated and runnable like any
    /// other, but its schema is not sent to the model until it is loaded (found by the
    /// `tool_search` tool, or called by name). With hundreds of tools this keeps requests
    /// small and the model's choice focused. Default `false`; `#[tool(defer)]`,
    /// [`FnToolBuilder::deferred`](crate::FnToolBuilder::deferred) and
    /// [`ToolRegistry::defer_all`](crate::ToolRegistry::defer_all) set it.
    fn deferred(&self) -> bool {
        false
    }

    /// Example arguments the model learns the tool's use from, sent to the APIs that take them
    /// (Anthropic's `input_examples`). Each must be valid against the tool's own schema:
    /// [`FnToolBuilder::example`](crate::FnToolBuilder::example) checks them when the tool is
    /// built, and a provider never sends one that fails. Default none.
    fn input_examples(&self) -> &[Value] {
        &[]
    }

    /// Words the built-in tool search ([`ToolSearch`](crate::ToolSearch)) finds the tool by
    /// besides its name, description and parameters (what users call it: "ticket" for an
    /// issue tracker's `create_issue`). Never sent to the model. `#[tool(keywords = [..])]` and
    /// [`FnToolBuilder::keywords`](crate::FnToolBuilder::keywords) set them. Default none.
    fn keywords(&self) -> &[String] {
        &[]
    }

    /// The types this tool takes as [`State<T>`](crate::State), so a host can report a missing
    /// one before the first call ([`missing_state`](crate::missing_state)). `#[tool]` lists its
    /// `State<T>` parameters (not those marked `#[inject]`). Default none.
    fn state_types(&self) -> Vec<crate::StateType> {
        Vec::new()
    }

    /// Whether the API may stream this tool's arguments without buffering and checking them
    /// first (Anthropic's `eager_input_streaming`): long arguments start arriving sooner, but a
    /// cut response can leave them invalid JSON (the loop answers that as any bad call). Default
    /// `false`.
    fn eager_input_streaming(&self) -> bool {
        false
    }

    /// Who may call the tool: the model directly, code (another tool's
    /// [`call_tool`](ToolContext::call_tool), a `code` tool's script), or both (the default).
    /// `#[tool(callers = "code")]` sets it.
    fn callers(&self) -> ToolCallers {
        ToolCallers::Both
    }

    /// What a durable host does with a call of this tool that was interrupted before its
    /// outcome was recorded: run it again ([`Replay::Safe`]) or answer that its outcome is
    /// unknown ([`Replay::Never`]). `None` (the default): run it again (at least once).
    /// `#[tool(replay = "never")]` sets it.
    fn replay(&self) -> Option<Replay> {
        None
    }

    /// The error text a call of this tool is answered with when it is aborted before it runs,
    /// or does not answer an abort within the grace: [`ABORTED`](crate::ABORTED) (`Operation
    /// aborted`, pi's built-in tools' text) unless the tool says otherwise, as pi's `bash` does
    /// (`Command aborted`). The agent loop's own checks before a call starts keep
    /// `Operation aborted`, as pi's loop does. `#[tool(aborted = "..")]` sets it.
    fn aborted_message(&self) -> &str {
        crate::ABORTED
    }

    /// Whether this call must wait for a decision (approve or deny) before it runs, asked with
    /// the arguments as they would run (after `prepare_arguments` and validation). The agent
    /// loop pauses the run on such a call (or asks its approver); a host that cannot wait
    /// ([`ToolRegistry::run`](crate::ToolRegistry::run), an MCP server, a nested call) refuses
    /// it with an error result instead of running it unapproved. Default `false`; `#[tool(approval)]` answers `true`, `#[tool(approval =
    /// path)]` asks `path`, [`ToolRegistry::require_approval`](crate::ToolRegistry::require_approval)
    /// picks tools by a policy.
    fn needs_approval(&self, args: &Value, ctx: &ToolContext) -> bool {
        let _ = (args, ctx);
        false
    }

    /// Whether [`needs_approval`](Self::needs_approval) may answer `true`. When `false`, a host
    /// skips the question, and building the call's context to ask it (the agent loop does, for
    /// every call). `#[tool]` answers `false` unless it has an `approval` key, and
    /// [`FnTool`](crate::FnTool) unless it was given an approval rule; override it only
    /// together with `needs_approval`.
    fn may_need_approval(&self) -> bool {
        true
    }

    /// Whether the tool is external: it has a schema and no body here, and each call is
    /// answered from outside (a browser, a mobile app, another service). The agent loop pauses
    /// the run on its calls until an answer is given. Default `false`;
    /// [`FnTool::external`](crate::FnTool::external) builds one.
    fn external(&self) -> bool {
        false
    }

    /// Hints for hosts about what the tool does (read-only, destructive, ...); `#[tool]` sets them
    /// from its `read_only`, `destructive`, `idempotent` and `open_world` keys. Never part of
    /// what a model provider receives.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new()
    }

    /// The JSON Schema of the tool's [`details`](ToolResult::details), when the tool promises
    /// one. `#[tool]` declares it for a fn returning `Json<T>` (or `Result<Json<T>, E>`) where
    /// `T: JsonSchema`; hosts that type tool output (MCP's `outputSchema`) use it. Built once.
    fn output_schema(&self) -> Option<&Value> {
        None
    }

    /// Rewrites raw arguments before validation (an old argument shape, a stringified field).
    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        Ok(args)
    }

    /// Whether [`prepare_arguments`](Self::prepare_arguments) may change the arguments. When
    /// `false`, the pipeline skips it and validates the model's arguments in place, without a
    /// copy. `#[tool]` answers `false` unless it has a `prepare_arguments` key; override it only
    /// together with `prepare_arguments`.
    fn rewrites_arguments(&self) -> bool {
        true
    }

    /// The compiled validator of [`spec`](Self::spec)`.parameters`.
    ///
    /// `#[tool]` builds it once per tool. A hand-written tool may keep one built with
    /// [`ArgumentValidator::new`] and return it here; by default validation uses a process-wide
    /// cache keyed by the tool's schema, which is compiled once too.
    fn validator(&self) -> Option<&ArgumentValidator> {
        None
    }

    /// Runs the tool with validated arguments. Failing (an `Err`, or a panic) becomes an error
    /// result for the model; it never stops the agent.
    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>>;

    /// [`execute`](Self::execute) with arguments the tool may only borrow (the model's own,
    /// valid as sent). `#[tool]` deserializes its parameters straight from them; the default
    /// copies them into `execute`.
    fn execute_borrowed(
        &self,
        args: &Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        self.execute(args.clone(), ctx)
    }
}
