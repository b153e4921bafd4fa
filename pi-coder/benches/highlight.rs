//! What the first code block of a session costs the terminal interface: syntect's bundled
//! grammars loaded (`SyntaxSet::load_defaults_newlines`, what `src/cli/tui/highlight.rs` does
//! once, on the first code block) and the first block highlighted (a grammar's regexes are
//! compiled on its first use), then a second block of the same language, each from a cold
//! syntax set. Run with `cargo bench -p pi-coder --bench highlight` (`-- --runs N`).

use std::time::{Duration, Instant};

use syntect::easy::HighlightLines;
use syntect::highlighting::Theme;
use syntect::parsing::SyntaxSet;

const RUST: &str = r#"use std::collections::HashMap;

/// Counts the words of a text.
pub fn count_words(text: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for word in text.split_whitespace() {
        *counts.entry(word.to_lowercase()).or_insert(0) += 1;
    }
    counts
}

fn main() {
    let counts = count_words("the quick brown fox jumps over the lazy dog");
    println!("{} words, 'the' {} times", counts.len(), counts["the"]);
}
"#;

fn highlight(set: &SyntaxSet, theme: &Theme, token: &str, code: &str) -> usize {
    let syntax = set.find_syntax_by_token(token).expect("a bundled grammar");
    let mut lines = HighlightLines::new(syntax, theme);
    code.lines()
        .map(|line| {
            lines
                .highlight_line(&format!("{line}\n"), set)
                .unwrap()
                .len()
        })
        .sum()
}

fn summary(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<44} min {:>7.2} ms  median {:>7.2} ms  max {:>7.2} ms",
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1])
    );
}

fn main() {
    let mut runs = 20;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--runs" {
            runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(runs);
        }
    }
    let theme = Theme::default();
    let (mut load, mut first, mut second, mut python) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let set = SyntaxSet::load_defaults_newlines();
        load.push(start.elapsed());
        let start = Instant::now();
        std::hint::black_box(highlight(&set, &theme, "rust", RUST));
        first.push(start.elapsed());
        let start = Instant::now();
        std::hint::black_box(highlight(&set, &theme, "rust", RUST));
        second.push(start.elapsed());
        let start = Instant::now();
        std::hint::black_box(highlight(
            &set,
            &theme,
            "python",
            "def f(x):\n    return x + 1\n",
        ));
        python.push(start.elapsed());
    }
    println!("{runs} runs, each from a new syntax set:");
    summary("load the bundled grammars", load.clone());
    summary(
        "first Rust block (16 lines, grammar compiled)",
        first.clone(),
    );
    let total = load.iter().zip(&first).map(|(a, b)| *a + *b).collect();
    summary("first code block in all (load + first)", total);
    summary("second Rust block (16 lines)", second);
    summary("first Python block (2 lines)", python);
}
