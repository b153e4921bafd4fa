//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.2.0-alpha.12, on
//! Node 22) in client mode against `pi-mcp-conformance-client` (McpClient), one suite run per
//! protocol revision: every scenario the revision requires (the OAuth ones against the suite's
//! own authorization servers), plus the extensions and later scenarios it runs unscored.
//!
//! The 2025-03-26 revision has no requirements file in the suite: its two sign-in scenarios
//! run as a suite filtered by that revision.
//!
//! The suite itself fails the run on a required scenario that fails unlisted, or a listed one
//! that passes; it ignores unscored scenarios in its baseline, so this test holds those to
//! `conformance/client-expected-failures-*.yaml` too.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use pi_mcp_interop::{run_client, test_deps};

/// The scenario names listed under `client:` in an expected-failures file.
fn listed(path: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|name| name.trim().to_owned())
        .collect()
}

/// `(scenario, passed)` for each line `✓ name: N passed, M failed` / `✗ name: ...` of the
/// suite's summary.
fn results(out: &str) -> Vec<(String, bool)> {
    out.lines()
        .filter_map(|line| {
            let (passed, rest) = if let Some(rest) = line.strip_prefix("✓ ") {
                (true, rest)
            } else {
                (false, line.strip_prefix("✗ ")?)
            };
            let (name, counts) = rest.split_once(": ")?;
            counts
                .contains(" passed, ")
                .then(|| (name.to_owned(), passed))
        })
        .collect()
}

/// Runs the suite for `revision` (`selection`: the suite's arguments that choose the scenarios)
/// and holds every scenario to the revision's expected-failures file.
fn client_conformance(revision: &str, selection: &[&str], must_pass: &[&str], at_least: usize) {
    let Some(deps) = test_deps() else { return };
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "conformance/client-expected-failures-{revision}.yaml"
    ));
    let expected = listed(&baseline);
    let out = run_client(
        &format!("conformance suite, client mode, {revision}"),
        Command::new(deps.join("node22"))
            .arg(deps.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
            .args(["client", "--command"])
            .arg(env!("CARGO_BIN_EXE_pi-mcp-conformance-client"))
            .args(selection)
            .arg("--expected-failures")
            .arg(&baseline),
    );
    let results = results(&out);
    assert!(
        results.len() >= at_least,
        "no suite summary of {at_least} scenarios or more found:\n{out}"
    );
    for (name, passed) in &results {
        if *passed {
            assert!(
                !expected.contains(name),
                "{name} passes now: remove it from {}\n{out}",
                baseline.display()
            );
        } else {
            assert!(
                expected.contains(name),
                "{name} failed and is not an expected failure:\n{out}"
            );
        }
    }
    for name in &expected {
        assert!(
            results.iter().any(|(ran, _)| ran == name),
            "{name} is listed in {} but the suite did not run it\n{out}",
            baseline.display()
        );
    }
    for name in must_pass {
        assert!(
            results.iter().any(|(ran, passed)| ran == name && *passed),
            "{name} did not pass:\n{out}"
        );
    }
    let auth: Vec<&str> = results
        .iter()
        .filter(|(name, passed)| name.starts_with("auth/") && *passed)
        .map(|(name, _)| name.as_str())
        .collect();
    eprintln!("{revision}: {} auth scenarios pass: {auth:?}", auth.len());
}

#[test]
fn client_conformance_2025_11_25() {
    client_conformance(
        "2025-11-25",
        &["--requirements", "2025-11-25"],
        &[
            "elicitation-sep1034-client-defaults",
            "json-schema-2020-12-preservation",
            "auth/metadata-default",
            "auth/scope-step-up",
            "auth/pre-registration",
            "auth/client-credentials-basic",
            "auth/client-credentials-jwt",
            "auth/enterprise-managed-authorization",
            "auth/dpop",
            "auth/dpop-nonce",
            "auth/wif-jwt-bearer",
        ],
        20,
    );
}

#[test]
fn client_conformance_2026_07_28() {
    client_conformance(
        "2026-07-28",
        &["--requirements", "2026-07-28"],
        &[
            "sep-2322-client-request-state",
            "json-schema-2020-12-preservation",
            "auth/authorization-server-migration",
            "auth/iss-wrong-issuer",
            "auth/resource-mismatch",
            "auth/client-credentials-basic",
            "auth/client-credentials-jwt",
            "auth/enterprise-managed-authorization",
            "auth/dpop",
            "auth/dpop-nonce",
            "auth/wif-jwt-bearer",
        ],
        20,
    );
}

/// The 2025-03-26 revision's two sign-in scenarios (the suite has no requirements file for it):
/// authorization server metadata at the server's root without protected resource metadata, and
/// no metadata at all (the default endpoints /authorize, /token, /register).
#[test]
fn client_conformance_2025_03_26() {
    client_conformance(
        "2025-03-26",
        &["--suite", "all", "--spec-version", "2025-03-26"],
        &[
            "auth/2025-03-26-oauth-metadata-backcompat",
            "auth/2025-03-26-oauth-endpoint-fallback",
        ],
        2,
    );
}
