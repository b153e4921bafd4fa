//! What the durable-run tests share: a local OpenAI-compatible mock model server that counts
//! requests, the Restate server, the fixture service process, and the ledger the tools write.
#![allow(dead_code)] // each test binary uses part of it

pub(crate) mod mock_model;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pi_restate::local::{LocalRestate, LocalRestateError, free_port};
use serde_json::Value;

/// Starts a Restate server, or says why not: skipped locally, a failure on CI (`CI` set).
pub(crate) fn restate() -> Option<LocalRestate> {
    match LocalRestate::start() {
        Ok(server) => Some(server),
        Err(LocalRestateError::NotInstalled) => {
            let why = LocalRestateError::NotInstalled.to_string();
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("skipped: {why}");
            None
        }
        Err(err) => panic!("the Restate server did not start: {err}"),
    }
}

/// The fixture service process (`tests/fixture/service.rs`) on a fixed port, so that a
/// restarted process answers at the deployment URL Restate knows.
pub(crate) struct Service {
    child: Option<Child>,
    port: u16,
    env: Vec<(String, String)>,
}

impl Service {
    /// Starts the service with these environment variables (see the fixture's docs).
    pub(crate) fn start(env: &[(&str, &str)]) -> Service {
        let port = free_port().expect("a free port").port();
        let mut service = Service {
            child: None,
            port,
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        service.spawn();
        service
    }

    fn spawn(&mut self) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pi-restate-fixture-service"))
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("PI_FIXTURE_PORT", self.port.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the fixture service starts");
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = BufReader::new(stdout).read_line(&mut line);
        }
        assert!(
            line.starts_with("ready"),
            "the fixture service said {line:?}"
        );
        self.child = Some(child);
    }

    /// The deployment URL to register.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `kill -9`: the process gets no chance to finish anything.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill(); // SIGKILL on Unix
            let _ = child.wait();
        }
    }

    /// Starts the process again on the same port.
    pub(crate) fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The ledger's lines (`start <label> <key>` / `done <label> <key>`).
pub(crate) fn ledger_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until `ready(lines)` holds for the ledger (or panics after a minute).
pub(crate) fn wait_for_ledger(path: &Path, what: &str, ready: impl Fn(&[String]) -> bool) {
    wait_for(what, || ready(&ledger_lines(path)));
}

/// Polls `ready` until it holds (or panics after a minute, naming `what`).
pub(crate) fn wait_for(what: &str, ready: impl Fn() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many ledger lines are exactly `line`.
pub(crate) fn count(lines: &[String], line: &str) -> usize {
    lines.iter().filter(|l| *l == line).count()
}

/// A fresh ledger path in `dir`.
/// The session service most tests run: its model at `model_url`, its tools writing to a ledger
/// in `dir`, registered with `restate`. Returns the ledger's path and the running service.
pub(crate) fn start_session_service(
    restate: &LocalRestate,
    dir: &tempfile::TempDir,
    model_url: &str,
) -> (PathBuf, Service) {
    let ledger = ledger_in(dir);
    let service = Service::start(&[
        ("PI_FIXTURE_MODEL_URL", model_url),
        ("PI_FIXTURE_LEDGER", ledger.to_str().expect("utf-8 path")),
    ]);
    restate.register(&service.url()).expect("registered");
    (ledger, service)
}

pub(crate) fn ledger_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("ledger.txt")
}

/// Sends a prompt to session `session` through the ingress; returns the response body as JSON.
pub(crate) fn prompt(
    restate: &LocalRestate,
    session: &str,
    text: &str,
    idempotency_key: Option<&str>,
) -> Result<Value, String> {
    prompt_at(restate.ingress, session, text, idempotency_key)
}

/// [`prompt`] to the ingress at `ingress` (for a thread that must not borrow the server).
pub(crate) fn prompt_at(
    ingress: std::net::SocketAddr,
    session: &str,
    text: &str,
    idempotency_key: Option<&str>,
) -> Result<Value, String> {
    let mut headers = vec![("content-type", "application/json")];
    if let Some(key) = idempotency_key {
        headers.push(("idempotency-key", key));
    }
    let body = serde_json::to_vec(text).map_err(|err| err.to_string())?;
    let (status, answer) = pi_restate::loopback_http::request(
        ingress,
        "POST",
        &format!("/PiSession/{session}/prompt"),
        &headers,
        &body,
    )
    .map_err(|err| err.to_string())?;
    if status != 200 {
        return Err(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&answer)
        ));
    }
    serde_json::from_slice(&answer).map_err(|err| err.to_string())
}

/// The stored transcript of a session.
pub(crate) fn transcript(restate: &LocalRestate, session: &str) -> Vec<pi_runtime::Message> {
    let (status, answer) = restate
        .ingress_request(
            "POST",
            &format!("/PiSession/{session}/transcript"),
            &[],
            b"",
        )
        .expect("the transcript handler answers");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    serde_json::from_slice(&answer).expect("a transcript")
}

/// The messages without what the clock decides (timestamps, durations), for comparing runs.
pub(crate) fn without_clock(messages: &[pi_runtime::Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|message| {
            let mut value = serde_json::to_value(message).expect("messages serialize");
            if let Some(object) = value.as_object_mut() {
                object.remove("timestamp");
                object.remove("durationMs");
            }
            value
        })
        .collect()
}
