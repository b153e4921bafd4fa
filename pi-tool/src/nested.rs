//! Calls made from inside a call: a tool calling another tool of its host by name
//! ([`ToolContext::call_tool`]), through the same pipeline as the model's calls.
//!
//! A host that lets its tools call each other lends their contexts a [`NestedHost`]: the
//! registry's `run`, an MCP server, a Restate tool service and the agent loop all do. A nested
//! call goes through every stage a top-level call goes through (lookup, argument limits,
//! `prepare_arguments`, validation, the host's hooks, the timeout, `blocking`, panic capture,
//! the result limit), never fails (every failure is an error result), gets a signal that is a
//! child of its parent's (aborting the parent aborts it), and is kept apart from its siblings
//! when its tool is sequential. It emits none of the loop's events; a `tracing` span
//! (`execute_tool`, a child of the current span) shows it in traces.

use std::future::IntoFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;
use tracing::Instrument;

use crate::{
    ABORTED, BoxFuture, CallGate, CallLimits, ToolCall, ToolContext, ToolResult, UpdateSink,
    WaitKind, WaitingCall,
};

/// Where the nested calls of a host's tools run: the host's own pipeline.
///
/// A host implements it once and lends it to the contexts it makes
/// ([`ToolContext::with_nested_host`], or [`CallHost::nested_host`](crate::CallHost::nested_host)
/// for a host of many calls); most implementations are one line over
/// [`run_nested_call`](crate::run_nested_call):
///
/// ```
/// use std::sync::Arc;
/// use pi_tool::{
///     AgentTool, BoxFuture, CallLimits, NestedHost, ToolCall, ToolContext, ToolHost,
///     ToolResult, run_nested_call,
/// };
///
/// struct MyHost {
///     tools: Vec<Arc<dyn AgentTool>>,
///     limits: CallLimits,
/// }
///
/// impl ToolHost for MyHost {
///     fn tool(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
///         self.tools.iter().find(|tool| tool.spec().name == name)
///     }
///     fn tool_names(&self) -> Vec<&str> {
///         self.tools.iter().map(|tool| tool.spec().name.as_str()).collect()
///     }
///     fn limits(&self) -> &CallLimits {
///         &self.limits
///     }
/// }
///
/// impl NestedHost for MyHost {
///     fn run_nested<'a>(
///         &'a self,
///         call: &'a ToolCall,
///         parent: &'a ToolContext,
///         ctx: ToolContext,
///     ) -> BoxFuture<'a, ToolResult> {
///         Box::pin(run_nested_call(self, None, call, parent, ctx))
///     }
///     fn limits(&self) -> &CallLimits {
///         &self.limits
///     }
/// }
/// ```
pub trait NestedHost: Send + Sync + 'static {
    /// Runs `call`, made from inside the call whose context is `parent`, through the host's
    /// pipeline. `ctx` is the new call's own context: its id, its signal (a child of the
    /// parent's), its state, its updates and its nesting are set.
    fn run_nested<'a>(
        &'a self,
        call: &'a ToolCall,
        parent: &'a ToolContext,
        ctx: ToolContext,
    ) -> BoxFuture<'a, ToolResult>;

    /// The bounds of nested calls ([`CallLimits::max_nesting_depth`] among them).
    fn limits(&self) -> &CallLimits;

    /// Whether this host may run a call again to replay it (the agent loop does, when a call
    /// made from inside it paused the run): only then are values a call reads from outside
    /// worth recording ([`ToolContext::replays`]). `false` (the default): it never does.
    fn replays(&self) -> bool {
        false
    }

    /// The value named `name` that the call of `ctx` recorded when it ran before, if the host
    /// runs it again to replay it (see [`ToolContext::replayable_value`]). `None` (the default):
    /// this host never replays a call.
    fn recorded_value(&self, ctx: &ToolContext, name: &str) -> Option<Value> {
        let _ = (ctx, name);
        None
    }

    /// Keeps `value` under `name` for the call of `ctx`, for a replay of it (see
    /// [`ToolContext::record_value`]). The default keeps nothing: this host never replays a
    /// call.
    fn record_value(&self, ctx: &ToolContext, name: &str, value: Value) {
        let _ = (ctx, name, value);
    }
}

impl ToolContext {
    /// A value this call reads from outside (a clock, a random seed) that must be the same if
    /// its host runs the call again to replay it: the agent loop does when a call this one made
    /// from code ([`call_tool`](Self::call_tool)) paused the run for a decision, and the run
    /// resumes (the completed nested calls are answered from a journal; see `pi-runtime`'s
    /// README). On a replay, the value recorded under `name` the first time; else `read()`,
    /// recorded. Hosts that never replay (a plain registry) just call `read()`.
    ///
    /// ```
    /// use pi_tool::ToolContext;
    ///
    /// let ctx = ToolContext::new("c1");
    /// let seed = ctx.replayable_value("seed", || serde_json::json!(42));
    /// assert_eq!(seed, 42);
    /// ```
    pub fn replayable_value(&self, name: &str, read: impl FnOnce() -> Value) -> Value {
        if let Some(recorded) = self.recorded_value(name) {
            return recorded;
        }
        let value = read();
        self.record_value(name, value.clone());
        value
    }

