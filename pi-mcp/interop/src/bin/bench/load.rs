//! `pi-mcp-bench load [SESSIONS] [CALLS]`: pi-mcp's HTTP server under load, and what a session
//! costs it.
//!
//! - Load: SESSIONS clients (rmcp's), each with its own session, all at once, each making CALLS
//!   `echo` calls one after another: calls per second over the whole run, the p50 and p99 of a
//!   call's round trip, and the server's peak resident memory (`VmHWM`).
//! - Sessions: 900 `initialize`-only sessions (under the default cap of 1,000), opened over
//!   raw HTTP, then deleted, three times: the server's resident memory (`VmRSS`) before, with
//!   them open (the growth per session) and after the deletes.
//!
//! Memory is read from `/proc/PID/status` (Linux); elsewhere it is reported as unknown.

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::transport::StreamableHttpClientTransport;
use tokio::task::JoinSet;

use crate::{Server, start_http};

/// Sessions per open/delete cycle: under `HttpLimits::DEFAULT_MAX_SESSIONS`.
const CYCLE_SESSIONS: usize = 900;
const CYCLES: usize = 3;
/// Clients opening or deleting sessions at once.
const OPENERS: usize = 8;

pub(crate) async fn run(server: &Server, sessions: usize, calls: usize) -> Result<(), String> {
    let (mut child, url) = start_http(server).await?;
    let pid = child.id().ok_or("the server exited at once")?;
    let outcome = async {
        load(&url, pid, sessions, calls).await?;
        session_memory(&url, pid).await
    }
    .await;
    let _ = child.kill().await;
    outcome
}

async fn load(url: &str, pid: u32, sessions: usize, calls: usize) -> Result<(), String> {
    let mut clients = JoinSet::new();
    for _ in 0..sessions {
        let url = url.to_owned();
        clients.spawn(async move {
            ().serve(StreamableHttpClientTransport::from_uri(url))
                .await
                .map_err(|err| format!("no MCP session: {err}"))
        });
    }
    let mut connected = Vec::with_capacity(sessions);
    while let Some(client) = clients.join_next().await {
        connected.push(client.map_err(|err| err.to_string())??);
    }
    let started = Instant::now();
    let mut callers = JoinSet::new();
    for client in connected {
        callers.spawn(async move {
            let mut arguments = JsonObject::new();
            arguments.insert("text".into(), "hi".into());
            let request = CallToolRequestParams::new("echo").with_arguments(arguments);
            let mut times = Vec::with_capacity(calls);
            for _ in 0..calls {
                let sent = Instant::now();
                let result = client
                    .call_tool(request.clone())
                    .await
                    .map_err(|err| format!("`echo` failed: {err}"))?;
                if result.is_error == Some(true) {
                    return Err(format!("`echo` returned an error: {:?}", result.content));
                }
                times.push(sent.elapsed());
            }
            let _ = client.cancel().await;
            Ok::<_, String>(times)
        });
    }
    let mut times = Vec::with_capacity(sessions * calls);
    while let Some(caller) = callers.join_next().await {
        times.extend(caller.map_err(|err| err.to_string())??);
    }
    let elapsed = started.elapsed();
    times.sort_unstable();
    let at = |quantile: f64| {
        let index = ((times.len() as f64 * quantile) as usize).min(times.len().saturating_sub(1));
        times.get(index).copied().unwrap_or_default()
    };
    println!(
        "load: {sessions} sessions x {calls} `echo` calls, all sessions at once: {} calls in {:.2} s \
         = {:.0} calls/s; round trip p50 {:.2} ms, p99 {:.2} ms; server peak RSS {}",
        times.len(),
        elapsed.as_secs_f64(),
        times.len() as f64 / elapsed.as_secs_f64(),
        ms(at(0.50)),
        ms(at(0.99)),
        memory(pid, "VmHWM")
    );
    Ok(())
}

