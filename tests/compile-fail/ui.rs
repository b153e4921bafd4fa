//! Compile-fail tests: each mistake a user can make with `#[tool]` gets an error spanned on their
//! token. The cases see only what a user sees (`pi-tool`, plus serde/schemars for their types).
//!
//! Regenerate after an intended change: `TRYBUILD=overwrite cargo test -p pi-tests-compile-fail`,
//! then review `git diff tests/compile-fail/ui`.

#[rustversion::attr(
    not(stable(1.95)),
    ignore = "ui .stderr files are generated with rustc 1.95"
)]
#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/*.rs");
}
