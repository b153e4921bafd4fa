//! The MCP client: an MCP server's tools as `AgentTool`s.

mod builder;
mod config;
mod connection;
mod content;
mod elicitation;
mod error;
mod expand;
mod handler;
mod interaction;
mod naming;
mod oauth;
mod tool;
mod tool_list;
mod transport;

use std::sync::Arc;
use std::time::Duration;

use pi_tool::{AgentTool, ToolRegistry};
use tokio::sync::watch;

pub use builder::McpClientBuilder;
pub use config::{McpConfig, McpConfigError, McpOAuthSettings, McpServerConfig};
pub use elicitation::{
    ElicitationHandler, ElicitationKind, ElicitationRequest, ElicitationResponse,
};
pub use error::McpClientError;
pub use oauth::{
    AssertionSource, AuthorizationPrompt, AuthorizationReason, AuthorizeError, Authorizer,
    CredentialStore, CredentialStoreError, DEFAULT_SIGN_IN_TIMEOUT, FileCredentialStore,
    IdentityProvider, InMemoryCredentialStore, LoopbackAuthorizer, OAuthConfig, OAuthCredentials,
    SigningAlgorithm, TokenFile,
};
pub use tool::McpTool;

use builder::{StdioRecipe, Target};
use connection::Connection;

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
    ///
    /// The program, its arguments, environment changes and working directory are used (other
    /// settings of the `Command`, such as a uid, cannot be read back from it); the process may
    /// be started twice, once per handshake (see [`McpClientBuilder::connect`]).
    pub fn stdio(command: impl Into<tokio::process::Command>) -> McpClientBuilder {
        McpClientBuilder::new(Target::Stdio(StdioRecipe::from_command(&command.into())))
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
