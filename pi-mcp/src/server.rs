//! The MCP server: a `ToolRegistry` served over stdio and streamable HTTP.

mod call;
mod catalog;
mod handler;

use std::io;
use std::sync::Arc;

use pi_tool::ToolRegistry;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, ToSocketAddrs};

use self::catalog::Catalog;
use self::handler::RegistryHandler;

/// Serves the tools of a [`ToolRegistry`] to MCP clients (Claude Desktop, VS Code, Cursor, the
/// official SDKs), over stdio or streamable HTTP.
///
/// Each `AgentTool` is one MCP tool: `name`, `title` (its label), `description`, `inputSchema`,
/// `outputSchema` (a `Json<T>` return), `annotations` (`#[tool(read_only, ..)]`). Calls go
/// through the same pipeline as the agent loop: `prepare_arguments`, normalization, validation,
/// execution, with the same error texts. Both protocol revisions clients speak today,
/// 2025-11-25 and 2026-07-28, are served.
#[derive(Clone, Debug)]
pub struct McpServer {
    registry: ToolRegistry,
    name: String,
    version: String,
    instructions: Option<String>,
    allowed_hosts: Option<Vec<String>>,
}

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The transport failed: binding the address, reading or writing.
    #[error("MCP server I/O error: {0}")]
    Io(#[from] io::Error),
    /// The client's `initialize` handshake failed.
    #[error("MCP session could not start: {0}")]
    Initialize(String),
    /// The task serving the session ended abnormally.
    #[error("MCP session ended abnormally: {0}")]
    Session(String),
}

impl McpServer {
    /// A server for every tool of `registry` (and its shared state), named `pi-mcp`.
    pub fn new(registry: ToolRegistry) -> Self {
        McpServer {
            registry,
            name: "pi-mcp".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            allowed_hosts: None,
        }
    }

    /// The server name clients show (`serverInfo.name`).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The server version clients show (`serverInfo.version`).
    #[must_use]
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Guidance for the client's model on using these tools (`instructions`).
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The `Host` header values the HTTP transport accepts (`"example.com"`,
    /// `"example.com:8080"`). By default only loopback hosts are accepted, which protects a local
    /// server against DNS rebinding; set this when serving on a public name.
    #[must_use]
    pub fn with_allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// The registry being served.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// The handler: the tool list and everything per tool, built once and shared by sessions.
    fn handler(&self) -> RegistryHandler {
        RegistryHandler::new(Arc::new(Catalog::new(
            &self.registry,
            &self.name,
            &self.version,
            self.instructions.as_deref(),
        )))
    }

    /// Serves one client on this process's stdin and stdout until it disconnects.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let (stdin, stdout) = rmcp::transport::stdio();
        self.serve_io(stdin, stdout).await
    }

    /// Serves one client over any byte stream pair (a pipe, a socket) until it disconnects.
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<(), ServeError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .handler()
            .serve((reader, writer))
            .await
            .map_err(|err| ServeError::Initialize(err.to_string()))?;
        running
            .waiting()
            .await
            .map(drop)
            .map_err(|err| ServeError::Session(err.to_string()))
    }

    /// Serves streamable HTTP at `http://ADDR/mcp` until the process ends.
    pub async fn serve_http(self, addr: impl ToSocketAddrs) -> Result<(), ServeError> {
        let listener = TcpListener::bind(addr).await?;
        self.serve_http_on(listener).await
    }

    /// Serves streamable HTTP at `/mcp` on a listener you bound (e.g. to port 0).
    pub async fn serve_http_on(self, listener: TcpListener) -> Result<(), ServeError> {
        axum::serve(listener, self.router()).await?;
        Ok(())
    }

    /// An axum router serving streamable HTTP at `/mcp`, to mount in your own app.
    pub fn router(&self) -> axum::Router {
        self.router_at("/mcp")
    }

    /// An axum router serving streamable HTTP at `path` (e.g. `"/tools/mcp"`).
    pub fn router_at(&self, path: &str) -> axum::Router {
        let handler = self.handler();
        let mut config = StreamableHttpServerConfig::default();
        if let Some(hosts) = &self.allowed_hosts {
            config = config.with_allowed_hosts(hosts.clone());
        }
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        axum::Router::new().nest_service(path, service)
    }
}
