//! Compile-fail tests: each mistake a user can make with `#[tool]` gets an error spanned on their
//! token. The cases see only what a user sees (`pi-tool`, plus serde/schemars for their types).
//!
//! Regenerate after an intended change: `TRYBUILD=overwrite cargo test -p pi-tests-compile-fail`,
//! then review `git diff tests/compile-fail/ui`.

use std::path::Path;

#[rustversion::attr(
    not(stable(1.95)),
    ignore = "ui .stderr files are generated with rustc 1.95"
)]
#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/*.rs");
    // Keys that must compile (and whose generated methods answer as documented when run).
    cases.pass("pass/*.rs");
}

/// The root README says how many cases there are ("the 47 compile-fail cases"): every such
/// figure must be the number of `ui/*.rs` files, and there must be at least one.
#[test]
fn the_readme_counts_the_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cases = std::fs::read_dir(dir.join("ui"))
        .expect("ui/ is readable")
        .filter_map(Result::ok)
        .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "rs"))
        .count();
    let readme = std::fs::read_to_string(dir.join("../../README.md")).expect("README.md");
    let marker = " compile-fail cases";
    let figures: Vec<usize> = readme
        .match_indices(marker)
        .filter_map(|(at, _)| {
            let before = &readme[..at];
            let digits = before.len() - before.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            before[before.len() - digits..].parse().ok()
        })
        .collect();
    assert!(!figures.is_empty(), "README.md gives no \"N{marker}\"");
    assert!(
        figures.iter().all(|figure| *figure == cases),
        "README.md says {figures:?}{marker}; tests/compile-fail/ui has {cases}"
    );
}
