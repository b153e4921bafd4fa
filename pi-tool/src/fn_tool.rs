//! Tools built at run time from a name, a description, a JSON Schema and an async closure: MCP
//! imports, plugins, tests. Validation is the `#[tool]` pipeline's; the schema is checked when
//! the tool is built, not on its first call. The builder says everything `#[tool]` can say
//! (label, sequential/parallel, `prepare_arguments`, `deny_unknown_fields`, timeout,
//! `blocking`, annotations, an output schema).

use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use schemars::JsonSchema;

use crate::{
    AgentTool, ApprovalRule, ArgumentValidator, BoxFuture, ExecutionMode, IntoToolResult,
    RegistryError, Replay, ToolAnnotations, ToolCallers, ToolContext, ToolError, ToolResult,
    ToolSpec, external_unanswered_message, schema_for,
};

type Handler =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolResult, ToolError>> + Send + Sync;
type Prepare = dyn Fn(Value) -> Result<Value, ToolError> + Send + Sync;

/// A tool made of a closure: the [`AgentTool`] you would otherwise write by hand.
///
/// Built with [`FnTool::builder`] or [`tool_fn`]. The model's arguments go through the same
/// steps as a `#[tool]`'s (`prepare_arguments`, normalization, validation), so a bad call gets
/// the same error text; the closure receives the validated, normalized arguments as a
/// [`Value`]. The validator is compiled at the tool's first call and kept (a tool never called,
/// a deferred one say, holds none: about 1 KB plus its spec); cloning shares the closure and
/// the validator.
///
/// ```
/// use pi_tool::{FnTool, ToolCall, ToolRegistry};
/// use serde_json::{json, Value};
///
/// let shout = FnTool::builder(
///     "shout",
///     "Repeat a text in capitals.",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
/// )
/// .label("Shout")
/// .sequential()
/// .build(|args: Value, _ctx| async move {
///     args["text"].as_str().unwrap_or_default().to_uppercase()
/// })?;
///
/// let tools = ToolRegistry::new().with(shout);
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let ok = tools.run(&ToolCall::new("c1", "shout", json!({"text": "hi"}))).await;
/// assert_eq!(ok.text_content(), "HI");
/// let bad = tools.run(&ToolCall::new("c2", "shout", json!({}))).await;
/// assert!(bad.is_error);
/// assert!(bad.text_content().contains("text: missing required property"));
/// # });
/// # Ok::<(), pi_tool::RegistryError>(())
/// ```
#[derive(Clone)]
pub struct FnTool {
    spec: Arc<ToolSpec>,
    label: Arc<str>,
    execution_mode: Option<ExecutionMode>,
    timeout: Option<Duration>,
    blocking: bool,
    annotations: ToolAnnotations,
    output_schema: Option<Arc<Value>>,
    deferred: bool,
    examples: Arc<[Value]>,
    keywords: Arc<[String]>,
    eager_input_streaming: bool,
    callers: ToolCallers,
    replay: Option<Replay>,
    aborted: Option<Arc<str>>,
    approval: Option<ApprovalRule>,
    external: bool,
    /// Compiled at the first call (or at `build`, to check the examples), then shared.
    validator: Arc<OnceLock<ArgumentValidator>>,
    prepare: Option<Arc<Prepare>>,
    handler: Arc<Handler>,
}

/// `FnTool::builder(..).build(closure)` and [`tool_fn`] in one call.
///
/// ```
/// use pi_tool::{tool_fn, AgentTool};
/// use serde_json::json;
///
/// let ping = tool_fn("ping", "Answer pong.", json!({"type": "object"}), |_args, _ctx| async {
///     "pong"
/// })?;
/// assert_eq!(ping.spec().parameters, json!({"type": "object"}));
/// # Ok::<(), pi_tool::RegistryError>(())
/// ```
pub fn tool_fn<F, Fut, R>(
    name: impl Into<String>,
    description: impl Into<String>,
    parameters: Value,
    handler: F,
) -> Result<FnTool, RegistryError>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoToolResult,
{
    FnTool::builder(name, description, parameters).build(handler)
}

