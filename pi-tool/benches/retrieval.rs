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

#[path = "retrieval/set.rs"]
mod set;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use pi_tool::ToolSearch;

use set::{DataSet, Hits, PlainBm25};

fn main() {
    let Some(folder) = std::env::var_os("PI_RETRIEVAL_DATA") else {
        println!(
            "retrieval: PI_RETRIEVAL_DATA is not set, nothing measured. Convert a data set with \
             pi-tool/benches/retrieval/convert.py and point PI_RETRIEVAL_DATA at its folder."
        );
        return;
    };
    let set = DataSet::load(Path::new(&folder));
    let (tools, questions) = (&set.tools, &set.questions);
    println!(
        "{} tools, {} questions; {}",
        tools.len(),
        questions.len(),
        set.source
    );

    let listed = set.agent_tools();
    let started = Instant::now();
    let search = ToolSearch::new(&listed);
    let built = started.elapsed();
    let plain = PlainBm25::new(tools);

    let mut ours: BTreeMap<&str, Hits> = BTreeMap::new();
    let mut baseline: BTreeMap<&str, Hits> = BTreeMap::new();
    let mut searching = std::time::Duration::ZERO;
    let show_misses = std::env::var_os("PI_RETRIEVAL_MISSES").is_some();
    for question in questions {
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
