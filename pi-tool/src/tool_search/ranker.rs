//! An application's own ranking for [`ToolSearch`](super::ToolSearch): a callback that orders
//! the indexed tools for a query, given the built-in lexical ranking to start from or to blend
//! with (an embedding model, usage counts, a tenant's favourites).

use std::sync::Arc;

use crate::AgentTool;

/// Orders the indexed tools for a query: see [`ToolSearch::with_ranker`](super::ToolSearch::with_ranker).
/// A closure `Fn(&RankQuery<'_>) -> Vec<Ranked>` is one.
pub trait ToolRanker: Send + Sync + 'static {
    /// The best tools for `query`, best first: at most [`RankQuery::limit`] are used; an index
    /// out of range or given twice is skipped.
    fn rank(&self, query: &RankQuery<'_>) -> Vec<Ranked>;

    /// Whether [`rank`](Self::rank) works the CPU for long (milliseconds: an embedding model):
    /// the [`ToolSearch`](super::ToolSearch) is then a [blocking](AgentTool::blocking) tool,
    /// which the agent loop runs on tokio's blocking pool instead of a runtime thread. Default
    /// `false`.
    fn blocking(&self) -> bool {
        false
    }
}

impl<F> ToolRanker for F
where
    F: Fn(&RankQuery<'_>) -> Vec<Ranked> + Send + Sync + 'static,
{
    fn rank(&self, query: &RankQuery<'_>) -> Vec<Ranked> {
        self(query)
    }
}

/// What a [`ToolRanker`] ranks for: the query, how many tools are wanted, the indexed tools and
/// the built-in ranking of them.
pub struct RankQuery<'a> {
    pub(super) text: &'a str,
    pub(super) limit: usize,
    pub(super) tools: &'a [Arc<dyn AgentTool>],
    pub(super) lexical: &'a dyn Fn(usize) -> Vec<Ranked>,
}

impl RankQuery<'_> {
    /// The query as the model wrote it.
    pub fn text(&self) -> &str {
        self.text
    }

    /// How many tools the search answers.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The indexed tools, sorted by name; a [`Ranked::index`] is a position in this list.
    /// Each is the tool itself: its spec, its [keywords](AgentTool::keywords), its
    /// annotations.
    pub fn tools(&self) -> &[Arc<dyn AgentTool>] {
        self.tools
    }

    /// The built-in ranking's best `limit` tools (what the search answers without a ranker).
    pub fn lexical(&self, limit: usize) -> Vec<Ranked> {
        (self.lexical)(limit)
    }
}

/// A tool a [`ToolRanker`] ranked: its position in [`RankQuery::tools`] and its score (higher
/// is better; reported in [`SearchMatch::score`](super::SearchMatch::score)).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Ranked {
    /// The tool's position in [`RankQuery::tools`].
    pub index: usize,
    /// Its score.
    pub score: f32,
}

impl Ranked {
    /// The tool at `index` of [`RankQuery::tools`], with `score`.
    pub fn new(index: usize, score: f32) -> Self {
        Ranked { index, score }
    }
}
