//! What the retrieval benchmarks share (pi-tool's, and pi-tool-embed's, which includes this
//! file): a converted data set (`tools.jsonl`, `queries.jsonl`, `SOURCE`), its tools as
//! `AgentTool`s, the plain BM25 baseline, and hits at 1, 5 and 10.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use pi_tool::{AgentTool, BoxFuture, ToolContext, ToolError, ToolResult, ToolSpec};
use serde::Deserialize;
use serde_json::Value;

/// A data set converted by `convert.py` or `convert_toollens.py`.
pub(crate) struct DataSet {
    pub(crate) tools: Vec<Tool>,
    pub(crate) questions: Vec<Question>,
    /// Where it came from (the `SOURCE` file: repository and commit).
    pub(crate) source: String,
}

impl DataSet {
    pub(crate) fn load(folder: &Path) -> Self {
        DataSet {
            tools: lines(&folder.join("tools.jsonl")),
            questions: lines(&folder.join("queries.jsonl")),
            source: std::fs::read_to_string(folder.join("SOURCE"))
                .unwrap_or_default()
                .trim()
                .to_owned(),
        }
    }

    /// The tools as `AgentTool`s (only their specs): what a search indexes.
    pub(crate) fn agent_tools(&self) -> Vec<Arc<dyn AgentTool>> {
        self.tools
            .iter()
            .map(|t| {
                Arc::new(Listed(ToolSpec {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    parameters: t.parameters.clone(),
                })) as Arc<dyn AgentTool>
            })
            .collect()
    }
}

#[derive(Deserialize)]
pub(crate) struct Tool {
    pub(crate) name: String,
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) parameters: Value,
}

#[derive(Deserialize)]
pub(crate) struct Question {
    pub(crate) query: String,
    pub(crate) gold: Vec<String>,
    pub(crate) category: String,
}

/// A tool that is only a spec: what the search indexes.
pub(crate) struct Listed(pub(crate) ToolSpec);

impl AgentTool for Listed {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn label(&self) -> &str {
        &self.0.name
    }
    fn execute(
        &self,
        _: Value,
        _: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        Box::pin(async { Ok(ToolResult::text("")) })
    }
}

pub(crate) fn lines<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("{}: {err}: {line}", path.display()))
        })
        .collect()
}

/// Textbook Okapi BM25 (k1 = 1.2, b = 0.75, Lucene's idf) over each tool's name and description
/// as one text, lowercased and split at anything not alphanumeric: no stemming, no stop words,
/// no field weights. The baseline the issue compares with.
pub(crate) struct PlainBm25 {
    postings: HashMap<String, Vec<(usize, f32)>>,
    documents: usize,
}

impl PlainBm25 {
    fn words(text: &str) -> impl Iterator<Item = String> + '_ {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
    }

    pub(crate) fn new(tools: &[Tool]) -> Self {
        let docs: Vec<Vec<String>> = tools
            .iter()
            .map(|t| Self::words(&format!("{} {}", t.name, t.description)).collect())
            .collect();
        let average = docs.iter().map(Vec::len).sum::<usize>() as f32 / docs.len().max(1) as f32;
        let mut counts: HashMap<String, Vec<(usize, f32)>> = HashMap::new();
        for (doc, words) in docs.iter().enumerate() {
            let mut tf: BTreeMap<&str, f32> = BTreeMap::new();
            for w in words {
                *tf.entry(w).or_default() += 1.0;
            }
            for (w, n) in tf {
                counts.entry(w.to_owned()).or_default().push((doc, n));
            }
        }
        let n = docs.len() as f32;
        let (k1, b) = (1.2_f32, 0.75_f32);
        let postings = counts
            .into_iter()
            .map(|(w, list)| {
                let df = list.len() as f32;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                let list = list
                    .into_iter()
                    .map(|(doc, tf)| {
                        let norm = k1 * (1.0 - b + b * docs[doc].len() as f32 / average);
                        (doc, idf * tf * (k1 + 1.0) / (tf + norm))
                    })
                    .collect();
                (w, list)
            })
            .collect();
        PlainBm25 {
            postings,
            documents: docs.len(),
        }
    }

    pub(crate) fn search(&self, query: &str, limit: usize) -> Vec<usize> {
        let mut words: Vec<String> = Self::words(query).collect();
        words.sort();
        words.dedup();
        let mut scores = vec![0.0_f32; self.documents];
        for w in &words {
            for &(doc, weight) in self.postings.get(w).into_iter().flatten() {
                scores[doc] += weight;
            }
        }
        let mut ranked: Vec<usize> = (0..self.documents).filter(|&d| scores[d] > 0.0).collect();
        ranked.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        ranked.truncate(limit);
        ranked
    }
}

/// Hits at 1, 5 and 10 of one ranker in one category.
#[derive(Default)]
pub(crate) struct Hits {
    pub(crate) questions: usize,
    at: [usize; 3],
    /// Gold tools asked for, and how many of them were in the top 5 (recall at 5: a question
    /// needing three tools with two found counts two thirds, not nothing).
    gold: usize,
    gold_in_top_5: usize,
}

impl Hits {
    pub(crate) fn add(&mut self, ranked: &[&str], gold: &[String]) {
        self.questions += 1;
        self.gold += gold.len();
        let top_5 = &ranked[..ranked.len().min(5)];
        self.gold_in_top_5 += gold.iter().filter(|g| top_5.contains(&g.as_str())).count();
        for (i, k) in [1, 5, 10].into_iter().enumerate() {
            let top = &ranked[..ranked.len().min(k)];
            // A question needing several tools counts when all of them are in the top k.
            if gold.iter().all(|g| top.contains(&g.as_str())) && gold.len() <= k {
                self.at[i] += 1;
            }
        }
    }

    pub(crate) fn percent(&self, i: usize) -> f64 {
        100.0 * self.at[i] as f64 / self.questions.max(1) as f64
    }

    pub(crate) fn recall_at_5(&self) -> f64 {
        100.0 * self.gold_in_top_5 as f64 / self.gold.max(1) as f64
    }
}
