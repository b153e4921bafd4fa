//! Who gets in over HTTP: `McpServer` on real sockets (127.0.0.1 and a Unix socket), spoken to
//! in raw HTTP so every header is the test's. A `touch` tool leaves a marker file: where a
//! request must be refused, the marker proves nothing ran.

mod server_support;

use std::path::{Path, PathBuf};

use pi_mcp::{McpClient, McpServer, ServeError};
use pi_tool::{State, ToolRegistry, tool};
use serde_json::json;
use server_support::{Answer, call_headers, request, tools_call};
use tokio::net::{TcpListener, TcpStream, UnixStream};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// Where `touch` leaves its markers.
struct Markers(PathBuf);

/// Create the file `name` in the markers folder.
#[tool]
async fn touch(name: String, markers: State<Markers>) -> Result<String, std::io::Error> {
    std::fs::write(markers.0.join(&name), "ran")?;
    Ok(format!("touched {name}"))
}

fn server(markers: &Path) -> McpServer {
    McpServer::new(
        ToolRegistry::new()
            .with(TouchTool)
            .with_state(Markers(markers.to_owned())),
    )
}

/// Serves `server` on 127.0.0.1:PORT; the task ends with the test.
async fn serve(server: McpServer) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(server.serve_http_on(listener));
    address
}

