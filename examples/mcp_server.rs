//! An MCP server from `#[tool]` fns: every tool linked into the program, served to MCP clients
//! (Claude Desktop, VS Code, Cursor, the MCP Inspector) over stdio, or over streamable HTTP with
//! `--http ADDR` (a loopback address; every request needs a bearer token). Logs go to stderr:
//! stdout belongs to the protocol.
//!
//! Run: `cargo run -p pi-examples --example mcp_server` (or `-- --http 127.0.0.1:8080`).
//! The pi-mcp README shows how to add it to a client's configuration.

use std::time::Duration;

use pi_mcp::McpServer;
use pi_tool::{Json, ToolContext, ToolRegistry, ToolResult, tool};

/// A temperature reading.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Reading {
    /// The city asked about.
    city: String,
    /// Degrees Celsius.
    celsius: f64,
}

/// Get the current temperature in a city (a stand-in table: Paris, Oslo, Cairo).
#[tool(label = "Weather", read_only, open_world = false)]
async fn get_weather(
    /// City name, e.g. "Paris"
    city: String,
) -> Result<Json<Reading>, String> {
    let celsius = match city.as_str() {
        "Paris" => 18.5,
        "Oslo" => 4.0,
        "Cairo" => 31.0,
        other => {
            return Err(format!(
                "no weather data for {other:?}; known cities: Paris, Oslo, Cairo"
            ));
        }
    };
    Ok(Json(Reading { city, celsius }))
}

/// Count slowly to `to`, reporting progress; stops early when the client cancels.
#[tool(label = "Count", read_only, open_world = false)]
async fn count(
    /// Where to stop (1-20)
    #[schemars(range(min = 1, max = 20))]
    to: u32,
    ctx: ToolContext,
) -> String {
    for n in 1..=to {
        if ctx.is_aborted() {
            return format!("cancelled at {n}");
        }
        ctx.update(ToolResult::text(format!("{n}/{to}")));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    format!("counted to {to}")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = McpServer::new(ToolRegistry::discover()?)
        .with_name("pi-example")
        .with_instructions("Weather lookups and a slow counter, served by pi-mcp.");
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => server.serve_stdio().await?,
        (Some("--http"), Some(addr)) => {
            // Every request needs the token: `$PI_MCP_TOKEN`, or a new one printed here.
            let token = match std::env::var("PI_MCP_TOKEN") {
                Ok(token) => token,
                Err(_) => {
                    let token = pi_mcp::generate_token();
                    eprintln!("send the header `Authorization: Bearer {token}`");
                    token
                }
            };
            eprintln!("serving MCP at http://{addr}/mcp");
            server.with_bearer_token(token).serve_http(addr).await?;
        }
        _ => return Err("usage: mcp_server [--http ADDR]".into()),
    }
    Ok(())
}
