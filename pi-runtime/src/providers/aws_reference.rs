//! For the sign-in tests: botocore itself (AWS's own credential code, from `.ci/install-test-deps`'
//! Python venv in env `PI_TEST_DEPS`, default `~/.cache/pi-tool-test-deps`) resolving a profile,
//! and a local HTTP server that records what it is sent (standing in for STS and the SSO
//! portal, for botocore and for us).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The venv's Python, when it has botocore; when not, fails in CI (env `CI`) and says it
/// skipped otherwise.
pub(crate) fn botocore_python() -> Option<PathBuf> {
    let folder = match std::env::var_os("PI_TEST_DEPS") {
        Some(folder) => PathBuf::from(folder),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/pi-tool-test-deps"),
    };
    let python = folder.join("venv/bin/python");
    let found = python.exists()
        && std::process::Command::new(&python)
            .args(["-c", "import botocore"])
            .output()
            .is_ok_and(|out| out.status.success());
    if found {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "botocore is missing from {}: run .ci/install-test-deps",
        folder.display()
    );
    eprintln!("skipped: botocore is missing (run .ci/install-test-deps)");
    None
}

/// Credentials as botocore resolves them: `(access key id, secret, session token)`, or the
/// message of botocore's error.
pub(crate) type Resolved = Result<(String, String, Option<String>), String>;

/// What `botocore.session.Session(profile=..).get_credentials()` returns, frozen, with only
/// the variables `env` gives (and `PATH`), in `home`; `profile` empty: no profile named.
/// [`botocore_credentials`] on a blocking thread, so that a local server on this runtime
/// answers botocore's requests meanwhile.
pub(crate) async fn botocore_credentials_off_thread(
    python: &Path,
    home: &Path,
    env: &[(&str, String)],
    profile: &str,
) -> Resolved {
    let (python, home, profile) = (python.to_owned(), home.to_owned(), profile.to_owned());
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        botocore_credentials(&python, &home, &env, &profile)
    })
    .await
    .expect("botocore's thread")
}

pub(crate) fn botocore_credentials(
    python: &Path,
    home: &Path,
    env: &[(&str, String)],
    profile: &str,
) -> Resolved {
    const SCRIPT: &str = r#"
import json, sys, botocore.session
try:
    # An empty name: the profile of the environment (AWS_PROFILE, else default).
    session = botocore.session.Session(profile=sys.argv[1] or None)
    credentials = session.get_credentials()
    if credentials is None:
        print(json.dumps({"error": "no credentials"}))
    else:
        frozen = credentials.get_frozen_credentials()
        print(json.dumps({"id": frozen.access_key, "secret": frozen.secret_key, "token": frozen.token}))
except Exception as err:
    print(json.dumps({"error": f"{type(err).__name__}: {err}"}))
"#;
    let mut command = std::process::Command::new(python);
    command
        .args(["-c", SCRIPT, profile])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        // Never ask an instance metadata service.
        .env("AWS_EC2_METADATA_DISABLED", "true");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("python runs");
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "botocore printed no JSON: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    if let Some(error) = answer["error"].as_str() {
        return Err(error.to_owned());
    }
    Ok((
        answer["id"].as_str().unwrap().to_owned(),
        answer["secret"].as_str().unwrap().to_owned(),
        answer["token"].as_str().map(str::to_owned),
    ))
}

