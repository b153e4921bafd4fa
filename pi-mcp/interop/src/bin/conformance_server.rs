//! The server the MCP conformance suite (`@modelcontextprotocol/conformance`) tests: its fixture
//! tools, each written with `#[tool]`. Scenarios that need what `AgentTool` cannot express
//! (audio and embedded resources, logging, sampling, elicitation) or that we do not serve
//! (prompts, resources, completion) are listed in `conformance/expected-failures.yaml`.
//!
//! Binds 127.0.0.1 on a free port (or the port given as the first argument), prints
//! `listening http://127.0.0.1:PORT/mcp` and serves streamable HTTP, without authentication:
//! the suite's server mode sends no credentials. Loopback only (`without_auth` refuses any
//! other address), and its tools touch nothing.

use std::time::Duration;

use pi_mcp::McpServer;
use pi_mcp_interop::RED_PIXEL_PNG;
use pi_tool::{Content, ToolContext, ToolRegistry, ToolResult, tool};

/// Tests simple text content response.
#[tool(read_only)]
async fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Tests image content response.
#[tool(read_only)]
async fn test_image_content() -> Content {
    Content::image(RED_PIXEL_PNG, "image/png")
}

/// Tests error response handling.
#[tool]
async fn test_error_handling() -> Result<String, std::io::Error> {
    Err(std::io::Error::other(
        "This tool intentionally returns an error for testing",
    ))
}

/// Tests tool that reports progress notifications.
#[tool]
async fn test_tool_with_progress(ctx: ToolContext) -> &'static str {
    for percent in [0, 50, 100] {
        ctx.update(ToolResult::text(format!("{percent}/100")));
        if percent < 100 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    "Progress test completed"
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = match std::env::args().nth(1) {
        Some(port) => port.parse()?,
        None => 0,
    };
    let server = McpServer::new(ToolRegistry::discover()?)
        .with_name("pi-mcp-conformance-server")
        .without_auth();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening http://{}/mcp", listener.local_addr()?);
    server.serve_http_on(listener).await?;
    Ok(())
}
