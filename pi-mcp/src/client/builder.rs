//! Connecting: the transport (child process or streamable HTTP), the handshake, the first
//! `tools/list`, and the background tasks that keep the list current.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ClientConfig, ElicitationCapability, FormElicitationCapability, Implementation,
    ProtocolVersion, SubscriptionFilter, UrlElicitationCapability,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::sync::{mpsc, watch};

use super::connection::Connection;
use super::elicitation::{Elicitation, ElicitationHandler};
use super::handler::PiClientHandler;
use super::interaction::UserWaits;
use super::oauth::OAuthConfig;
use super::oauth::session::OAuthSession;
use super::tool_list::{forward_list_changes, list_tools, refresh_on_change};
use super::transport::{Failure, HttpClient, HttpState, http_client};
use super::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, McpClient, McpClientError, McpOAuthSettings,
};

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
    defer_tools: bool,
    connect_timeout: Duration,
    headers: Vec<(String, String)>,
    bearer_token: Option<String>,
    client_name: String,
    client_version: String,
    discard_stderr: bool,
    oauth: Option<OAuthConfig>,
    /// A configuration file's `oauth` entry, filling in what `oauth` leaves unset.
    oauth_settings: Option<McpOAuthSettings>,
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    /// How messages name the server when the real command line or URL came from expanding
    /// `${VAR}`s (and may hold a secret): the configuration's text.
    shown_as: Option<String>,
    /// A configuration problem found before connecting (an unset `${VAR}`), reported by
    /// `connect`.
    problem: Option<McpClientError>,
}

impl std::fmt::Debug for McpClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClientBuilder")
            .field("server", &self.target.describe())
            .field("prefix", &self.prefix)
            .field("call_timeout", &self.call_timeout)
            .field("defer_tools", &self.defer_tools)
            .finish_non_exhaustive()
    }
}

impl McpClientBuilder {
    pub(crate) fn new(target: Target) -> Self {
        McpClientBuilder {
            target,
            prefix: None,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            defer_tools: false,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            headers: Vec::new(),
            bearer_token: None,
            client_name: "pi-mcp".to_owned(),
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
            discard_stderr: false,
            oauth: None,
            oauth_settings: None,
            elicitation: None,
            shown_as: None,
            problem: None,
        }
    }

    /// A builder that fails on `connect` with `problem` (a configuration entry that could not be
    /// expanded), naming the server as `shown_as`.
    pub(crate) fn failed(target: Target, shown_as: String, problem: McpClientError) -> Self {
        let mut builder = McpClientBuilder::new(target);
        builder.shown_as = Some(shown_as);
        builder.problem = Some(problem);
        builder
    }

    /// Names the server as `text` in messages (the configuration's unexpanded text).
    pub(crate) fn shown_as(mut self, text: String) -> Self {
        self.shown_as = Some(text);
        self
    }

