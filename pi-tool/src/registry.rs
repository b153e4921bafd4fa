//! Tools collected at link time by `#[tool]`, or registered by hand; and the single-call runner.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};

use futures_util::future::Either;

use crate::suggest::did_you_mean;
use crate::{
    AgentTool, ArgumentLimits, BoxFuture, CallGate, CallLimits, ExecutionMode, NestedHost,
    RegistryError, StateMap, ToolCall, ToolContext, ToolHost, ToolResult, ToolSpec,
    run_nested_call, run_tool_call,
};
use crate::{
    Approver, CallOutcome, Decision, WaitingCall, run_decided_call, run_tool_call_or_wait,
};

/// One `#[tool]` definition, submitted to `inventory` by the macro.
///
/// Not usually written by hand: `#[tool]` submits one per fn. Const-constructible, as
/// `inventory` requires.
#[derive(Debug)]
pub struct ToolRegistration {
    /// The tool's name.
    pub name: &'static str,
    /// Where the tool is defined: `module::path::fn_name`.
    pub location: &'static str,
    /// Source file of the definition.
    pub file: &'static str,
    /// Line of the definition.
    pub line: u32,
    /// Builds the tool.
    pub make: fn() -> Arc<dyn AgentTool>,
}

impl ToolRegistration {
    fn describe(&self) -> String {
        format!("`{}` ({}:{})", self.location, self.file, self.line)
    }
}

inventory::collect!(ToolRegistration);

/// A set of tools by name, plus the shared state handed to their `State<T>` parameters.
///
/// Iteration is sorted by name, so the tool list a model sees is stable (good for prompt caches).
///
/// ```standalone_crate
/// use pi_tool::{tool, ToolCall, ToolRegistry};
///
/// /// Add two numbers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> String {
///     (a + b).to_string()
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tools = ToolRegistry::discover().unwrap();
/// let result = tools.run(&ToolCall::new("c1", "add", serde_json::json!({"a": 2, "b": "3"}))).await;
/// assert_eq!(result.text_content(), "5");
/// # });
/// ```
///
/// Cloning is cheap (the tools are shared; a clone that is changed copies them). A registry and
/// its clones share one [`CallGate`]: a sequential tool's call never runs while another call
/// through any of them runs.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    inner: Arc<Tools>,
}

/// What a registry holds; what [`ToolRegistry::run`] lends the pipeline.
#[derive(Clone, Default)]
struct Tools {
    tools: BTreeMap<String, Arc<dyn AgentTool>>,
    state: StateMap,
    limits: CallLimits,
    /// How many tools are sequential: calls go through the gate when any is (else none needs
    /// it). Kept as a count so that adding or removing a tool costs the same whatever the
    /// registry's size (a rescan per insert made building a registry quadratic).
    sequential_tools: usize,
    gate: Arc<CallGate>,
    /// Decides calls that wait, in [`ToolRegistry::run`] and [`ToolRegistry::run_or_wait`].
    approver: Option<Approver>,
    /// The specs of `tools` in order, copied at most once per version of the registry (any
    /// change resets it): see [`ToolRegistry::shared_specs`].
    shared_specs: OnceLock<Arc<[ToolSpec]>>,
}

fn is_sequential(tool: &Arc<dyn AgentTool>) -> bool {
    tool.execution_mode() == Some(ExecutionMode::Sequential)
}

impl Tools {
    fn insert(&mut self, tool: Arc<dyn AgentTool>) -> Option<Arc<dyn AgentTool>> {
        if is_sequential(&tool) {
            self.sequential_tools += 1;
        }
        let replaced = self.tools.insert(tool.spec().name.clone(), tool);
        if replaced.as_ref().is_some_and(is_sequential) {
            self.sequential_tools -= 1;
        }
        replaced
    }

    fn remove(&mut self, name: &str) -> Option<Arc<dyn AgentTool>> {
        let removed = self.tools.remove(name);
        if removed.as_ref().is_some_and(is_sequential) {
            self.sequential_tools -= 1;
        }
        removed
    }

    /// Counts the sequential tools again, after the map was changed in place.
    fn recount_sequential(&mut self) {
        self.sequential_tools = self
            .tools
            .values()
            .filter(|tool| is_sequential(tool))
            .count();
    }
}

impl ToolHost for Tools {
    fn tool(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        self.tools.get(name)
    }

    fn tool_names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    fn limits(&self) -> &CallLimits {
        &self.limits
    }

    fn gate(&self) -> Option<&CallGate> {
        (self.sequential_tools > 0).then_some(&*self.gate)
    }
}

