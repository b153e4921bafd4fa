//! The official MCP clients against pi-mcp's server, over stdio and streamable HTTP, in both
//! protocol revisions: the Python SDK (`mcp` 2.3.0), the TypeScript SDK 1.x and 2.x. The checks
//! are in `pi-mcp/tests/clients/` (listing, valid/normalized/invalid/failing/panicking/image/
//! structured calls, an unknown tool, progress, cancellation). Over HTTP the server requires a
//! bearer token: each client first finds itself refused without it, then sends it through its
//! SDK's HTTP client options. The Python client also runs over the server's Unix socket.

use std::path::{Path, PathBuf};
use std::process::Command;

use pi_mcp_interop::{ServerProcess, run_client, test_deps};

const FIXTURE_SERVER: &str = env!("CARGO_BIN_EXE_pi-mcp-fixture-server");

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/clients")
        .join(name)
}

/// Each case runs against a fresh stdio server and against one HTTP server (the client scripts
/// read the server's cancellation count before and after, so they share it safely).
fn run_everywhere(name: &str, mut client: impl FnMut(&str, &str) -> Command, modes: &[&str]) {
    let token = pi_mcp::generate_token();
    let http =
        ServerProcess::start_http_with_env(FIXTURE_SERVER, &["http"], &[("PI_MCP_TOKEN", &token)]);
    for mode in modes {
        let out = run_client(
            &format!("{name} stdio {mode}"),
            client("stdio", mode).arg(FIXTURE_SERVER).arg(mode),
        );
        assert!(out.contains("ok "), "{out}");
        let out = run_client(
            &format!("{name} http {mode}"),
            client("http", mode)
                .env("PI_MCP_TOKEN", &token)
                .arg(&http.url)
                .arg(mode),
        );
        assert!(out.contains("refused without the token"), "{out}");
        assert!(out.contains("ok "), "{out}");
    }
}

/// Puts the transport first; the target and mode follow.
fn with_transport(mut command: Command, transport: &str) -> Command {
    command.arg(transport);
    command
}

#[test]
fn python_sdk_client() {
    let Some(deps) = test_deps() else { return };
    let python = deps.join("venv/bin/python");
    run_everywhere(
        "python",
        |transport, _| {
            let mut command = Command::new(&python);
            command.arg(script("python_client.py"));
            with_transport(command, transport)
        },
        &["auto", "legacy"],
    );
}

#[test]
fn python_sdk_client_over_a_unix_socket() {
    let Some(deps) = test_deps() else { return };
    let folder = std::env::temp_dir().join(format!("pi-mcp-interop-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let socket = folder.join("fixture.sock");
    let socket = socket.to_str().unwrap();
    let server = ServerProcess::start_http(FIXTURE_SERVER, &["unix", socket]);
    assert_eq!(server.url, format!("unix:{socket}"));
    for mode in ["auto", "legacy"] {
        let out = run_client(
            &format!("python unix {mode}"),
            Command::new(deps.join("venv/bin/python"))
                .arg(script("python_client.py"))
                .args(["unix", socket, mode])
                .env_remove("PI_MCP_TOKEN"),
        );
        assert!(out.contains("ok python unix"), "{out}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&folder);
}

fn node_client(deps: &Path, sdk: &str, transport: &str) -> Command {
    let mut command = Command::new(deps.join("node22"));
    command
        .env("PI_TEST_DEPS", deps)
        .arg(script("ts_client.mjs"))
        .arg(sdk);
    with_transport(command, transport)
}

#[test]
fn typescript_sdk_1_client() {
    let Some(deps) = test_deps() else { return };
    // SDK 1.x speaks the 2025-11-25 handshake only.
    run_everywhere(
        "ts v1",
        |transport, _| node_client(&deps, "v1", transport),
        &["legacy"],
    );
}

#[test]
fn typescript_sdk_2_client() {
    let Some(deps) = test_deps() else { return };
    run_everywhere(
        "ts v2",
        |transport, _| node_client(&deps, "v2", transport),
        &["auto", "legacy"],
    );
}