    /// Whether this call's host may run it again to replay it ([`NestedHost::replays`]): a tool
    /// with much to record (a script's clock readings) can skip the work when it does not.
    pub fn replays(&self) -> bool {
        self.nested_host().is_some_and(|host| host.replays())
    }

    /// The value this call recorded under `name` when it ran before, when its host replays it
    /// (`None` on a first run, and in hosts that never replay).
    pub fn recorded_value(&self, name: &str) -> Option<Value> {
        self.nested_host()?.recorded_value(self, name)
    }

    /// Records `value` under `name` for a replay of this call (replacing what was recorded
    /// under it): a tool that reads many values records them as it goes, or once at its end
    /// (e.g. `pi-codemode` records the clock readings of a script).
    pub fn record_value(&self, name: &str, value: Value) {
        if let Some(host) = self.nested_host() {
            host.record_value(self, name, value);
        }
    }
}

/// What a host runs around each nested call besides the pipeline: the agent loop's
/// `before_tool_call` and `after_tool_call`, which see the parent call.
pub trait CallHooks: Send + Sync {
    /// After validation, before execution (and before the sibling gate): run the call, run it
    /// with other arguments, or answer it without running it.
    fn before_call<'a>(
        &'a self,
        call: &'a ToolCall,
        arguments: &'a Value,
        parent: &'a ToolContext,
    ) -> BoxFuture<'a, BeforeCall>;

    /// Whether [`after_call`](Self::after_call) does anything (else the arguments are not kept
    /// for it).
    fn has_after_call(&self) -> bool {
        true
    }

    /// Whether [`before_call`](Self::before_call) does anything (else it is not called).
    fn has_before_call(&self) -> bool {
        true
    }

    /// A call that must wait for a decision before it runs (its tool is
    /// [external](crate::AgentTool::external), or [needs
    /// approval](crate::AgentTool::needs_approval) for its prepared arguments, which `waiting`
    /// holds with the reason), before [`before_call`](Self::before_call): the host decides it
    /// (asks an approver, answers it with a decision taken earlier, or answers it with an error
    /// and pauses its run). The default refuses it with an error result: a host that cannot
    /// wait for a decision does not run the call unapproved.
    fn wait<'a>(
        &'a self,
        call: &'a ToolCall,
        waiting: WaitingCall,
        parent: &'a ToolContext,
    ) -> BoxFuture<'a, BeforeCall> {
        let _ = (call, parent);
        Box::pin(std::future::ready(BeforeCall::Answer(ToolResult::error(
            cannot_wait_message(&waiting.tool, waiting.kind),
        ))))
    }

    /// After execution: the result the call ends with.
    fn after_call<'a>(
        &'a self,
        call: &'a ToolCall,
        arguments: &'a Value,
        result: ToolResult,
        parent: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult>;
}

/// What [`CallHooks::before_call`] decides.
#[derive(Clone, Debug, PartialEq)]
pub enum BeforeCall {
    /// Run the call as prepared.
    Run,
    /// Run the call with these arguments instead.
    RunWith(Value),
    /// Do not run the call: this is its result (a refusal).
    Answer(ToolResult),
}

/// Where a context's nested calls go, and how deep it is.
#[derive(Clone, Default)]
pub(crate) enum Nesting {
    /// Nested calls are refused: no host lent the context a pipeline.
    #[default]
    None,
    /// A top-level call of this host.
    Host(Arc<dyn NestedHost>),
    /// A nested call.
    Frame(Frame),
}

/// A nested call's place: its host, its own call and its depth.
#[derive(Clone)]
pub(crate) struct Frame {
    pub(crate) host: Arc<dyn NestedHost>,
    pub(crate) call: Arc<ToolCall>,
    pub(crate) depth: u32,
}

impl Nesting {
    pub(crate) fn host(&self) -> Option<&Arc<dyn NestedHost>> {
        match self {
            Nesting::None => None,
            Nesting::Host(host) => Some(host),
            Nesting::Frame(frame) => Some(&frame.host),
        }
    }

    pub(crate) fn depth(&self) -> u32 {
        match self {
            Nesting::Frame(frame) => frame.depth,
            _ => 0,
        }
    }

    pub(crate) fn call(&self) -> Option<&ToolCall> {
        match self {
            Nesting::Frame(frame) => Some(&frame.call),
            _ => None,
        }
    }
}

/// What a call's nested calls share: the gate that keeps a sequential one apart from its
/// siblings, and the numbers of their ids. Made on the first nested call.
#[derive(Debug, Default)]
pub(crate) struct Children {
    pub(crate) gate: CallGate,
    next: AtomicU32,
}

