//! A server process with few file descriptors (RLIMIT_NOFILE 128, set in the shell that starts
//! it) and more idle connections than that: calls from a client with the token still get
//! through. Before the connection cap (kept below the limit, making room by closing idle
//! connections), about 120 idle connections left the server unable to accept anything.

use std::time::Duration;

use pi_mcp_interop::ServerProcess;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The bearer token the server is started with.
const TOKEN: &str = "open-file-limit-test-token-0123456789";

/// A 2026-07-28 `echo` call over a fresh connection; the whole answer.
async fn echo(address: &str, text: &str) -> String {
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}"#;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}},{meta}}}}}"#
    );
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: echo\r\nAuthorization: Bearer {TOKEN}\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(address).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .await
        .expect("read the answer");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_past_the_open_file_limit_do_not_lock_out_calls() {
    let server = ServerProcess::start_http_with_env(
        "sh",
        &[
            "-c",
            "ulimit -n 128 && exec \"$0\" http",
            env!("CARGO_BIN_EXE_pi-mcp-fixture-server"),
        ],
        &[("PI_MCP_TOKEN", TOKEN)],
    );
    let address = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();

    // 300 connections that send nothing, and 20 that send half a request head: anyone who can
    // reach the port can open them, without a token.
    // (A server that stopped accepting leaves them in its backlog until it is full: then they
    // are not made, and the calls below fail.)
    let connect = || async {
        tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(&address))
            .await
            .ok()
            .and_then(Result::ok)
    };
    let mut held = Vec::new();
    for _ in 0..300 {
        held.extend(connect().await);
    }
    for _ in 0..20 {
        if let Some(mut stream) = connect().await {
            let head = format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\n");
            let _ = stream.write_all(head.as_bytes()).await;
            held.push(stream);
        }
    }

    for n in 0..10 {
        let text = format!("call {n}");
        let answer = tokio::time::timeout(Duration::from_secs(30), echo(&address, &text))
            .await
            .unwrap_or_else(|_| panic!("call {n} was not answered within 30 s"));
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.contains(&text),
            "call {n}: {answer}"
        );
    }
    drop(held);
}
