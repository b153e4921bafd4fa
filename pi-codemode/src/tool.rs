//! The `code` tool: its spec (with the declarations, built once) and its execution.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pi_tool::{
    AgentTool, BoxFuture, ToolCallers, ToolContext, ToolError, ToolRegistry, ToolResult,
    ToolSearch, ToolSpec,
};
use serde_json::{Value, json};

use crate::catalog::Catalog;
use crate::{CodeLimits, session};

/// The name of the code tool.
pub const CODE_TOOL_NAME: &str = "code";

/// A tool whose argument is a JavaScript script that calls the other tools.
///
/// Built from the registry of the tools it may call; its description (with their TypeScript
/// declarations) is built once, here, and never changes.
pub struct CodeTool {
    spec: ToolSpec,
    /// The callable tools.
    tools: Arc<Catalog>,
    limits: CodeLimits,
    /// Engine threads of this tool's calls still running.
    engines: Arc<AtomicUsize>,
}

impl CodeTool {
    /// A code tool that may call the tools of `registry` whose [`callers`](AgentTool::callers)
    /// allow code (never another `code` tool). Its calls are nested calls
    /// ([`ToolContext::call_tool`]): they run in the pipeline of whatever host runs the `code`
    /// call, so that host must hold these tools too (register the code tool beside them). The
    /// host must run it inside a tokio runtime (the script's calls are polled inside it, on the
    /// engine's thread); outside one the call answers with an error.
    pub fn new(registry: &ToolRegistry) -> Self {
        let offered: Vec<&Arc<dyn AgentTool>> = registry
            .tools()
            .filter(|tool| tool.spec().name != CODE_TOOL_NAME && tool.callers().allows_code())
            .collect();
        let (catalog, listed) = Catalog::new(&offered);
        let mut description = format!("{DESCRIPTION}\n\n```ts\n{listed}```");
        let deferred = catalog.deferred();
        if deferred > 0 {
            description.push_str(&format!(
                "\n\n{deferred} more tool{} not listed here. Find them with `searchTools(query, {{limit}})` (an array of {{name, description}}, best first), read one's declaration with `describeTool(name)`, and call it as `tools.<name>(args)`.",
                if deferred == 1 { " is" } else { "s are" }
            ));
        }
        CodeTool {
            spec: ToolSpec {
                name: CODE_TOOL_NAME.into(),
                description,
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "script": {
                            "type": "string",
                            "description": "The body of an async JavaScript function: `await tools.<name>(args)`, then `return` what you need."
                        }
                    },
                    "required": ["script"],
                    "additionalProperties": false
                }),
            },
            tools: Arc::new(catalog),
            limits: CodeLimits::default(),
            engines: Arc::default(),
        }
    }

    /// Sets the caps scripts run under.
    #[must_use]
    pub fn with_limits(mut self, limits: CodeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the search `searchTools` runs: by default the agent loop's own
    /// ([`ToolSearch::new`]) over every tool a script may call; give the one you give the agent
    /// (e.g. [`with_ranker`](ToolSearch::with_ranker)) so that scripts and the model find
    /// alike. Matches a script may not call are passed over.
    #[must_use]
    pub fn with_search(mut self, search: ToolSearch) -> Self {
        self.tools = Arc::new(self.tools.with_search(search));
        self
    }

    /// The caps scripts run under.
    pub fn limits(&self) -> &CodeLimits {
        &self.limits
    }

    /// How many engine threads of this tool's calls are running now. A thread ends when its
    /// script is over, and soon after an aborted call is answered (the engine stops at its next
    /// look at the caps): a host can watch this to see that no script outlives its call.
    pub fn running_engines(&self) -> usize {
        self.engines.load(Ordering::SeqCst)
    }

    /// The tools a script may call, by name.
    pub fn callable(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|(name, _)| name)
    }
}

const DESCRIPTION: &str = "Run a JavaScript script: the body of an async function that calls tools with `await tools.<name>(args)` (run calls in parallel with `Promise.all`). A failed call throws an Error. Only the script's return value (as JSON), its console output and images it attaches with `attachImage(base64, mimeType)` reach you: use it to make many calls and return just what you need. There is no file system, network, timers or modules; memory and time are capped. The tools:";

impl AgentTool for CodeTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn label(&self) -> &str {
        "Code"
    }

    /// Only the model: a script never starts another script.
    fn callers(&self) -> ToolCallers {
        ToolCallers::Model
    }

    /// The tools a script calls are asked about as their own calls; the script itself never
    /// asks (a host's rule, such as `ToolRegistry::require_approval`, still can), so hosts skip
    /// the question.
    fn may_need_approval(&self) -> bool {
        false
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        let tools = Arc::clone(&self.tools);
        let limits = self.limits.clone();
        let engines = Arc::clone(&self.engines);
        Box::pin(async move {
            let Some(script) = args.get("script").and_then(Value::as_str) else {
                return Err(ToolError::new("`script` must be a string"));
            };
            if script.len() > limits.source_bytes {
                return Err(ToolError::new(format!(
                    "the script is {} bytes, past the cap of {} bytes for a script (source_bytes): write a shorter one",
                    script.len(),
                    limits.source_bytes
                )));
            }
            Ok(session::run(script.to_owned(), tools, limits, engines, ctx).await)
        })
    }
}

impl std::fmt::Debug for CodeTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeTool")
            .field("tools", &self.callable().collect::<Vec<_>>())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}