impl Children {
    /// The next child's number, from 1.
    fn next(&self) -> u32 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// A nested call being set up by [`ToolContext::call_tool`]: `.await` it for the result.
///
/// ```
/// use pi_tool::{tool, ToolCall, ToolContext, ToolRegistry};
///
/// /// Add two numbers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> String {
///     (a + b).to_string()
/// }
///
/// /// Add three numbers, with `add`.
/// #[tool]
/// async fn add3(a: i64, b: i64, c: i64, ctx: ToolContext) -> Result<String, String> {
///     let ab = ctx.call_tool("add", serde_json::json!({"a": a, "b": b})).await;
///     if ab.is_error {
///         return Err(ab.text_content());
///     }
///     let ab: i64 = ab.text_content().parse().map_err(|_| "not a number")?;
///     Ok(ctx.call_tool("add", serde_json::json!({"a": ab, "b": c})).await.text_content())
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tools = ToolRegistry::new().with(AddTool).with(Add3Tool);
/// let call = ToolCall::new("c1", "add3", serde_json::json!({"a": 1, "b": 2, "c": 3}));
/// assert_eq!(tools.run(&call).await.text_content(), "6");
/// # });
/// ```
#[must_use = "a nested call runs only when awaited"]
pub struct NestedCall<'a> {
    parent: &'a ToolContext,
    name: String,
    arguments: Value,
    updates: Option<UpdateSink>,
}

impl<'a> NestedCall<'a> {
    pub(crate) fn new(parent: &'a ToolContext, name: String, arguments: Value) -> Self {
        NestedCall {
            parent,
            name,
            arguments,
            updates: None,
        }
    }

    /// Receives the nested call's partial results (by default they are dropped: a nested call
    /// emits nothing on its own; forward them with `parent.update(..)` to show them as the
    /// parent's progress).
    pub fn on_update(mut self, sink: UpdateSink) -> Self {
        self.updates = Some(sink);
        self
    }

    async fn run(self) -> ToolResult {
        let NestedCall {
            parent,
            name,
            arguments,
            updates,
        } = self;
        let Some(host) = parent.nested_host().cloned() else {
            return ToolResult::error(no_host_message(&name));
        };
        let depth = parent.nesting_depth() + 1;
        let limit = host.limits().max_nesting_depth;
        if depth > limit {
            return ToolResult::error(too_deep_message(&name, limit));
        }
        if parent.is_aborted() {
            return ToolResult::error(ABORTED);
        }
        let number = parent.children().next();
        let id = child_id(parent.tool_call_id(), number);
        let span = nested_span(&name, &id, parent.tool_call_id(), depth);
        let call = Arc::new(ToolCall::new(id, name, arguments));
        let ctx = parent.child(
            Frame {
                host: Arc::clone(&host),
                call: Arc::clone(&call),
                depth,
            },
            number,
            updates,
        );
        host.run_nested(&call, parent, ctx).instrument(span).await
    }
}

impl<'a> IntoFuture for NestedCall<'a> {
    type Output = ToolResult;
    type IntoFuture = BoxFuture<'a, ToolResult>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

impl std::fmt::Debug for NestedCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NestedCall")
            .field("parent", &self.parent.tool_call_id())
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .field("has_update_sink", &self.updates.is_some())
            .finish()
    }
}

/// The id of a parent's nested call number `number`: `<parent id>/<number>`.
fn child_id(parent: &str, number: u32) -> String {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(number);
    let mut id = String::with_capacity(parent.len() + 1 + digits.len());
    id.push_str(parent);
    id.push('/');
    id.push_str(digits);
    id
}

/// The span of a nested call: `execute_tool`, as the loop's top-level calls, with the parent's
/// id and the depth.
fn nested_span(name: &str, id: &str, parent_id: &str, depth: u32) -> tracing::Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {name}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = id,
        gen_ai.tool.type = "function",
        pi.tool.parent_call.id = parent_id,
        pi.tool.nesting_depth = depth,
    )
}

/// The error of a nested call from a context no host lent a pipeline.
fn no_host_message(name: &str) -> String {
    format!(
        "Tool {name} cannot be called from here: this call's host runs no nested calls (its \
         context was made by hand; give it one with `ToolContext::with_nested_host`, or run the \
         call through `ToolRegistry::run`)"
    )
}

/// The refusal of a call that must wait, in a host that cannot wait for a decision.
pub(crate) fn cannot_wait_message(tool: &str, kind: WaitKind) -> String {
    match kind {
        WaitKind::External => crate::external_unanswered_message(tool),
        _ => format!(
            "Tool {tool} was not run: it needs approval before it runs, and this host cannot wait \
             for a decision"
        ),
    }
}

/// The error of a nested call past the depth limit.
fn too_deep_message(name: &str, limit: u32) -> String {
    format!(
        "Nested call of tool {name} refused: calls may nest at most {limit} levels deep (does a \
         tool call itself without end?)"
    )
}
