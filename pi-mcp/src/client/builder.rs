//! Connecting: the transport (child process or streamable HTTP), the handshake, the first
//! `tools/list`, and the background tasks that keep the list current.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientConfig, Implementation, ProtocolVersion, SubscriptionFilter};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::sync::{mpsc, watch};

use super::connection::Connection;
use super::handler::PiClientHandler;
use super::tool_list::{forward_list_changes, list_tools, refresh_on_change};
use super::{DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, McpClient, McpClientError};

pub(crate) enum Target {
    /// A command to start (again, when the first handshake fails).
    Stdio(StdioRecipe),
    /// A streamable HTTP endpoint.
    Http(String),
}

/// What is needed to start a stdio server, kept so that it can be started a second time.
pub(crate) struct StdioRecipe {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    cwd: Option<PathBuf>,
}

impl StdioRecipe {
    /// Program, arguments, environment changes and working directory of `command` (other
    /// settings, such as a uid or `env_clear`, cannot be read back from a `Command`).
    pub(crate) fn from_command(command: &tokio::process::Command) -> Self {
        let command = command.as_std();
        StdioRecipe {
            program: command.get_program().to_owned(),
            args: command.get_args().map(OsStr::to_owned).collect(),
            envs: command
                .get_envs()
                .map(|(name, value)| (name.to_owned(), value.map(OsStr::to_owned)))
                .collect(),
            cwd: command.get_current_dir().map(Path::to_path_buf),
        }
    }

    fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command.args(&self.args);
        for (name, value) in &self.envs {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        // Killed even when the client is dropped as the runtime shuts down (rmcp's own cleanup
        // runs on a task that may then never run).
        command.kill_on_drop(true);
        command
    }
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
    discard_stderr: bool,
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
    pub(crate) fn new(target: Target) -> Self {
        McpClientBuilder {
            target,
            prefix: None,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            headers: Vec::new(),
            bearer_token: None,
            client_name: "pi-mcp".to_owned(),
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
            discard_stderr: false,
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

    /// Sends a stdio server's stderr nowhere (by default it goes to ours).
    #[must_use]
    pub fn discard_stderr(mut self) -> Self {
        self.discard_stderr = true;
        self
    }

    /// The client name and version the server sees (default `pi-mcp` and this crate's version).
    #[must_use]
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_name = name.into();
        self.client_version = version.into();
        self
    }

    /// Starts or reaches the server, agrees on a protocol revision and lists its tools.
    ///
    /// The handshake tries `server/discover` (2026-07-28) first, waiting up to the connect
    /// timeout, and when that fails, starts over (a new process, for a stdio server) with the
    /// `initialize` handshake of 2025-11-25 and older servers. (rmcp's own `Auto` mode falls back
    /// after 10 s on the same connection, which breaks with servers slower to start than that:
    /// the late answer to `server/discover` then ends the handshake.)
    pub async fn connect(self) -> Result<McpClient, McpClientError> {
        let (list_changed_tx, list_changed_rx) = mpsc::channel(1);
        let mut config = ClientConfig::default();
        config.client_info = Implementation::new(&self.client_name, &self.client_version);
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        let server = self.target.describe();
        let transports = match self.target {
            Target::Stdio(recipe) => {
                if !self.headers.is_empty() || self.bearer_token.is_some() {
                    return Err(McpClientError::HeadersOnStdio { command: server });
                }
                Transports::Stdio {
                    recipe,
                    discard_stderr: self.discard_stderr,
                }
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
                let client = http_client().map_err(|reason| McpClientError::Connect {
                    server: server.clone(),
                    reason,
                })?;
                Transports::Http {
                    client,
                    config: config.custom_headers(headers),
                }
            }
        };
        let discover = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let handler = PiClientHandler::new(config.clone(), list_changed_tx.clone());
        let (service, process_id) = match transports
            .handshake(handler, discover, &server, self.connect_timeout)
            .await?
        {
            Ok(connected) => connected,
            Err(discover_failure) => {
                let handler = PiClientHandler::new(config, list_changed_tx.clone());
                match transports
                    .handshake(
                        handler,
                        ClientLifecycleMode::Initialize,
                        &server,
                        self.connect_timeout,
                    )
                    .await?
                {
                    Ok(connected) => connected,
                    Err(initialize_failure) => {
                        return Err(McpClientError::Connect {
                            server,
                            reason: format!(
                                "server/discover: {discover_failure}; initialize: {initialize_failure}"
                            ),
                        });
                    }
                }
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
            Target::Stdio(recipe) => std::iter::once(&recipe.program)
                .chain(&recipe.args)
                .map(|word| word.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            Target::Http(url) => url.clone(),
        }
    }
}

/// reqwest with rustls on the aws-lc-rs provider, passed explicitly (the workspace installs no
/// process-wide default), and no redirects (they could carry our headers to another host).
/// Idle connections are not pooled, as in rmcp's own client (a reused connection whose last
/// response was not fully read stalls on delayed ACKs).
fn http_client() -> Result<reqwest::Client, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
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

/// Makes a fresh transport for each handshake attempt.
enum Transports {
    Stdio {
        recipe: StdioRecipe,
        discard_stderr: bool,
    },
    Http {
        client: reqwest::Client,
        config: StreamableHttpClientTransportConfig,
    },
}

type Connected = (RunningService<RoleClient, PiClientHandler>, Option<u32>);

impl Transports {
    /// One handshake on a new transport, bounded by the connect timeout. The outer `Err` ends
    /// the connection attempt (the process cannot be started); the inner one says why this
    /// handshake failed, so the other one can be tried.
    async fn handshake(
        &self,
        handler: PiClientHandler,
        lifecycle: ClientLifecycleMode,
        server: &str,
        connect_timeout: Duration,
    ) -> Result<Result<Connected, String>, McpClientError> {
        match self {
            Transports::Stdio {
                recipe,
                discard_stderr,
            } => {
                let mut process = TokioChildProcess::builder(recipe.command());
                if *discard_stderr {
                    process = process.stderr(std::process::Stdio::null());
                }
                let (transport, _stderr) =
                    process.spawn().map_err(|source| McpClientError::Spawn {
                        command: server.to_owned(),
                        source,
                    })?;
                let process_id = transport.id();
                Ok(serve(handler, transport, lifecycle, connect_timeout)
                    .await
                    .map(|service| (service, process_id)))
            }
            Transports::Http { client, config } => {
                let transport =
                    StreamableHttpClientTransport::with_client(client.clone(), config.clone());
                Ok(serve(handler, transport, lifecycle, connect_timeout)
                    .await
                    .map(|service| (service, None)))
            }
        }
    }
}

async fn serve<T, E, A>(
    handler: PiClientHandler,
    transport: T,
    lifecycle: ClientLifecycleMode,
    connect_timeout: Duration,
) -> Result<RunningService<RoleClient, PiClientHandler>, String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    match tokio::time::timeout(
        connect_timeout,
        handler.serve_with_lifecycle(transport, lifecycle),
    )
    .await
    {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err(format!("no answer within {} s", connect_timeout.as_secs())),
    }
}
