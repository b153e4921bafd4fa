//! A server that stays up under hostile clients, on real sockets: slow and idle connections are
//! closed, connection and session caps hold without locking out clients that send requests,
//! a request id reused in a session does not lose the first request's answer, and bodies that
//! are not one JSON-RPC message get 400 with a JSON-RPC error.

mod server_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use pi_mcp::{HttpLimits, McpServer, TokenError, TokenVerifier, VerifiedToken};
use pi_tool::{State, ToolRegistry, tool};
use serde_json::{Value, json};
use server_support::{Answer, call_headers, request, tools_call};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::Semaphore;

const TOKEN: &str = "limits-test-token-0123456789abcdef";

/// The bound within which the server must have closed a connection it should close: far above
/// the 1 s timeouts the tests set, so a loaded machine does not make them fail; without the
/// timeouts the connection stays open forever.
const CLOSED_WITHIN: Duration = Duration::from_secs(20);

/// Calls of `hold` that entered, and permits that let them finish.
struct Hold {
    entered: Semaphore,
    release: Semaphore,
}

/// Wait until the test lets the call finish.
#[tool]
async fn hold(gate: State<Arc<Hold>>) -> String {
    gate.entered.add_permits(1);
    gate.release
        .acquire()
        .await
        .expect("the semaphore stays open")
        .forget();
    "released".to_owned()
}

/// Echo the text back.
#[tool]
async fn echo(text: String) -> String {
    text
}

fn server(limits: HttpLimits) -> (McpServer, Arc<Hold>) {
    let gate = Arc::new(Hold {
        entered: Semaphore::new(0),
        release: Semaphore::new(0),
    });
    let registry = ToolRegistry::new()
        .with(HoldTool)
        .with(EchoTool)
        .with_state(gate.clone());
    let server = McpServer::new(registry)
        .with_bearer_token(TOKEN)
        .with_http_limits(limits);
    (server, gate)
}

async fn serve(server: McpServer) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(server.serve_http_on(listener));
    address
}

/// A connection to `address` from the loopback address `from` (127.0.0.2 is another peer).
async fn connect_from(from: [u8; 4], address: &str) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::from((from, 0)))
        .expect("binds a loopback source address");
    socket.connect(address.parse().unwrap()).await.unwrap()
}

/// The headers of an authenticated 2026-07-28 call, plus `extra`.
fn authorized(tool: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut headers = call_headers(tool);
    headers.push(("Authorization".into(), format!("Bearer {TOKEN}")));
    headers.extend(extra.iter().map(|(n, v)| ((*n).into(), (*v).into())));
    headers
}

/// An authenticated `echo` call over `stream`.
async fn echo_over(stream: TcpStream, address: &str, text: &str) -> Answer {
    let body = tools_call(1, "echo", &json!({ "text": text }));
    request(
        stream,
        "POST",
        "/mcp",
        address,
        &authorized("echo", &[]),
        &body,
    )
    .await
}

async fn echo_call(address: &str, text: &str) -> Answer {
    echo_over(TcpStream::connect(address).await.unwrap(), address, text).await
}

/// A `hold` call sent over a fresh connection from `from`, left waiting; returns the stream
/// once the tool has entered.
async fn held_call(from: [u8; 4], address: &str, gate: &Hold) -> TcpStream {
    let mut stream = connect_from(from, address).await;
    let body = tools_call(1, "hold", &json!({}));
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\n");
    for (name, value) in authorized("hold", &[]) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(head.as_bytes()).await.unwrap();
    tokio::time::timeout(CLOSED_WITHIN, gate.entered.acquire())
        .await
        .expect("the held call starts")
        .unwrap()
        .forget();
    stream
}

