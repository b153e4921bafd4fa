//! The MCP client: an MCP server's tools as `AgentTool`s.

mod config;
mod connection;
mod content;
mod error;
mod handler;
mod naming;
mod tool;

use std::ffi::OsStr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use pi_tool::{AgentTool, ToolRegistry};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, ServerNotification,
    SubscriptionFilter,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::sync::{mpsc, watch};

pub use config::{McpConfig, McpConfigError, McpServerConfig};
pub use error::McpClientError;
pub use tool::{McpTool, McpToolAnnotations};

use connection::Connection;
use handler::PiClientHandler;
use naming::NameMapper;

/// How long a call may go without a result or a progress notification before it is cancelled.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// How long connecting (process start or HTTP, handshake, first `tools/list`) may take.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The tools of one server, in the server's order; replaced whole when the server's list changes.
pub type McpToolList = Arc<[Arc<McpTool>]>;

/// A connection to one MCP server, whose tools become [`AgentTool`]s.
///
/// Made with [`McpClient::stdio`] or [`McpClient::http`] and
/// [`McpClientBuilder::connect`]. The handshake works with servers of protocol revision
/// 2026-07-28 (`server/discover`) and with older ones (`initialize`, 2025-11-25 and earlier).
/// When the server reports `tools/list_changed`, the list is fetched again; see
/// [`watch_tools`](Self::watch_tools).
pub struct McpClient {
    connection: Arc<Connection>,
    tools: watch::Receiver<McpToolList>,
    process_id: Option<u32>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.connection.label())
            .field("tools", &self.tools.borrow().len())
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// A server that runs as a child process speaking MCP on its stdin and stdout (its stderr
    /// goes to ours). The process is killed when the client and all its tools are dropped.
    pub fn stdio(command: impl Into<tokio::process::Command>) -> McpClientBuilder {
        let mut command = command.into();
        // Killed even when the client is dropped as the runtime shuts down (rmcp's own cleanup
        // runs on a task that may then never run).
        command.kill_on_drop(true);
        McpClientBuilder::new(Target::Stdio(command))
    }

    /// A server behind streamable HTTP, e.g. `http://127.0.0.1:8000/mcp`.
    pub fn http(url: impl Into<String>) -> McpClientBuilder {
        McpClientBuilder::new(Target::Http(url.into()))
    }

    /// The server's tools as they are now, ready for a [`ToolRegistry`] or an agent.
    pub fn tools(&self) -> Vec<Arc<dyn AgentTool>> {
        self.tools
            .borrow()
            .iter()
            .map(|tool| Arc::clone(tool) as Arc<dyn AgentTool>)
            .collect()
    }

    /// The server's tools with their MCP details (name on the server, annotations, output schema).
    pub fn mcp_tools(&self) -> McpToolList {
        Arc::clone(&self.tools.borrow())
    }

    /// Registers every tool in `registry`. Returns the names of tools that were already there
    /// and have been replaced (none, when a prefix keeps names apart).
    pub fn add_to(&self, registry: &mut ToolRegistry) -> Vec<String> {
        let mut replaced = Vec::new();
        for tool in self.tools() {
            let name = tool.spec().name.clone();
            if registry.register_arc(tool).is_some() {
                replaced.push(name);
            }
        }
        replaced
    }

    /// A receiver that sees the new tool list each time the server's list changes
    /// (`notifications/tools/list_changed`, re-listed by this client). Give the new tools to the
    /// agent, e.g. with `Agent::set_tool_list`.
    pub fn watch_tools(&self) -> watch::Receiver<McpToolList> {
        self.tools.clone()
    }

    /// The server's name and version from the handshake, when it gave them.
    pub fn server_info(&self) -> Option<(String, String)> {
        let info = self.connection.peer().peer_info()?;
        let implementation = info.server_info.as_ref()?;
        Some((implementation.name.clone(), implementation.version.clone()))
    }

    /// The protocol revision agreed with the server, e.g. `2026-07-28` or `2025-11-25`.
    pub fn protocol_version(&self) -> Option<String> {
        let info = self.connection.peer().peer_info()?;
        Some(info.protocol_version.to_string())
    }

    /// The server's instructions for using its tools, when it gave some (worth adding to a
    /// system prompt).
    pub fn instructions(&self) -> Option<String> {
        self.connection.peer().peer_info()?.instructions.clone()
    }

    /// The server process's id, for a stdio server.
    pub fn process_id(&self) -> Option<u32> {
        self.process_id
    }

    /// Whether the session has ended (the server exited or closed the connection, or
    /// [`close`](Self::close) was called).
    pub fn is_closed(&self) -> bool {
        self.connection.is_closed()
    }

    /// Ends the session now, even while imported tools are still registered somewhere: their
    /// calls then return an error result saying the connection is gone.
    pub fn close(&self) {
        self.connection.close();
    }
}

enum Target {
    Stdio(tokio::process::Command),
    Http(String),
}

