//! What a request says about its tools beyond their [`ToolSpec`]s: how deferred tools are
//! searched, which tools are deferred, their examples and streaming choice, and each tool's
//! lowered schemas, computed once per tool.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use pi_tool::{AgentTool, ArgumentValidator, ToolCallers, ToolSpec};
use serde_json::{Value, json};

use crate::providers::{Lowered, SchemaMode, lower_schema};

/// How the model finds deferred tools ([`AgentTool::deferred`]).
///
/// Set it in [`StreamOptions::tool_search`](crate::StreamOptions::tool_search). The native modes
/// apply to the APIs that have a search of their own (Anthropic Messages, OpenAI Responses:
/// [`Model::native_tool_search`](crate::Model::native_tool_search)); every other API keeps the
/// local search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolSearchMode {
    /// pi-tool's `tool_search`, run by the agent loop (BM25 over the deferred tools): deferred
    /// schemas are held back until the transcript loads them. Works with every API.
    #[default]
    Local,
    /// The API's own search: every deferred tool is sent with `defer_loading: true`, with the
    /// API's search tool (Anthropic `tool_search_tool_bm25_20251119`; OpenAI Responses' hosted
    /// `tool_search`), and the local `tool_search` is not offered. The API's search blocks are
    /// kept in the transcript and replayed.
    Native,
    /// As [`Native`](Self::Native), with Anthropic's regex search
    /// (`tool_search_tool_regex_20251119`); OpenAI has one search, used for both.
    NativeRegex,
}

impl ToolSearchMode {
    /// Whether the API's own search is asked for.
    pub fn is_native(self) -> bool {
        !matches!(self, ToolSearchMode::Local)
    }
}

/// A request's tools as an API with its own search takes them: those sent as usual, in order,
/// and the deferred ones, which go after the API's search tool with `defer_loading`. The second
/// list is empty (and every tool sent as usual) unless the native search is asked for and some
/// tool is deferred.
pub(crate) fn split_for_native_search<'a>(
    specs: &'a [ToolSpec],
    options: &crate::StreamOptions,
) -> (Vec<&'a ToolSpec>, Vec<&'a ToolSpec>) {
    if !options.tool_search.is_native() {
        return (specs.iter().collect(), Vec::new());
    }
    specs
        .iter()
        .partition(|spec| !options.tools.is_deferred(&spec.name))
}

/// Whether a request offers the API's own code runner: asked for
/// ([`StreamOptions::native_code_calls`](crate::StreamOptions::native_code_calls)), and some
/// tool of the request (sent or deferred) lets code call it.
pub(crate) fn offers_code_runner(specs: &[ToolSpec], options: &crate::StreamOptions) -> bool {
    options.native_code_calls
        && specs
            .iter()
            .any(|spec| options.tools.callers(&spec.name).allows_code())
}

/// A tool's `allowed_callers` for an API whose code runner calls as `code_caller`
/// (`"programmatic"`, `"code_execution_20260120"`): with the code runner asked for, `["direct",
/// code_caller]` for a tool both may call and `[code_caller]` for a code-only one; `None`
/// otherwise (a model-only tool is the API's default, the model's direct call).
pub(crate) fn allowed_callers(
    name: &str,
    options: &crate::StreamOptions,
    code_caller: &'static str,
) -> Option<Value> {
    if !options.native_code_calls {
        return None;
    }
    let callers = options.tools.callers(name);
    match (callers.allows_model(), callers.allows_code()) {
        (true, true) => Some(json!(["direct", code_caller])),
        (false, true) => Some(json!([code_caller])),
        _ => None,
    }
}

/// What requests know about each tool beyond its spec, by name: whether it is deferred, and its
/// schema lowered for each API, computed on first use and then shared by every request that
/// carries the same [`RequestTools`] (the agent loop builds one per run).
///
/// Set [`StreamOptions::tools`](crate::StreamOptions::tools) to one when calling a provider
/// directly:
///
/// ```
/// use std::sync::Arc;
/// use pi_runtime::RequestTools;
/// use pi_tool::{AgentTool, FnTool};
/// use serde_json::json;
///
/// let tool: Arc<dyn AgentTool> = Arc::new(
///     FnTool::builder("lookup", "Looks a thing up.", json!({"type": "object"}))
///         .deferred()
///         .build(|_, _| async { "found" })
///         .unwrap(),
/// );
/// let tools = RequestTools::of(&[tool]);
/// assert!(tools.is_deferred("lookup"));
/// assert!(!tools.is_deferred("other"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct RequestTools {
    by_name: Arc<HashMap<String, Arc<ToolWire>>>,
}

impl RequestTools {
    /// The information of `tools` (the first of two with one name wins, as in the loop).
    pub fn of(tools: &[Arc<dyn AgentTool>]) -> Self {
        RequestTools::default().updated(tools)
    }

    /// The information of `tools`, keeping this cache's entries (and the schemas already
    /// lowered in them) for the tools that are in both: a tool set that changes during a run
    /// lowers only its new tools.
    pub fn updated(&self, tools: &[Arc<dyn AgentTool>]) -> Self {
        let mut by_name = HashMap::with_capacity(tools.len());
        for tool in tools {
            by_name.entry(tool.spec().name.clone()).or_insert_with(|| {
                match self.by_name.get(&tool.spec().name) {
                    Some(wire) if Arc::ptr_eq(&wire.tool, tool) => Arc::clone(wire),
                    _ => Arc::new(ToolWire::of(tool)),
                }
            });
        }
        RequestTools {
            by_name: Arc::new(by_name),
        }
    }

