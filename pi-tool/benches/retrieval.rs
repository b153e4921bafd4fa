//! Retrieval quality of `tool_search` on a public tool-retrieval set: for each question, is its
//! gold tool among the first 1, 5 and 10 that [`ToolSearch`] ranks, per category, beside a plain
//! textbook BM25 over the same tools computed in the same run.
//!
//! The data sets are not in the repository. Convert MetaTool's ToolE set with
//! `pi-tool/benches/retrieval/convert.py`, or ToolLens (ToolBench's real APIs, questions needing
//! two or three of them) with `pi-tool/benches/retrieval/convert_toollens.py`, into a folder
//! outside it, then:
//!
//! ```text
//! PI_RETRIEVAL_DATA=/work/data/metatool cargo bench -p pi-tool --bench retrieval
//! PI_RETRIEVAL_DATA=/work/data/toollens cargo bench -p pi-tool --bench retrieval
//! ```
//!
//! Without `PI_RETRIEVAL_DATA` it says so and measures nothing (CI does not run it). With
//! `PI_RETRIEVAL_MISSES=1` it also prints each question whose gold tools are not all in the top
//! 5, with them and the top 5, to stderr (`MISS\tquestion\tgold\ttop 5`): what to read before
//! changing the ranking.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use pi_tool::{AgentTool, BoxFuture, ToolContext, ToolError, ToolResult, ToolSearch, ToolSpec};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Tool {
    name: String,
    description: String,
    #[serde(default)]
    parameters: Value,
}

#[derive(Deserialize)]
struct Question {
    query: String,
    gold: Vec<String>,
    category: String,
}

/// A tool that is only a spec: what the search indexes.
struct Listed(ToolSpec);

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

fn lines<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
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
struct PlainBm25 {
    postings: HashMap<String, Vec<(usize, f32)>>,
    documents: usize,
}

impl PlainBm25 {
    fn words(text: &str) -> impl Iterator<Item = String> + '_ {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
    }

    fn new(tools: &[Tool]) -> Self {
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

    fn search(&self, query: &str, limit: usize) -> Vec<usize> {
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
struct Hits {
    questions: usize,
    at: [usize; 3],
    /// Gold tools asked for, and how many of them were in the top 5 (recall at 5: a question
    /// needing three tools with two found counts two thirds, not nothing).
    gold: usize,
    gold_in_top_5: usize,
}

impl Hits {
    fn add(&mut self, ranked: &[&str], gold: &[String]) {
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

    fn percent(&self, i: usize) -> f64 {
        100.0 * self.at[i] as f64 / self.questions.max(1) as f64
    }

    fn recall_at_5(&self) -> f64 {
        100.0 * self.gold_in_top_5 as f64 / self.gold.max(1) as f64
    }
}

fn main() {
    let Some(folder) = std::env::var_os("PI_RETRIEVAL_DATA") else {
        println!(
            "retrieval: PI_RETRIEVAL_DATA is not set, nothing measured. Convert a data set with \
             pi-tool/benches/retrieval/convert.py and point PI_RETRIEVAL_DATA at its folder."
        );
        return;
    };
    let folder = Path::new(&folder);
    let tools: Vec<Tool> = lines(&folder.join("tools.jsonl"));
    let questions: Vec<Question> = lines(&folder.join("queries.jsonl"));
    let source = std::fs::read_to_string(folder.join("SOURCE")).unwrap_or_default();
    println!(
        "{} tools, {} questions; {}",
        tools.len(),
        questions.len(),
        source.trim()
    );

    let listed: Vec<Arc<dyn AgentTool>> = tools
        .iter()
        .map(|t| {
            Arc::new(Listed(ToolSpec {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: t.parameters.clone(),
            })) as Arc<dyn AgentTool>
        })
        .collect();
    let started = Instant::now();
    let search = ToolSearch::new(&listed);
    let built = started.elapsed();
    let plain = PlainBm25::new(&tools);

    let mut ours: BTreeMap<&str, Hits> = BTreeMap::new();
    let mut baseline: BTreeMap<&str, Hits> = BTreeMap::new();
    let mut searching = std::time::Duration::ZERO;
    let show_misses = std::env::var_os("PI_RETRIEVAL_MISSES").is_some();
    for question in &questions {
        let started = Instant::now();
        let found = search.search(&question.query, 10);
        searching += started.elapsed();
        let names: Vec<&str> = found.iter().map(|m| m.name.as_str()).collect();
        if show_misses
            && !question
                .gold
                .iter()
                .all(|g| names[..names.len().min(5)].contains(&g.as_str()))
        {
            eprintln!(
                "MISS\t{}\t{:?}\t{:?}",
                question.query,
                question.gold,
                &names[..names.len().min(5)]
            );
        }
        let plain_names: Vec<&str> = plain
            .search(&question.query, 10)
            .into_iter()
            .map(|d| tools[d].name.as_str())
            .collect();
        for category in [question.category.as_str(), "all"] {
            ours.entry(category)
                .or_default()
                .add(&names, &question.gold);
            baseline
                .entry(category)
                .or_default()
                .add(&plain_names, &question.gold);
        }
    }

    println!();
    println!(
        "| category | questions | tool_search top 1 / 5 / 10 | its recall at 5 | plain BM25 top 1 / 5 / 10 | its recall at 5 |"
    );
    println!("|---|---|---|---|---|---|");
    for (category, hits) in &ours {
        let plain = &baseline[category];
        println!(
            "| {category} | {} | {:.1}% / {:.1}% / {:.1}% | {:.1}% | {:.1}% / {:.1}% / {:.1}% | {:.1}% |",
            hits.questions,
            hits.percent(0),
            hits.percent(1),
            hits.percent(2),
            hits.recall_at_5(),
            plain.percent(0),
            plain.percent(1),
            plain.percent(2),
            plain.recall_at_5(),
        );
    }
    println!();
    println!(
        "index built in {:.2} ms; {:.1} µs per question on average (this profile)",
        built.as_secs_f64() * 1e3,
        searching.as_secs_f64() * 1e6 / questions.len().max(1) as f64
    );
}
