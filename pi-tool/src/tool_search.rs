//! `tool_search`: the built-in tool a model calls to find deferred tools by what they do. It
//! ranks them with BM25 over their names, descriptions, parameter names and parameter
//! descriptions, answers the best matches with their descriptions, and loads them (the agent
//! loop sends their schemas from the next request on).

mod bm25;
mod terms;

use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{AgentTool, BoxFuture, ToolContext, ToolError, ToolResult, ToolSpec};
use bm25::Bm25;

/// The name of the built-in search tool. When a tool of the run is already called so, the agent
/// loop offers the search as [`ToolSearch::FALLBACK_NAME`] (then `pi_tool_search_2`, ...): a
/// user's tool never switches the search off.
pub const TOOL_SEARCH_NAME: &str = "tool_search";

/// A query longer than this (in bytes) is refused: no tool description needs more, and the
/// cost of a search grows with it.
pub const MAX_QUERY_BYTES: usize = 1_000;

/// How many matches a search answers when the model does not say.
pub const DEFAULT_SEARCH_LIMIT: usize = 5;

/// The most matches one search may ask for.
pub const MAX_SEARCH_LIMIT: usize = 20;

/// A tool's name weighs this many times as much as a word of its description.
const NAME_WEIGHT: u32 = 3;

/// Longest description (in characters) quoted in a search result.
const DESCRIPTION_CHARS: usize = 300;

/// The `tool_search` tool over a fixed set of (deferred) tools.
///
/// The index is built once, in [`new`](Self::new); a search costs one pass over the postings of
/// the query's terms. Results are deterministic: equal scores are ordered by name. Its result
/// names the matches in its [`details`](ToolResult::details) (`{"query", "tools": [names]}`)
/// and in [`added_tool_names`](ToolResult::added_tool_names); the agent loop reads the details
/// back from the transcript, so a resumed session keeps what was loaded
/// ([`loaded_by_search`]).
///
/// ```
/// use std::sync::Arc;
/// use pi_tool::{tool_fn, AgentTool, ToolSearch};
/// use serde_json::json;
///
/// let weather = tool_fn("get_weather", "Current weather for a city.",
///     json!({"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}}),
///     |_, _| async { "sunny" })?;
/// let files = tool_fn("read_file", "Read a text file.", json!({"type": "object"}), |_, _| async { "" })?;
/// let tools: Vec<Arc<dyn AgentTool>> = vec![Arc::new(weather), Arc::new(files)];
/// let search = ToolSearch::new(&tools);
/// let found = search.search("what is the weather in a city", 5);
/// assert_eq!(found[0].name, "get_weather");
/// # Ok::<(), pi_tool::RegistryError>(())
/// ```
#[derive(Clone)]
pub struct ToolSearch {
    spec: Arc<ToolSpec>,
    inner: Arc<Index>,
}

/// The indexed tools, sorted by name (a document's id is its position).
struct Index {
    names: Vec<String>,
    descriptions: Vec<String>,
    bm25: Bm25,
}

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchMatch {
    /// The tool's name.
    pub name: String,
    /// The tool's description.
    pub description: String,
    /// Its BM25 score (higher is better).
    pub score: f32,
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    limit: Option<u64>,
}

impl ToolSearch {
    /// The name the agent loop gives the built-in search when a tool of the run holds
    /// [`TOOL_SEARCH_NAME`] (and `pi_tool_search_2`, `_3`, ... when that one is taken too).
    pub const FALLBACK_NAME: &'static str = "pi_tool_search";

    /// Indexes these tools (the agent loop passes the deferred ones). A name given twice is
    /// indexed once (the first).
    pub fn new<'a, I>(tools: I) -> Self
    where
        I: IntoIterator<Item = &'a Arc<dyn AgentTool>>,
    {
        let mut specs: Vec<&ToolSpec> = tools.into_iter().map(|tool| tool.spec()).collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        specs.dedup_by(|a, b| a.name == b.name);
        let index = Index {
            names: specs.iter().map(|spec| spec.name.clone()).collect(),
            descriptions: specs.iter().map(|spec| spec.description.clone()).collect(),
            bm25: Bm25::build(specs.iter().map(|spec| document(spec))),
        };
        ToolSearch {
            spec: Arc::new(search_spec()),
            inner: Arc::new(index),
        }
    }

