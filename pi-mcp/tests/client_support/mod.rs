//! Shared by the client interop tests: where the installed test dependencies are, and how to
//! start the servers we did not write.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_tool::{ToolContext, ToolResult};

/// The folder `.ci/install-test-deps` fills (env `PI_TEST_DEPS`, default
/// `$HOME/.cache/pi-tool-test-deps`), or `None` when it is missing outside CI (the test is then
/// skipped). In CI (env `CI` set) a missing folder fails the test.
pub fn test_deps(needs: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("PI_TEST_DEPS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/pi-tool-test-deps"))
        });
    let found = dir.filter(|dir| dir.join(needs).exists());
    if found.is_none() {
        let message = format!("test dependency `{needs}` is missing: run .ci/install-test-deps");
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        eprintln!("skipped: {message}");
    }
    found
}

/// `@modelcontextprotocol/server-everything` over stdio, run by the Node 22 the deps ship.
pub fn server_everything(deps: &std::path::Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(deps.join("node22"));
    command
        .arg(deps.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .arg("stdio");
    command
}

/// The same Python server over stdio.
pub fn python_stdio(deps: &std::path::Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(deps.join("venv/bin/python"));
    command
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/servers/python_sdk_server.py"))
        .arg("stdio");
    command
}

/// The Python SDK's server (`tests/servers/python_sdk_server.py`) on a free loopback port; the
/// process is killed when the guard drops.
pub struct PythonServer {
    pub url: String,
    child: tokio::process::Child,
}

impl PythonServer {
    pub async fn start(deps: &std::path::Path) -> PythonServer {
        PythonServer::start_script(deps, "python_sdk_server.py", &[]).await
    }

    /// `tests/servers/<script> PORT <args>` on a free loopback port.
    pub async fn start_script(deps: &std::path::Path, script: &str, args: &[&str]) -> PythonServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/servers")
            .join(script);
        let child = tokio::process::Command::new(deps.join("venv/bin/python"))
            .arg(script)
            .arg(port.to_string())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("python starts");
        // Wait until it accepts connections (bounded: a server that never comes up fails).
        let address = format!("127.0.0.1:{port}");
        within(
            Duration::from_secs(30),
            "the Python server to listen",
            async {
                while tokio::net::TcpStream::connect(&address).await.is_err() {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        )
        .await;
        PythonServer {
            url: format!("http://{address}/mcp"),
            child,
        }
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// Runs `future`, failing the test if it has not finished after `limit`: a guard against a hang,
/// not a timing assertion (the limits are far above the expected times).
pub async fn within<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(value) => value,
        Err(_) => panic!("waited {limit:?} for {what}: hung"),
    }
}

/// A context whose updates land in a vector.
pub fn recording_context(id: &str) -> (ToolContext, Arc<Mutex<Vec<ToolResult>>>) {
    let updates = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&updates);
    let ctx = ToolContext::new(id).with_updates(Arc::new(move |update| {
        sink.lock().unwrap().push(update);
    }));
    (ctx, updates)
}

/// Waits (at most a minute) until a recording context got its first update.
pub async fn first_update(updates: &Mutex<Vec<ToolResult>>) {
    within(
        Duration::from_secs(60),
        "the first progress notification",
        async {
            while updates.lock().unwrap().is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        },
    )
    .await;
}
