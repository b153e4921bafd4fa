//! A local Restate server for tests, examples and benchmarks: found in the test-dependency
//! cache (`.ci/install-test-deps` installs `@restatedev/restate-server` from npm), started on
//! 127.0.0.1 with free ports and a temporary base directory, stopped when dropped.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::loopback_http::{HttpError, request};

/// What went wrong starting or talking to a local Restate server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalRestateError {
    /// No `restate-server` binary was found.
    #[error(
        "no restate-server found: run .ci/install-test-deps (npm @restatedev/restate-server@1.7.12 into $PI_TEST_DEPS, default ~/.cache/pi-tool-test-deps) or set RESTATE_SERVER_BIN"
    )]
    NotInstalled,
    /// Starting the process, or creating its directory, failed.
    #[error("cannot start restate-server: {0}")]
    Io(#[from] std::io::Error),
    /// The server did not become ready.
    #[error("restate-server did not become ready within {0:?}")]
    NotReady(Duration),
    /// An admin or ingress request failed.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// The admin API refused the deployment.
    #[error("registering {uri} failed with HTTP {status}: {body}")]
    Register {
        /// The deployment's URI.
        uri: String,
        /// The admin API's status.
        status: u16,
        /// Its answer.
        body: String,
    },
}

/// Where `.ci/install-test-deps` puts the npm packages: `$PI_TEST_DEPS`, else
/// `$HOME/.cache/pi-tool-test-deps`.
pub fn test_deps_dir() -> Option<PathBuf> {
    std::env::var_os("PI_TEST_DEPS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/pi-tool-test-deps"))
        })
}

/// The `restate-server` binary: `$RESTATE_SERVER_BIN`, else the native binary of the npm
/// package's platform dependency in the test-dependency cache
/// (`node_modules/@restatedev/restate-server-<os>-<arch>/bin/restate-server`). Not the
/// package's `.bin` entry: that is a Node wrapper, and killing it would leave the server running.
pub fn find_server() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("RESTATE_SERVER_BIN") {
        return Some(PathBuf::from(bin));
    }
    let scope = test_deps_dir()?.join("node_modules/@restatedev");
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(scope)
        .ok()?
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.starts_with("restate-server-"))
        })
        .map(|entry| entry.path().join("bin/restate-server"))
        .filter(|bin| bin.is_file())
        .collect();
    candidates.sort();
    candidates.into_iter().next()
}

/// A `restate-server` process on loopback, killed (and its base directory removed) on drop.
#[derive(Debug)]
pub struct LocalRestate {
    binary: PathBuf,
    base_dir: tempfile::TempDir,
    child: Option<Child>,
    node: SocketAddr,
    /// The admin API (`/deployments`, `/health`).
    pub admin: SocketAddr,
    /// The ingress (`/<Service>/<handler>`, `/restate/awakeables/..`).
    pub ingress: SocketAddr,
}

/// How long a start may take (the first start creates the base directory's stores).
const READY_TIMEOUT: Duration = Duration::from_secs(60);

impl LocalRestate {
    /// Starts the server found by [`find_server`].
    pub fn start() -> Result<LocalRestate, LocalRestateError> {
        let binary = find_server().ok_or(LocalRestateError::NotInstalled)?;
        LocalRestate::start_binary(&binary)
    }

    /// Starts `binary` on free loopback ports with a fresh base directory.
    pub fn start_binary(binary: &Path) -> Result<LocalRestate, LocalRestateError> {
        let mut server = LocalRestate {
            binary: binary.to_owned(),
            base_dir: tempfile::Builder::new().prefix("pi-restate-").tempdir()?,
            child: None,
            node: free_port()?,
            admin: free_port()?,
            ingress: free_port()?,
        };
        server.spawn()?;
        Ok(server)
    }

    fn spawn(&mut self) -> Result<(), LocalRestateError> {
        let child = Command::new(&self.binary)
            .arg("--node-name=n1")
            .arg("--no-logo")
            .arg("--listen-mode=tcp")
            .arg("--base-dir")
            .arg(self.base_dir.path())
            .env("RESTATE_BIND_ADDRESS", self.node.to_string())
            .env(
                "RESTATE_ADVERTISED_ADDRESS",
                format!("http://{}", self.node),
            )
            .env("RESTATE_ADMIN__BIND_ADDRESS", self.admin.to_string())
            .env("RESTATE_INGRESS__BIND_ADDRESS", self.ingress.to_string())
            .env("RESTATE_LOG_FILTER", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        self.child = Some(child);
        self.wait_ready()
    }

    /// Waits until both the admin API and the ingress answer.
    fn wait_ready(&mut self) -> Result<(), LocalRestateError> {
        let started = Instant::now();
        while started.elapsed() < READY_TIMEOUT {
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(LocalRestateError::Io(std::io::Error::other(format!(
                    "restate-server exited at start: {status}"
                ))));
            }
            let admin = request(self.admin, "GET", "/health", &[], b"");
            let ingress = request(self.ingress, "GET", "/restate/health", &[], b"");
            if matches!(admin, Ok((200, _))) && matches!(ingress, Ok((200, _))) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(LocalRestateError::NotReady(READY_TIMEOUT))
    }

    /// Registers (or re-registers, `force`) the service deployment at `uri`.
    pub fn register(&self, uri: &str) -> Result<(), LocalRestateError> {
        register_deployment(self.admin, uri)
    }

    /// Kills the server (`SIGKILL`) and starts it again on the same ports and base directory:
    /// what it had journaled survives.
    pub fn restart(&mut self) -> Result<(), LocalRestateError> {
        self.kill();
        self.spawn()
    }

    /// Kills the server process, if it runs.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `http://<ingress>`.
    pub fn ingress_url(&self) -> String {
        format!("http://{}", self.ingress)
    }

    /// Sends a request to the ingress: `(status, body)`.
    pub fn ingress_request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(u16, Vec<u8>), LocalRestateError> {
        Ok(request(self.ingress, method, path, headers, body)?)
    }
}

impl Drop for LocalRestate {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Registers (or re-registers, `force`) the deployment at `uri` with the admin API at `admin`.
pub fn register_deployment(admin: SocketAddr, uri: &str) -> Result<(), LocalRestateError> {
    let body = serde_json::json!({"uri": uri, "force": true}).to_string();
    let (status, answer) = request(
        admin,
        "POST",
        "/deployments",
        &[("content-type", "application/json")],
        body.as_bytes(),
    )?;
    if !(200..300).contains(&status) {
        return Err(LocalRestateError::Register {
            uri: uri.to_owned(),
            status,
            body: String::from_utf8_lossy(&answer).into_owned(),
        });
    }
    Ok(())
}

/// Whether a Restate server answers at `admin` (`GET /health`).
pub fn is_running(admin: SocketAddr) -> bool {
    matches!(request(admin, "GET", "/health", &[], b""), Ok((200, _)))
}

/// A port nobody listens on right now.
pub fn free_port() -> std::io::Result<SocketAddr> {
    TcpListener::bind("127.0.0.1:0")?.local_addr()
}
