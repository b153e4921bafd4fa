//! The live session with one MCP server, shared by the client and every tool it imported.

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::{Peer, RoleClient, RunningService};

use super::elicitation::Elicitation;
use super::handler::{PiClientHandler, ProgressRoutes};
use super::interaction::UserWaits;
use super::transport::{Failure, HttpState};

/// Owns rmcp's running service: when the last tool and the client are gone, it is dropped and
/// the session ends (a stdio server is killed).
pub(crate) struct Connection {
    service: RunningService<RoleClient, PiClientHandler>,
    label: String,
    call_timeout: Duration,
    /// Every tool of this server is deferred (`McpClientBuilder::defer_tools`).
    defer_tools: bool,
    waits: Arc<UserWaits>,
    elicitation: Elicitation,
    http: Option<Arc<HttpState>>,
}

impl Connection {
    pub(crate) fn new(
        service: RunningService<RoleClient, PiClientHandler>,
        label: String,
        call_timeout: Duration,
        defer_tools: bool,
        waits: Arc<UserWaits>,
        elicitation: Elicitation,
        http: Option<Arc<HttpState>>,
    ) -> Self {
        Connection {
            service,
            label,
            call_timeout,
            defer_tools,
            waits,
            elicitation,
            http,
        }
    }

    /// Waits for the user (sign-ins, elicitations), which call timeouts do not count.
    pub(crate) fn waits(&self) -> &UserWaits {
        &self.waits
    }

    /// The application's elicitation handler, for `input_required` results.
    pub(crate) fn elicitation(&self) -> &Elicitation {
        &self.elicitation
    }

    /// Why the last HTTP request failed, when it was refused or could not be sent.
    pub(crate) fn http_failure(&self) -> Option<Failure> {
        self.http.as_ref()?.last_failure()
    }

    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    pub(crate) fn progress_routes(&self) -> &Arc<ProgressRoutes> {
        &self.service.service().progress
    }

    /// How error texts name the server: `MCP server "github"`.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    pub(crate) fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    pub(crate) fn defer_tools(&self) -> bool {
        self.defer_tools
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_closed()
    }

    /// Ends the session (the service loop stops; pending and later calls fail).
    pub(crate) fn close(&self) {
        self.service.cancellation_token().cancel();
    }
}