/// Options for connecting to an MCP server; finish with [`connect`](Self::connect).
pub struct McpClientBuilder {
    target: Target,
    prefix: Option<String>,
    call_timeout: Duration,
    connect_timeout: Duration,
    headers: Vec<(String, String)>,
    bearer_token: Option<String>,
    client_name: String,
    client_version: String,
    stderr: Option<std::process::Stdio>,
}

impl std::fmt::Debug for McpClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClientBuilder")
            .field("server", &self.target.describe())
            .field("prefix", &self.prefix)
            .field("call_timeout", &self.call_timeout)
            .finish_non_exhaustive()
    }
}

impl McpClientBuilder {
    fn new(target: Target) -> Self {
        McpClientBuilder {
            target,
            prefix: None,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            headers: Vec::new(),
            bearer_token: None,
            client_name: "pi-mcp".to_owned(),
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
            stderr: None,
        }
    }

    /// Names every tool `{prefix}__{tool}`, so two servers' `search` tools stay apart.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// How long a call may go without a result or progress before it is cancelled and returns
    /// an error result (default [`DEFAULT_CALL_TIMEOUT`]). Each progress notification restarts it.
    #[must_use]
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// How long connecting may take (default [`DEFAULT_CONNECT_TIMEOUT`]).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sends this HTTP header with every request (HTTP servers only).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request (HTTP servers only).
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Where a stdio server's stderr goes (default: our stderr). `Stdio::null()` silences a
    /// chatty server.
    #[must_use]
    pub fn stderr(mut self, stderr: impl Into<std::process::Stdio>) -> Self {
        self.stderr = Some(stderr.into());
        self
    }

    /// The client name and version the server sees (default `pi-mcp` and this crate's version).
    #[must_use]
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_name = name.into();
        self.client_version = version.into();
        self
    }

    /// Starts or reaches the server, agrees on a protocol revision (2026-07-28 when the server
    /// speaks it, else the `initialize` handshake of older servers) and lists its tools.
    pub async fn connect(self) -> Result<McpClient, McpClientError> {
        let (list_changed_tx, list_changed_rx) = mpsc::channel(1);
        let mut config = ClientConfig::default();
        config.capabilities = ClientCapabilities::default();
        config.client_info = Implementation::new(&self.client_name, &self.client_version);
        let handler = PiClientHandler::new(config, list_changed_tx.clone());
        let server = self.target.describe();
        let (service, process_id) = match self.target {
            Target::Stdio(command) => {
                if !self.headers.is_empty() || self.bearer_token.is_some() {
                    return Err(McpClientError::HeadersOnStdio { command: server });
                }
                let mut process = TokioChildProcess::builder(command);
                if let Some(stderr) = self.stderr {
                    process = process.stderr(stderr);
                }
                let (transport, _stderr) =
                    process.spawn().map_err(|source| McpClientError::Spawn {
                        command: server.clone(),
                        source,
                    })?;
                let process_id = transport.id();
                let service = serve(handler, transport, &server, self.connect_timeout).await?;
                (service, process_id)
            }
            Target::Http(url) => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url);
                if let Some(token) = self.bearer_token {
                    config = config.auth_header(token);
                }
                let mut headers = std::collections::HashMap::new();
                for (name, value) in self.headers {
                    let header_name = http::HeaderName::try_from(name.as_str()).map_err(|err| {
                        McpClientError::InvalidHeader {
                            name: name.clone(),
                            reason: err.to_string(),
                        }
                    })?;
                    let header_value =
                        http::HeaderValue::try_from(value.as_str()).map_err(|err| {
                            McpClientError::InvalidHeader {
                                name: name.clone(),
                                reason: err.to_string(),
                            }
                        })?;
                    headers.insert(header_name, header_value);
                }
                let config = config.custom_headers(headers);
                let http = http_client().map_err(|reason| McpClientError::Connect {
                    server: server.clone(),
                    reason,
                })?;
                let transport = StreamableHttpClientTransport::with_client(http, config);
                (
                    serve(handler, transport, &server, self.connect_timeout).await?,
                    None,
                )
            }
        };
        let label = match (&self.prefix, service.peer().peer_info()) {
            (Some(prefix), _) => format!("MCP server \"{prefix}\""),
            (None, Some(info)) => match &info.server_info {
                Some(implementation) => format!("MCP server \"{}\"", implementation.name),
                None => format!("MCP server {server}"),
            },
            (None, None) => format!("MCP server {server}"),
        };
        let listen_for_changes = service.peer().peer_info().is_some_and(|info| {
            !info.protocol_version.has_initialize()
                && info
                    .capabilities
                    .tools
                    .as_ref()
                    .and_then(|tools| tools.list_changed)
                    == Some(true)
        });
        let connection = Arc::new(Connection::new(service, label, self.call_timeout));
        let listed = tokio::time::timeout(
            self.connect_timeout,
            list_tools(&connection, self.prefix.as_deref()),
        )
        .await
        .map_err(|_| McpClientError::ConnectTimeout {
            server: server.clone(),
            seconds: self.connect_timeout.as_secs(),
        })??;
        let (tools_tx, tools_rx) = watch::channel(listed);
        if listen_for_changes {
            // Subscribed before `connect` returns, so no change made after it can be missed.
            let filter = SubscriptionFilter::builder().tools_list_changed().build();
            match tokio::time::timeout(self.connect_timeout, connection.peer().listen(filter)).await
            {
                Ok(Ok(subscription)) => {
                    tokio::spawn(forward_list_changes(subscription, list_changed_tx));
                }
                Ok(Err(err)) => tracing::warn!(
                    "{}: could not subscribe to tool list changes: {err}",
                    connection.label()
                ),
                Err(_) => tracing::warn!(
                    "{}: subscribing to tool list changes got no answer",
                    connection.label()
                ),
            }
        }
        tokio::spawn(refresh_on_change(
            Arc::downgrade(&connection),
            list_changed_rx,
            tools_tx,
            self.prefix,
        ));
        Ok(McpClient {
            connection,
            tools: tools_rx,
            process_id,
        })
    }
}