/// One request the local server received.
#[derive(Clone, Debug)]
pub(crate) struct Recorded {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An answer: status, content type, body.
pub(crate) type Answer = (u16, &'static str, String);

/// A server on 127.0.0.1 answering each request with `answer(request)`, one request per
/// connection, recording them all.
pub(crate) struct LocalServer {
    pub(crate) url: String,
    seen: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LocalServer {
    pub(crate) async fn start(
        answer: impl Fn(&Recorded) -> Answer + Send + Sync + 'static,
    ) -> LocalServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(answer);
        let recorded = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let answer = answer.clone();
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let read =
                        tokio::time::timeout(Duration::from_secs(20), read_request(&mut socket));
                    let Ok(Some(request)) = read.await else {
                        return;
                    };
                    let (status, content_type, body) = answer(&request);
                    recorded.lock().unwrap().push(request);
                    let head = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(body.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        LocalServer { url, seen, task }
    }

    /// The requests received so far.
    pub(crate) fn seen(&self) -> Vec<Recorded> {
        self.seen.lock().unwrap().clone()
    }
}

/// One HTTP/1.1 request: its head, then `content-length` bytes of body.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Recorded> {
    let mut data = Vec::new();
    let mut buffer = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut buffer).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buffer[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut buffer).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buffer[..n]);
    }
    Some(Recorded {
        method,
        target,
        headers,
        body,
    })
}

/// An executable shell script in `dir`, its path returned.
#[cfg(unix)]
pub(crate) fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// Whether `request`'s SigV4 signature is the one `credentials` make for it (for `region` and
/// `service`, at its own `x-amz-date`, over the headers it says it signed): botocore's and
/// ours checked alike.
pub(crate) fn signed_by(
    request: &Recorded,
    url: &str,
    credentials: &super::AwsCredentials,
    region: &str,
    service: &str,
) -> bool {
    let Some(authorization) = request.header("authorization") else {
        return false;
    };
    let Some(signed) = authorization
        .split("SignedHeaders=")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
    else {
        return false;
    };
    let amz_date = request.header("x-amz-date").unwrap_or_default();
    let Some(time) = aws_smithy_types::DateTime::from_str(
        &format!(
            "{}-{}-{}T{}:{}:{}Z",
            &amz_date[0..4],
            &amz_date[4..6],
            &amz_date[6..8],
            &amz_date[9..11],
            &amz_date[11..13],
            &amz_date[13..15]
        ),
        aws_smithy_types::date_time::Format::DateTime,
    )
    .ok()
    .and_then(|time| std::time::SystemTime::try_from(time).ok()) else {
        return false;
    };
    // The signer adds host, x-amz-date and the session token itself.
    let headers: Vec<(String, String)> = signed
        .split(';')
        .filter(|name| !["host", "x-amz-date", "x-amz-security-token"].contains(name))
        .map(|name| {
            (
                name.to_owned(),
                request.header(name).unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let scope = super::bedrock_auth::SigningScope {
        credentials,
        region,
        service,
        time,
    };
    let url = format!("{url}{}", request.target);
    super::bedrock_auth::sigv4_headers(&request.method, &url, &headers, &request.body, &scope)
        .ok()
        .and_then(|headers| {
            headers
                .into_iter()
                .find(|(name, _)| name == "authorization")
                .map(|(_, value)| value)
        })
        .is_some_and(|ours| ours == authorization)
}

/// A form body's fields, sorted.
pub(crate) fn form_fields(body: &[u8]) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> = form_urlencoded::parse(body).into_owned().collect();
    fields.sort();
    fields
}

/// The credentials we resolve for `profile` (named in code; empty: none named) with only
/// `env`'s variables, as [`botocore_credentials`] gives them.
pub(crate) async fn ours(env: &[(&str, String)], profile: &str) -> Resolved {
    use super::bedrock_auth::{BedrockSignIn, FoundSignIn, find_sign_in};
    let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
    let named = Some(profile).filter(|p| !p.is_empty());
    let credentials = match find_sign_in(&lookup, named)? {
        FoundSignIn::Ready(BedrockSignIn::SigV4 { credentials, .. }) => credentials,
        FoundSignIn::Ready(other) => panic!("{other:?}"),
        FoundSignIn::Profile { credentials, .. } => credentials.provider().credentials().await?,
    };
    Ok((
        credentials.access_key_id().to_owned(),
        credentials.secret_access_key().to_owned(),
        credentials.session_token().map(str::to_owned),
    ))
}
