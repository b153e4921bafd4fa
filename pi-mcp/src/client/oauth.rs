//! Signing in to OAuth-protected MCP servers (the MCP authorization spec, 2025-11-25 and
//! 2026-07-28), on rmcp's `AuthorizationManager`: what the application configures.

mod assertion;
mod authorizer;
#[cfg(feature = "jwt")]
mod dpop;
#[cfg(feature = "jwt")]
pub(crate) mod dpop_http;
mod enterprise;
mod fetch;
mod jwt_bearer;
mod loopback;
pub(crate) mod session;
mod store;

use std::sync::Arc;

pub use assertion::{AssertionSource, TokenFile};
pub use authorizer::{AuthorizationPrompt, AuthorizationReason, AuthorizeError, Authorizer};
pub use enterprise::IdentityProvider;
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
    /// Machine to machine: the client's own id and a secret or a private key (client
    /// credentials).
    ClientCredentials {
        client_id: String,
        authentication: ClientAuthentication,
    },
    /// A workload's identity token from its platform, exchanged for an access token (RFC 7523
    /// JWT bearer grant, workload identity federation).
    WorkloadIdentity(Arc<dyn AssertionSource>),
    /// An identity provider's ID token exchanged for an ID-JAG, then for an access token
    /// (enterprise-managed authorization).
    Enterprise(Arc<IdentityProvider>),
}

impl Grant {
    fn name(&self) -> &'static str {
        match self {
            Grant::AuthorizationCode(_) => "authorization_code",
            Grant::ClientCredentials {
                authentication: ClientAuthentication::Secret(_),
                ..
            } => "client_credentials (client secret)",
            Grant::ClientCredentials {
                authentication: ClientAuthentication::PrivateKey { .. },
                ..
            } => "client_credentials (private_key_jwt)",
            Grant::WorkloadIdentity(_) => "jwt-bearer (workload identity)",
            Grant::Enterprise(_) => "enterprise-managed (token exchange, then jwt-bearer)",
        }
    }
}

/// How a client using the client credentials grant proves who it is.
#[derive(Clone)]
pub(crate) enum ClientAuthentication {
    /// A client secret (HTTP Basic or in the body, as the authorization server asks).
    Secret(String),
    /// A JWT signed with the client's private key (RFC 7523 `private_key_jwt`).
    PrivateKey {
        pem: String,
        algorithm: SigningAlgorithm,
    },
}

/// The algorithm of a client's private key, for `private_key_jwt`
/// ([`OAuthConfig::client_credentials_private_key`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SigningAlgorithm {
    /// ECDSA with P-256 and SHA-256.
    Es256,
    /// ECDSA with P-384 and SHA-384.
    Es384,
    /// RSA PKCS#1 v1.5 with SHA-256.
    Rs256,
    /// RSA PKCS#1 v1.5 with SHA-384.
    Rs384,
    /// RSA PKCS#1 v1.5 with SHA-512.
    Rs512,
}