impl Target {
    /// The command line or URL, for messages.
    fn describe(&self) -> String {
        match self {
            Target::Stdio(command) => {
                let command = command.as_std();
                std::iter::once(command.get_program())
                    .chain(command.get_args())
                    .map(OsStr::to_string_lossy)
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            Target::Http(url) => url.clone(),
        }
    }
}

/// reqwest with rustls on the ring provider, passed explicitly (the workspace installs no
/// process-wide default), and no redirects (they could carry our headers to another host).
/// Idle connections are not pooled, as in rmcp's own client (a reused connection whose last
/// response was not fully read stalls on delayed ACKs).
fn http_client() -> Result<reqwest::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
        .map_err(|err| format!("could not load the system's TLS certificate roots: {err}"))?;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("could not configure TLS: {err}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|err| format!("could not build the HTTP client: {err}"))
}

/// The handshake, bounded by the connect timeout.
async fn serve<T, E, A>(
    handler: PiClientHandler,
    transport: T,
    server: &str,
    connect_timeout: Duration,
) -> Result<RunningService<RoleClient, PiClientHandler>, McpClientError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    match tokio::time::timeout(
        connect_timeout,
        handler.serve_with_lifecycle(transport, lifecycle),
    )
    .await
    {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(err)) => Err(McpClientError::Connect {
            server: server.to_owned(),
            reason: err.to_string(),
        }),
        Err(_) => Err(McpClientError::ConnectTimeout {
            server: server.to_owned(),
            seconds: connect_timeout.as_secs(),
        }),
    }
}

/// `tools/list` (every page) as our tools. A tool whose input schema is not an object schema is
/// left out with a warning: no model provider would accept it.
async fn list_tools(
    connection: &Arc<Connection>,
    prefix: Option<&str>,
) -> Result<McpToolList, McpClientError> {
    let listed =
        connection
            .peer()
            .list_all_tools()
            .await
            .map_err(|err| McpClientError::ListTools {
                server: connection.label().to_owned(),
                reason: err.to_string(),
            })?;
    let mut names = NameMapper::new(prefix);
    let mut tools = Vec::with_capacity(listed.len());
    for tool in listed {
        let mcp_name = tool.name.to_string();
        let name = names.map(&mcp_name);
        match McpTool::from_mcp(tool, name, Arc::clone(connection)) {
            Ok(tool) => tools.push(Arc::new(tool)),
            Err(reason) => {
                tracing::warn!("{}: tool {mcp_name} left out: {reason}", connection.label())
            }
        }
    }
    Ok(tools.into())
}

/// Lists the tools again after each `tools/list_changed`, until the client is dropped (nobody
/// watches any more) or the session ends.
async fn refresh_on_change(
    connection: Weak<Connection>,
    mut list_changed: mpsc::Receiver<()>,
    tools: watch::Sender<McpToolList>,
    prefix: Option<String>,
) {
    loop {
        tokio::select! {
            () = tools.closed() => return,
            changed = list_changed.recv() => {
                if changed.is_none() {
                    return;
                }
            }
        }
        let Some(connection) = connection.upgrade() else {
            return;
        };
        // Bounded: a server that never answers must not keep the connection (and a stdio
        // server's process) alive through this task.
        let listed = tokio::time::timeout(
            connection.call_timeout(),
            list_tools(&connection, prefix.as_deref()),
        )
        .await;
        match listed {
            Ok(Ok(listed)) => {
                tools.send_replace(listed);
            }
            Ok(Err(err)) => tracing::warn!("{err}"),
            Err(_) => tracing::warn!(
                "{}: tools/list after a list change got no answer",
                connection.label()
            ),
        }
    }
}

/// On a 2026-07-28 session, list-changed notifications come only on a `subscriptions/listen`
/// stream the client opens; this forwards them to the refresher until the session ends.
async fn forward_list_changes(
    mut subscription: rmcp::service::Subscription,
    list_changed: mpsc::Sender<()>,
) {
    while let Ok(Some(notification)) = subscription.next().await {
        if matches!(
            notification,
            ServerNotification::ToolListChangedNotification(_)
        ) {
            let _ = list_changed.try_send(());
        }
    }
}