async fn session_memory(url: &str, pid: u32) -> Result<(), String> {
    let http = reqwest::Client::new();
    let start = kib(pid, "VmRSS");
    println!(
        "sessions: server RSS {} before; {CYCLES} cycles of {CYCLE_SESSIONS} initialize-only \
         sessions opened, then deleted:",
        memory(pid, "VmRSS")
    );
    for cycle in 1..=CYCLES {
        let before = kib(pid, "VmRSS");
        let ids = open_sessions(&http, url, CYCLE_SESSIONS).await?;
        let open = kib(pid, "VmRSS");
        delete_sessions(&http, url, ids).await?;
        // Session tasks end after the DELETE's answer: give them a moment.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = kib(pid, "VmRSS");
        match (start, before, open, after) {
            (Some(start), Some(before), Some(open), Some(after)) => println!(
                "  cycle {cycle}: {:.1} MB open (+{:.1} KB per session), {:.1} MB after the \
                 deletes ({:+.1} MB from the start)",
                open as f64 / 1024.0,
                open.saturating_sub(before) as f64 / CYCLE_SESSIONS as f64,
                after as f64 / 1024.0,
                (after as f64 - start as f64) / 1024.0
            ),
            _ => println!("  cycle {cycle}: memory unknown (no /proc)"),
        }
    }
    Ok(())
}

/// Opens `count` sessions (`initialize`, then `notifications/initialized`); their ids.
async fn open_sessions(
    http: &reqwest::Client,
    url: &str,
    count: usize,
) -> Result<Vec<String>, String> {
    let mut openers = JoinSet::new();
    for opener in 0..OPENERS {
        let (http, url) = (http.clone(), url.to_owned());
        let share = count / OPENERS + usize::from(opener < count % OPENERS);
        openers.spawn(async move {
            let mut ids = Vec::with_capacity(share);
            for _ in 0..share {
                ids.push(open_session(&http, &url).await?);
            }
            Ok::<_, String>(ids)
        });
    }
    let mut ids = Vec::with_capacity(count);
    while let Some(opened) = openers.join_next().await {
        ids.extend(opened.map_err(|err| err.to_string())??);
    }
    Ok(ids)
}

async fn open_session(http: &reqwest::Client, url: &str) -> Result<String, String> {
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pi-mcp-bench","version":"1"}}}"#;
    let answer = post(http, url, None, initialize).await?;
    let id = answer
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| format!("initialize answered {} without a session", answer.status()))?;
    answer.bytes().await.map_err(|err| err.to_string())?;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    post(http, url, Some(&id), initialized).await?;
    Ok(id)
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &'static str,
) -> Result<reqwest::Response, String> {
    let mut request = http
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body);
    if let Some(session) = session {
        request = request
            .header("Mcp-Session-Id", session)
            .header("MCP-Protocol-Version", "2025-11-25");
    }
    request.send().await.map_err(|err| err.to_string())
}

async fn delete_sessions(
    http: &reqwest::Client,
    url: &str,
    ids: Vec<String>,
) -> Result<(), String> {
    let mut deleters = JoinSet::new();
    let share = ids.len().div_ceil(OPENERS).max(1);
    for chunk in ids.chunks(share) {
        let (http, url, chunk) = (http.clone(), url.to_owned(), chunk.to_vec());
        deleters.spawn(async move {
            for id in chunk {
                let answer = http
                    .delete(&url)
                    .header("Mcp-Session-Id", &id)
                    .header("MCP-Protocol-Version", "2025-11-25")
                    .send()
                    .await
                    .map_err(|err| err.to_string())?;
                if !answer.status().is_success() {
                    return Err(format!("DELETE answered {}", answer.status()));
                }
            }
            Ok::<_, String>(())
        });
    }
    while let Some(deleted) = deleters.join_next().await {
        deleted.map_err(|err| err.to_string())??;
    }
    Ok(())
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A `/proc/PID/status` field in KiB (`VmRSS`, `VmHWM`).
fn kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
}

fn memory(pid: u32, field: &str) -> String {
    kib(pid, field).map_or_else(
        || "unknown".to_owned(),
        |kib| format!("{:.1} MB", kib as f64 / 1024.0),
    )
}