/// Whether the server closes `stream` (EOF or reset) within [`CLOSED_WITHIN`], reading and
/// dropping whatever it sends first.
async fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buffer = [0u8; 1024];
    tokio::time::timeout(CLOSED_WITHIN, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_are_cut_off_at_the_header_timeout() {
    let limits = HttpLimits::default()
        .with_header_read_timeout(Duration::from_secs(1))
        .with_idle_timeout(Duration::from_secs(600));
    let address = serve(server(limits).0).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nX-Slow: "
    );
    let mut slow = Vec::new();
    for _ in 0..5 {
        slow.push(TcpStream::connect(&address).await.unwrap());
    }
    // One byte per second each (slowloris), until the server hangs up or the bound passes.
    let trickle = slow.into_iter().map(|mut stream| {
        let head = head.clone();
        tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            for byte in head.bytes().cycle() {
                if stream.write_all(&[byte]).await.is_err() {
                    return true;
                }
                let mut probe = [0u8; 256];
                let read = tokio::time::timeout(Duration::from_secs(1), stream.read(&mut probe));
                if let Ok(Ok(0) | Err(_)) = read.await {
                    return true;
                }
                if started.elapsed() > CLOSED_WITHIN {
                    return false;
                }
            }
            false
        })
    });
    for closed in futures_util::future::join_all(trickle).await {
        assert!(closed.unwrap(), "a slowloris connection was still open");
    }
    // Clients that send requests are served as before.
    assert_eq!(echo_call(&address, "after").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_at_the_idle_timeout() {
    let limits = HttpLimits::default()
        .with_header_read_timeout(Duration::from_secs(600))
        .with_idle_timeout(Duration::from_secs(1));
    let address = serve(server(limits).0).await;
    // Never sends a byte.
    let mut silent = TcpStream::connect(&address).await.unwrap();
    // Sends one keep-alive request, reads its answer, then idles.
    let mut kept = TcpStream::connect(&address).await.unwrap();
    let body = tools_call(1, "echo", &json!({"text": "kept"}));
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\n");
    for (name, value) in authorized("echo", &[]) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    kept.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains("kept") {
        let read = tokio::time::timeout(CLOSED_WITHIN, kept.read(&mut buffer))
            .await
            .expect("the answer comes")
            .unwrap();
        assert!(read > 0, "closed before answering");
        answer.extend_from_slice(&buffer[..read]);
    }
    assert!(
        closed_by_server(&mut silent).await,
        "a silent connection stayed open"
    );
    assert!(
        closed_by_server(&mut kept).await,
        "an idle keep-alive connection stayed open"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_caps_make_room_by_closing_idle_connections_and_refuse_when_all_are_busy() {
    let limits = HttpLimits::default()
        .with_max_connections(6)
        .with_max_connections_per_peer(3);
    let (server, gate) = server(limits);
    let address = serve(server).await;

    // Idle connections up to twice the cap do not lock anyone out: the oldest makes room.
    let mut idle = Vec::new();
    for _ in 0..12 {
        idle.push(TcpStream::connect(&address).await.unwrap());
    }
    assert_eq!(echo_call(&address, "past idle").await.status, 200);
    let mut first = idle.remove(0);
    assert!(
        closed_by_server(&mut first).await,
        "the oldest idle one was closed"
    );
    drop(idle);

    // Per peer: 127.0.0.2 holds 3 busy connections, its 4th is refused; 127.0.0.1 still works.
    let mut busy = Vec::new();
    for _ in 0..3 {
        busy.push(held_call([127, 0, 0, 2], &address, &gate).await);
    }
    let refused = echo_over(connect_from([127, 0, 0, 2], &address).await, &address, "x").await;
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(echo_call(&address, "other peer").await.status, 200);

    // In all: 3 more busy connections from 127.0.0.3 fill the cap of 6; the next is refused.
    for _ in 0..3 {
        busy.push(held_call([127, 0, 0, 3], &address, &gate).await);
    }
    let refused = echo_call(&address, "full").await;
    assert_eq!(refused.status, 503, "{refused:?}");

    // Once the calls finish, their connections are idle again: calls get through.
    gate.release.add_permits(6);
    for stream in busy {
        let mut stream = stream;
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(CLOSED_WITHIN, stream.read_to_end(&mut answer)).await;
        assert!(
            String::from_utf8_lossy(&answer).contains("released"),
            "a held call was answered"
        );
    }
    assert_eq!(echo_call(&address, "after").await.status, 200);
}

/// Tokens `alice-1`, `alice-2`, ... are Alice's; `bob-*` Bob's.
struct Principals;

impl TokenVerifier for Principals {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, TokenError>> {
        Box::pin(async move {
            match token.split_once('-') {
                Some((who @ ("alice" | "bob"), _)) => Ok(VerifiedToken::new().with_subject(who)),
                _ => Err(TokenError::invalid("unknown")),
            }
        })
    }
}

/// The headers of a 2025-11-25 request with `token`, in `session` if given.
fn session_headers(token: &str, session: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        ("Authorization".to_owned(), format!("Bearer {token}")),
    ];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id".to_owned(), session.to_owned()));
        headers.push(("MCP-Protocol-Version".to_owned(), "2025-11-25".to_owned()));
    }
    headers
}

async fn post(address: &str, headers: &[(String, String)], body: &Value) -> Answer {
    let stream = TcpStream::connect(address).await.unwrap();
    request(stream, "POST", "/mcp", address, headers, &body.to_string()).await
}

/// `initialize` with `token`: the answer, and the session id when one was made.
async fn initialize(address: &str, token: &str) -> (Answer, Option<String>) {
    let body = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}
        }
    });
    let answer = post(address, &session_headers(token, None), &body).await;
    let session = answer.header("mcp-session-id").map(str::to_owned);
    if let Some(session) = &session {
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let sent = post(
            address,
            &session_headers(token, Some(session)),
            &initialized,
        )
        .await;
        assert_eq!(sent.status, 202, "{sent:?}");
    }
    (answer, session)
}

