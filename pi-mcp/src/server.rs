//! The MCP server: a `ToolRegistry` served over stdio and streamable HTTP.

mod approval;
mod auth;
mod call;
mod catalog;
mod connections;
mod gate;
mod guarded_body;
mod handler;
#[cfg(feature = "jwt")]
mod jwt;
mod limits;
mod messages;
mod request_ids;
mod resource;
mod sessions;
#[cfg(unix)]
mod unix;

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_tool::ToolRegistry;
use rmcp::ServiceExt;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, ToSocketAddrs};

use self::auth::StaticToken;
pub use self::auth::{TokenError, TokenVerifier, VerifiedToken, generate_token};
use self::catalog::Catalog;
use self::gate::Gate;
use self::handler::RegistryHandler;
#[cfg(feature = "jwt")]
pub use self::jwt::{
    DEFAULT_LEEWAY, DEFAULT_MAX_KEY_AGE, DEFAULT_REFRESH_INTERVAL, JwtVerifier, JwtVerifierBuilder,
};
pub use self::limits::HttpLimits;
use self::messages::MessageCheck;
use self::request_ids::RequestIds;
pub use self::resource::{AuthConfigError, ProtectedResource};
use self::sessions::{CappedSessions, Sessions};

/// The largest request body the HTTP transport reads, unless
/// [`McpServer::with_max_request_body_bytes`] says otherwise: 4 MiB. A request is one JSON-RPC
/// message whose arguments a model wrote; a model's whole output (128k tokens, about 512 KiB,
/// twice that once JSON-escaped) fits four times over, while a client cannot make the server
/// buffer without bound (larger bodies get 413 before anything is parsed).
pub const DEFAULT_MAX_REQUEST_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Serves the tools of a [`ToolRegistry`] to MCP clients (Claude Desktop, VS Code, Cursor, the
/// official SDKs), over stdio or streamable HTTP.
///
/// Each `AgentTool` is one MCP tool: `name`, `title` (its label), `description`, `inputSchema`,
/// `outputSchema` (a `Json<T>` return), `annotations` (`#[tool(read_only, ..)]`). Calls go
/// through the same pipeline as the agent loop: `prepare_arguments`, normalization, validation,
/// execution, with the same error texts. Both protocol revisions clients speak today,
/// 2025-11-25 and 2026-07-28, are served.
///
/// Over HTTP nobody is let in until you say who may call
/// ([`with_bearer_token`](Self::with_bearer_token), [`with_token_verifier`](Self::with_token_verifier),
/// [`with_oauth`](Self::with_oauth), or [`without_auth`](Self::without_auth) on loopback);
/// `Origin` and `Host` are checked, and only loopback addresses are served unless
/// [`allow_remote`](Self::allow_remote) says otherwise.
#[derive(Clone)]
pub struct McpServer {
    registry: ToolRegistry,
    name: String,
    version: String,
    instructions: Option<String>,
    auth: Auth,
    /// Set by `with_oauth`: the metadata served and named in challenges.
    resource: Option<Arc<ProtectedResource>>,
    hosts: Hosts,
    allowed_origins: Vec<String>,
    remote: bool,
    max_request_body_bytes: usize,
    http_limits: HttpLimits,
}

/// Who may call over HTTP.
#[derive(Clone)]
enum Auth {
    /// Nothing chosen yet: HTTP serves no one.
    Unchosen,
    /// `without_auth()`.
    Disabled,
    /// Every request's token goes through this verifier.
    Token(Arc<dyn TokenVerifier>),
}

/// Which `Host` headers the HTTP transport accepts.
#[derive(Clone, Debug)]
enum Hosts {
    /// rmcp's default: `localhost`, `127.0.0.1`, `::1` (any port).
    Loopback,
    /// These; an empty list accepts any.
    Listed(Vec<String>),
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match &self.auth {
            Auth::Unchosen => "not chosen",
            Auth::Disabled => "none (without_auth)",
            Auth::Token(_) if self.resource.is_some() => "OAuth access token",
            Auth::Token(_) => "bearer token",
        };
        f.debug_struct("McpServer")
            .field("registry", &self.registry)
            .field("name", &self.name)
            .field("version", &self.version)
            .field("auth", &auth)
            .field(
                "resource",
                &self.resource.as_deref().map(ProtectedResource::resource),
            )
            .field("hosts", &self.hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("remote", &self.remote)
            .field("max_request_body_bytes", &self.max_request_body_bytes)
            .field("http_limits", &self.http_limits)
            .finish_non_exhaustive()
    }
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
    /// HTTP was asked for without choosing who may call: see [`McpServer::with_bearer_token`].
    #[error(
        "this MCP server has no authentication configured: call McpServer::with_bearer_token, \
         with_token_verifier or with_oauth (or without_auth, for a loopback address only)"
    )]
    NoAuthentication,
    /// The address is not a loopback one and [`McpServer::allow_remote`] was not called.
    #[error(
        "refusing to serve MCP on {0}: it is not a loopback address, so other machines could \
         connect; call McpServer::allow_remote() to serve there anyway (with authentication)"
    )]
    NotLoopback(SocketAddr),
    /// [`McpServer::without_auth`] on an address that is not a loopback one.
    #[error(
        "refusing to serve MCP without authentication on {0}: without_auth() is for loopback \
         addresses only"
    )]
    RemoteWithoutAuth(SocketAddr),
    /// A tool takes `State<T>` and the registry holds no `T`: found before serving starts
    /// ([`McpServer::check`]), so no call of it fails later.
    #[error(
        "cannot serve the tool `{tool}`: it takes `State<{type_name}>`, but the registry holds no \
         `{type_name}`: add it with `with_state(..)` on the registry before serving"
    )]
    MissingState {
        /// The tool's name.
        tool: String,
        /// The state type.
        type_name: String,
    },
    /// The Unix socket could not be set up at `path`.
    #[error("cannot serve MCP on the Unix socket {}: {reason}", path.display())]
    UnixSocket {
        /// The socket's path.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

impl McpServer {
    /// A server for every tool of `registry` (and its shared state), named `pi-mcp`.
    pub fn new(registry: ToolRegistry) -> Self {
        McpServer {
            registry,
            name: "pi-mcp".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            auth: Auth::Unchosen,
            resource: None,
            hosts: Hosts::Loopback,
            allowed_origins: Vec::new(),
            remote: false,
            max_request_body_bytes: DEFAULT_MAX_REQUEST_BODY_BYTES,
            http_limits: HttpLimits::default(),
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

    /// Every HTTP request must carry `Authorization: Bearer <token>` with this token (compared
    /// in constant time). Anyone who has it can run every tool: make it long and random
    /// ([`generate_token`]) and keep it out of logs and command lines.
    #[must_use]
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        self.auth = Auth::Token(Arc::new(StaticToken::new(token.into())));
        self.resource = None;
        self
    }

    /// Every HTTP request's bearer token must satisfy `verifier` (your own check: an API-key
    /// table, token introspection).
    #[must_use]
    pub fn with_token_verifier(mut self, verifier: impl TokenVerifier) -> Self {
        self.auth = Auth::Token(Arc::new(verifier));
        self.resource = None;
        self
    }

    /// An OAuth 2.1 resource server: every HTTP request carries an access token that
    /// `verifier` accepts (a [`JwtVerifier`] for JWTs from the authorization server) with the
    /// scopes `resource` requires. `resource`'s RFC 9728 metadata is served at
    /// `/.well-known/oauth-protected-resource[/path]`, and every 401 names it
    /// (`WWW-Authenticate: Bearer resource_metadata="..."`), so MCP clients find where to sign
    /// in; a token without a required scope gets 403 `insufficient_scope`.
    #[must_use]
    pub fn with_oauth(mut self, resource: ProtectedResource, verifier: impl TokenVerifier) -> Self {
        self.auth = Auth::Token(Arc::new(verifier));
        self.resource = Some(Arc::new(resource));
        self
    }

    /// HTTP requests need no token. Anything that can reach the address can then run every
    /// tool: on a loopback address that is every program and every user of this machine (web
    /// pages are still kept out by the `Host` and `Origin` checks). Refused on other addresses;
    /// for a single user, [`serve_stdio`](Self::serve_stdio) needs no token and is safer.
    #[must_use]
    pub fn without_auth(mut self) -> Self {
        self.auth = Auth::Disabled;
        self.resource = None;
        self
    }

    /// The `Host` header values the HTTP transport accepts (`"example.com"`,
    /// `"example.com:8080"`), in place of the loopback names (`localhost`, `127.0.0.1`, `::1`)
    /// it accepts by default; an empty list accepts any. This protects an unauthenticated
    /// local server against DNS rebinding; it does not stop a client that is not a browser,
    /// which can send any `Host`: authentication does.
    #[must_use]
    pub fn with_allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.hosts = Hosts::Listed(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// The browser origins allowed to call (`"http://localhost:6274"`, `"https://app.example.com"`,
    /// `"http://localhost:*"` for any port), for a web UI that talks to this server. A request
    /// with any other `Origin` header gets 403, as the MCP spec requires; one without (SDK
    /// clients, curl, desktop apps) is not affected. By default no other origin is allowed:
    /// only the server's own (`http://127.0.0.1:PORT`, `http://localhost:PORT` on the loopback
    /// address `serve_http` uses), which is not cross-origin.
    #[must_use]
    pub fn with_allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Lets [`serve_http`](Self::serve_http) and [`serve_http_on`](Self::serve_http_on) use an
    /// address that is not a loopback one (`0.0.0.0`, a LAN address), which they refuse
    /// otherwise; authentication is then required. Put TLS in front (a reverse proxy): a
    /// bearer token over plain HTTP can be read by anyone on the path.
    #[must_use]
    pub fn allow_remote(mut self) -> Self {
        self.remote = true;
        self
    }

    /// The largest HTTP request body read, in bytes (default
    /// [`DEFAULT_MAX_REQUEST_BODY_BYTES`]); larger ones get 413.
    #[must_use]
    pub fn with_max_request_body_bytes(mut self, bytes: usize) -> Self {
        self.max_request_body_bytes = bytes;
        self
    }

    /// What clients may hold of the HTTP server: timeouts for slow and idle connections, caps
    /// on connections and sessions (see [`HttpLimits`] for what each does and its default).
    /// The connection bounds apply to [`serve_http`](Self::serve_http),
    /// [`serve_http_on`](Self::serve_http_on) and [`serve_unix`](Self::serve_unix); the session
    /// caps to a [`router`](Self::router) too.
    #[must_use]
    pub fn with_http_limits(mut self, limits: HttpLimits) -> Self {
        self.http_limits = limits;
        self
    }

    /// The registry being served.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// Whether every tool can run: a tool taking `State<T>` whose `T` the registry does not hold
    /// is [`ServeError::MissingState`], naming the first such tool and the type, as the agent
    /// loop checks its tools before a request. Every `serve_*` method checks this before it
    /// serves anything; call it yourself before mounting a [`router`](Self::router).
    ///
    /// ```
    /// use pi_mcp::{McpServer, ServeError};
    /// use pi_tool::{State, ToolRegistry, tool};
    ///
    /// struct Db;
    ///
    /// /// Count the rows.
    /// #[tool]
    /// async fn count(db: State<Db>) -> String {
    ///     let _ = db;
    ///     "0".to_owned()
    /// }
    ///
    /// let server = McpServer::new(ToolRegistry::new().with(CountTool));
    /// assert!(matches!(server.check(), Err(ServeError::MissingState { tool, .. }) if tool == "count"));
    /// let server = McpServer::new(ToolRegistry::new().with(CountTool).with_state(Db));
    /// assert!(server.check().is_ok());
    /// ```
    pub fn check(&self) -> Result<(), ServeError> {
        match pi_tool::missing_state(self.registry.tools(), self.registry.state())
            .into_iter()
            .next()
        {
            Some(missing) => Err(ServeError::MissingState {
                type_name: missing.state_type.name().to_owned(),
                tool: missing.tool,
            }),
            None => Ok(()),
        }
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
        self.check()?;
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
    ///
    /// Refused before anything is bound when no authentication was chosen
    /// ([`ServeError::NoAuthentication`]), when `addr` is not a loopback address and
    /// [`allow_remote`](Self::allow_remote) was not called ([`ServeError::NotLoopback`]), and
    /// for [`without_auth`](Self::without_auth) on such an address
    /// ([`ServeError::RemoteWithoutAuth`]).
    pub async fn serve_http(self, addr: impl ToSocketAddrs) -> Result<(), ServeError> {
        self.check()?;
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host(addr).await?.collect();
        for addr in &addrs {
            self.check_address(*addr)?;
        }
        let listener = TcpListener::bind(addrs.as_slice()).await?;
        self.serve_http_on(listener).await
    }

    /// Serves streamable HTTP at `/mcp` on a listener you bound (e.g. to port 0), with the
    /// checks of [`serve_http`](Self::serve_http) and the connection bounds of
    /// [`with_http_limits`](Self::with_http_limits). Each connection sends without Nagle's
    /// delay (`TCP_NODELAY`), so an SSE stream's events are not held back for a client's
    /// delayed acknowledgement.
    pub async fn serve_http_on(self, listener: TcpListener) -> Result<(), ServeError> {
        self.check()?;
        let local = listener.local_addr()?;
        self.check_address(local)?;
        let mut origins = self.allowed_origins.clone();
        origins.extend(own_origins(local));
        let router = self.build_router("/mcp", origins);
        connections::serve(listener, router, &self.http_limits).await?;
        Ok(())
    }

    /// Whether serving on `addr` is allowed: an authentication choice, and a loopback address
    /// unless remote serving was asked for (then with authentication).
    fn check_address(&self, addr: SocketAddr) -> Result<(), ServeError> {
        let loopback = is_loopback(addr.ip());
        match self.auth {
            Auth::Unchosen => Err(ServeError::NoAuthentication),
            _ if !loopback && !self.remote => Err(ServeError::NotLoopback(addr)),
            Auth::Disabled if !loopback => Err(ServeError::RemoteWithoutAuth(addr)),
            _ => Ok(()),
        }
    }

    /// Serves streamable HTTP at `http://localhost/mcp` over a Unix socket at `path` until the
    /// process ends (or this future is dropped, which removes the socket file).
    ///
    /// The socket has mode 0600 from the moment it exists: only this user (and root) can
    /// connect, which the MCP spec accepts in place of a token, so none is required unless one
    /// was set ([`with_bearer_token`](Self::with_bearer_token) and the others apply as over
    /// TCP). A stale socket file at `path` is replaced; a live one, or a file that is not a
    /// socket, is an error. Clients connect as to `http://localhost/mcp` (curl:
    /// `--unix-socket PATH`).
    #[cfg(unix)]
    pub async fn serve_unix(mut self, path: impl AsRef<Path>) -> Result<(), ServeError> {
        self.check()?;
        if matches!(self.auth, Auth::Unchosen) {
            self.auth = Auth::Disabled;
        }
        let (listener, _socket_file) = unix::bind_private(path.as_ref())?;
        connections::serve(listener, self.router(), &self.http_limits).await?;
        Ok(())
    }

    /// An axum router serving streamable HTTP at `/mcp`, to mount in your own app.
    pub fn router(&self) -> axum::Router {
        self.router_at("/mcp")
    }

    /// An axum router serving streamable HTTP at `path` (e.g. `"/tools/mcp"`), with this
    /// server's authentication, `Host` and `Origin` checks and body limit (and, with
    /// [`with_oauth`](Self::with_oauth), the metadata document's routes). Without an
    /// authentication choice it answers every request 500 (and runs nothing). Which address
    /// it is served on is up to you: mind [`without_auth`](Self::without_auth)'s warning.
    pub fn router_at(&self, path: &str) -> axum::Router {
        self.build_router(path, self.allowed_origins.clone())
    }

    fn build_router(&self, path: &str, origins: Vec<String>) -> axum::Router {
        let ids = Arc::new(RequestIds::default());
        let handler = self.handler().with_request_ids(Arc::clone(&ids));
        let sessions = Arc::new(Sessions::new(
            self.http_limits.max_sessions(),
            self.http_limits.max_sessions_per_principal(),
        ));
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(CappedSessions::new(sessions, Arc::clone(&ids))),
            self.transport_config(origins),
        );
        let message_check = Arc::new(MessageCheck::new(
            self.max_request_body_bytes,
            Arc::clone(&ids),
        ));
        let gate = Arc::new(match &self.auth {
            Auth::Unchosen => Gate::Unchosen,
            Auth::Disabled => Gate::Open,
            Auth::Token(verifier) => Gate::Verified {
                verifier: verifier.clone(),
                resource_metadata: self
                    .resource
                    .as_ref()
                    .map(|resource| resource.metadata_url().to_owned()),
                required_scopes: self
                    .resource
                    .as_ref()
                    .map(|resource| resource.required_scopes().to_vec())
                    .unwrap_or_default(),
            },
        });
        // Outermost first: the token, the session caps, one JSON-RPC message, then rmcp.
        let mcp = axum::Router::new()
            .nest_service(path, service)
            .route_layer(axum::middleware::from_fn_with_state(
                message_check,
                messages::check,
            ))
            .route_layer(axum::middleware::from_fn(sessions::admit))
            .route_layer(axum::middleware::from_fn_with_state(gate, gate::guard));
        match &self.resource {
            Some(resource) => mcp.merge(resource.routes()),
            None => mcp,
        }
    }

    /// rmcp's transport settings: `Host` and `Origin` checks on (a present `Origin` must be
    /// listed; the spec requires 403 otherwise), the body limit; rmcp's defaults for the rest
    /// (SSE keep-alive 15 s, sessions closed after 5 minutes idle or 60 s without `initialize`).
    fn transport_config(&self, origins: Vec<String>) -> StreamableHttpServerConfig {
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_max_request_body_bytes(self.max_request_body_bytes);
        if let Hosts::Listed(hosts) = &self.hosts {
            config = config.with_allowed_hosts(hosts.clone());
        }
        config
    }
}

/// The origins of a server on the loopback address `local` (`http://127.0.0.1:PORT`,
/// `http://localhost:PORT`, `http://[::1]:PORT`): a request from its own origin is not
/// cross-origin, so it is accepted as browsers would. None for other addresses, whose public
/// name is not known here.
fn own_origins(local: SocketAddr) -> Vec<String> {
    if !is_loopback(local.ip()) {
        return Vec::new();
    }
    let port = local.port();
    ["127.0.0.1", "localhost", "[::1]"]
        .map(|host| format!("http://{host}:{port}"))
        .into()
}

/// `127.0.0.0/8`, `::1`, and `::ffff:127.x.y.z`; not `0.0.0.0` (every interface).
fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}
