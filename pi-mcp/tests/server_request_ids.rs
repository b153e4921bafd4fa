//! A JSON-RPC request id stays taken in its session until its call has really finished: a
//! client that disconnects mid-call (or cancels it) and sends the same id again never gets
//! the old call's answer for the new request; and it is free by the time the client has read
//! the answer, so reusing it at once is never refused. Spoken to in raw HTTP/1.1 over
//! 127.0.0.1, so the disconnect is a real one.

mod server_support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use pi_mcp::McpServer;
use pi_tool::{State, ToolContext, ToolRegistry, tool};
use serde_json::{Value, json};
use server_support::{Answer, request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the `hold` calls do, by tag: started, released by the test, finished.
#[derive(Default)]
struct Gates {
    started: watch::Sender<BTreeSet<String>>,
    released: watch::Sender<BTreeSet<String>>,
    finished: watch::Sender<BTreeSet<String>>,
}

impl Gates {
    fn mark(set: &watch::Sender<BTreeSet<String>>, tag: &str) {
        set.send_modify(|tags| {
            tags.insert(tag.to_owned());
        });
    }

    /// Waits (at most 30 s) until `set` has `tag`.
    async fn reached(set: &watch::Sender<BTreeSet<String>>, tag: &str) {
        let mut watching = set.subscribe();
        tokio::time::timeout(
            Duration::from_secs(30),
            watching.wait_for(|tags| tags.contains(tag)),
        )
        .await
        .unwrap_or_else(|_| panic!("`{tag}` never got there"))
        .unwrap();
    }
}

/// Hold until the test releases `tag` or the call is cancelled (a `stubborn` tag ignores
/// cancels: the pipeline answers it aborted after its grace, and it goes on), then say which
/// call this was.
#[tool]
async fn hold(tag: String, gates: State<Arc<Gates>>, ctx: ToolContext) -> String {
    Gates::mark(&gates.started, &tag);
    let mut released = gates.released.subscribe();
    let cancelled = async {
        if tag.starts_with("stubborn") {
            std::future::pending::<()>().await;
        }
        ctx.signal().cancelled().await;
    };
    let answer = tokio::select! {
        _ = released.wait_for(|tags| tags.contains(&tag)) => format!("held {tag}"),
        () = cancelled => format!("cancelled {tag}"),
    };
    Gates::mark(&gates.finished, &tag);
    answer
}

/// Says `text` back at once.
#[tool]
async fn echo(text: String) -> String {
    text
}

async fn serve() -> (String, Arc<Gates>) {
    let gates = Arc::new(Gates::default());
    let registry = ToolRegistry::new()
        .with(HoldTool)
        .with(EchoTool)
        .with_state(Arc::clone(&gates));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(
        McpServer::new(registry)
            .without_auth()
            .serve_http_on(listener),
    );
    (address, gates)
}

fn headers(session: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
    ];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id".to_owned(), session.to_owned()));
        headers.push(("MCP-Protocol-Version".to_owned(), "2025-11-25".to_owned()));
    }
    headers
}

async fn post(address: &str, session: Option<&str>, body: &Value) -> Answer {
    let stream = TcpStream::connect(address).await.unwrap();
    request(
        stream,
        "POST",
        "/mcp",
        address,
        &headers(session),
        &body.to_string(),
    )
    .await
}

/// A 2025-11-25 session (the handshake, then `notifications/initialized`).
async fn session(address: &str) -> String {
    let body = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}
        }
    });
    let answer = post(address, None, &body).await;
    let session = answer
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session: {answer:?}"))
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(address, Some(&session), &initialized).await.status,
        202
    );
    session
}

fn hold_call(id: u64, tag: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "hold", "arguments": {"tag": tag}}})
}

/// Writes a POST of `body` to the session's endpoint, by hand (the tests control the socket).
async fn send_post(stream: &mut TcpStream, address: &str, session: &str, body: &str) {
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\n");
    for (name, value) in headers(Some(session)) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(head.as_bytes()).await.unwrap();
}

