//! `tool_search`: the built-in tool a model calls to find deferred tools by what they do. It
//! ranks them with BM25 over their weighted fields (name, keywords, description, parameters),
//! a whole-name match first, answers the best matches with their descriptions, and loads them
//! (the agent loop sends their schemas from the next request on).

mod bm25;
mod document;
mod ranker;
mod synonyms;
mod terms;

use rustc_hash::FxHashMap;
use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{AgentTool, BoxFuture, ToolContext, ToolError, ToolResult, ToolSpec};
use bm25::Bm25;
pub use ranker::{RankQuery, Ranked, ToolRanker};
use terms::Analyzer;

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

/// A name of more terms than this is never matched whole (no tool name is that long; it
/// bounds the query's windows).
const MAX_NAME_TERMS: usize = 8;

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
    ranker: Option<Arc<dyn ToolRanker>>,
}

/// The indexed tools, sorted by name (a document's id is its position).
struct Index {
    /// The tools (shared, not copied: a catalog's schemas can be large).
    tools: Vec<Arc<dyn AgentTool>>,
    bm25: Bm25,
    /// A name's terms joined by spaces -> the tools of that name (`delet draft` ->
    /// `delete_draft`, `deleteDraft`).
    whole_names: FxHashMap<String, Vec<u32>>,
}

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchMatch {
    /// The tool's name.
    pub name: String,
    /// The tool's description.
    pub description: String,
    /// Its score (higher is better): BM25 for the built-in ranking (a tool whose whole name
    /// is in the query ranks above the others whatever their scores), the ranker's own with
    /// [`ToolSearch::with_ranker`].
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
        let mut tools: Vec<&Arc<dyn AgentTool>> = tools.into_iter().collect();
        tools.sort_by(|a, b| a.spec().name.cmp(&b.spec().name));
        tools.dedup_by(|a, b| a.spec().name == b.spec().name);
        let mut analyzer = Analyzer::new();
        let mut whole_names: FxHashMap<String, Vec<u32>> = FxHashMap::default();
        let mut documents = Vec::with_capacity(tools.len());
        for (doc, tool) in tools.iter().enumerate() {
            let (terms, name) = document::document(tool.spec(), tool.keywords(), &mut analyzer);
            if (1..=MAX_NAME_TERMS).contains(&name.len()) {
                let name: Vec<&str> = name.iter().map(|&id| analyzer.term(id)).collect();
                whole_names
                    .entry(name.join(" "))
                    .or_default()
                    .push(doc as u32);
            }
            documents.push(terms);
        }
        let index = Index {
            tools: tools.into_iter().cloned().collect(),
            bm25: Bm25::build_interned(
                documents,
                analyzer.into_vocabulary(),
                &document::FIELD_WEIGHTS,
            ),
            whole_names,
        };
        ToolSearch {
            spec: Arc::new(search_spec()),
            inner: Arc::new(index),
            ranker: None,
        }
    }

    /// The same search ranking with `ranker`, an application's own (an embedding model, usage
    /// counts): it is given the query, the indexed tools and the built-in ranking, and answers
    /// the tools to load, best first. The index is shared.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pi_tool::{tool_fn, AgentTool, RankQuery, ToolSearch};
    /// use serde_json::json;
    ///
    /// let tools: Vec<Arc<dyn AgentTool>> = ["read_file", "write_file"]
    ///     .into_iter()
    ///     .map(|name| Arc::new(tool_fn(name, "A file tool.", json!({"type": "object"}), |_, _| async { "" }).unwrap()) as Arc<dyn AgentTool>)
    ///     .collect();
    /// // Writing is what this application's users mostly mean: it goes first.
    /// let search = ToolSearch::new(&tools).with_ranker(|query: &RankQuery<'_>| {
    ///     let mut ranked = query.lexical(query.tools().len());
    ///     for hit in &mut ranked {
    ///         if query.tools()[hit.index].spec().name == "write_file" {
    ///             hit.score += 100.0;
    ///         }
    ///     }
    ///     ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    ///     ranked
    /// });
    /// assert_eq!(search.search("file", 2)[0].name, "write_file");
    /// ```
    #[must_use]
    pub fn with_ranker(mut self, ranker: impl ToolRanker) -> Self {
        self.ranker = Some(Arc::new(ranker));
        self
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
        self.inner.tools.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }

    /// Whether a tool of this name is indexed.
    pub fn contains(&self, name: &str) -> bool {
        self.inner
            .tools
            .binary_search_by(|probe| probe.spec().name.as_str().cmp(name))
            .is_ok()
    }

    /// The `limit` best matches for `query`, best first (fewer when fewer match).
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchMatch> {
        let ranked = match &self.ranker {
            None => self.inner.lexical(query, limit),
            Some(ranker) => {
                let lexical = |limit: usize| self.inner.lexical(query, limit);
                let mut ranked = ranker.rank(&RankQuery {
                    text: query,
                    limit,
                    tools: &self.inner.tools,
                    lexical: &lexical,
                });
                let mut seen = vec![false; self.inner.tools.len()];
                ranked.retain(|hit| {
                    hit.index < seen.len() && !std::mem::replace(&mut seen[hit.index], true)
                });
                ranked.truncate(limit);
                ranked
            }
        };
        ranked
            .into_iter()
            .map(|hit| {
                let spec = self.inner.tools[hit.index].spec();
                SearchMatch {
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                    score: hit.score,
                }
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

impl Index {
    /// The built-in ranking: BM25 over the query's terms, a tool whose whole name is in the
    /// query first (by the length of that name, so `search_hotels` before `search`).
    ///
    /// A name of one word counts whole only when no other tool has that word: a tool named
    /// `search` or `local` is not pulled above the others by every question that says "search"
    /// or "local" (MetaTool's questions: top 1 from 37.5% to 40.8% of 21,111 with the stop
    /// words of that change), while `calculator`, when only that tool says it, still is.
    fn lexical(&self, query: &str, limit: usize) -> Vec<Ranked> {
        let terms = terms::terms(query);
        let mut tiers: Vec<(u32, u32)> = Vec::new();
        for size in 1..=MAX_NAME_TERMS.min(terms.len()) {
            for window in terms.windows(size) {
                if size == 1 && self.bm25.document_frequency(&window[0]) > 1 {
                    continue;
                }
                if let Some(docs) = self.whole_names.get(&window.join(" ")) {
                    tiers.extend(docs.iter().map(|&doc| (doc, size as u32)));
                }
            }
        }
        tiers.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        tiers.dedup_by_key(|(doc, _)| *doc);
        let weighted = synonyms::expand(terms, &self.bm25);
        self.bm25
            .search(&weighted, &tiers, limit)
            .into_iter()
            .map(|hit| Ranked::new(hit.doc as usize, hit.score))
            .collect()
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

    /// It never asks for approval itself (a host's rule, such as
    /// [`ToolRegistry::require_approval`](crate::ToolRegistry::require_approval), still can), so hosts skip the question.
    fn may_need_approval(&self) -> bool {
        false
    }

    /// Blocking when its ranker says so ([`ToolRanker::blocking`]): the built-in ranking takes
    /// microseconds, an embedding model milliseconds.
    fn blocking(&self) -> bool {
        self.ranker.as_ref().is_some_and(|ranker| ranker.blocking())
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
            .field("tools", &self.inner.tools.len())
            .field("own_ranker", &self.ranker.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool_fn;

    fn tools(specs: &[(&str, &str)]) -> Vec<Arc<dyn AgentTool>> {
        specs
            .iter()
            .map(|(name, description)| {
                Arc::new(
                    tool_fn(
                        *name,
                        *description,
                        json!({"type": "object"}),
                        |_, _| async { "" },
                    )
                    .unwrap(),
                ) as Arc<dyn AgentTool>
            })
            .collect()
    }

    fn first(search: &ToolSearch, query: &str) -> String {
        search.search(query, 3)[0].name.clone()
    }

    #[test]
    fn a_one_word_name_counts_whole_only_when_no_other_tool_has_the_word() {
        let search = ToolSearch::new(&tools(&[
            ("search", "Design courses and workshops with mentors."),
            ("find_papers", "Search academic papers by topic."),
            ("calculator", "Evaluate a formula."),
            (
                "loan_schedule",
                "Monthly payments of a loan, by rate and term.",
            ),
        ]));
        assert!(!search.may_need_approval(), "hosts need not ask a search");
        // "search" is a word of find_papers too: the tool named so is not pulled first.
        assert_eq!(first(&search, "search academic papers"), "find_papers");
        // Only `calculator` says "calculator": naming it still puts it first.
        assert_eq!(
            first(&search, "a calculator for my loan payments"),
            "calculator"
        );
    }
}
