//! The tools a script may call: which are declared in the `code` tool's description and which
//! are deferred (left out of it, found with `searchTools`), each one's TypeScript declaration
//! (`describeTool`), and the search over them all.

use std::collections::BTreeMap;
use std::sync::Arc;

use pi_tool::{AgentTool, MAX_SEARCH_LIMIT, SearchMatch, ToolSearch};

use crate::declarations::{Declared, declaration, declarations};

/// The callable tools of one code tool, built once.
pub(crate) struct Catalog {
    tools: BTreeMap<String, Entry>,
    /// The same search the agent loop offers as `tool_search`, over every callable tool unless
    /// the host gave its own ([`Catalog::with_search`]).
    search: ToolSearch,
}

/// One callable tool.
#[derive(Clone)]
pub(crate) struct Entry {
    /// Whether a call resolves to the structured value (an output schema), not the text.
    pub(crate) structured: bool,
    /// Whether the tool is deferred: not in the description, not an own property of `tools`.
    pub(crate) deferred: bool,
    /// Its declaration, as `describeTool` answers it.
    pub(crate) declaration: String,
}

impl Catalog {
    /// The catalog of `offered`, and the declarations of its tools that are not deferred
    /// (sorted by name) for the description.
    pub(crate) fn new(offered: &[&Arc<dyn AgentTool>]) -> (Catalog, String) {
        let mut declared: Vec<(Declared<'_>, bool)> = offered
            .iter()
            .map(|tool| {
                let declared = Declared {
                    name: &tool.spec().name,
                    description: &tool.spec().description,
                    parameters: &tool.spec().parameters,
                    output: tool.output_schema(),
                };
                (declared, tool.deferred())
            })
            .collect();
        declared.sort_by(|a, b| a.0.name.cmp(b.0.name));
        declared.dedup_by(|a, b| a.0.name == b.0.name);
        let listed = declarations(
            declared
                .iter()
                .filter(|(_, deferred)| !deferred)
                .map(|(tool, _)| tool),
        );
        let tools = declared
            .iter()
            .map(|(tool, deferred)| {
                let entry = Entry {
                    structured: tool.output.is_some(),
                    deferred: *deferred,
                    declaration: declaration(tool),
                };
                (tool.name.to_owned(), entry)
            })
            .collect();
        let catalog = Catalog {
            tools,
            search: ToolSearch::new(offered.iter().copied()),
        };
        (catalog, listed)
    }

    /// The tool called `name`, if a script may call it.
    pub(crate) fn get(&self, name: &str) -> Option<&Entry> {
        self.tools.get(name)
    }

    /// Every callable tool, by name.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.tools
            .iter()
            .map(|(name, entry)| (name.as_str(), entry))
    }

    /// How many of the tools are deferred.
    pub(crate) fn deferred(&self) -> usize {
        self.tools.values().filter(|entry| entry.deferred).count()
    }

    /// The same tools, found with `search` (a host's own, e.g. with its ranker).
    pub(crate) fn with_search(&self, search: ToolSearch) -> Catalog {
        Catalog {
            tools: self.tools.clone(),
            search,
        }
    }

    /// The `limit` best matches for `query` among the tools a script may call, best first (a
    /// host's search may index others too: they are passed over).
    pub(crate) fn search(&self, query: &str, limit: usize) -> Vec<SearchMatch> {
        self.search
            .search(query, limit.max(MAX_SEARCH_LIMIT))
            .into_iter()
            .filter(|found| self.tools.contains_key(&found.name))
            .take(limit)
            .collect()
    }
}