async fn delete(address: &str, token: &str, session: &str) -> Answer {
    let stream = TcpStream::connect(address).await.unwrap();
    request(
        stream,
        "DELETE",
        "/mcp",
        address,
        &session_headers(token, Some(session)),
        "",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped_per_principal_and_in_all_and_delete_answers_204() {
    let registry = ToolRegistry::new().with(EchoTool);
    let server = McpServer::new(registry)
        .with_token_verifier(Principals)
        .with_http_limits(
            HttpLimits::default()
                .with_max_sessions(3)
                .with_max_sessions_per_principal(2),
        );
    let address = serve(server).await;

    let (_, alice_1) = initialize(&address, "alice-1").await;
    let (_, alice_2) = initialize(&address, "alice-2").await;
    let (alice_1, alice_2) = (alice_1.unwrap(), alice_2.unwrap());
    let (refused, none) = initialize(&address, "alice-3").await;
    assert_eq!(refused.status, 429, "{refused:?}");
    assert_eq!(refused.header("retry-after"), Some("10"));
    assert!(none.is_none());

    let (_, bob_1) = initialize(&address, "bob-1").await;
    assert!(bob_1.is_some(), "Bob has sessions of his own");
    let (refused, _) = initialize(&address, "bob-2").await;
    assert_eq!(refused.status, 503, "every session of the server is taken");
    assert_eq!(refused.header("retry-after"), Some("10"));

    // Stateless (2026-07-28) calls need no session and still work.
    let body = tools_call(1, "echo", &json!({"text": "stateless"}));
    let mut headers = call_headers("echo");
    headers.push(("Authorization".into(), "Bearer bob-3".into()));
    let stream = TcpStream::connect(&address).await.unwrap();
    let answer = request(stream, "POST", "/mcp", &address, &headers, &body).await;
    assert_eq!(answer.status, 200, "{answer:?}");

    // A DELETE ends a session (204, as the official clients expect) and gives its place back.
    let deleted = delete(&address, "alice-1", &alice_1).await;
    assert_eq!(deleted.status, 204, "{deleted:?}");
    let (again, session) = initialize(&address, "alice-4").await;
    assert_eq!(again.status, 200, "{again:?}");
    assert!(session.is_some());
    // The session still works after the others came and went.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "in session"}}});
    let answer = post(&address, &session_headers("alice-2", Some(&alice_2)), &call).await;
    assert!(answer.body.contains("in session"), "{answer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_in_flight_in_a_session_is_refused_and_the_first_is_answered() {
    let (server, gate) = server(HttpLimits::default());
    let address = serve(server).await;
    let (_, session) = initialize(&address, TOKEN).await;
    let session = session.expect("a session");
    let headers = session_headers(TOKEN, Some(&session));

    let call = |tool: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}})
    };
    let first = {
        let (address, headers, body) = (address.clone(), headers.clone(), call("hold", json!({})));
        tokio::spawn(async move { post(&address, &headers, &body).await })
    };
    tokio::time::timeout(CLOSED_WITHIN, gate.entered.acquire())
        .await
        .expect("the first call starts")
        .unwrap()
        .forget();

    let second = post(&address, &headers, &call("echo", json!({"text": "second"}))).await;
    assert_eq!(second.status, 200, "{second:?}");
    let error: Value = serde_json::from_str(&second.body).unwrap();
    assert_eq!(error["id"], 5);
    assert_eq!(error["error"]["code"], -32600);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already used by a request in flight"),
        "{error}"
    );

    gate.release.add_permits(1);
    let first = first.await.unwrap();
    assert!(
        first.body.contains("released"),
        "the first call's answer: {first:?}"
    );

    // Once answered, the id may be used again.
    let again = post(&address, &headers, &call("echo", json!({"text": "again"}))).await;
    assert!(again.body.contains("again"), "{again:?}");
}

/// POSTs `body` as it is, authenticated.
async fn raw_post(address: &str, body: &str, content_type: &str) -> Answer {
    let stream = TcpStream::connect(address).await.unwrap();
    let mut headers = authorized("echo", &[]);
    headers.retain(|(name, _)| name != "Content-Type");
    headers.push(("Content-Type".into(), content_type.into()));
    request(stream, "POST", "/mcp", address, &headers, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_are_not_one_jsonrpc_message_get_400_with_a_jsonrpc_error() {
    let address = serve(server(HttpLimits::default()).0).await;
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let batch = format!("[{}]", tools_call(1, "echo", &json!({"text": "a"})));
    for (body, code) in [
        ("{\"jsonrpc\": \"2.0\", \"id\": 1, ", -32700),
        ("not json", -32700),
        (deep.as_str(), -32700),
        (batch.as_str(), -32600),
        (r#"{"jsonrpc": "2.0", "id": 1}"#, -32600),
        ("42", -32600),
    ] {
        let answer = raw_post(&address, body, "application/json").await;
        let shown = &body[..body.len().min(40)];
        assert_eq!(answer.status, 400, "{shown}: {answer:?}");
        assert_eq!(
            answer.header("content-type"),
            Some("application/json"),
            "{shown}"
        );
        let error: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(error["jsonrpc"], "2.0", "{shown}");
        assert_eq!(error["error"]["code"], code, "{shown}: {error}");
    }
    // A body of another type is still 415, and a good one still answered.
    let answer = raw_post(&address, "text=1", "text/plain").await;
    assert_eq!(answer.status, 415, "{answer:?}");
    assert_eq!(echo_call(&address, "fine").await.status, 200);
}