impl SigningAlgorithm {
    /// The algorithm's JOSE name (`ES256` ...), as authorization servers list it.
    pub fn as_str(self) -> &'static str {
        match self {
            SigningAlgorithm::Es256 => "ES256",
            SigningAlgorithm::Es384 => "ES384",
            SigningAlgorithm::Rs256 => "RS256",
            SigningAlgorithm::Rs384 => "RS384",
            SigningAlgorithm::Rs512 => "RS512",
        }
    }

    /// The algorithm of a JOSE name (`ES256` ...), if it is one of these.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            SigningAlgorithm::Es256,
            SigningAlgorithm::Es384,
            SigningAlgorithm::Rs256,
            SigningAlgorithm::Rs384,
            SigningAlgorithm::Rs512,
        ]
        .into_iter()
        .find(|algorithm| algorithm.as_str().eq_ignore_ascii_case(name))
    }
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
    pub(crate) dpop: bool,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("grant", &self.grant.name())
            .field("client_id", &self.client_id)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("dpop", &self.dpop)
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
            authentication: ClientAuthentication::Secret(client_secret.into()),
        })
    }

    /// Machine to machine with a private key instead of a secret: the client credentials grant,
    /// the client authenticated by a JWT it signs with `private_key_pem` (PKCS#8 PEM, `-----BEGIN
    /// PRIVATE KEY-----`; RFC 7523 `private_key_jwt`: `iss` and `sub` the client id, `aud` the
    /// authorization server's issuer, five minutes of validity, a fresh `jti`). The
    /// authorization server must list `private_key_jwt` (and the algorithm, when it lists
    /// algorithms); a key that does not parse is reported at the first sign-in.
    pub fn client_credentials_private_key(
        client_id: impl Into<String>,
        private_key_pem: impl Into<String>,
        algorithm: SigningAlgorithm,
    ) -> Self {
        Self::with_grant(Grant::ClientCredentials {
            client_id: client_id.into(),
            authentication: ClientAuthentication::PrivateKey {
                pem: private_key_pem.into(),
                algorithm,
            },
        })
    }

    /// A workload signs in with the identity token its platform gives it (workload identity
    /// federation: a Kubernetes service account token, a cloud's instance identity, a CI job's
    /// OIDC token): the JWT bearer grant (RFC 7523, `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`)
    /// with a token from `source` as the `assertion`, asked for anew at each sign-in (such
    /// tokens are short-lived). A refusal (`invalid_grant`, `invalid_scope`,
    /// `unauthorized_client`) is the error, with no retry and no other grant tried. Set
    /// [`client_id`](Self::client_id) when the authorization server knows the workload by one.
    pub fn workload_identity(source: impl AssertionSource) -> Self {
        Self::with_grant(Grant::WorkloadIdentity(Arc::new(source)))
    }

    /// Enterprise-managed authorization: the user's ID token from the company's identity
    /// provider is exchanged there for an ID-JAG (RFC 8693 token exchange, naming the MCP
    /// server's authorization server and the server as `resource`), and the ID-JAG for an access
    /// token at the MCP server's authorization server (JWT bearer grant), no browser involved.
    /// [`client_id`](Self::client_id) and [`client_secret`](Self::client_secret) are this
    /// client's registration at the MCP server's authorization server (required). On rmcp's
    /// `enterprise` module.
    pub fn enterprise(identity_provider: IdentityProvider) -> Self {
        Self::with_grant(Grant::Enterprise(Arc::new(identity_provider)))
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
            dpop: false,
        }
    }

    /// Asks for DPoP-bound tokens (RFC 9449): the client makes a P-256 key pair (in memory, one
    /// per connection), sends a proof signed with it on each token request, and when the
    /// authorization server answers with a `DPoP` token, presents it as `Authorization: DPoP`
    /// with a fresh proof (method, URL, token hash) on every request to the MCP server. A stolen
    /// token is then useless without the key. Nonces the authorization server or the MCP
    /// server demand (`use_dpop_nonce`) are sent on the retried request. An authorization server
    /// that does not do DPoP answers with a bearer token, which is used as such. Tokens bound
    /// to the key are not usable by another process: kept in a
    /// [`FileCredentialStore`], they lead to a new sign-in there. For the authorization code and
    /// client credentials grants.
    #[cfg(feature = "jwt")]
    #[must_use]
    pub fn dpop(mut self) -> Self {
        self.dpop = true;
        self
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
        self.dpop |= settings.dpop;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_secret_key_or_token_source_shows_in_debug() {
        let pem = "-----BEGIN PRIVATE KEY-----\nSECRETKEYMATERIAL\n-----END PRIVATE KEY-----";
        let keyed =
            OAuthConfig::client_credentials_private_key("svc", pem, SigningAlgorithm::Es256);
        let shown = format!("{keyed:?}");
        assert!(!shown.contains("SECRETKEYMATERIAL"), "{shown}");
        assert!(shown.contains("private_key_jwt"), "{shown}");
        let secret = format!(
            "{:?}",
            OAuthConfig::client_credentials("svc", "the-secret-value")
                .client_secret("other-secret")
        );
        assert!(
            !secret.contains("secret-value") && !secret.contains("other-secret"),
            "{secret}"
        );
        let idp = IdentityProvider::new("https://idp", "https://idp/token", "app", || async {
            Ok::<_, AuthorizeError>("id-token-value".to_owned())
        })
        .client_secret("idp-secret");
        let enterprise = format!(
            "{:?}",
            OAuthConfig::enterprise(idp).client_secret("as-secret")
        );
        for hidden in ["id-token-value", "idp-secret", "as-secret"] {
            assert!(!enterprise.contains(hidden), "{enterprise}");
        }
        assert_eq!(
            SigningAlgorithm::from_name("es256"),
            Some(SigningAlgorithm::Es256)
        );
        assert_eq!(SigningAlgorithm::from_name("HS256"), None);
    }
}
