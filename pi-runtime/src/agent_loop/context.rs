//! What a run starts from: the system prompt, the transcript and the tools.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use pi_tool::{AgentTool, ExecutionMode, StateMap, ToolRegistry, ToolSpec};

use crate::message::Message;

/// The state a run starts from (pi's `AgentContext`): the system prompt, the transcript, the
/// tools offered to the model, and a registry of further tools a call may activate.
///
/// ```
/// use pi_runtime::{AgentContext, Message};
/// use pi_tool::ToolRegistry;
///
/// let context = AgentContext::new("You are terse.")
///     .with_registry(ToolRegistry::new())
///     .with_messages(vec![Message::user("hello")]);
/// assert_eq!(context.messages.len(), 1);
/// ```
#[derive(Clone, Default)]
pub struct AgentContext {
    /// The system prompt.
    pub system_prompt: String,
    /// The transcript so far.
    pub messages: Vec<Arc<Message>>,
    /// The tools offered to the model, in order. When two share a name the first is used.
    pub tools: Vec<Arc<dyn AgentTool>>,
    /// Tools a result's `added_tool_names` can bring into the following turns (looked up by
    /// name); its state is also handed to every call.
    pub available: ToolRegistry,
    /// Shared state for `State<T>` parameters (added to the registry's state).
    pub state: StateMap,
}

impl AgentContext {
    /// A context with a system prompt and nothing else.
    pub fn new(system_prompt: impl Into<String>) -> Self {
        AgentContext {
            system_prompt: system_prompt.into(),
            ..AgentContext::default()
        }
    }

    /// Offers every tool of `registry` (sorted by name) and keeps the registry for
    /// `added_tool_names` and its state.
    #[must_use]
    pub fn with_registry(mut self, registry: ToolRegistry) -> Self {
        self.tools.extend(registry.tools().cloned());
        self.available = registry;
        self
    }

    /// Keeps `registry` for `added_tool_names` (and its state) without offering its tools yet.
    #[must_use]
    pub fn with_available(mut self, registry: ToolRegistry) -> Self {
        self.available = registry;
        self
    }

    /// Offers these tools, in this order, after any already offered.
    #[must_use]
    pub fn with_tools<I>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = Arc<dyn AgentTool>>,
    {
        self.tools.extend(tools);
        self
    }

    /// Offers one more tool.
    #[must_use]
    pub fn with_tool(mut self, tool: impl AgentTool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Appends messages to the transcript.
    #[must_use]
    pub fn with_messages<I>(mut self, messages: I) -> Self
    where
        I: IntoIterator<Item = Message>,
    {
        self.messages.extend(messages.into_iter().map(Arc::new));
        self
    }

    /// Makes `value` available to `State<T>` parameters.
    #[must_use]
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }
}

impl fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentContext")
            .field("system_prompt", &self.system_prompt)
            .field("messages", &self.messages.len())
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.spec().name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("available", &self.available)
            .field("state", &self.state)
            .finish()
    }
}

/// The active tools of a run: the list, the specs the model sees, and a by-name index (first
/// definition of a name wins, like pi's `tools.find`). Shared with the batch's nested calls;
/// copied only when a result activates a tool while a copy is held.
#[derive(Clone)]
pub(crate) struct ToolSet {
    tools: Vec<Arc<dyn AgentTool>>,
    /// The registry's own shared copy when the run offers exactly its tools (so runs over one
    /// catalog hold one copy); otherwise the run's.
    specs: Arc<[ToolSpec]>,
    index: HashMap<String, usize>,
    /// Some tool asks for sequential execution (else a batch need not look its calls up).
    any_sequential: bool,
}

/// Below this many tools a linear scan beats hashing the name.
const LINEAR_LOOKUP_MAX: usize = 8;

impl ToolSet {
    /// The set of `tools`; `registry` lends its shared specs when `tools` are exactly its own.
    pub(crate) fn new(tools: Vec<Arc<dyn AgentTool>>, registry: &ToolRegistry) -> Self {
        let specs = if tools.len() == registry.len()
            && tools
                .iter()
                .zip(registry.tools())
                .all(|(tool, registered)| Arc::ptr_eq(tool, registered))
        {
            registry.shared_specs()
        } else {
            tools.iter().map(|tool| tool.spec().clone()).collect()
        };
        let mut set = ToolSet {
            tools: Vec::with_capacity(tools.len()),
            specs,
            index: HashMap::new(),
            any_sequential: false,
        };
        for tool in tools {
            set.index_tool(&tool);
            set.tools.push(tool);
        }
        set
    }

    /// Indexes a tool that is about to be appended (its spec is in `specs` already).
    fn index_tool(&mut self, tool: &Arc<dyn AgentTool>) {
        let name = &tool.spec().name;
        if !self.index.contains_key(name) {
            self.index.insert(name.clone(), self.tools.len());
        }
        self.any_sequential |= tool.execution_mode() == Some(ExecutionMode::Sequential);
    }

    /// Appends a tool: its spec makes the run's own copy of the specs (a rare event: a result
    /// activating a tool the set lacks).
    fn push(&mut self, tool: Arc<dyn AgentTool>) {
        self.index_tool(&tool);
        let mut specs = self.specs.to_vec();
        specs.push(tool.spec().clone());
        self.specs = specs.into();
        self.tools.push(tool);
    }

    /// The first tool with exactly this name.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        if self.tools.len() <= LINEAR_LOOKUP_MAX {
            // The names are compared in `specs` (no call through the tool's vtable).
            let index = self.specs.iter().position(|spec| spec.name == name)?;
            self.tools.get(index)
        } else {
            self.index.get(name).map(|&i| &self.tools[i])
        }
    }

    /// Activates a tool unless one of that name is already active; returns whether it was added.
    pub(crate) fn activate(&mut self, tool: Arc<dyn AgentTool>) -> bool {
        if self.index.contains_key(&tool.spec().name) {
            return false;
        }
        self.push(tool);
        true
    }

    /// Whether some tool asks for sequential execution.
    pub(crate) fn any_sequential(&self) -> bool {
        self.any_sequential
    }

    /// The tools, in order (duplicates of a name included).
    pub(crate) fn tools(&self) -> &[Arc<dyn AgentTool>] {
        &self.tools
    }

    pub(crate) fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.specs.iter().map(|spec| spec.name.as_str())
    }
}