impl NestedHost for Tools {
    fn run_nested<'a>(
        &'a self,
        call: &'a ToolCall,
        parent: &'a ToolContext,
        ctx: ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(run_nested_call(self, None, call, parent, ctx))
    }

    fn limits(&self) -> &CallLimits {
        &self.limits
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    fn tools_mut(&mut self) -> &mut Tools {
        let tools = Arc::make_mut(&mut self.inner);
        tools.shared_specs = OnceLock::new();
        tools
    }

    /// Every `#[tool]` linked into the program, sorted by name.
    ///
    /// Two definitions with one name are an error naming both. A crate that only defines tools
    /// must be named by the final binary (`use my_tools as _;`) or the linker drops it, and
    /// then this returns fewer tools, or none, without an error:
    /// [`discover_nonempty`](Self::discover_nonempty) fails instead when none is linked.
    pub fn discover() -> Result<Self, RegistryError> {
        let mut registrations: Vec<&ToolRegistration> =
            inventory::iter::<ToolRegistration>.into_iter().collect();
        registrations.sort_by(|a, b| a.name.cmp(b.name).then(a.location.cmp(b.location)));
        if let Some(pair) = registrations
            .windows(2)
            .find(|pair| pair[0].name == pair[1].name)
        {
            return Err(RegistryError::DuplicateName {
                name: pair[0].name.to_owned(),
                first: pair[0].describe(),
                second: pair[1].describe(),
            });
        }
        let mut registry = ToolRegistry::new();
        for registration in registrations {
            let tool = (registration.make)();
            check_examples(tool.as_ref())?;
            registry.register_arc(tool);
        }
        Ok(registry)
    }

    /// [`discover`](Self::discover), failing when no `#[tool]` is linked at all.
    ///
    /// `discover()` answers an empty registry when the binary depends on a tools crate but
    /// never names it (the linker dropped the crate), which shows up only later, as a model
    /// with no tools. A program that defines its tools with `#[tool]` calls this instead and
    /// gets [`RegistryError::NoToolsLinked`], whose message says how to link the crate
    /// (`use my_tools as _;`).
    ///
    /// ```standalone_crate
    /// use pi_tool::{RegistryError, ToolRegistry};
    ///
    /// // No `#[tool]` in this doctest: the error explains the fix.
    /// let err = ToolRegistry::discover_nonempty().unwrap_err();
    /// assert_eq!(err, RegistryError::NoToolsLinked);
    /// assert!(err.to_string().contains("use my_tools as _;"));
    /// ```
    pub fn discover_nonempty() -> Result<Self, RegistryError> {
        let registry = Self::discover()?;
        if registry.is_empty() {
            return Err(RegistryError::NoToolsLinked);
        }
        Ok(registry)
    }

    /// Adds a tool, returning the one it replaces (same name), if any.
    pub fn register(&mut self, tool: impl AgentTool) -> Option<Arc<dyn AgentTool>> {
        self.register_arc(Arc::new(tool))
    }

    /// Adds a shared tool, returning the one it replaces (same name), if any.
    pub fn register_arc(&mut self, tool: Arc<dyn AgentTool>) -> Option<Arc<dyn AgentTool>> {
        self.tools_mut().insert(tool)
    }

    /// Builder form of [`register`](Self::register).
    #[must_use]
    pub fn with(mut self, tool: impl AgentTool) -> Self {
        self.register(tool);
        self
    }

    /// Replaces every tool by what `wrap` makes of it, in place (one pass; the names stay).
    pub(crate) fn wrap_each(
        &mut self,
        mut wrap: impl FnMut(Arc<dyn AgentTool>) -> Arc<dyn AgentTool>,
    ) {
        let tools = self.tools_mut();
        for tool in tools.tools.values_mut() {
            *tool = wrap(Arc::clone(tool));
        }
        tools.recount_sequential();
    }

    /// Removes a tool by name.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn AgentTool>> {
        self.tools_mut().remove(name)
    }

    /// The tool with this exact (case-sensitive) name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn AgentTool>> {
        self.inner.tools.get(name).cloned()
    }

    /// The tool with this name, borrowed.
    pub fn get_ref(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        self.inner.tools.get(name)
    }

    /// Whether a tool has this name.
    pub fn contains(&self, name: &str) -> bool {
        self.inner.tools.contains_key(name)
    }

    /// Tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.inner.tools.keys().map(String::as_str)
    }

    /// Tool specs (what the model sees), sorted by name.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.inner.tools.values().map(|tool| tool.spec())
    }

    /// The specs of every tool, sorted by name (as [`tools`](Self::tools)), in one shared
    /// slice: copied at the first call and shared by every later one, by clones of the
    /// registry, and by every run of `pi-runtime`'s loop that offers exactly these tools, so
    /// that runs and agents over one catalog hold one copy of its specs. A change of the
    /// registry copies them again at the next call.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pi_tool::{FnTool, ToolRegistry};
    /// use serde_json::{json, Value};
    ///
    /// let ping = FnTool::builder("ping", "Answer pong.", json!({"type": "object"}))
    ///     .build(|_: Value, _| async { "pong" })?;
    /// let registry = ToolRegistry::new().with(ping.clone());
    /// let specs = registry.shared_specs();
    /// assert_eq!(specs[0].name, "ping");
    /// assert!(Arc::ptr_eq(&specs, &registry.clone().shared_specs()));
    ///
    /// let pong = FnTool::builder("pong", "Answer ping.", json!({"type": "object"}))
    ///     .build(|_: Value, _| async { "ping" })?;
    /// let changed = registry.clone().with(pong);
    /// assert_eq!(changed.shared_specs().len(), 2);
    /// assert_eq!(registry.shared_specs().len(), 1);
    /// # Ok::<(), pi_tool::RegistryError>(())
    /// ```
    pub fn shared_specs(&self) -> Arc<[ToolSpec]> {
        Arc::clone(
            self.inner
                .shared_specs
                .get_or_init(|| self.specs().cloned().collect()),
        )
    }

    /// The tools, sorted by name.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn AgentTool>> {
        self.inner.tools.values()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.inner.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }

    /// A registry with only the named tools (and the same state). An unknown name is an error,
    /// with a suggestion when a registered name is close.
    pub fn subset<I, S>(&self, names: I) -> Result<ToolRegistry, RegistryError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut subset = Tools {
            tools: BTreeMap::new(),
            shared_specs: OnceLock::new(),
            ..(*self.inner).clone()
        };
        for name in names {
            let name = name.as_ref();
            let tool = self
                .inner
                .tools
                .get(name)
                .ok_or_else(|| RegistryError::UnknownTool {
                    name: name.to_owned(),
                    suggestion: did_you_mean(name, self.names()),
                })?;
            subset.tools.insert(name.to_owned(), Arc::clone(tool));
        }
        subset.recount_sequential();
        Ok(ToolRegistry {
            inner: Arc::new(subset),
        })
    }

    /// Makes `value` available to every `State<T>` parameter of type `T`.
    #[must_use]
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.insert_state(value);
        self
    }

    /// Adds or replaces a shared state value.
    pub fn insert_state<T: Send + Sync + 'static>(&mut self, value: T) {
        self.tools_mut().state.insert(value);
    }

    /// The shared state.
    pub fn state(&self) -> &StateMap {
        &self.inner.state
    }

    /// An error for the first registered tool that takes a `State<T>` whose `T` was not given
    /// (with [`with_state`](Self::with_state)), naming the tool and the type; call it once the
    /// state is in, before the tools run. [`missing_state`](crate::missing_state) lists them
    /// all. The agent loop checks its tools before each request to the model, and a run
    /// whose tool lacks its state ends with that error before the model is asked.
    pub fn check_state(&self) -> Result<(), RegistryError> {
        match crate::missing_state(self.tools(), self.state())
            .into_iter()
            .next()
        {
            Some(missing) => Err(missing.into_error()),
            None => Ok(()),
        }
    }

    /// A context for one call, carrying this registry's state (add a signal or update sink with
    /// its `with_*` methods).
    pub fn context(&self, tool_call_id: &str) -> ToolContext {
        let host: Arc<dyn NestedHost> = Arc::clone(&self.inner) as Arc<dyn NestedHost>;
        ToolContext::with_id_state_and_host(tool_call_id, &self.inner.state, host)
    }

    /// The registry's pipeline for nested calls, to lend a context made by hand
    /// ([`ToolContext::with_nested_host`]).
    pub fn nested_host(&self) -> Arc<dyn NestedHost> {
        Arc::clone(&self.inner) as Arc<dyn NestedHost>
    }

    /// Sets the [`ArgumentLimits`] [`run`](Self::run) checks (default
    /// [`ArgumentLimits::DEFAULT`]).
    #[must_use]
    pub fn with_argument_limits(mut self, limits: ArgumentLimits) -> Self {
        self.tools_mut().limits.arguments = limits;
        self
    }

    /// Sets the [`CallLimits`] [`run`](Self::run) applies (default [`CallLimits::DEFAULT`]):
    /// argument limits, the timeout of tools without one, the abort grace, the result size. A
    /// server built on the registry (`pi-mcp`'s `McpServer`, `pi-restate`'s `PiTools`) applies
    /// them too.
    #[must_use]
    pub fn with_call_limits(mut self, limits: CallLimits) -> Self {
        self.tools_mut().limits = limits;
        self
    }

    /// The [`CallLimits`] of every call.
    pub fn call_limits(&self) -> &CallLimits {
        &self.inner.limits
    }

    /// Runs one call through the whole pipeline without an agent loop, as every host runs it:
    /// lookup, the [`ArgumentLimits`], `prepare_arguments`, normalization and validation, the
    /// gate of sequential tools, execution within the call's timeout (a `blocking` tool on
    /// tokio's blocking pool), and the result-size limit ([`CallLimits`]). Every failure
    /// (unknown tool, invalid arguments, a timeout, `Err`, panic) comes back as an error result
    /// with the text the loop would send.
    ///
    /// A call that must wait for a decision (its tool is external, or needs approval) is put
    /// to the registry's [approver](Self::with_approver); without one it does not run and its
    /// result is an error saying so. [`run_or_wait`](Self::run_or_wait) gives such a call back
    /// as a [`CallOutcome::Waiting`] instead.
    pub fn run<'a>(&'a self, call: &'a ToolCall) -> impl Future<Output = ToolResult> + Send + 'a {
        self.run_in(call, self.context(&call.id))
    }

    /// The pipeline of [`run`](Self::run): the plain one without an approver (its future stays
    /// the size it was), the deciding one with.
    fn run_in<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: ToolContext,
    ) -> impl Future<Output = ToolResult> + Send + 'a {
        match &self.inner.approver {
            None => Either::Left(run_tool_call(&*self.inner, call, ctx)),
            Some(approver) => Either::Right(Box::pin(async move {
                match run_tool_call_or_wait(&*self.inner, call, ctx, Some(approver)).await {
                    CallOutcome::Done(result) => result,
                    // An approver decides every call that waits; should one still wait, it
                    // does not run.
                    CallOutcome::Waiting(waiting) => ToolResult::error(format!(
                        "Tool {} was not run: {}",
                        waiting.tool, waiting.reason
                    )),
                }
            })),
        }
    }

    /// [`run`](Self::run) with a context of your own (an abort signal, an update sink, an
    /// idempotency key). An abort of its signal answers the call `Operation aborted`, after the
    /// abort grace if the tool is running.
    pub fn run_with<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: ToolContext,
    ) -> impl Future<Output = ToolResult> + Send + 'a {
        let ctx = self.lend_nested_host(ctx);
        self.run_in(call, ctx)
    }

    /// Its nested calls run here too, unless the context came with a host of its own.
    fn lend_nested_host(&self, ctx: ToolContext) -> ToolContext {
        match ctx.nested_host() {
            Some(_) => ctx,
            None => ctx.with_nested_host(self.nested_host()),
        }
    }

    /// Decides the calls that wait (an external tool's, or one that
    /// [needs approval](AgentTool::needs_approval)) in process: [`run`](Self::run) and
    /// [`run_or_wait`](Self::run_or_wait) ask `approver` and run the call (or answer it) as it
    /// decides, as the agent loop's approver does. Without one, `run` refuses such a call with
    /// an error result and `run_or_wait` gives it back waiting.
    #[must_use]
    pub fn with_approver(mut self, approver: Approver) -> Self {
        self.tools_mut().approver = Some(approver);
        self
    }

    /// The approver set with [`with_approver`](Self::with_approver).
    pub fn approver(&self) -> Option<&Approver> {
        self.inner.approver.as_ref()
    }

    /// Runs one call as [`run`](Self::run) does, except for a call that must wait for a
    /// decision (its tool is external, or needs approval for these arguments): with an
    /// [approver](Self::with_approver) it is asked; without one the call does not run and comes
    /// back as [`CallOutcome::Waiting`], with its id, tool, arguments as they would run (after
    /// `prepare_arguments` and validation), reason and kind. Decide it later, in this process
    /// or another, with [`decide`](Self::decide).
    ///
    /// ```
    /// use pi_tool::{tool, CallOutcome, Decision, ToolCall, ToolRegistry, WaitKind};
    ///
    /// /// Refund an order.
    /// #[tool(approval)]
    /// async fn refund(order: String) -> String { format!("refunded {order}") }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let tools = ToolRegistry::new().with(RefundTool);
    /// let call = ToolCall::new("c1", "refund", serde_json::json!({"order": "A-7"}));
    /// let CallOutcome::Waiting(waiting) = tools.run_or_wait(&call).await else {
    ///     panic!("a refund waits for approval");
    /// };
    /// assert_eq!(waiting.kind, WaitKind::Approval);
    /// // ... later, maybe in another process, with the waiting call kept as JSON:
    /// let result = tools.decide(&waiting, Decision::Approve).await;
    /// assert_eq!(result.text_content(), "refunded A-7");
    /// # });
    /// ```
    pub fn run_or_wait<'a>(
        &'a self,
        call: &'a ToolCall,
    ) -> impl Future<Output = CallOutcome> + Send + 'a {
        self.run_or_wait_with(call, self.context(&call.id))
    }

    /// [`run_or_wait`](Self::run_or_wait) with a context of your own.
    pub fn run_or_wait_with<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: ToolContext,
    ) -> impl Future<Output = CallOutcome> + Send + 'a {
        let ctx = self.lend_nested_host(ctx);
        run_tool_call_or_wait(&*self.inner, call, ctx, self.inner.approver.as_ref())
    }

    /// Settles a call that waited ([`run_or_wait`](Self::run_or_wait)) with a decision:
    /// [`Decision::Approve`] runs it with the arguments it waited with (checked again against
    /// the tool, which may have changed), [`Decision::ApproveWith`] with others (validated as
    /// the model's are), [`Decision::Deny`] gives the error result the model reads
    /// (`Tool <name> was not run: the call was denied: <reason>`), and [`Decision::Answer`] its
    /// result (the only decision that settles an external tool's call).
    pub fn decide<'a>(
        &'a self,
        waiting: &'a WaitingCall,
        decision: Decision,
    ) -> impl Future<Output = ToolResult> + Send + 'a {
        run_decided_call(&*self.inner, waiting, decision, self.context(&waiting.id))
    }
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.inner.tools.keys().collect::<Vec<_>>())
            .field("state", &self.inner.state)
            .field("limits", &self.inner.limits)
            .finish()
    }
}

