//! What a session costs the server, counted by the allocator: live heap bytes per open
//! `initialize`-only session, and that all of it is freed once the sessions are deleted. (The
//! process's resident size is another matter: the allocator keeps freed pages for reuse; the
//! README's "Sessions and memory" has both.)
//!
//! One test in this binary: the counter sees the whole process.

use std::time::Duration;

use axum::body::Body;
use pi_mcp::McpServer;
use pi_tool::{ToolRegistry, tool};
use tower::ServiceExt;

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

fn live() -> isize {
    isize::try_from(dhat::HeapStats::get().curr_bytes).unwrap_or(isize::MAX)
}

/// Echo the text back.
#[tool]
async fn echo(text: String) -> String {
    text
}

const SESSIONS: usize = 500;

async fn send(router: &axum::Router, request: http::Request<Body>) -> http::Response<Body> {
    router.clone().oneshot(request).await.expect("infallible")
}

async fn open_session(router: &axum::Router) -> String {
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"memory","version":"1"}}}"#;
    let request = http::Request::post("/mcp")
        .header("Host", "localhost")
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(Body::from(initialize))
        .unwrap();
    let response = send(router, request).await;
    assert_eq!(response.status(), 200);
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let request = http::Request::post("/mcp")
        .header("Host", "localhost")
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &id)
        .header("MCP-Protocol-Version", "2025-11-25")
        .body(Body::from(initialized))
        .unwrap();
    assert_eq!(send(router, request).await.status(), 202);
    id
}

async fn delete_session(router: &axum::Router, id: &str) {
    let request = http::Request::delete("/mcp")
        .header("Host", "localhost")
        .header("Mcp-Session-Id", id)
        .header("MCP-Protocol-Version", "2025-11-25")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(router, request).await.status(), 204);
}

/// Waits (at most 10 s) for the live bytes to settle at or below `target`; the last count.
async fn settle_at(target: isize) -> isize {
    for _ in 0..100 {
        if live() <= target {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    live()
}

/// One test, because dhat counts for the whole process.
#[test]
fn a_session_costs_its_share_and_gives_it_all_back() {
    // `DHAT_HEAP=<file>` writes a full heap profile there (for `dh_view.html`) instead.
    let _profiler = match std::env::var_os("DHAT_HEAP") {
        Some(file) => dhat::Profiler::builder().file_name(file).build(),
        None => dhat::Profiler::builder().testing().build(),
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(sessions_come_and_go());
}

async fn sessions_come_and_go() {
    let router = McpServer::new(ToolRegistry::new().with(EchoTool))
        .without_auth()
        .router();
    // Warm up: the first session sets up what every later one shares (lazy statics, pools).
    let warm = open_session(&router).await;
    delete_session(&router, &warm).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let before = live();
    let mut ids = Vec::with_capacity(SESSIONS);
    for _ in 0..SESSIONS {
        ids.push(open_session(&router).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let open = live();
    let per_session = (open - before) / SESSIONS as isize;
    eprintln!("live heap per initialize-only session: {per_session} bytes");
    for id in &ids {
        delete_session(&router, id).await;
    }
    drop(ids);
    // What stays is what the server keeps for itself (map capacity, the allocator's caches
    // of the runtime's tasks): a few bytes per session at most.
    let allowance = (SESSIONS * 512) as isize;
    let after = settle_at(before + allowance).await;
    eprintln!(
        "live heap after deleting them: {:+} bytes from before",
        after - before
    );
    assert!(
        after - before <= allowance,
        "{} bytes of {SESSIONS} deleted sessions are still live",
        after - before
    );
    // 119 KB in a debug build (2026-12-05), 91 KB of it the first blocks of six tokio
    // channels in rmcp: a guard against it growing, not a goal.
    assert!(
        per_session < 160 * 1024,
        "a session costs {per_session} bytes"
    );
}
