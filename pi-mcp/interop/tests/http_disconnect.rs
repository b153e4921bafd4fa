//! Cancellation by HTTP disconnect, spoken over a raw socket so nothing in between hides it.
//! Under 2026-07-28 a client cancels a streamable-HTTP request by closing its response stream:
//! the call's own signal must fire. (Under 2025-11-25 a disconnect is not a cancel; clients send
//! `notifications/cancelled`, which the official clients' tests cover.)

use std::time::Duration;

use pi_mcp_interop::ServerProcess;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}"#;

/// The bearer token the server is started with.
const TOKEN: &str = "http-disconnect-test-token-0123456789";

/// Sends one 2026-07-28 `tools/call` over a fresh connection and returns the open stream.
async fn send_call(address: &str, id: u32, tool: &str) -> TcpStream {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}},{META}}}}}"#
    );
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: {tool}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(address).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    stream
}

/// Reads until the connection closes and returns what came.
async fn read_all(mut stream: TcpStream) -> String {
    let mut answer = Vec::new();
    // `Connection: close` ends the stream after the answer; the limit only guards a broken server.
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_response_stream_cancels_the_call() {
    let server = ServerProcess::start_http_with_env(
        env!("CARGO_BIN_EXE_pi-mcp-fixture-server"),
        &["http"],
        &[("PI_MCP_TOKEN", TOKEN)],
    );
    let address = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();

    // `wait_for_cancel` sleeps a minute unless its signal fires. The server sends nothing
    // before the result, so give the call a moment to start, then hang up.
    let waiting = send_call(&address, 1, "wait_for_cancel").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    drop(waiting);

    // The server counts the calls whose signal fired; poll until the cancel has landed.
    let mut last = String::new();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let answer = read_all(send_call(&address, 2, "cancelled_calls").await).await;
        if answer.contains(r#""text":"1""#) {
            return;
        }
        last = answer;
    }
    panic!("the disconnected call was not cancelled; cancelled_calls answered:\n{last}");
}