impl Extend<Arc<dyn AgentTool>> for ToolRegistry {
    fn extend<T: IntoIterator<Item = Arc<dyn AgentTool>>>(&mut self, iter: T) {
        for tool in iter {
            self.register_arc(tool);
        }
    }
}

impl FromIterator<Arc<dyn AgentTool>> for ToolRegistry {
    fn from_iter<T: IntoIterator<Item = Arc<dyn AgentTool>>>(iter: T) -> Self {
        let mut registry = ToolRegistry::new();
        registry.extend(iter);
        registry
    }
}

/// A `#[tool]`'s `example`s must be valid against its own schema: checked when `discover`
/// registers it, since the schema exists only at run time.
fn check_examples(tool: &dyn AgentTool) -> Result<(), RegistryError> {
    let examples = tool.input_examples();
    if examples.is_empty() {
        return Ok(());
    }
    let owned;
    let validator = match tool.validator() {
        Some(validator) => validator,
        None => {
            owned = crate::ArgumentValidator::new(tool.spec());
            &owned
        }
    };
    crate::private::check_examples(validator, examples).map_err(|reason| {
        RegistryError::InvalidTool {
            name: tool.spec().name.clone(),
            reason,
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::FnTool;

    fn tool(name: &str, sequential: bool) -> FnTool {
        let builder = FnTool::builder(name, "A tool.", json!({"type": "object"}));
        let builder = if sequential {
            builder.sequential()
        } else {
            builder
        };
        builder.build(|_, _| async { "ok" }).expect("a valid tool")
    }

    fn gated(tools: &ToolRegistry) -> bool {
        ToolHost::gate(&*tools.inner).is_some()
    }

    /// The gate follows the sequential tools through every change: a replaced, removed or
    /// wrapped tool is counted out, not left behind.
    #[test]
    fn the_gate_is_needed_exactly_while_a_sequential_tool_is_registered() {
        let mut tools = ToolRegistry::new().with(tool("a", false));
        assert!(!gated(&tools));
        tools.register(tool("b", true));
        tools.register(tool("c", true));
        assert!(gated(&tools));
        tools.register(tool("b", false)); // replaces the sequential `b`
        assert!(gated(&tools), "`c` is still sequential");
        assert!(tools.remove("c").is_some());
        assert!(!gated(&tools));
        assert!(tools.remove("c").is_none());
        assert!(!gated(&tools));

        let tools = tools.with(tool("d", true)).defer_all();
        assert!(gated(&tools), "a deferred tool keeps its mode");
        assert!(tools.get("d").is_some_and(|d| d.deferred()));
        let subset = tools.subset(["a", "b"]).expect("known names");
        assert!(!gated(&subset));
        assert!(gated(&tools.subset(["d"]).expect("a known name")));
    }
}
