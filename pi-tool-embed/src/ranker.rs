//! [`EmbeddingRanker`]: pi-tool's tool search ranked by meaning, fused with its lexical ranking.

use std::sync::Arc;

use pi_tool::{AgentTool, RankQuery, Ranked, ToolRanker};

use crate::fusion::fuse;
use crate::tool_text::tool_text;
use crate::{EmbedError, EmbeddingModel};

/// The weight of the embedding side in the fused score (the lexical side has the rest). Chosen
/// on half of MetaTool's questions (the even-numbered ones) among 0.5 to 0.8; the crate's README
/// gives the figures on the other half and on ToolLens, where it was not chosen.
pub const DEFAULT_EMBEDDING_WEIGHT: f32 = 0.7;

/// A [`ToolRanker`] for [`ToolSearch::with_ranker`](pi_tool::ToolSearch::with_ranker) that
/// ranks by the meaning of the query and of each tool (cosine of their embeddings), fused with
/// the built-in lexical ranking, so "remove an old draft" finds `delete_draft` although no word
/// is shared, and a name or rare word the user typed still counts.
///
/// The tools are embedded once, in [`new`](Self::new) (a few milliseconds per tool); each
/// search embeds only its query. An empty query, or one the model fails on, is ranked by the
/// lexical ranking alone. A tool of the search that the ranker did not embed (built over
/// other tools) is ranked by its lexical score alone (its z-score, on the fused scale).
///
/// A clone shares the model and the tools' embeddings (another weight costs nothing).
#[derive(Clone)]
pub struct EmbeddingRanker {
    model: Arc<EmbeddingModel>,
    /// The embedded tools' names, sorted and unique as `ToolSearch` sorts its tools, so that
    /// position `i` here is usually tool `i` of a [`RankQuery`].
    names: Arc<[String]>,
    vectors: Arc<[Vec<f32>]>,
    weight: f32,
}

impl EmbeddingRanker {
    /// Embeds `tools` (the ones the `ToolSearch` indexes: a name given twice counts once, the
    /// first): each one's name in words, description, keywords, and parameters' names and
    /// descriptions.
    pub fn new<'a, I>(model: impl Into<Arc<EmbeddingModel>>, tools: I) -> Result<Self, EmbedError>
    where
        I: IntoIterator<Item = &'a Arc<dyn AgentTool>>,
    {
        let model = model.into();
        let mut tools: Vec<&Arc<dyn AgentTool>> = tools.into_iter().collect();
        tools.sort_by(|a, b| a.spec().name.cmp(&b.spec().name));
        tools.dedup_by(|a, b| a.spec().name == b.spec().name);
        let texts: Vec<String> = tools.iter().map(|tool| tool_text(tool.as_ref())).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = model.embed(&texts)?;
        Ok(EmbeddingRanker {
            model,
            names: tools.iter().map(|tool| tool.spec().name.clone()).collect(),
            vectors: vectors.into(),
            weight: DEFAULT_EMBEDDING_WEIGHT,
        })
    }

    /// The weight of the embedding side, from 0 (the lexical ranking alone) to 1 (the
    /// embeddings alone); default [`DEFAULT_EMBEDDING_WEIGHT`]. Clamped to that range; NaN
    /// keeps the default.
    #[must_use]
    pub fn with_embedding_weight(mut self, weight: f32) -> Self {
        if !weight.is_nan() {
            self.weight = weight.clamp(0.0, 1.0);
        }
        self
    }

    /// The weight of the embedding side.
    pub fn embedding_weight(&self) -> f32 {
        self.weight
    }

    /// How many tools are embedded.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no tool is embedded.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The model (shared: one model can serve several rankers).
    pub fn model(&self) -> &Arc<EmbeddingModel> {
        &self.model
    }

    /// The cosine of `query`'s embedding with each tool of `tools`, `None` for a tool not
    /// embedded here.
    fn similarities(&self, query: &[f32], tools: &[Arc<dyn AgentTool>]) -> Vec<Option<f32>> {
        tools
            .iter()
            .enumerate()
            .map(|(i, tool)| {
                let name = &tool.spec().name;
                let row = if self.names.get(i) == Some(name) {
                    Some(i)
                } else {
                    self.names.binary_search(name).ok()
                };
                row.map(|row| dot(query, &self.vectors[row]))
            })
            .collect()
    }
}

impl ToolRanker for EmbeddingRanker {
    fn rank(&self, query: &RankQuery<'_>) -> Vec<Ranked> {
        let limit = query.limit();
        let text = query.text().trim();
        if text.is_empty() || self.weight == 0.0 {
            return query.lexical(limit);
        }
        let Ok(embedded) = self.model.embed_one(text) else {
            return query.lexical(limit);
        };
        let tools = query.tools();
        let similarities = self.similarities(&embedded, tools);
        let mut lexical = vec![0.0; tools.len()];
        for hit in query.lexical(tools.len()) {
            if let Some(score) = lexical.get_mut(hit.index) {
                *score = hit.score;
            }
        }
        let fused = fuse(&similarities, &lexical, self.weight);
        let mut ranked: Vec<Ranked> = fused
            .into_iter()
            .enumerate()
            .map(|(index, score)| Ranked::new(index, score))
            .collect();
        // Equal scores in name order (the tools' order), as the built-in ranking does.
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        ranked.truncate(limit);
        ranked
    }

    /// A question's embedding takes milliseconds: the agent loop runs the search on tokio's
    /// blocking pool, not on a runtime thread.
    fn blocking(&self) -> bool {
        true
    }
}

impl std::fmt::Debug for EmbeddingRanker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingRanker")
            .field("tools", &self.names.len())
            .field("weight", &self.weight)
            .field("model", &self.model)
            .finish()
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