impl FnTool {
    /// Starts a tool: its name (`^[a-zA-Z0-9_-]{1,64}$`, as for `#[tool]`), the description the
    /// model reads, and the JSON Schema (draft 2020-12) of its arguments, whose root must be
    /// `{"type": "object", ..}`. The spec the model sees holds exactly these (with
    /// [`deny_unknown_fields`](FnToolBuilder::deny_unknown_fields), the schema's root also says
    /// `"additionalProperties": false`).
    pub fn builder(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
    ) -> FnToolBuilder {
        FnToolBuilder {
            spec: ToolSpec {
                name: name.into(),
                description: description.into(),
                parameters,
            },
            label: None,
            execution_mode: None,
            timeout: None,
            blocking: false,
            annotations: ToolAnnotations::new(),
            output_schema: None,
            deny_unknown_fields: false,
            deferred: false,
            examples: Vec::new(),
            keywords: Vec::new(),
            eager_input_streaming: false,
            callers: ToolCallers::Both,
            replay: None,
            aborted: None,
            approval: None,
            prepare: None,
        }
    }

    /// An external tool: the model sees `name`, `description` and the `parameters` schema, and
    /// each call is answered from outside the process (a browser, a mobile app, another
    /// service). The agent loop validates the call's arguments, then pauses the run until the
    /// answer is given (`pi-runtime`'s `RunState::answer`); a host that cannot wait (a plain
    /// [`ToolRegistry::run`](crate::ToolRegistry::run)) answers it with an error saying so.
    ///
    /// ```
    /// use pi_tool::{AgentTool, FnTool};
    /// use serde_json::json;
    ///
    /// let pick = FnTool::external(
    ///     "pick_file",
    ///     "Ask the user to pick a file in their browser.",
    ///     json!({"type": "object", "properties": {"accept": {"type": "string"}}}),
    /// )?;
    /// assert!(pick.external());
    /// # Ok::<(), pi_tool::RegistryError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`FnToolBuilder::build`].
    pub fn external(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
    ) -> Result<FnTool, RegistryError> {
        let name = name.into();
        let unanswered = external_unanswered_message(&name);
        let mut tool =
            FnTool::builder(name, description, parameters).build(move |_args, _ctx| {
                let unanswered = unanswered.clone();
                async move { ToolResult::error(unanswered) }
            })?;
        tool.external = true;
        Ok(tool)
    }
}

/// Sets a [`FnTool`]'s optional parts; [`build`](Self::build) checks the spec and makes the
/// tool.
#[must_use = "a builder does nothing until `build` is called"]
pub struct FnToolBuilder {
    spec: ToolSpec,
    label: Option<String>,
    execution_mode: Option<ExecutionMode>,
    timeout: Option<Duration>,
    blocking: bool,
    annotations: ToolAnnotations,
    output_schema: Option<Value>,
    deny_unknown_fields: bool,
    deferred: bool,
    examples: Vec<Value>,
    keywords: Vec<String>,
    eager_input_streaming: bool,
    callers: ToolCallers,
    replay: Option<Replay>,
    aborted: Option<String>,
    approval: Option<ApprovalRule>,
    prepare: Option<Arc<Prepare>>,
}

impl FnToolBuilder {
    /// The display name for a UI (default: the name).
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// A call of this tool never runs next to another call (like `#[tool(sequential)]`; in
    /// the loop a batch that calls it runs one call at a time).
    pub fn sequential(self) -> Self {
        self.execution_mode(ExecutionMode::Sequential)
    }

    /// Calls of this tool may run concurrently, whatever the loop's setting (like
    /// `#[tool(parallel)]`).
    pub fn parallel(self) -> Self {
        self.execution_mode(ExecutionMode::Parallel)
    }

    /// The tool's execution mode (default: the loop's setting).
    pub fn execution_mode(mut self, mode: ExecutionMode) -> Self {
        self.execution_mode = Some(mode);
        self
    }

    /// How long one call may run (like `#[tool(timeout = "30s")]`): every host then cancels
    /// the call's token and answers `Tool <name> timed out after <timeout>`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The closure blocks its thread (like `#[tool(blocking)]`): every host runs each call on
    /// tokio's blocking pool, so other calls and the event stream go on meanwhile.
    pub fn blocking(mut self) -> Self {
        self.blocking = true;
        self
    }

    /// Hints for hosts about what the tool does (like `#[tool(read_only, idempotent)]`; MCP's
    /// `annotations`). Never sent to model providers.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// The JSON Schema of the tool's [`details`](ToolResult::details) (what `-> Json<T>`
    /// declares for a `#[tool]`; MCP's `outputSchema`). Checked when the tool is built. Return
    /// [`Json`](crate::Json) values from the closure to fill `details`.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// [`output_schema`](Self::output_schema) of `T`, as `-> Json<T>` declares it.
    pub fn output_schema_for<T: JsonSchema>(self) -> Self {
        self.output_schema(schema_for::<T>())
    }

