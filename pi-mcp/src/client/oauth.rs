//! Signing in to OAuth-protected MCP servers (the MCP authorization spec, 2025-11-25 and
//! 2026-07-28), on rmcp's `AuthorizationManager`: what the application configures.

mod authorizer;
mod fetch;
mod loopback;
pub(crate) mod session;
mod store;

use std::sync::Arc;

pub use authorizer::{AuthorizationPrompt, AuthorizationReason, AuthorizeError, Authorizer};
pub use loopback::{DEFAULT_SIGN_IN_TIMEOUT, LoopbackAuthorizer};
pub use store::{
    CredentialStore, CredentialStoreError, FileCredentialStore, InMemoryCredentialStore,
    OAuthCredentials,
};

/// How the client obtains tokens.
#[derive(Clone)]
pub(crate) enum Grant {
    /// A user signs in in a browser (authorization code with PKCE).
    AuthorizationCode(Arc<dyn Authorizer>),
    /// Machine to machine: the client's own id and secret (client credentials).
    ClientCredentials {
        client_id: String,
        client_secret: String,
    },
}

/// How an HTTP client signs in to an OAuth-protected server
/// ([`McpClientBuilder::oauth`](crate::McpClientBuilder::oauth)).
///
/// Nothing happens until the server answers 401: then the client reads its `WWW-Authenticate`
/// challenge, finds the protected resource's metadata (RFC 9728: the challenge's
/// `resource_metadata`, else the well-known URLs) and its authorization server's (RFC 8414 and
/// OpenID Connect discovery, the issuer checked against the URL it came from), refuses a server
/// that does not offer PKCE with S256, registers (a pre-registered client id when given, else
/// a client ID metadata document when given and supported, else dynamic registration), and asks
/// the [`Authorizer`] to have the user sign in; the code is redeemed with PKCE, `resource`
/// (RFC 8707) and the `iss` check (RFC 9207). Tokens go to the [`CredentialStore`] and are
/// refreshed before they expire; a 403 `insufficient_scope` asks for the missing scope (at most
/// three sign-ins in a row without a request getting through).
#[derive(Clone)]
pub struct OAuthConfig {
    pub(crate) grant: Grant,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) client_name: Option<String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) store: Arc<dyn CredentialStore>,
    pub(crate) allow_private_network: bool,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let grant = match &self.grant {
            Grant::AuthorizationCode(_) => "authorization_code",
            Grant::ClientCredentials { .. } => "client_credentials",
        };
        f.debug_struct("OAuthConfig")
            .field("grant", &grant)
            .field("client_id", &self.client_id)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    /// A user signs in in a browser; `authorizer` shows them the page and brings back the
    /// redirect ([`LoopbackAuthorizer`] listens for it on 127.0.0.1).
    pub fn new(authorizer: impl Authorizer) -> Self {
        Self::with_grant(Grant::AuthorizationCode(Arc::new(authorizer)))
    }

    /// Machine to machine, without a user: the client credentials grant with this client's id
    /// and secret (sent as the authorization server asks: HTTP Basic or in the body).
    pub fn client_credentials(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        Self::with_grant(Grant::ClientCredentials {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
        })
    }

    fn with_grant(grant: Grant) -> Self {
        OAuthConfig {
            grant,
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_name: None,
            scopes: Vec::new(),
            store: Arc::new(InMemoryCredentialStore::new()),
            allow_private_network: false,
        }
    }

    /// A client id registered with the authorization server beforehand (no registration then).
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The secret of the pre-registered [`client_id`](Self::client_id), for a confidential
    /// client.
    #[must_use]
    pub fn client_secret(mut self, client_secret: impl Into<String>) -> Self {
        self.client_secret = Some(client_secret.into());
        self
    }

    /// The HTTPS URL of this client's metadata document (a client ID metadata document): used as
    /// the client id with authorization servers that accept one, instead of registering.
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The name given when registering dynamically (default: the client name of
    /// [`McpClientBuilder::client_info`](crate::McpClientBuilder::client_info)).
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = Some(name.into());
        self
    }

    /// The scopes to ask for. By default the client asks for the scopes of the server's
    /// challenge, else those its metadata lists (`scopes_supported`), else none, adding
    /// `offline_access` when the authorization server offers it (so there is a refresh token).
    #[must_use]
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Where tokens are kept (default: in memory, for this process).
    #[must_use]
    pub fn credential_store(mut self, store: impl CredentialStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Like [`credential_store`](Self::credential_store), for a store shared with other clients.
    #[must_use]
    pub fn shared_credential_store(mut self, store: Arc<dyn CredentialStore>) -> Self {
        self.store = store;
        self
    }

    /// Lets the server's metadata name an authorization server on a private network (10.x,
    /// 192.168.x, ...) although the MCP server is not on one. Off by default, so that a server
    /// cannot make the client reach into the local network; this machine's addresses are only
    /// reachable for a server on this machine either way.
    #[must_use]
    pub fn allow_private_network(mut self) -> Self {
        self.allow_private_network = true;
        self
    }

    /// Fills in what this config leaves unset from a configuration file's `oauth` entry.
    pub(crate) fn fill_in(mut self, settings: &crate::McpOAuthSettings) -> Self {
        if self.client_id.is_none() {
            self.client_id.clone_from(&settings.client_id);
            if self.client_secret.is_none() {
                self.client_secret.clone_from(&settings.client_secret);
            }
        }
        if self.client_metadata_url.is_none() {
            self.client_metadata_url
                .clone_from(&settings.client_metadata_url);
        }
        if self.scopes.is_empty() {
            self.scopes.clone_from(&settings.scopes);
        }
        self
    }
}
