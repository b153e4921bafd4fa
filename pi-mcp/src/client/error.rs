//! What can go wrong while connecting to an MCP server.

/// Connecting to an MCP server, or listing its tools, failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpClientError {
    /// The server process could not be started.
    #[error("could not start MCP server `{command}`: {source}")]
    Spawn {
        /// The program that was run.
        command: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A header name or value is not valid HTTP.
    #[error("invalid HTTP header `{name}`: {reason}")]
    InvalidHeader {
        /// The header's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Headers or a bearer token were given for a stdio server.
    #[error(
        "headers and bearer tokens apply only to HTTP servers, not to stdio server `{command}`"
    )]
    HeadersOnStdio {
        /// The stdio server's program.
        command: String,
    },
    /// The MCP handshake (`server/discover` or `initialize`) failed.
    #[error("could not connect to {server}: {reason}")]
    Connect {
        /// The server (its command or URL).
        server: String,
        /// What failed.
        reason: String,
    },
    /// The handshake did not finish in time.
    #[error("{server} did not complete the MCP handshake within {seconds} s")]
    ConnectTimeout {
        /// The server (its command or URL).
        server: String,
        /// The limit.
        seconds: u64,
    },
    /// The server answered 401 and the client has no way to sign in
    /// ([`McpClientBuilder::oauth`](crate::McpClientBuilder::oauth) was not given).
    #[error(
        "{server} requires authorization (HTTP 401, WWW-Authenticate: {challenge}): configure OAuth for it (McpClientBuilder::oauth) or give a token (bearer_token, a header)"
    )]
    AuthorizationRequired {
        /// The server (its URL).
        server: String,
        /// The server's `WWW-Authenticate` challenge, as it sent it.
        challenge: String,
    },
    /// The server answered 403 `insufficient_scope` and the client cannot ask for more scopes
    /// (its token came from `bearer_token` or a header).
    #[error(
        "{server} refused the request: the token lacks a scope it needs (HTTP 403, WWW-Authenticate: {challenge})"
    )]
    Forbidden {
        /// The server (its URL).
        server: String,
        /// The server's `WWW-Authenticate` challenge, as it sent it.
        challenge: String,
    },
    /// Signing in to the server failed (discovery, registration, the user, the token request).
    #[error(
        "signing in to {server} failed: {reason} (the server's challenge: WWW-Authenticate: {challenge})"
    )]
    SignIn {
        /// The server (its URL).
        server: String,
        /// What failed.
        reason: String,
        /// The server's `WWW-Authenticate` challenge that started the sign-in.
        challenge: String,
    },
    /// The server's configuration entry could not be used (e.g. a `${VAR}` that is not set).
    #[error("MCP server `{server}`: {reason}")]
    Config {
        /// The server, as the configuration names it (its command or URL, unexpanded).
        server: String,
        /// What is wrong.
        reason: String,
    },
    /// `tools/list` failed.
    #[error("{server}: listing tools failed: {reason}")]
    ListTools {
        /// The server.
        server: String,
        /// What failed.
        reason: String,
    },
}
