//! The benchmark's peer: the same tiny `echo` tool as rmcp's own `#[tool_router]` server (rmcp
//! does not validate arguments), served by `pi-mcp-bench serve-rmcp stdio|http`.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoRequest {
    /// The text to echo
    text: String,
}

#[derive(Debug, Clone)]
struct Bench {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Bench {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Echo the text back.")]
    fn echo(&self, Parameters(EchoRequest { text }): Parameters<EchoRequest>) -> String {
        text
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bench {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// Serves over `transport` (`stdio`, or `http`: 127.0.0.1 on a free port, after printing
/// `listening http://127.0.0.1:PORT/mcp`) until the client goes away.
pub(crate) async fn serve(transport: &str) -> Result<(), Box<dyn std::error::Error>> {
    match transport {
        "stdio" => {
            Bench::new()
                .serve(rmcp::transport::stdio())
                .await?
                .waiting()
                .await?;
        }
        "http" => {
            let service = StreamableHttpService::new(
                || Ok(Bench::new()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            println!("listening http://{}/mcp", listener.local_addr()?);
            axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).await?;
        }
        other => return Err(format!("unknown transport {other:?}: stdio or http").into()),
    }
    Ok(())
}
