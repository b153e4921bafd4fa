//! The servers that pi-mcp's interop tests drive, and helpers to find the test dependencies
//! (Node 22, the official MCP SDKs, the conformance suite, Python's `mcp`) installed by
//! `.ci/install-test-deps`.

use std::path::PathBuf;

/// A 1x1 red PNG, base64: the smallest real image a client can decode.
pub const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// Where `.ci/install-test-deps` put the npm and PyPI packages: `$PI_TEST_DEPS`, else
/// `$HOME/.cache/pi-tool-test-deps`. `None` (after saying so) when the folder is missing and
/// this is not CI; on CI (`CI` set) a missing folder is a failure.
pub fn test_deps() -> Option<PathBuf> {
    let dir = std::env::var_os("PI_TEST_DEPS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/pi-tool-test-deps"))
        });
    match dir {
        Some(dir) if dir.join("node22").exists() && dir.join("venv/bin/python").exists() => {
            Some(dir)
        }
        other => {
            let shown = other.map_or_else(|| "(no HOME)".to_owned(), |d| d.display().to_string());
            assert!(
                std::env::var_os("CI").is_none(),
                "the interop test dependencies are missing at {shown}: run .ci/install-test-deps"
            );
            eprintln!(
                "skipped: the interop test dependencies are missing at {shown} (run .ci/install-test-deps)"
            );
            None
        }
    }
}

/// A server process started for a test, killed when dropped.
pub struct ServerProcess {
    child: std::process::Child,
    /// The streamable HTTP endpoint it printed (`http://127.0.0.1:PORT/mcp`).
    pub url: String,
}

impl ServerProcess {
    /// Starts `exe` with `args`; it must print `listening <url>` as its first line.
    pub fn start_http(exe: &str, args: &[&str]) -> ServerProcess {
        ServerProcess::start_http_with_env(exe, args, &[])
    }

    /// [`start_http`](Self::start_http) with these environment variables set (a token).
    pub fn start_http_with_env(exe: &str, args: &[&str], env: &[(&str, &str)]) -> ServerProcess {
        use std::io::BufRead;
        let mut child = std::process::Command::new(exe)
            .args(args)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {exe}: {err}"));
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        }
        let url = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("{exe} printed {line:?} instead of `listening <url>`"))
            .to_owned();
        ServerProcess { child, url }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a client script to completion; panics with its output unless it exits with success.
pub fn run_client(what: &str, command: &mut std::process::Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|err| panic!("{what}: cannot start: {err}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}