    /// An argument the schema does not name is an error, reported with "did you mean" (like
    /// `#[tool(deny_unknown_fields)]`): `"additionalProperties": false` is added to the root of
    /// the parameters schema unless it says otherwise.
    pub fn deny_unknown_fields(mut self) -> Self {
        self.deny_unknown_fields = true;
        self
    }

    /// Defers the tool (like `#[tool(defer)]`): its schema is sent to the model only once it is
    /// loaded, by the `tool_search` tool or by a call that names it.
    pub fn deferred(mut self) -> Self {
        self.deferred = true;
        self
    }

    /// Adds example arguments (sent as Anthropic's `input_examples`, see
    /// [`AgentTool::input_examples`]). [`build`](Self::build) refuses an example that is not
    /// valid against the parameters schema.
    ///
    /// ```
    /// use pi_tool::FnTool;
    /// use serde_json::json;
    ///
    /// let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    /// let builder = || FnTool::builder("weather", "Weather in a city.", schema.clone());
    /// assert!(builder().example(json!({"city": "Paris"})).build(|_, _| async { "sunny" }).is_ok());
    /// let err = builder().example(json!({"town": "Paris"})).build(|_, _| async { "sunny" }).unwrap_err();
    /// assert!(err.to_string().contains("example 1"), "{err}");
    /// ```
    pub fn example(mut self, arguments: Value) -> Self {
        self.examples.push(arguments);
        self
    }

    /// Adds words the built-in tool search finds the tool by (see [`AgentTool::keywords`]);
    /// never sent to the model.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pi_tool::{AgentTool, FnTool, ToolSearch};
    /// use serde_json::json;
    ///
    /// let issue = FnTool::builder("create_issue", "Open an issue in a repository.", json!({"type": "object"}))
    ///     .keywords(["ticket", "bug report"])
    ///     .build(|_, _| async { "opened" })?;
    /// let tools: Vec<Arc<dyn AgentTool>> = vec![Arc::new(issue)];
    /// assert_eq!(ToolSearch::new(&tools).search("file a ticket", 5)[0].name, "create_issue");
    /// # Ok::<(), pi_tool::RegistryError>(())
    /// ```
    pub fn keywords<I, S>(mut self, keywords: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.keywords.extend(keywords.into_iter().map(Into::into));
        self
    }

    /// Lets the API stream the arguments unbuffered (see
    /// [`AgentTool::eager_input_streaming`]).
    pub fn eager_input_streaming(mut self) -> Self {
        self.eager_input_streaming = true;
        self
    }

    /// Who may call the tool (like `#[tool(callers = "code")]`): the model, code, or both (the
    /// default).
    pub fn callers(mut self, callers: ToolCallers) -> Self {
        self.callers = callers;
        self
    }

    /// What a durable host does with an interrupted call (like `#[tool(replay = "never")]`).
    pub fn replay(mut self, replay: Replay) -> Self {
        self.replay = Some(replay);
        self
    }

    /// The error text of a call aborted before it runs, or that does not answer an abort within
    /// the grace (like `#[tool(aborted = "Command aborted")]`; `Operation aborted` otherwise).
    pub fn aborted_message(mut self, text: impl Into<String>) -> Self {
        self.aborted = Some(text.into());
        self
    }

    /// Every call waits for a decision before it runs (like `#[tool(approval)]`).
    pub fn approval(self) -> Self {
        self.approval_when(|_args: &Value, _ctx: &ToolContext| true)
    }

    /// A call waits for a decision when `rule` says so, asked with the arguments as they would
    /// run (after `prepare_arguments` and validation), like `#[tool(approval = path)]`.
    pub fn approval_when<F>(mut self, rule: F) -> Self
    where
        F: Fn(&Value, &ToolContext) -> bool + Send + Sync + 'static,
    {
        self.approval = Some(Arc::new(rule));
        self
    }

    /// Rewrites the model's raw arguments before validation (an old argument shape, a
    /// stringified field), like `#[tool(prepare_arguments = path)]`. Its `Err` becomes an error
    /// result; a panic in it too.
    pub fn prepare_arguments<F, E>(mut self, prepare: F) -> Self
    where
        F: Fn(Value) -> Result<Value, E> + Send + Sync + 'static,
        E: Into<ToolError>,
    {
        self.prepare = Some(Arc::new(move |args| prepare(args).map_err(Into::into)));
        self
    }

