//! The server the official clients test against: one `#[tool]` per behaviour they check.
//!
//! `pi-mcp-fixture-server stdio` serves stdin/stdout; `pi-mcp-fixture-server http` binds
//! 127.0.0.1 on a free port, prints `listening http://127.0.0.1:PORT/mcp` and serves. Over HTTP
//! every request needs `Authorization: Bearer $PI_MCP_TOKEN` when that variable is set (as the
//! official clients' tests do); without it the server takes anyone (loopback only, for the
//! benchmark). `pi-mcp-fixture-server unix PATH` serves on a Unix socket (mode 0600) at PATH and
//! prints `listening unix:PATH`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pi_mcp::McpServer;
use pi_mcp_interop::RED_PIXEL_PNG;
use pi_tool::{Content, Json, State, ToolContext, ToolRegistry, ToolResult, tool};
use serde::Serialize;

/// Echo the text back.
#[tool(label = "Echo", read_only, idempotent, open_world = false)]
async fn echo(
    /// The text to echo
    text: String,
) -> String {
    text
}

/// A sum.
#[derive(Serialize, schemars::JsonSchema)]
struct Sum {
    /// a + b
    sum: i64,
}

/// Add two integers.
#[tool(label = "Add", read_only)]
async fn add(a: i64, b: i64) -> Json<Sum> {
    Json(Sum { sum: a + b })
}

/// Fail with the given reason.
#[tool]
async fn fail(reason: String) -> Result<String, std::io::Error> {
    Err(std::io::Error::other(reason))
}

/// Panic.
#[tool]
async fn explode() -> String {
    panic!("boom")
}

/// Return a 1x1 red PNG.
#[tool]
async fn pixel() -> Content {
    Content::image(RED_PIXEL_PNG, "image/png")
}

/// Report `steps` progress updates ("step 1", "step 2", ...), then finish.
#[tool(destructive = false)]
async fn count_steps(steps: u32, ctx: ToolContext) -> String {
    for step in 1..=steps {
        ctx.update(ToolResult::text(format!("step {step}")));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    format!("counted {steps} steps")
}

/// How many calls saw their cancellation signal.
struct Cancellations(AtomicUsize);

/// Wait until cancelled (at most 60 s), and count the cancellation.
#[tool]
async fn wait_for_cancel(ctx: ToolContext, seen: State<Cancellations>) -> String {
    tokio::select! {
        () = ctx.signal().cancelled() => {
            seen.0.fetch_add(1, Ordering::SeqCst);
            "cancelled".to_owned()
        }
        () = tokio::time::sleep(Duration::from_secs(60)) => "never cancelled".to_owned(),
    }
}

/// How many `wait_for_cancel` calls were cancelled so far.
#[tool(read_only)]
async fn cancelled_calls(seen: State<Cancellations>) -> String {
    seen.0.load(Ordering::SeqCst).to_string()
}

/// Calls of `one_at_a_time` running now, and the most ever seen at once.
#[derive(Default)]
struct Overlap {
    running: AtomicUsize,
    most: AtomicUsize,
    started: AtomicUsize,
}

/// A sequential tool: sleeps `ms` and records how many of its calls overlapped.
#[tool(sequential)]
async fn one_at_a_time(ms: u64, overlap: State<Overlap>) -> String {
    overlap.started.fetch_add(1, Ordering::SeqCst);
    let now = overlap.running.fetch_add(1, Ordering::SeqCst) + 1;
    overlap.most.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    overlap.running.fetch_sub(1, Ordering::SeqCst);
    "done".to_owned()
}

/// How many `one_at_a_time` calls have started so far.
#[tool(read_only)]
async fn one_at_a_time_runs(overlap: State<Overlap>) -> String {
    overlap.started.load(Ordering::SeqCst).to_string()
}

/// The most `one_at_a_time` calls that ever ran at once.
#[tool(read_only)]
async fn most_overlap(overlap: State<Overlap>) -> String {
    overlap.most.load(Ordering::SeqCst).to_string()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = ToolRegistry::discover()?
        .with_state(Cancellations(AtomicUsize::new(0)))
        .with_state(Overlap::default());
    let server = McpServer::new(registry)
        .with_name("pi-mcp-fixture-server")
        .with_instructions("Fixture tools for pi-mcp's interop tests.");
    match std::env::args().nth(1).as_deref() {
        Some("stdio") => server.serve_stdio().await?,
        Some("http") => {
            let server = match std::env::var("PI_MCP_TOKEN") {
                Ok(token) => server.with_bearer_token(token),
                Err(_) => server.without_auth(),
            };
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            println!("listening http://{}/mcp", listener.local_addr()?);
            server.serve_http_on(listener).await?;
        }
        Some("unix") => {
            let path = std::env::args()
                .nth(2)
                .ok_or("usage: pi-mcp-fixture-server unix PATH")?;
            let serving = server.serve_unix(&path);
            tokio::pin!(serving);
            // The socket is bound on the first poll; say so only once it is there.
            tokio::select! {
                biased;
                served = &mut serving => served?,
                () = std::future::ready(()) => println!("listening unix:{path}"),
            }
            serving.await?;
        }
        _ => return Err("usage: pi-mcp-fixture-server stdio|http|unix PATH".into()),
    }
    Ok(())
}
