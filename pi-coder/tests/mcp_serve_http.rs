//! `pi mcp serve --http` and `--unix`: the real `pi` binary, spoken to in raw HTTP on
//! 127.0.0.1 and over its Unix socket. Each request asks `bash` to create a marker file; where
//! a request must be refused, the missing marker proves bash did not run.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UnixStream};
use tokio::process::{Child, ChildStderr, Command};

const PI: &str = env!("CARGO_BIN_EXE_pi");

/// A running `pi mcp serve`, killed when dropped.
struct Serving {
    child: Child,
    stderr: tokio::io::Lines<BufReader<ChildStderr>>,
    /// What it printed before serving.
    printed: Vec<String>,
}

impl Serving {
    /// Starts `pi mcp serve --cwd DIR ARGS` and reads stderr up to its `serving MCP` line (and
    /// over HTTP the one after it).
    async fn start(cwd: &Path, args: &[&str], token: Option<&str>) -> Serving {
        let mut command = Command::new(PI);
        command
            .args(["mcp", "serve", "--cwd"])
            .arg(cwd)
            .args(args)
            .env_remove("PI_MCP_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(token) = token {
            command.env("PI_MCP_TOKEN", token);
        }
        let mut child = command.spawn().expect("start pi");
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut printed = Vec::new();
        let mut serving_seen = false;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), stderr.next_line())
                .await
                .expect("pi prints within 30 s")
                .expect("read stderr");
            let Some(line) = line else {
                panic!(
                    "pi exited before serving; it printed:\n{}",
                    printed.join("\n")
                );
            };
            printed.push(line.clone());
            // Over HTTP the line after says how to authenticate.
            if serving_seen || line.starts_with("pi: serving MCP on the Unix socket") {
                break;
            }
            serving_seen = line.starts_with("pi: serving MCP at http://");
        }
        Serving {
            child,
            stderr,
            printed,
        }
    }

    /// `ADDR` of `pi: serving MCP at http://ADDR/mcp ...`.
    fn address(&self) -> String {
        let line = self
            .printed
            .iter()
            .find(|line| line.starts_with("pi: serving MCP at http://"))
            .expect("the serving line");
        line["pi: serving MCP at http://".len()..]
            .split("/mcp")
            .next()
            .unwrap()
            .to_owned()
    }

    /// The token of `` ... `Authorization: Bearer TOKEN` ... ``.
    fn printed_token(&self) -> String {
        let line = self
            .printed
            .iter()
            .find(|line| line.contains("Authorization: Bearer "))
            .expect("the token line");
        line.split("Authorization: Bearer ")
            .nth(1)
            .unwrap()
            .split('`')
            .next()
            .unwrap()
            .to_owned()
    }
}

/// Runs `pi mcp serve ARGS` expecting it to refuse; returns what it printed.
async fn refused(cwd: &Path, args: &[&str]) -> String {
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(PI)
            .args(["mcp", "serve", "--cwd"])
            .arg(cwd)
            .args(args)
            .env_remove("PI_MCP_TOKEN")
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("pi refuses at once")
    .expect("run pi");
    assert!(!output.status.success(), "pi {args:?} served");
    String::from_utf8(output.stderr).unwrap()
}

/// An HTTP answer: status, `WWW-Authenticate`, body.
#[derive(Debug)]
struct Answer {
    status: u16,
    challenge: Option<String>,
    body: String,
}

/// A 2026-07-28 `tools/call` of `bash` that creates `marker`, sent with `headers`.
async fn run_bash<S>(stream: S, host: &str, marker: &str, headers: &[(&str, &str)]) -> Answer
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "bash",
            "arguments": {"command": format!("touch {marker}")},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
            }
        }
    })
    .to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: bash\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = stream;
    if let Err(err) = stream.write_all(request.as_bytes()).await {
        assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe, "send: {err}");
    }
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut raw))
        .await
        .expect("an answer within 30 s")
        .expect("read the answer");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let challenge = head
        .split("\r\n")
        .filter_map(|line| line.split_once(": "))
        .find(|(name, _)| name.eq_ignore_ascii_case("www-authenticate"))
        .map(|(_, value)| value.to_owned());
    Answer {
        status,
        challenge,
        body: body.to_owned(),
    }
}