/// POSTs a `touch` of `marker` to `/mcp` with these extra headers.
async fn call(address: &str, marker: &str, extra: &[(&str, &str)]) -> Answer {
    let mut headers = call_headers("touch");
    headers.extend(
        extra
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    let body = tools_call(1, "touch", &json!({ "name": marker }));
    let stream = TcpStream::connect(address).await.unwrap();
    request(stream, "POST", "/mcp", address, &headers, &body).await
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_is_required_and_origin_checked() {
    let markers = tempfile::tempdir().unwrap();
    let address = serve(
        server(markers.path())
            .with_bearer_token(TOKEN)
            .with_allowed_origins(["http://localhost:6274"]),
    )
    .await;
    let ran = |name: &str| markers.path().join(name).exists();
    let right = bearer(TOKEN);

    let answer = call(&address, "none", &[]).await;
    assert_eq!(answer.status, 401, "{answer:?}");
    assert_eq!(answer.header("www-authenticate"), Some("Bearer"));
    assert!(!ran("none"));

    let answer = call(&address, "wrong", &[("Authorization", "Bearer nope")]).await;
    assert_eq!(answer.status, 401, "{answer:?}");
    assert_eq!(
        answer.header("www-authenticate"),
        Some(
            "Bearer error=\"invalid_token\", error_description=\"this is not the server's token\""
        )
    );
    assert!(!ran("wrong"));

    // A token one character short, and one of another scheme, are no better.
    let short = bearer(&TOKEN[1..]);
    let answer = call(&address, "short", &[("Authorization", &short)]).await;
    assert_eq!(answer.status, 401);
    let basic = format!("Basic {TOKEN}");
    let answer = call(&address, "basic", &[("Authorization", &basic)]).await;
    assert_eq!(answer.status, 401);
    assert_eq!(answer.header("www-authenticate"), Some("Bearer"));
    let answer = call(
        &address,
        "two",
        &[("Authorization", &right), ("Authorization", "Bearer nope")],
    )
    .await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert!(!ran("short") && !ran("basic") && !ran("two"));

    let answer = call(
        &address,
        "evil",
        &[("Authorization", &right), ("Origin", "http://evil.example")],
    )
    .await;
    assert_eq!(answer.status, 403, "{answer:?}");
    assert_eq!(answer.body, "Forbidden: Origin header is not allowed");
    assert!(!ran("evil"));

    let answer = call(
        &address,
        "listed",
        &[
            ("Authorization", &right),
            ("Origin", "http://localhost:6274"),
        ],
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(ran("listed"));

    let answer = call(&address, "right", &[("Authorization", &right)]).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.contains("touched right"), "{answer:?}");
    assert!(ran("right"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origins_are_refused_by_default_and_hosts_checked() {
    let markers = tempfile::tempdir().unwrap();
    let address = serve(server(markers.path()).with_bearer_token(TOKEN)).await;
    let right = bearer(TOKEN);
    for origin in ["http://localhost:6274", "null", "http://127.0.0.1"] {
        let answer = call(
            &address,
            "origin",
            &[("Authorization", &right), ("Origin", origin)],
        )
        .await;
        assert_eq!(answer.status, 403, "{origin}: {answer:?}");
    }
    // A rebound name (DNS rebinding) is refused by the Host check even with the token.
    let mut headers = call_headers("touch");
    headers.push(("Authorization".into(), right.clone()));
    let stream = TcpStream::connect(&address).await.unwrap();
    let body = tools_call(1, "touch", &json!({"name": "host"}));
    let answer = request(stream, "POST", "/mcp", "evil.example", &headers, &body).await;
    assert_eq!(answer.status, 403, "{answer:?}");
    assert!(!markers.path().join("origin").exists() && !markers.path().join("host").exists());

    // The server's own origin is not cross-origin.
    let own = format!("http://{address}");
    let answer = call(
        &address,
        "own",
        &[("Authorization", &right), ("Origin", &own)],
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(markers.path().join("own").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_choice_nothing_is_served() {
    let markers = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = server(markers.path())
        .serve_http_on(listener)
        .await
        .unwrap_err();
    assert!(matches!(err, ServeError::NoAuthentication), "{err}");
    assert_eq!(
        err.to_string(),
        "this MCP server has no authentication configured: call McpServer::with_bearer_token, \
         with_token_verifier or with_oauth (or without_auth, for a loopback address only)"
    );

    // A router mounted by hand answers 500 and runs nothing.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let app = server(markers.path()).router();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let answer = call(&address, "unchosen", &[("Authorization", "Bearer x")]).await;
    assert_eq!(answer.status, 500, "{answer:?}");
    assert!(
        answer.body.contains("no authentication configured"),
        "{answer:?}"
    );
    assert!(!markers.path().join("unchosen").exists());

    // `without_auth` is a choice: on loopback it serves anyone (and drops their token).
    let address = serve(server(markers.path()).without_auth()).await;
    let answer = call(&address, "open", &[]).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(markers.path().join("open").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_addresses_need_allow_remote_and_authentication() {
    let markers = tempfile::tempdir().unwrap();
    let any = || async { TcpListener::bind("0.0.0.0:0").await.unwrap() };

    let err = server(markers.path())
        .with_bearer_token(TOKEN)
        .serve_http_on(any().await)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ServeError::NotLoopback(addr) if addr.ip().is_unspecified()),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("refusing to serve MCP on 0.0.0.0:"),
        "{err}"
    );
    assert!(
        err.to_string().ends_with(
            "call McpServer::allow_remote() to serve there anyway (with authentication)"
        )
    );

    // Refused before anything is bound.
    let err = server(markers.path())
        .with_bearer_token(TOKEN)
        .serve_http("0.0.0.0:0")
        .await
        .unwrap_err();
    assert!(matches!(err, ServeError::NotLoopback(_)), "{err}");

    for open in [
        server(markers.path()).without_auth(),
        server(markers.path()).without_auth().allow_remote(),
    ] {
        let err = open.serve_http_on(any().await).await.unwrap_err();
        assert!(
            matches!(
                err,
                ServeError::NotLoopback(_) | ServeError::RemoteWithoutAuth(_)
            ),
            "{err}"
        );
    }
    let err = server(markers.path())
        .without_auth()
        .allow_remote()
        .serve_http("0.0.0.0:0")
        .await
        .unwrap_err();
    assert!(matches!(err, ServeError::RemoteWithoutAuth(_)), "{err}");
    let err = server(markers.path())
        .allow_remote()
        .serve_http("0.0.0.0:0")
        .await
        .unwrap_err();
    assert!(matches!(err, ServeError::NoAuthentication), "{err}");

    // Allowed, with a token: a forged `Host` does not help a client without it.
    let listener = any().await;
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(
        server(markers.path())
            .with_bearer_token(TOKEN)
            .allow_remote()
            .with_allowed_hosts(Vec::<String>::new())
            .serve_http_on(listener),
    );
    let address = format!("127.0.0.1:{port}");
    let answer = call(&address, "forged", &[]).await;
    assert_eq!(answer.status, 401, "{answer:?}");
    assert!(!markers.path().join("forged").exists());
    let right = bearer(TOKEN);
    let answer = call(&address, "remote", &[("Authorization", &right)]).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(markers.path().join("remote").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_limit_get_413() {
    let markers = tempfile::tempdir().unwrap();
    let address = serve(
        server(markers.path())
            .with_bearer_token(TOKEN)
            .with_max_request_body_bytes(1024),
    )
    .await;
    let right = bearer(TOKEN);
    let big = "x".repeat(2048);
    let answer = call(&address, &big, &[("Authorization", &right)]).await;
    assert_eq!(answer.status, 413, "{answer:?}");
    let answer = call(&address, "small", &[("Authorization", &right)]).await;
    assert_eq!(answer.status, 200, "{answer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_signs_in_with_the_token() {
    let markers = tempfile::tempdir().unwrap();
    let address = serve(server(markers.path()).with_bearer_token(TOKEN)).await;
    let url = format!("http://{address}/mcp");
    assert!(McpClient::http(&url).connect().await.is_err());
    let client = McpClient::http(&url)
        .bearer_token(TOKEN)
        .connect()
        .await
        .expect("connects with the token");
    let mut tools = ToolRegistry::new();
    client.add_to(&mut tools);
    let result = tools
        .run(&pi_tool::ToolCall::new(
            "c1",
            "touch",
            json!({"name": "client"}),
        ))
        .await;
    assert_eq!(result.text_content(), "touched client");
    assert!(markers.path().join("client").exists());
}

/// POSTs a `touch` over the Unix socket at `path`.
async fn call_unix(path: &Path, marker: &str, extra: &[(&str, &str)]) -> Answer {
    let mut headers = call_headers("touch");
    headers.extend(
        extra
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    let body = tools_call(1, "touch", &json!({ "name": marker }));
    let stream = UnixStream::connect(path).await.unwrap();
    request(stream, "POST", "/mcp", "localhost", &headers, &body).await
}

/// Waits until `serve_unix` made the socket.
async fn wait_for_socket(path: &Path) {
    for _ in 0..200 {
        if UnixStream::connect(path).await.is_ok() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("no socket at {}", path.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_only_its_owner_can_open() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    let markers = tempfile::tempdir().unwrap();
    let path = markers.path().join("pi.sock");
    // A stale socket file (its server gone) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(std::fs::metadata(&path).unwrap().file_type().is_socket());

    let serving = tokio::spawn(server(markers.path()).serve_unix(path.clone()));
    wait_for_socket(&path).await;
    let meta = std::fs::metadata(&path).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // Nothing is left of the private folder it was made in.
    let left: Vec<_> = std::fs::read_dir(markers.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(left, ["pi.sock"]);

    let answer = call_unix(&path, "unix", &[]).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(markers.path().join("unix").exists());
    // The Origin check holds here too.
    let answer = call_unix(&path, "evil", &[("Origin", "http://evil.example")]).await;
    assert_eq!(answer.status, 403, "{answer:?}");

    // A live socket is not taken over.
    let err = server(markers.path()).serve_unix(&path).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot serve MCP on the Unix socket {}: another server is listening on it",
            path.display()
        )
    );
    serving.abort();
    let _ = serving.await;
    assert!(
        !path.exists(),
        "the socket file is removed when serving ends"
    );

    // Nor is a file that is not a socket.
    std::fs::write(&path, "keep me").unwrap();
    let err = server(markers.path()).serve_unix(&path).await.unwrap_err();
    assert!(
        err.to_string()
            .ends_with("a file that is not a socket is there; it is left alone"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_with_a_token_requires_it() {
    let markers = tempfile::tempdir().unwrap();
    let path = markers.path().join("pi.sock");
    let serving = tokio::spawn(
        server(markers.path())
            .with_bearer_token(TOKEN)
            .serve_unix(path.clone()),
    );
    wait_for_socket(&path).await;
    assert_eq!(call_unix(&path, "none", &[]).await.status, 401);
    let right = bearer(TOKEN);
    assert_eq!(
        call_unix(&path, "token", &[("Authorization", &right)])
            .await
            .status,
        200
    );
    assert!(!markers.path().join("none").exists() && markers.path().join("token").exists());
    serving.abort();
}

#[test]
fn debug_output_does_not_show_the_token() {
    let shown = format!(
        "{:?}",
        McpServer::new(ToolRegistry::new()).with_bearer_token(TOKEN)
    );
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains("auth: \"bearer token\""), "{shown}");
}