    /// The same search offered under another name: the agent loop names it so when a tool of
    /// its own is called `tool_search` (see [`TOOL_SEARCH_NAME`]). The index is shared.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        let mut spec = (*self.spec).clone();
        spec.name = name.into();
        self.spec = Arc::new(spec);
        self
    }

    /// The name the model calls it by ([`TOOL_SEARCH_NAME`] unless [`named`](Self::named)).
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// `tool` as a `ToolSearch`, when it is one (not a user's tool that only has the name).
    pub fn of(tool: &dyn AgentTool) -> Option<&ToolSearch> {
        (tool as &dyn std::any::Any).downcast_ref()
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.inner.names.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.inner.names.is_empty()
    }

    /// Whether a tool of this name is indexed.
    pub fn contains(&self, name: &str) -> bool {
        self.inner
            .names
            .binary_search_by(|probe| probe.as_str().cmp(name))
            .is_ok()
    }

    /// The `limit` best matches for `query`, best first (fewer when fewer match).
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchMatch> {
        let query_terms = terms::terms(query);
        self.inner
            .bm25
            .search(&query_terms, limit)
            .into_iter()
            .map(|(doc, score)| SearchMatch {
                name: self.inner.names[doc as usize].clone(),
                description: self.inner.descriptions[doc as usize].clone(),
                score,
            })
            .collect()
    }

    fn answer(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let args = SearchArgs::deserialize(args).map_err(|err| {
            ToolError::new(format!(
                "{} expects {{\"query\": string, \"limit\"?: integer}}: {err}",
                self.name()
            ))
        })?;
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::new(
                "the query is empty: describe the tool you need in a few words",
            ));
        }
        if query.len() > MAX_QUERY_BYTES {
            return Err(ToolError::new(format!(
                "the query is {} bytes long; at most {MAX_QUERY_BYTES} are searched: use a few keywords",
                query.len()
            )));
        }
        let limit = match args.limit {
            None => DEFAULT_SEARCH_LIMIT,
            Some(n @ 1..) if n <= MAX_SEARCH_LIMIT as u64 => n as usize,
            Some(n) => {
                return Err(ToolError::new(format!(
                    "limit must be between 1 and {MAX_SEARCH_LIMIT}; got {n}"
                )));
            }
        };
        let found = self.search(query, limit);
        let names: Vec<&str> = found.iter().map(|m| m.name.as_str()).collect();
        let details = json!({"query": query, "tools": names});
        if found.is_empty() {
            let text = format!(
                "No tool matches \"{query}\" among {} searchable tools. Try other words.",
                self.len()
            );
            return Ok(ToolResult::new(vec![crate::Content::text(text)], details));
        }
        let mut text = format!(
            "{} tool{} found for \"{query}\", now loaded: call {} directly.\n",
            found.len(),
            if found.len() == 1 { "" } else { "s" },
            if found.len() == 1 { "it" } else { "them" },
        );
        for m in &found {
            text.push_str(&format!("\n- {}: {}", m.name, shorten(&m.description)));
        }
        let added: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        Ok(ToolResult::new(vec![crate::Content::text(text)], details).with_added_tools(added))
    }
}

/// The names a `tool_search` result loaded, read from its details (what [`ToolSearch`] writes:
/// `{"tools": [names]}`); empty for any other shape. The agent loop calls it on each
/// `tool_search` result of the transcript.
pub fn loaded_by_search(details: &Value) -> impl Iterator<Item = &str> {
    details
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The spec the model sees.
fn search_spec() -> ToolSpec {
    ToolSpec {
        name: TOOL_SEARCH_NAME.to_owned(),
        description: "Search the tools that are available but not yet loaded, by what they do. \
                      The best matches are loaded: call them directly from the next step on. \
                      Search again with other words when none fits."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What the tool should do, in a few keywords (e.g. \"create github issue\")."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_LIMIT,
                    "description": "How many tools to load (default 5)."
                }
            },
            "required": ["query"]
        }),
    }
}

/// A tool's weighted terms: its name (×[`NAME_WEIGHT`]), description, parameter names and
/// parameter descriptions (nested object properties included, a few levels deep).
fn document(spec: &ToolSpec) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = terms::terms(&spec.name)
        .into_iter()
        .map(|t| (t, NAME_WEIGHT))
        .collect();
    out.extend(terms::terms(&spec.description).into_iter().map(|t| (t, 1)));
    parameter_terms(&spec.parameters, 0, &mut out);
    out
}

fn parameter_terms(schema: &Value, depth: usize, out: &mut Vec<(String, u32)>) {
    if depth > 3 {
        return;
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        out.extend(terms::terms(name).into_iter().map(|t| (t, 1)));
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            out.extend(terms::terms(description).into_iter().map(|t| (t, 1)));
        }
        parameter_terms(property, depth + 1, out);
        if let Some(items) = property.get("items") {
            parameter_terms(items, depth + 1, out);
        }
    }
}

fn shorten(text: &str) -> String {
    let line = text.trim();
    match line.char_indices().nth(DESCRIPTION_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

impl AgentTool for ToolSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn label(&self) -> &str {
        "Tool search"
    }

    fn rewrites_arguments(&self) -> bool {
        false
    }

    fn execute(
        &self,
        args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        let answer = self.answer(&args);
        Box::pin(async move { answer })
    }

    fn execute_borrowed(
        &self,
        args: &Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        let answer = self.answer(args);
        Box::pin(async move { answer })
    }
}

impl fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSearch")
            .field("tools", &self.inner.names.len())
            .finish_non_exhaustive()
    }
}
