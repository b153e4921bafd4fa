//! What one client may hold of an HTTP server: connections (open, idle, slow) and sessions.

use std::time::Duration;

/// Bounds on what clients may hold of an HTTP server ([`McpServer::with_http_limits`]), so that
/// one client cannot lock the others out: connections that send no request, connections
/// without end, sessions without end.
///
/// - **Slow requests.** A connection must deliver a request's complete head (its headers)
///   within [`header_read_timeout`](Self::with_header_read_timeout) of being opened or of its
///   previous answer, or it is closed (one byte per second, "slowloris", gets nowhere).
/// - **Idle connections.** A keep-alive connection with no request in flight is closed after
///   [`idle_timeout`](Self::with_idle_timeout). (The header timer also runs while a connection
///   waits for its next request, so none stays idle longer than `header_read_timeout` either.)
/// - **Open connections.** At most [`max_connections`](Self::with_max_connections) in all and
///   [`max_connections_per_peer`](Self::with_max_connections_per_peer) from one IP address.
///   At a cap, the oldest idle connection (no request in flight) is closed to make room, so
///   idle and slow connections never lock out a client that sends requests; only when every
///   connection is busy is a new one answered `503` and closed. The total is also kept below
///   three quarters of the process's open-file limit (`RLIMIT_NOFILE`), leaving the rest for
///   the tools' files and processes, and a connection that cannot be accepted for lack of file
///   descriptors makes room the same way.
/// - **Sessions** (the 2025-11-25 handshake; 2026-07-28 requests need none): at most
///   [`max_sessions`](Self::with_max_sessions) in all and
///   [`max_sessions_per_principal`](Self::with_max_sessions_per_principal) for one principal
///   (the verified token's subject, else its client id: OAuth users, or whoever a
///   [`TokenVerifier`](crate::TokenVerifier) names; the clients of a static bearer token or of
///   `without_auth` are no one in particular, and only the total applies to them). An
///   `initialize` past a cap is answered `503`
///   (all sessions) or `429` (this principal's), with `Retry-After`; a session ends at the
///   client's `DELETE`, after 5 minutes idle, or 60 s without `initialize`.
///
/// [`McpServer::with_http_limits`]: crate::McpServer::with_http_limits
///
/// ```
/// use std::time::Duration;
/// use pi_mcp::HttpLimits;
///
/// let limits = HttpLimits::default()
///     .with_header_read_timeout(Duration::from_secs(5))
///     .with_max_sessions_per_principal(20);
/// assert_eq!(limits.max_sessions_per_principal(), 20);
/// assert_eq!(limits.idle_timeout(), HttpLimits::DEFAULT_IDLE_TIMEOUT);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpLimits {
    header_read_timeout: Duration,
    idle_timeout: Duration,
    max_connections: usize,
    max_connections_per_peer: usize,
    max_sessions: usize,
    max_sessions_per_principal: usize,
}

impl HttpLimits {
    /// 10 s to send a request's headers: a client on a slow network needs well under a second.
    pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
    /// 10 s idle before a keep-alive connection is closed: longer than HTTP clients keep an
    /// unused pooled connection (httpx and Node's agent, 5 s), so they close it first.
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
    /// 1,024 open connections (and never more than 3/4 of the open-file limit).
    pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
    /// 1,024 open connections from one IP address: the total. On loopback, and behind a
    /// reverse proxy, every client has the same address, and an rmcp client holds two or three
    /// connections per session; a lower cap is for a server many hosts reach directly.
    pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 1024;
    /// 1,000 sessions: about 100 MB at what one costs (the README's "Sessions and memory").
    pub const DEFAULT_MAX_SESSIONS: usize = 1000;
    /// 100 sessions per principal: far more than one user's clients open.
    pub const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL: usize = 100;

    /// The defaults (the `DEFAULT_*` constants).
    pub fn new() -> Self {
        HttpLimits {
            header_read_timeout: Self::DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: Self::DEFAULT_MAX_CONNECTIONS_PER_PEER,
            max_sessions: Self::DEFAULT_MAX_SESSIONS,
            max_sessions_per_principal: Self::DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
        }
    }

    /// How long a connection may take to send a request's complete head (at least 1 ms).
    #[must_use]
    pub fn with_header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a connection may stay open with no request in flight (at least 1 ms).
    #[must_use]
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The most connections open at once (at least 1).
    #[must_use]
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// The most connections open at once from one IP address (at least 1).
    #[must_use]
    pub fn with_max_connections_per_peer(mut self, max: usize) -> Self {
        self.max_connections_per_peer = max.max(1);
        self
    }

    /// The most sessions at once (at least 1).
    #[must_use]
    pub fn with_max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max.max(1);
        self
    }

    /// The most sessions at once for one principal (at least 1).
    #[must_use]
    pub fn with_max_sessions_per_principal(mut self, max: usize) -> Self {
        self.max_sessions_per_principal = max.max(1);
        self
    }

    /// See [`with_header_read_timeout`](Self::with_header_read_timeout).
    pub fn header_read_timeout(&self) -> Duration {
        self.header_read_timeout
    }

    /// See [`with_idle_timeout`](Self::with_idle_timeout).
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// See [`with_max_connections`](Self::with_max_connections).
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// See [`with_max_connections_per_peer`](Self::with_max_connections_per_peer).
    pub fn max_connections_per_peer(&self) -> usize {
        self.max_connections_per_peer
    }

    /// See [`with_max_sessions`](Self::with_max_sessions).
    pub fn max_sessions(&self) -> usize {
        self.max_sessions
    }

    /// See [`with_max_sessions_per_principal`](Self::with_max_sessions_per_principal).
    pub fn max_sessions_per_principal(&self) -> usize {
        self.max_sessions_per_principal
    }
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits::new()
    }
}
