//! What the Google sign-in tests compare with: a local server on 127.0.0.1 that answers by path
//! and records every request (method, target, headers, body; read as `wire_server` reads them), and google-auth itself (Google's
//! Python library, 2.63.0 with requests, from `.ci/install-test-deps`: folder env
//! `PI_TEST_DEPS`, default `~/.cache/pi-tool-test-deps`) run against such a server. Without
//! google-auth a test is skipped, or fails when env `CI` is set.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use super::wire_server::read_request;

/// One answer of the server.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    /// A JSON answer.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    /// A plain-text answer.
    pub fn text(status: u16, body: &str) -> Self {
        Reply {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.to_owned(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// With `Metadata-Flavor: Google`, as the metadata server answers.
    pub fn flavored(self) -> Self {
        self.header("Metadata-Flavor", "Google")
    }
}

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The body as a form, pairs sorted by name.
    pub fn form(&self) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = form_pairs(&String::from_utf8_lossy(&self.body));
        pairs.sort();
        pairs
    }
}

/// `a=b&c=d` decoded (`+` and `%XX`).
pub fn form_pairs(text: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

/// What the server answers when a request matches no route.
pub fn not_found() -> Reply {
    Reply::text(404, "not found")
}

/// A server on 127.0.0.1 that answers each request with the reply of its path (the first
/// route whose path equals the request's, query left out; else `fallback`), one request per
/// connection, and records them all.
pub struct Server {
    /// `127.0.0.1:PORT`.
    pub host: String,
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    routes: Arc<Mutex<Vec<(String, Reply)>>>,
}

impl Server {
    pub async fn start(routes: Vec<(&str, Reply)>, fallback: Reply) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let routes: Arc<Mutex<Vec<(String, Reply)>>> = Arc::new(Mutex::new(
            routes
                .into_iter()
                .map(|(path, reply)| (path.to_owned(), reply))
                .collect(),
        ));
        let record = seen.clone();
        let answers = routes.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (record, routes, fallback) =
                    (record.clone(), answers.clone(), fallback.clone());
                tokio::spawn(async move { answer(socket, routes, fallback, record).await });
            }
        });
        Server {
            url: format!("http://{host}"),
            host,
            seen,
            routes,
        }
    }

    /// From now on, answers `path` with `reply`.
    pub fn answer(&self, path: &str, reply: Reply) {
        let mut routes = self.routes.lock().unwrap();
        routes.retain(|(p, _)| p != path);
        routes.insert(0, (path.to_owned(), reply));
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The requests to `path` (query left out).
    pub fn seen_at(&self, path: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.path() == path)
            .collect()
    }
}

/// A server that accepts connections and never answers (bounded: 60 s).
pub async fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(60)).await;
                drop(socket);
            });
        }
    });
    host
}

/// `127.0.0.1:PORT` where nothing listens (a port just freed).
pub async fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().to_string()
}

async fn answer(
    mut socket: TcpStream,
    routes: Arc<Mutex<Vec<(String, Reply)>>>,
    fallback: Reply,
    seen: Arc<Mutex<Vec<Seen>>>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let seen_request = Seen {
        method: request.method,
        target: request.target,
        headers: request.headers,
        body: request.body,
    };
    let reply = routes
        .lock()
        .unwrap()
        .iter()
        .find(|(path, _)| path == seen_request.path())
        .map_or(fallback, |(_, reply)| reply.clone());
    seen.lock().unwrap().push(seen_request);
    let mut response = format!(
        "HTTP/1.1 {} Status\r\nconnection: close\r\ncontent-length: {}\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str("\r\n");
    response.push_str(&reply.body);
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
}

/// The test dependencies' folder.
fn folder() -> PathBuf {
    match std::env::var_os("PI_TEST_DEPS") {
        Some(folder) => PathBuf::from(folder),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/pi-tool-test-deps"),
    }
}

/// The venv's Python when google-auth is installed in it; when not, fails in CI and says so
/// otherwise.
pub fn google_auth_python() -> Option<PathBuf> {
    let python = folder().join("venv/bin/python");
    let found = python.exists()
        && std::process::Command::new(&python)
            .args(["-c", "import google.auth.transport.requests"])
            .env_clear()
            .status()
            .is_ok_and(|status| status.success());
    if found {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "google-auth is missing from {}: run .ci/install-test-deps",
        folder().display()
    );
    eprintln!("skipped: google-auth is missing (run .ci/install-test-deps)");
    None
}

/// Runs `script` with google-auth's Python (nothing of this process's environment but `env`,
/// so no credentials of the machine; a proxy that does not exist for all but 127.0.0.1, so
/// nothing leaves the machine), at most 60 s; what it printed on stdout.
pub async fn run_python(python: PathBuf, script: &str, env: Vec<(String, String)>) -> String {
    let script = script.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut child = std::process::Command::new(python)
            .args(["-c", &script])
            .env_clear()
            .envs([
                ("HTTP_PROXY", "http://127.0.0.1:9"),
                ("HTTPS_PROXY", "http://127.0.0.1:9"),
                ("NO_PROXY", "127.0.0.1"),
            ])
            .envs(env)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("python starts");
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("google-auth did not finish within 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "google-auth failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    })
    .await
    .unwrap()
}