    /// Checks the name, description and schema, and makes the tool. The schema is compiled here
    /// only to be checked (and, with [`example`](Self::example)s, to check them); the tool's
    /// validator is compiled at its first call.
    ///
    /// `handler` gets the validated arguments and the call's [`ToolContext`]; it may return
    /// anything a `#[tool]` fn may (`String`, [`ToolResult`], `Result<_, E: Display>`, ..).
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidTool`] for a name outside `^[a-zA-Z0-9_-]{1,64}$`, an empty
    /// description, a parameters schema whose root is not `{"type": "object", ..}`, or a
    /// parameters or output schema that is not valid JSON Schema (draft 2020-12).
    pub fn build<F, Fut, R>(mut self, handler: F) -> Result<FnTool, RegistryError>
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult,
    {
        if self.deny_unknown_fields
            && let Some(root) = self.spec.parameters.as_object_mut()
        {
            root.entry("additionalProperties")
                .or_insert(Value::Bool(false));
        }
        let invalid = |reason| RegistryError::InvalidTool {
            name: self.spec.name.clone(),
            reason,
        };
        check_spec(&self.spec).map_err(invalid)?;
        if let Some(schema) = &self.output_schema {
            compile(schema)
                .map_err(|err| format!("the output schema is not valid JSON Schema: {err}"))
                .map_err(invalid)?;
        }
        let validator = OnceLock::new();
        if !self.examples.is_empty() {
            let compiled = ArgumentValidator::new(&self.spec);
            crate::private::check_examples(&compiled, &self.examples).map_err(invalid)?;
            let _ = validator.set(compiled);
        }
        let validator = Arc::new(validator);
        let handler: Arc<Handler> = Arc::new(move |args, ctx| {
            let running = handler(args, ctx);
            Box::pin(async move { running.await.into_tool_result() })
        });
        Ok(FnTool {
            label: self.label.unwrap_or_else(|| self.spec.name.clone()).into(),
            spec: Arc::new(self.spec),
            execution_mode: self.execution_mode,
            timeout: self.timeout,
            blocking: self.blocking,
            annotations: self.annotations,
            output_schema: self.output_schema.map(Arc::new),
            deferred: self.deferred,
            examples: self.examples.into(),
            keywords: self.keywords.into(),
            eager_input_streaming: self.eager_input_streaming,
            callers: self.callers,
            replay: self.replay,
            aborted: self.aborted.map(Arc::from),
            approval: self.approval,
            external: false,
            validator,
            prepare: self.prepare,
            handler,
        })
    }
}

/// What `#[tool]` checks at compile time, checked here when the tool is built.
fn check_spec(spec: &ToolSpec) -> Result<(), String> {
    let name = &spec.name;
    let name_ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_ok {
        return Err(
            "the name must match `^[a-zA-Z0-9_-]{1,64}$` (what every model API accepts)".into(),
        );
    }
    if spec.description.trim().is_empty() {
        return Err(
            "the description is empty; the model reads it to decide when to call the tool".into(),
        );
    }
    let root_type = spec.parameters.as_object().map(|root| root.get("type"));
    if root_type != Some(Some(&Value::String("object".into()))) {
        return Err(format!(
            "the parameters schema must be a JSON object with `\"type\": \"object\"` at its root \
             (a model's arguments are an object); got {}",
            shorten(&spec.parameters)
        ));
    }
    // A chain of references too long to compile is refused before the compile below.
    crate::validate::check_reference_depth(&spec.parameters)
        .map_err(|reason| format!("the parameters schema cannot be compiled: {reason}"))?;
    // The same options as `ArgumentValidator`, so a schema accepted here compiles there. This
    // compiles the schema once more, at build time only: `ArgumentValidator` does not expose
    // its compile error, and would report it on every call instead.
    compile(&spec.parameters)
        .map_err(|err| format!("the parameters schema is not valid JSON Schema: {err}"))
}

/// Compiles `schema` with `ArgumentValidator`'s options, for its error.
fn compile(schema: &Value) -> Result<(), String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(false)
        .build(schema)
        .map(drop)
        .map_err(|err| err.to_string())
}

