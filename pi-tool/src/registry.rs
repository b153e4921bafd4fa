//! Tools collected at link time by `#[tool]`, or registered by hand; and the single-call runner.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::run::{execute_prepared, prepare_call_within, tool_not_found_message};
use crate::suggest::did_you_mean;
use crate::{
    AgentTool, ArgumentLimits, RegistryError, StateMap, ToolCall, ToolContext, ToolResult, ToolSpec,
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
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn AgentTool>>,
    state: StateMap,
    argument_limits: ArgumentLimits,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry::default()
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
        let tools = registrations
            .into_iter()
            .map(|registration| (registration.name.to_owned(), (registration.make)()))
            .collect();
        Ok(ToolRegistry {
            tools,
            state: StateMap::default(),
            argument_limits: ArgumentLimits::DEFAULT,
        })
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
        self.tools.insert(tool.spec().name.clone(), tool)
    }

    /// Builder form of [`register`](Self::register).
    #[must_use]
    pub fn with(mut self, tool: impl AgentTool) -> Self {
        self.register(tool);
        self
    }

    /// Removes a tool by name.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn AgentTool>> {
        self.tools.remove(name)
    }

    /// The tool with this exact (case-sensitive) name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn AgentTool>> {
        self.tools.get(name).cloned()
    }

    /// The tool with this name, borrowed.
    pub fn get_ref(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        self.tools.get(name)
    }

    /// Whether a tool has this name.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Tool specs (what the model sees), sorted by name.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|tool| tool.spec())
    }

    /// The tools, sorted by name.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn AgentTool>> {
        self.tools.values()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// A registry with only the named tools (and the same state). An unknown name is an error,
    /// with a suggestion when a registered name is close.
    pub fn subset<I, S>(&self, names: I) -> Result<ToolRegistry, RegistryError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut tools = BTreeMap::new();
        for name in names {
            let name = name.as_ref();
            let tool = self
                .tools
                .get(name)
                .ok_or_else(|| RegistryError::UnknownTool {
                    name: name.to_owned(),
                    suggestion: did_you_mean(name, self.names()),
                })?;
            tools.insert(name.to_owned(), Arc::clone(tool));
        }
        Ok(ToolRegistry {
            tools,
            state: self.state.clone(),
            argument_limits: self.argument_limits,
        })
    }

    /// Makes `value` available to every `State<T>` parameter of type `T`.
    #[must_use]
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Adds or replaces a shared state value.
    pub fn insert_state<T: Send + Sync + 'static>(&mut self, value: T) {
        self.state.insert(value);
    }

    /// The shared state.
    pub fn state(&self) -> &StateMap {
        &self.state
    }

    /// A context for one call, carrying this registry's state (add a signal or update sink with
    /// its `with_*` methods).
    pub fn context(&self, tool_call_id: &str) -> ToolContext {
        ToolContext::new(tool_call_id).with_state(self.state.clone())
    }

    /// Sets the [`ArgumentLimits`] [`run`](Self::run) checks (default
    /// [`ArgumentLimits::DEFAULT`]: 1 MiB, 64 levels).
    #[must_use]
    pub fn with_argument_limits(mut self, limits: ArgumentLimits) -> Self {
        self.argument_limits = limits;
        self
    }

    /// Runs one call through the whole pipeline without an agent loop: lookup, the
    /// [`ArgumentLimits`], `prepare_arguments`, validation, execution. Every failure (unknown tool, invalid
    /// arguments, `Err`, panic) comes back as an error result with the text the loop would send.
    pub async fn run(&self, call: &ToolCall) -> ToolResult {
        self.run_with(call, self.context(&call.id)).await
    }

    /// [`run`](Self::run) with a context of your own (an abort signal, an update sink).
    pub async fn run_with(&self, call: &ToolCall, ctx: ToolContext) -> ToolResult {
        let Some(tool) = self.tools.get(&call.name) else {
            return ToolResult::error(tool_not_found_message(&call.name, self.names()));
        };
        match prepare_call_within(tool.as_ref(), &call.arguments, &self.argument_limits) {
            Ok(prepared) => execute_prepared(tool.as_ref(), &call.arguments, prepared, ctx).await,
            Err(err) => ToolResult::error(err.message()),
        }
    }
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("state", &self.state)
            .field("argument_limits", &self.argument_limits)
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