/// Starts a `hold` call of `tag` as request `id`, waits until the tool runs, and hangs up
/// without reading the answer.
async fn call_and_disconnect(address: &str, session: &str, gates: &Gates, id: u64, tag: &str) {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let body = hold_call(id, tag).to_string();
    send_post(&mut stream, address, session, &body).await;
    // The answer's head comes before the tool's result: read it, so the request was taken.
    let mut seen = Vec::new();
    let mut buffer = [0u8; 1024];
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buffer))
            .await
            .expect("the server answers within 30 s")
            .unwrap();
        assert!(read > 0, "closed before answering");
        seen.extend_from_slice(&buffer[..read]);
    }
    assert!(
        seen.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&seen)
    );
    Gates::reached(&gates.started, tag).await;
    drop(stream);
}

/// The JSON-RPC messages of an SSE body (or a plain JSON one).
fn messages(answer: &Answer) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str(&answer.body) {
        return vec![value];
    }
    answer
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// The answer to request `id`: the tool's text, or the JSON-RPC error's message.
fn answer_to(answer: &Answer, id: u64) -> Result<String, String> {
    let messages = messages(answer);
    let message = messages
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {id}: {answer:?}"));
    match message.get("error") {
        Some(error) => Err(error["message"].as_str().unwrap_or_default().to_owned()),
        None => Ok(message["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()),
    }
}

/// Sends request `id` until the server takes it (bounded): a refusal says the id is still in
/// use, which lasts only until the old call's answer has been dealt with.
async fn once_free(address: &str, session: &str, id: u64, tag: &str) -> Result<String, String> {
    for _ in 0..100 {
        let answer = post(address, Some(session), &hold_call(id, tag)).await;
        match answer_to(&answer, id) {
            Err(message) if message.contains("already used by a request in flight") => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
    panic!("request id {id} was never free again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_id_never_takes_the_answer_of_the_call_the_client_hung_up_on() {
    let (address, gates) = serve().await;
    let session = session(&address).await;
    call_and_disconnect(&address, &session, &gates, 7, "first").await;

    // The same id again while the first call still runs.
    let second = {
        let (address, session) = (address.clone(), session.clone());
        tokio::spawn(async move { post(&address, Some(&session), &hold_call(7, "second")).await })
    };
    // Either the server refuses it at once, or its call starts: then the first call finishes
    // while the second waits, and its answer must not be given for the second request.
    let mut second_started = gates.started.subscribe();
    tokio::select! {
        _ = second_started.wait_for(|tags| tags.contains("second")) => {}
        () = async { while !second.is_finished() { tokio::task::yield_now().await; tokio::time::sleep(Duration::from_millis(10)).await; } } => {}
    }
    Gates::mark(&gates.released, "first");
    Gates::reached(&gates.finished, "first").await;
    Gates::mark(&gates.released, "second");
    let second = tokio::time::timeout(Duration::from_secs(30), second)
        .await
        .expect("the second request is answered")
        .unwrap();
    let answered = answer_to(&second, 7);
    assert_ne!(
        answered.as_deref(),
        Ok("held first"),
        "the hung-up call's answer went to the new request"
    );
    let refusal = answered.expect_err("the id was still taken by the first call");
    assert!(
        refusal.contains("7") && refusal.contains("already used by a request in flight"),
        "{refusal}"
    );

    // Once the first call has finished, the id is free again and answered by its own call.
    Gates::mark(&gates.released, "third");
    assert_eq!(
        once_free(&address, &session, 7, "third").await.as_deref(),
        Ok("held third")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_id_is_not_free_until_its_call_has_stopped() {
    let (address, gates) = serve().await;
    let session = session(&address).await;
    let first = {
        let (address, session) = (address.clone(), session.clone());
        tokio::spawn(async move { post(&address, Some(&session), &hold_call(5, "stubborn")).await })
    };
    Gates::reached(&gates.started, "stubborn").await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 5, "reason": "changed my mind"}});
    assert_eq!(post(&address, Some(&session), &cancel).await.status, 202);
    // At once, while the cancelled call has not answered (it ignores the cancel: the pipeline
    // answers it after the abort grace).
    let second = {
        let (address, session) = (address.clone(), session.clone());
        tokio::spawn(async move { post(&address, Some(&session), &hold_call(5, "second")).await })
    };
    let mut second_started = gates.started.subscribe();
    tokio::select! {
        _ = second_started.wait_for(|tags| tags.contains("second")) => {}
        () = async { while !second.is_finished() { tokio::time::sleep(Duration::from_millis(10)).await; } } => {}
    }
    Gates::mark(&gates.released, "second");
    let second = tokio::time::timeout(Duration::from_secs(30), second)
        .await
        .expect("the second request is answered")
        .unwrap();
    let refusal = answer_to(&second, 5).expect_err("the cancelled call has not stopped yet");
    assert!(
        refusal.contains("already used by a request in flight"),
        "{refusal}"
    );

    // The cancelled request gets no answer (its stream just ends), and then the id is free.
    let first = tokio::time::timeout(Duration::from_secs(30), first)
        .await
        .expect("the cancelled request's stream ends")
        .unwrap();
    assert!(
        messages(&first).iter().all(|m| m["id"] != 5),
        "answered after its cancel: {first:?}"
    );
    Gates::mark(&gates.released, "after-stubborn");
    assert_eq!(
        once_free(&address, &session, 5, "after-stubborn")
            .await
            .as_deref(),
        Ok("held after-stubborn")
    );
    Gates::mark(&gates.released, "stubborn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_id_stays_taken_until_its_call_ended() {
    let (address, gates) = serve().await;
    let session = session(&address).await;
    let first = {
        let (address, session) = (address.clone(), session.clone());
        tokio::spawn(
            async move { post(&address, Some(&session), &hold_call(9, "cancelled")).await },
        )
    };
    Gates::reached(&gates.started, "cancelled").await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 9, "reason": "changed my mind"}});
    assert_eq!(post(&address, Some(&session), &cancel).await.status, 202);
    // Only the cancel can end it: the test never releases it.
    Gates::reached(&gates.finished, "cancelled").await;
    Gates::mark(&gates.released, "after");
    assert_eq!(
        once_free(&address, &session, 9, "after").await.as_deref(),
        Ok("held after")
    );
    let first = tokio::time::timeout(Duration::from_secs(30), first)
        .await
        .expect("the cancelled request's stream ends")
        .unwrap();
    assert!(
        messages(&first).iter().all(|m| m["id"] != 9),
        "answered after its cancel: {first:?}"
    );
}

/// Sends request `id` (a call of `echo` saying `text`) over `stream` and reads only until its
/// answer arrived, as a client that goes on at once does: the SSE stream may still be open.
async fn answer_as_soon_as_it_arrives(
    mut stream: TcpStream,
    address: &str,
    session: &str,
    id: u64,
    text: &str,
) -> Result<String, String> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": text}}})
    .to_string();
    send_post(&mut stream, address, session, &body).await;
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let read = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buffer))
            .await
            .expect("the server answers within 30 s")
            .unwrap();
        assert!(
            read > 0,
            "closed before answering: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buffer[..read]);
        let text = String::from_utf8_lossy(&seen);
        // A plain JSON body (a refusal from the id check) or an SSE `data:` line, whole.
        let (_, body) = text.split_once("\r\n\r\n").unwrap_or_default();
        let answer = serde_json::from_str::<Value>(body).ok().or_else(|| {
            body.lines()
                .filter_map(|line| line.trim().strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                .find(|message| message["id"] == id)
        });
        if let Some(message) = answer {
            return match message.get("error") {
                Some(error) => Err(error["message"].as_str().unwrap_or_default().to_owned()),
                None => Ok(message["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()),
            };
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_is_free_as_soon_as_its_answer_has_arrived() {
    let (address, _gates) = serve().await;
    let session = session(&address).await;
    // The next connection is open before the answer comes, so the next request follows the
    // answer as closely as a client can.
    let mut next = TcpStream::connect(&address).await.unwrap();
    for call in 0..500 {
        let stream = next;
        next = TcpStream::connect(&address).await.unwrap();
        let text = format!("call {call}");
        let answered = answer_as_soon_as_it_arrives(stream, &address, &session, 3, &text).await;
        assert_eq!(
            answered.as_deref(),
            Ok(text.as_str()),
            "call {call} with an id whose previous call had answered"
        );
    }
}