/// A value for an error message, cut to 200 characters.
fn shorten(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

impl AgentTool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn label(&self) -> &str {
        &self.label
    }

    fn execution_mode(&self) -> Option<ExecutionMode> {
        self.execution_mode
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    fn blocking(&self) -> bool {
        self.blocking
    }

    fn annotations(&self) -> ToolAnnotations {
        self.annotations
    }

    fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_deref()
    }

    fn deferred(&self) -> bool {
        self.deferred
    }

    fn input_examples(&self) -> &[Value] {
        &self.examples
    }

    fn keywords(&self) -> &[String] {
        &self.keywords
    }

    fn eager_input_streaming(&self) -> bool {
        self.eager_input_streaming
    }

    fn callers(&self) -> ToolCallers {
        self.callers
    }

    fn replay(&self) -> Option<Replay> {
        self.replay
    }

    fn aborted_message(&self) -> &str {
        self.aborted.as_deref().unwrap_or(crate::ABORTED)
    }

    fn needs_approval(&self, args: &Value, ctx: &ToolContext) -> bool {
        self.approval.as_ref().is_some_and(|rule| rule(args, ctx))
    }

    fn may_need_approval(&self) -> bool {
        self.approval.is_some()
    }

    fn external(&self) -> bool {
        self.external
    }

    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        match &self.prepare {
            Some(prepare) => prepare(args),
            None => Ok(args),
        }
    }

    fn rewrites_arguments(&self) -> bool {
        self.prepare.is_some()
    }

    fn validator(&self) -> Option<&ArgumentValidator> {
        Some(
            self.validator
                .get_or_init(|| ArgumentValidator::new(&self.spec)),
        )
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        (self.handler)(args, ctx)
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("spec", &self.spec)
            .field("label", &self.label)
            .field("execution_mode", &self.execution_mode)
            .field("timeout", &self.timeout)
            .field("blocking", &self.blocking)
            .field("annotations", &self.annotations)
            .field("output_schema", &self.output_schema)
            .field("deferred", &self.deferred)
            .field("callers", &self.callers)
            .field("replay", &self.replay)
            .field("aborted", &self.aborted)
            .field("approval", &self.approval.is_some())
            .field("external", &self.external)
            .field("prepare_arguments", &self.prepare.is_some())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for FnToolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnToolBuilder")
            .field("spec", &self.spec)
            .field("label", &self.label)
            .field("execution_mode", &self.execution_mode)
            .field("timeout", &self.timeout)
            .field("blocking", &self.blocking)
            .field("annotations", &self.annotations)
            .field("output_schema", &self.output_schema)
            .field("deny_unknown_fields", &self.deny_unknown_fields)
            .field("deferred", &self.deferred)
            .field("callers", &self.callers)
            .field("replay", &self.replay)
            .field("aborted", &self.aborted)
            .field("approval", &self.approval.is_some())
            .field("prepare_arguments", &self.prepare.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool() -> FnTool {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        FnTool::builder("count", "Counts.", schema)
            .build(|_: Value, _| async { "ok" })
            .unwrap()
    }

    /// Issue 37: the validator (20-24 KB of an idle tool's 26 KB) is compiled at the first
    /// call, once, and shared by every later call and clone, never per call.
    #[test]
    fn the_validator_is_compiled_at_the_first_call_once() {
        let tool = tool();
        assert!(tool.validator.get().is_none(), "not compiled when built");
        let copy = tool.clone();
        assert_eq!(
            crate::validate_arguments(&tool, &json!({"n": 1})).unwrap(),
            json!({"n": 1})
        );
        let first = tool.validator.get().expect("compiled at the first call");
        assert!(crate::validate_arguments(&copy, &json!({"n": "x"})).is_err());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let tool = tool.clone();
                std::thread::spawn(move || {
                    let validator = tool.validator().unwrap() as *const ArgumentValidator;
                    validator as usize
                })
            })
            .collect();
        for thread in threads {
            assert_eq!(thread.join().unwrap(), first as *const _ as usize);
        }
        assert!(std::ptr::eq(copy.validator().unwrap(), first), "shared");
    }

    /// A tool with examples compiles its validator when built, to check them, and keeps it.
    #[test]
    fn examples_are_checked_when_the_tool_is_built() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let bad = FnTool::builder("count", "Counts.", schema.clone())
            .example(json!({"n": "x"}))
            .build(|_: Value, _| async { "ok" });
        assert!(bad.is_err());
        let good = FnTool::builder("count", "Counts.", schema)
            .example(json!({"n": 2}))
            .build(|_: Value, _| async { "ok" })
            .unwrap();
        assert!(good.validator.get().is_some());
    }
}