async fn over_tcp(address: &str, host: &str, marker: &str, headers: &[(&str, &str)]) -> Answer {
    run_bash(
        TcpStream::connect(address).await.unwrap(),
        host,
        marker,
        headers,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_needs_the_printed_token_and_a_listed_origin() {
    let cwd = tempfile::tempdir().unwrap();
    let ran = |marker: &str| cwd.path().join(marker).exists();
    let pi = Serving::start(
        cwd.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--allow-origin",
            "http://localhost:6274",
        ],
        None,
    )
    .await;
    let address = pi.address();
    let token = pi.printed_token();
    assert_eq!(token.len(), 64, "{:?}", pi.printed);
    assert!(pi.printed[1].ends_with("(a new token at each start; set PI_MCP_TOKEN to choose one)"));
    let right = format!("Bearer {token}");

    let answer = over_tcp(&address, &address, "none", &[]).await;
    assert_eq!(
        (answer.status, answer.challenge.as_deref()),
        (401, Some("Bearer")),
        "{answer:?}"
    );
    assert!(!ran("none"));

    let answer = over_tcp(
        &address,
        &address,
        "wrong",
        &[("Authorization", "Bearer nope")],
    )
    .await;
    assert_eq!(answer.status, 401, "{answer:?}");
    assert!(
        answer
            .challenge
            .unwrap()
            .starts_with("Bearer error=\"invalid_token\"")
    );
    assert!(!ran("wrong"));

    let evil = [
        ("Authorization", right.as_str()),
        ("Origin", "http://evil.example"),
    ];
    let answer = over_tcp(&address, &address, "evil", &evil).await;
    assert_eq!(answer.status, 403, "{answer:?}");
    assert!(!ran("evil"));

    // DNS rebinding: the right token, but a Host that is not this machine's.
    let answer = over_tcp(
        &address,
        "evil.example",
        "rebound",
        &[("Authorization", &right)],
    )
    .await;
    assert_eq!(answer.status, 403, "{answer:?}");
    assert!(!ran("rebound"));

    let inspector = [
        ("Authorization", right.as_str()),
        ("Origin", "http://localhost:6274"),
    ];
    let answer = over_tcp(&address, &address, "inspector", &inspector).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(ran("inspector"));

    let answer = over_tcp(&address, &address, "right", &[("Authorization", &right)]).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.contains(r#""isError":false"#), "{answer:?}");
    assert!(ran("right"));
    drop(pi);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_can_come_from_pi_mcp_token_and_is_not_printed() {
    let cwd = tempfile::tempdir().unwrap();
    let token = "my-own-token-0123456789";
    let pi = Serving::start(cwd.path(), &["--http", "127.0.0.1:0"], Some(token)).await;
    assert!(
        pi.printed.iter().all(|line| !line.contains(token)),
        "{:?}",
        pi.printed
    );
    assert!(pi.printed[1].contains("`Authorization: Bearer $PI_MCP_TOKEN`"));
    let address = pi.address();
    let answer = over_tcp(
        &address,
        &address,
        "generated",
        &[("Authorization", "Bearer nope")],
    )
    .await;
    assert_eq!(answer.status, 401);
    let right = format!("Bearer {token}");
    assert_eq!(
        over_tcp(&address, &address, "env", &[("Authorization", &right)])
            .await
            .status,
        200
    );
    assert!(cwd.path().join("env").exists() && !cwd.path().join("generated").exists());

    let short = Command::new(PI)
        .args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .env("PI_MCP_TOKEN", "s3cret")
        .output()
        .await
        .unwrap();
    assert!(!short.status.success());
    assert_eq!(
        String::from_utf8_lossy(&short.stderr),
        "pi: mcp serve: PI_MCP_TOKEN has 6 characters; use at least 16 (e.g. the output of \
         `openssl rand -hex 32`), or unset it to get a random one\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_addresses_need_allow_remote_and_a_token() {
    let cwd = tempfile::tempdir().unwrap();
    let said = refused(cwd.path(), &["--http", "0.0.0.0:0"]).await;
    assert_eq!(
        said,
        "pi: mcp serve: refusing to listen on 0.0.0.0:0 (0.0.0.0): it is not a loopback address, \
         so anyone who can reach this machine could try to run bash as you. Pass --allow-remote \
         to serve there anyway (every request then needs the token; put TLS in front)\n"
    );
    let said = refused(cwd.path(), &["--http", "0.0.0.0:0", "--no-auth"]).await;
    assert_eq!(
        said,
        "pi: mcp serve: --no-auth is for loopback addresses only: on 0.0.0.0:0 (0.0.0.0) anyone \
         who can reach this machine could run bash as you\n"
    );
    let said = refused(
        cwd.path(),
        &["--http", "0.0.0.0:0", "--allow-remote", "--no-auth"],
    )
    .await;
    assert!(
        said.contains("'--allow-remote' cannot be used with '--no-auth'"),
        "{said}"
    );

    // Allowed: any Host is taken (a LAN name), but not without the token.
    let pi = Serving::start(cwd.path(), &["--http", "0.0.0.0:0", "--allow-remote"], None).await;
    let port = pi.address().rsplit(':').next().unwrap().to_owned();
    let address = format!("127.0.0.1:{port}");
    let forged = over_tcp(&address, "127.0.0.1", "forged", &[]).await;
    assert_eq!(forged.status, 401, "{forged:?}");
    let lan = over_tcp(&address, "192.168.1.20", "lan", &[]).await;
    assert_eq!(lan.status, 401, "{lan:?}");
    assert!(!cwd.path().join("forged").exists() && !cwd.path().join("lan").exists());
    let right = format!("Bearer {}", pi.printed_token());
    let answer = over_tcp(
        &address,
        &format!("192.168.1.20:{port}"),
        "remote",
        &[("Authorization", &right)],
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(cwd.path().join("remote").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_auth_on_loopback_serves_anyone_and_says_so() {
    let cwd = tempfile::tempdir().unwrap();
    let pi = Serving::start(cwd.path(), &["--http", "127.0.0.1:0", "--no-auth"], None).await;
    assert!(
        pi.printed[1].starts_with("pi: warning: --no-auth: every program and every user of this machine can run these tools (bash included) as you"),
        "{:?}",
        pi.printed
    );
    let address = pi.address();
    assert_eq!(over_tcp(&address, &address, "open", &[]).await.status, 200);
    assert!(cwd.path().join("open").exists());
    // Web pages are still kept out.
    let evil = over_tcp(
        &address,
        &address,
        "page",
        &[("Origin", "http://evil.example")],
    )
    .await;
    assert_eq!(evil.status, 403);
    assert!(!cwd.path().join("page").exists());
}

/// Sends `SIGTERM` to the child and waits for it.
async fn terminate(mut pi: Serving) {
    let pid = pi.child.id().expect("running") as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), pi.child.wait())
        .await
        .expect("pi ends on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
    while let Ok(Some(_)) = pi.stderr.next_line().await {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_only_its_owner_can_open() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    let cwd = tempfile::tempdir().unwrap();
    let socket: PathBuf = cwd.path().join("pi.sock");
    // A socket file left by a server that died is replaced.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let arg = socket.to_str().unwrap();
    let pi = Serving::start(cwd.path(), &["--unix", arg], None).await;
    assert!(pi.printed[0].starts_with(&format!(
        "pi: serving MCP on the Unix socket {arg} (mode 0600"
    )));
    let meta = std::fs::metadata(&socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);

    let stream = UnixStream::connect(&socket).await.unwrap();
    let answer = run_bash(stream, "localhost", "unix", &[]).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(cwd.path().join("unix").exists());

    // A second server does not take over a live socket.
    let said = refused(cwd.path(), &["--unix", arg]).await;
    assert_eq!(
        said,
        format!(
            "pi: mcp serve: cannot serve MCP on the Unix socket {arg}: another server is listening on it\n"
        )
    );
    terminate(pi).await;
    assert!(!socket.exists(), "the socket file is removed on exit");

    // With PI_MCP_TOKEN set, the socket wants it too.
    let token = "socket-token-0123456789";
    let pi = Serving::start(cwd.path(), &["--unix", arg], Some(token)).await;
    let stream = UnixStream::connect(&socket).await.unwrap();
    assert_eq!(
        run_bash(stream, "localhost", "tokenless", &[]).await.status,
        401
    );
    let right = format!("Bearer {token}");
    let stream = UnixStream::connect(&socket).await.unwrap();
    assert_eq!(
        run_bash(stream, "localhost", "token", &[("Authorization", &right)])
            .await
            .status,
        200
    );
    assert!(!cwd.path().join("tokenless").exists() && cwd.path().join("token").exists());
    terminate(pi).await;
}
