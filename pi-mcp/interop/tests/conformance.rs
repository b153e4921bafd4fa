//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.2.0-alpha.12, on
//! Node 22) in server mode against `pi-mcp-conformance-server`, for both protocol revisions we
//! serve. The suite fails on any failure not listed in `conformance/expected-failures-*.yaml`,
//! and on a listed one that passes.

use std::path::Path;
use std::process::Command;

use pi_mcp_interop::{ServerProcess, run_client, test_deps};

fn conformance(revision: &str) {
    let Some(deps) = test_deps() else { return };
    let server = ServerProcess::start_http(env!("CARGO_BIN_EXE_pi-mcp-conformance-server"), &[]);
    let expected = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("conformance/expected-failures-{revision}.yaml"));
    let out = run_client(
        &format!("conformance suite {revision}"),
        Command::new(deps.join("node22"))
            .arg(deps.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
            .args(["server", "--url", &server.url, "--requirements", revision])
            .arg("--expected-failures")
            .arg(&expected),
    );
    for scenario in [
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-error",
        "tools-call-with-progress",
    ] {
        assert!(
            out.contains(&format!("✓ {scenario}:")),
            "{scenario} did not pass:\n{out}"
        );
    }
}

#[test]
fn conformance_2025_11_25() {
    conformance("2025-11-25");
}

#[test]
fn conformance_2026_07_28() {
    conformance("2026-07-28");
}