    /// A configuration file's `oauth` entry.
    pub(crate) fn oauth_settings(mut self, settings: Option<McpOAuthSettings>) -> Self {
        self.oauth_settings = settings;
        self
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

    /// Defers every tool of this server ("defer every tool of this server"), also those a
    /// changed tool list brings: the agent loop sends none of their schemas until the model
    /// loads them with `tool_search` or calls one by name (pi-tool's `AgentTool::deferred`).
    #[must_use]
    pub fn defer_tools(mut self) -> Self {
        self.defer_tools = true;
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

    /// Signs in to an OAuth-protected HTTP server when it answers 401 (see [`OAuthConfig`]).
    /// Without this, a 401 ends `connect` with [`McpClientError::AuthorizationRequired`], which
    /// carries the server's challenge. A configuration file's `oauth` entry (client id, secret,
    /// scopes) fills in what `config` leaves unset. A [`bearer_token`](Self::bearer_token) or an
    /// `Authorization` [`header`](Self::header) wins: OAuth is then not used.
    #[must_use]
    pub fn oauth(mut self, config: OAuthConfig) -> Self {
        self.oauth = Some(config);
        self
    }

    /// Answers the server's requests for user input during tool calls (elicitation, as a request
    /// or inside a 2026-07-28 `input_required` result). Without a handler they are declined.
    #[must_use]
    pub fn elicitation(mut self, handler: impl ElicitationHandler) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// Like [`elicitation`](Self::elicitation), for a handler shared with other clients.
    #[must_use]
    pub fn shared_elicitation(mut self, handler: Arc<dyn ElicitationHandler>) -> Self {
        self.elicitation = Some(handler);
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
        if let Some(problem) = self.problem {
            return Err(problem);
        }
        let (list_changed_tx, list_changed_rx) = mpsc::channel(1);
        let mut config = ClientConfig::default();
        config.client_info = Implementation::new(&self.client_name, &self.client_version);
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        if self.elicitation.is_some() {
            config.capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new())
                    .with_url(UrlElicitationCapability::new()),
            );
        }
        let server = self
            .shown_as
            .clone()
            .unwrap_or_else(|| self.target.describe());
        let waits = Arc::new(UserWaits::default());
        let transports = match self.target {
            Target::Stdio(recipe) => {
                if !self.headers.is_empty() || self.bearer_token.is_some() || self.oauth.is_some() {
                    return Err(McpClientError::HeadersOnStdio { command: server });
                }
                Transports::Stdio {
                    recipe,
                    discard_stderr: self.discard_stderr,
                }
            }
            Target::Http(url) => {
                let mut transport_config =
                    StreamableHttpClientTransportConfig::with_uri(url.clone());
                let bearer_token_given = self.bearer_token.is_some();
                if let Some(token) = self.bearer_token {
                    transport_config = transport_config.auth_header(token);
                }
                let mut headers = std::collections::HashMap::new();
                for (name, value) in self.headers {
                    let header_name = http::HeaderName::try_from(name.as_str()).map_err(|err| {
                        McpClientError::InvalidHeader {
                            name: name.clone(),
                            reason: err.to_string(),
                        }
                    })?;
                    // The value is not repeated in the message: it may be a secret.
                    let header_value =
                        http::HeaderValue::try_from(value.as_str()).map_err(|_| {
                            McpClientError::InvalidHeader {
                                name: name.clone(),
                                reason: "the value holds characters HTTP does not allow in a header (a line break, a control character)".to_owned(),
                            }
                        })?;
                    headers.insert(header_name, header_value);
                }
                let connect_failed = |reason| McpClientError::Connect {
                    server: server.clone(),
                    reason,
                };
                let plain = http_client().map_err(connect_failed)?;
                // A token given here is what the application chose: OAuth stays out of it.
                let static_token =
                    bearer_token_given || headers.contains_key(&http::header::AUTHORIZATION);
                let client = match self.oauth.filter(|_| !static_token) {
                    None => HttpClient::plain(plain),
                    Some(oauth) => {
                        let oauth = match &self.oauth_settings {
                            Some(settings) => oauth.fill_in(settings),
                            None => oauth,
                        };
                        let (session, auth_client) = OAuthSession::start(
                            oauth,
                            &url,
                            self.client_name.clone(),
                            plain,
                            Arc::clone(&waits),
                        )
                        .await
                        .map_err(connect_failed)?;
                        HttpClient::oauth(auth_client, session)
                    }
                };
                Transports::Http {
                    client,
                    config: transport_config.custom_headers(headers),
                }
            }
        };
        let elicitation = Elicitation {
            handler: self.elicitation.clone(),
            server: match &self.prefix {
                Some(prefix) => format!("MCP server \"{prefix}\""),
                None => format!("MCP server {server}"),
            },
            waits: Arc::clone(&waits),
        };
        let discover = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let handler =
            PiClientHandler::new(config.clone(), list_changed_tx.clone(), elicitation.clone());
        let (service, process_id) = match transports
            .handshake(handler, discover, &server, self.connect_timeout, &waits)
            .await?
        {
            Ok(connected) => connected,
            Err(discover_failure) => {
                // A refusal is not a sign of an older server: trying `initialize` would only be
                // refused again (or send the user to sign in twice).
                if let Some(refused) = transports.refusal(&server) {
                    return Err(refused);
                }
                let handler =
                    PiClientHandler::new(config, list_changed_tx.clone(), elicitation.clone());
                match transports
                    .handshake(
                        handler,
                        ClientLifecycleMode::Initialize,
                        &server,
                        self.connect_timeout,
                        &waits,
                    )
                    .await?
                {
                    Ok(connected) => connected,
                    Err(initialize_failure) => {
                        if let Some(refused) = transports.refusal(&server) {
                            return Err(refused);
                        }
                        let reason = if discover_failure == initialize_failure {
                            discover_failure
                        } else {
                            format!(
                                "server/discover: {discover_failure}; initialize: {initialize_failure}"
                            )
                        };
                        return Err(McpClientError::Connect { server, reason });
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
        let connection = Arc::new(Connection::new(
            service,
            label,
            self.call_timeout,
            self.defer_tools,
            waits,
            elicitation,
            transports.http_state(),
        ));
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

/// Makes a fresh transport for each handshake attempt.
enum Transports {
    Stdio {
        recipe: StdioRecipe,
        discard_stderr: bool,
    },
    Http {
        client: HttpClient,
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
        waits: &UserWaits,
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
                Ok(serve(handler, transport, lifecycle, connect_timeout, waits)
                    .await
                    .map(|service| (service, process_id)))
            }
            Transports::Http { client, config } => {
                let transport =
                    StreamableHttpClientTransport::with_client(client.clone(), config.clone());
                Ok(serve(handler, transport, lifecycle, connect_timeout, waits)
                    .await
                    .map_err(|reason| match client.state().last_failure() {
                        // What the HTTP client saw says more than rmcp's summary of it.
                        Some(Failure::Transport { reason }) => reason,
                        _ => reason,
                    })
                    .map(|service| (service, None)))
            }
        }
    }

    /// The error for a server that refused the client (401, 403, a failed sign-in), if that is
    /// why the last request failed.
    fn refusal(&self, server: &str) -> Option<McpClientError> {
        let Transports::Http { client, .. } = self else {
            return None;
        };
        let server = server.to_owned();
        match client.state().last_failure()? {
            Failure::Unauthorized { challenge } => {
                Some(McpClientError::AuthorizationRequired { server, challenge })
            }
            Failure::InsufficientScope { challenge } => {
                Some(McpClientError::Forbidden { server, challenge })
            }
            Failure::SignIn { reason, challenge } => Some(McpClientError::SignIn {
                server,
                reason,
                challenge,
            }),
            Failure::Transport { .. } => None,
        }
    }

    fn http_state(&self) -> Option<Arc<HttpState>> {
        match self {
            Transports::Http { client, .. } => Some(Arc::clone(client.state())),
            Transports::Stdio { .. } => None,
        }
    }
}

/// The handshake, bounded by the connect timeout; time spent waiting for the user to sign in
/// does not count.
async fn serve<T, E, A>(
    handler: PiClientHandler,
    transport: T,
    lifecycle: ClientLifecycleMode,
    connect_timeout: Duration,
    waits: &UserWaits,
) -> Result<RunningService<RoleClient, PiClientHandler>, String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let handshake = handler.serve_with_lifecycle(transport, lifecycle);
    tokio::pin!(handshake);
    let mut due = tokio::time::Instant::now() + connect_timeout;
    loop {
        tokio::select! {
            served = &mut handshake => return served.map_err(|err| err.to_string()),
            () = tokio::time::sleep_until(due) => {}
        }
        tokio::select! {
            served = &mut handshake => return served.map_err(|err| err.to_string()),
            later = waits.extended(due, connect_timeout) => match later {
                Some(later) => due = later,
                None => return Err(format!("no answer within {} s", connect_timeout.as_secs())),
            },
        }
    }
}