    /// Whether the tool named `name` is deferred.
    pub fn is_deferred(&self, name: &str) -> bool {
        self.by_name.get(name).is_some_and(|wire| wire.deferred)
    }

    /// The example arguments sent for the tool named `name` (those valid against its schema).
    pub fn examples(&self, name: &str) -> &[Value] {
        self.by_name
            .get(name)
            .map_or(&[], |wire| wire.examples.as_slice())
    }

    /// Whether the tool named `name` asks for unbuffered argument streaming.
    pub fn eager_input_streaming(&self, name: &str) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|wire| wire.eager_input_streaming)
    }

    /// Who may call the tool named `name` ([`ToolCallers::Both`] for a tool not in the cache).
    pub fn callers(&self, name: &str) -> ToolCallers {
        self.by_name
            .get(name)
            .map_or(ToolCallers::Both, |wire| wire.callers)
    }

    /// Whether any tool is deferred.
    pub fn any_deferred(&self) -> bool {
        self.by_name.values().any(|wire| wire.deferred)
    }

    /// The cached entry for `spec`, when it is the spec the entry was built from.
    fn entry(&self, spec: &ToolSpec) -> Option<&ToolWire> {
        self.by_name
            .get(&spec.name)
            .map(Arc::as_ref)
            .filter(|wire| wire.tool.spec().parameters == spec.parameters)
    }

    /// `spec`'s schema lowered to `mode`: from the cache when `spec` is a known tool's, else
    /// lowered now.
    pub(crate) fn lowered(&self, spec: &ToolSpec, mode: SchemaMode) -> Arc<Lowered> {
        let lower = || Arc::new(lower_schema(&spec.parameters, mode));
        match self.entry(spec) {
            Some(wire) => {
                let slot = match mode {
                    SchemaMode::OpenAiStrict => &wire.openai_strict,
                    SchemaMode::Anthropic => &wire.anthropic,
                    SchemaMode::Gemini => &wire.gemini,
                };
                Arc::clone(slot.get_or_init(lower))
            }
            None => lower(),
        }
    }
}

/// One tool's entry in [`RequestTools`].
struct ToolWire {
    deferred: bool,
    callers: ToolCallers,
    /// The tool's examples that pass its own validation.
    examples: Vec<Value>,
    eager_input_streaming: bool,
    /// The tool whose schema the lowered forms come from (a spec with the same name but another
    /// schema is lowered afresh).
    tool: Arc<dyn AgentTool>,
    openai_strict: OnceLock<Arc<Lowered>>,
    anthropic: OnceLock<Arc<Lowered>>,
    gemini: OnceLock<Arc<Lowered>>,
}

impl ToolWire {
    fn of(tool: &Arc<dyn AgentTool>) -> Self {
        ToolWire {
            deferred: tool.deferred(),
            callers: tool.callers(),
            examples: valid_examples(tool.as_ref()),
            eager_input_streaming: tool.eager_input_streaming(),
            tool: Arc::clone(tool),
            openai_strict: OnceLock::new(),
            anthropic: OnceLock::new(),
            gemini: OnceLock::new(),
        }
    }
}

/// The tool's examples that its own validation accepts. Tools built by `FnTool` and `#[tool]`
/// were checked already; any other that slipped one through is told in the log, and the example
/// is not sent (a wrong example would teach the model a wrong call).
fn valid_examples(tool: &dyn AgentTool) -> Vec<Value> {
    let examples = tool.input_examples();
    if examples.is_empty() {
        return Vec::new();
    }
    let owned;
    let validator = match tool.validator() {
        Some(validator) => validator,
        None => {
            owned = ArgumentValidator::new(tool.spec());
            &owned
        }
    };
    examples
        .iter()
        .filter(|example| match validator.check_example(example) {
            Ok(()) => true,
            Err(error) => {
                tracing::error!(tool = %tool.spec().name, %error, "an input example does not match the tool's schema; not sent");
                false
            }
        })
        .cloned()
        .collect()
}

impl std::fmt::Debug for ToolWire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolWire")
            .field("tool", &self.tool.spec().name)
            .field("deferred", &self.deferred)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, schema: Value) -> Arc<dyn AgentTool> {
        Arc::new(
            pi_tool::FnTool::builder(name, "A tool.", schema)
                .build(|_, _| async { "ok" })
                .unwrap(),
        )
    }

    #[test]
    fn a_tools_lowered_schema_is_computed_once_and_shared() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let tools = RequestTools::of(&[tool("t", schema.clone())]);
        let spec = ToolSpec {
            name: "t".into(),
            description: "A tool.".into(),
            parameters: schema,
        };
        for mode in SchemaMode::ALL {
            let first = tools.lowered(&spec, mode);
            // A later request (a clone, as each run's options are) finds the same one.
            let again = tools.clone().lowered(&spec, mode);
            assert!(Arc::ptr_eq(&first, &again), "{mode}");
        }
    }

    #[test]
    fn a_spec_that_is_not_the_tools_own_is_lowered_afresh() {
        let tools = RequestTools::of(&[tool("t", json!({"type": "object"}))]);
        let other = ToolSpec {
            name: "t".into(),
            description: "Another tool of that name.".into(),
            parameters: json!({"type": "object", "properties": {"b": {"type": "integer"}}}),
        };
        let lowered = tools.lowered(&other, SchemaMode::OpenAiStrict);
        assert_eq!(lowered.schema["required"], json!(["b"]));
        let again = tools.lowered(&other, SchemaMode::OpenAiStrict);
        assert!(
            !Arc::ptr_eq(&lowered, &again),
            "not cached under the tool's name"
        );
    }
}
