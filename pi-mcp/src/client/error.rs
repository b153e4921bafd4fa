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
    /// `tools/list` failed.
    #[error("{server}: listing tools failed: {reason}")]
    ListTools {
        /// The server.
        server: String,
        /// What failed.
        reason: String,
    },
}
