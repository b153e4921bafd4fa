//! Signing in to one server, on rmcp's `AuthorizationManager` (discovery, registration, PKCE,
//! the token exchange, refresh) and `AuthClient` (the bearer token on every request): what
//! happens on a 401 or a 403 `insufficient_scope`.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, PoisonError};

use reqwest::Url;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, ClientCredentialsConfig, JwtSigningAlgorithm, OAuthHttpClient,
    OAuthTokenResponse, StoredCredentials, WWWAuthenticateParams,
};
use tokio::sync::Mutex;

use super::enterprise::{self, IdentityProvider, ResourceClient};
use super::fetch::OAuthFetcher;
use super::jwt_bearer::{self, JwtBearerRequest};
use super::store::ServerSlot;
use super::{
    AssertionSource, AuthorizationPrompt, AuthorizationReason, Authorizer, ClientAuthentication,
    Grant, OAuthConfig, SigningAlgorithm,
};
use crate::client::interaction::UserWaits;

/// Sign-ins in a row without a request getting through, before the client gives up (a server
/// that keeps answering 403 must not send the user to the browser forever).
pub(crate) const MAX_SIGN_INS_IN_A_ROW: u32 = 3;

/// What the server said when it refused a request.
#[derive(Clone, Debug)]
pub(crate) enum Refusal {
    /// 401: no token, or one it does not accept (rmcp's `AuthClient` already tried a refresh).
    Unauthorized { challenge: String },
    /// 403 `insufficient_scope`: the token lacks a scope.
    InsufficientScope {
        challenge: String,
        scope: Option<String>,
    },
}

impl Refusal {
    pub(crate) fn challenge(&self) -> &str {
        match self {
            Refusal::Unauthorized { challenge } | Refusal::InsufficientScope { challenge, .. } => {
                challenge
            }
        }
    }
}

/// The HTTP client that puts the token on each request: as a bearer token, or with DPoP.
#[derive(Clone)]
pub(crate) enum OAuthHttp {
    Bearer(AuthClient<reqwest::Client>),
    #[cfg(feature = "jwt")]
    Dpop(AuthClient<super::dpop_http::DpopHttp>),
}

impl OAuthHttp {
    fn manager(&self) -> &Arc<Mutex<AuthorizationManager>> {
        match self {
            OAuthHttp::Bearer(client) => &client.auth_manager,
            #[cfg(feature = "jwt")]
            OAuthHttp::Dpop(client) => &client.auth_manager,
        }
    }
}

/// One server's sign-in state, shared by every request of its connection.
pub(crate) struct OAuthSession {
    config: OAuthConfig,
    server: Url,
    client_name: String,
    fetcher: Arc<OAuthFetcher>,
    /// The manager `AuthClient` takes tokens from; replaced after each new sign-in.
    manager: Arc<Mutex<AuthorizationManager>>,
    /// Counts completed sign-ins, so requests refused at the same time sign in only once.
    generation: AtomicU64,
    signing_in: Mutex<()>,
    in_a_row: AtomicU32,
    /// Whether the last discovery found no metadata (the 2025-03-26 default endpoints).
    without_metadata: AtomicBool,
    issuer: StdMutex<Option<String>>,
    waits: Arc<UserWaits>,
}

impl OAuthSession {
    /// The session and the HTTP client that puts its token on each request. Tokens the store
    /// already holds for this server are used (after checking that the server still names the
    /// authorization server that issued them).
    pub(crate) async fn start(
        config: OAuthConfig,
        server: &str,
        client_name: String,
        http: reqwest::Client,
        waits: Arc<UserWaits>,
    ) -> Result<(Arc<Self>, OAuthHttp), String> {
        let url = Url::parse(server).map_err(|err| format!("{server} is not a URL: {err}"))?;
        #[cfg(not(feature = "jwt"))]
        if config.dpop {
            return Err(
                "DPoP (the configuration's oauth.dpop) needs pi-mcp's `jwt` feature".to_owned(),
            );
        }
        let fetcher = OAuthFetcher::new(&url, config.allow_private_network)?;
        #[cfg(feature = "jwt")]
        let dpop = if config.dpop {
            Some(Arc::new(super::dpop::DpopKey::generate()?))
        } else {
            None
        };
        #[cfg(feature = "jwt")]
        let fetcher = match &dpop {
            Some(key) => fetcher.with_dpop(Arc::clone(key)),
            None => fetcher,
        };
        let fetcher = Arc::new(fetcher);
        let mut manager = new_manager(&config, &url, &fetcher).await?;
        let stored = config
            .store
            .load(url.as_str())
            .await
            .map_err(|err| format!("could not read the stored sign-in for {url}: {err}"))?;
        let issuer = stored
            .as_ref()
            .and_then(|stored| stored.issuer().map(str::to_owned));
        if stored.is_some() {
            // Discovery, and the issuer check: tokens of another authorization server are dropped.
            if let Err(err) = manager.initialize_from_store().await {
                tracing::warn!(
                    "{url}: the stored sign-in cannot be used ({}); signing in again when the server asks",
                    describe(&err)
                );
            }
        }
        #[cfg(feature = "jwt")]
        let client = match dpop {
            Some(key) => OAuthHttp::Dpop(AuthClient::new(
                super::dpop_http::DpopHttp { http, key },
                manager,
            )),
            None => OAuthHttp::Bearer(AuthClient::new(http, manager)),
        };
        #[cfg(not(feature = "jwt"))]
        let client = OAuthHttp::Bearer(AuthClient::new(http, manager));
        let session = Arc::new(OAuthSession {
            config,
            server: url,
            client_name,
            fetcher,
            manager: Arc::clone(client.manager()),
            generation: AtomicU64::new(0),
            signing_in: Mutex::new(()),
            in_a_row: AtomicU32::new(0),
            without_metadata: AtomicBool::new(false),
            issuer: StdMutex::new(issuer),
            waits,
        });
        Ok((session, client))
    }

    /// The number of sign-ins so far; give it back to [`recover`](Self::recover).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// A request got through: the count of sign-ins in a row starts over.
    pub(crate) fn succeeded(&self) {
        self.in_a_row.store(0, Ordering::Release);
    }

    /// Signs in (again, or for more scopes) after the server refused a request sent at
    /// `generation`; `Ok` means: send it again. When another request already signed in since,
    /// nothing is done.
    pub(crate) async fn recover(&self, refusal: &Refusal, generation: u64) -> Result<(), String> {
        let _one_at_a_time = self.signing_in.lock().await;
        if self.generation() != generation {
            return Ok(());
        }
        if self.in_a_row.fetch_add(1, Ordering::AcqRel) >= MAX_SIGN_INS_IN_A_ROW {
            return Err(format!(
                "gave up after {MAX_SIGN_INS_IN_A_ROW} sign-ins in a row that the server still refused"
            ));
        }
        self.without_metadata.store(false, Ordering::Release);
        if let Err(reason) = self.sign_in_for(refusal).await {
            if self.without_metadata.load(Ordering::Acquire) {
                return Err(format!(
                    "the server publishes no OAuth metadata (no protected resource metadata, no authorization server metadata), and signing in at the default endpoints of the 2025-03-26 revision (/authorize, /token, /register at its root) failed: {reason}. It may expect a token given another way (a bearer token or a header)"
                ));
            }
            return Err(reason);
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// The sign-in the grant makes for this refusal.
    async fn sign_in_for(&self, refusal: &Refusal) -> Result<(), String> {
        match (&self.config.grant, refusal) {
            (
                Grant::ClientCredentials {
                    client_id,
                    authentication,
                },
                refusal,
            ) => {
                self.client_credentials(client_id, authentication, refusal)
                    .await?;
            }
            (Grant::WorkloadIdentity(source), refusal) => {
                self.workload_identity(source.as_ref(), refusal).await?;
            }
            (Grant::Enterprise(idp), refusal) => {
                self.enterprise(idp, refusal).await?;
            }
            (Grant::AuthorizationCode(authorizer), Refusal::Unauthorized { challenge }) => {
                self.sign_in(
                    authorizer,
                    challenge,
                    Vec::new(),
                    AuthorizationReason::SignIn,
                )
                .await?;
            }
            (
                Grant::AuthorizationCode(authorizer),
                Refusal::InsufficientScope { challenge, scope },
            ) => {
                let scope = scope
                    .clone()
                    .or_else(|| challenge_scope(challenge, &self.server))
                    .ok_or_else(|| {
                        "the server refused the request for lack of a scope (HTTP 403 insufficient_scope) but did not say which".to_owned()
                    })?;
                self.step_up(authorizer, challenge, &scope).await?;
            }
        }
        Ok(())
    }

    /// A new sign-in from the challenge: discovery, registration, the user, the token.
    async fn sign_in(
        &self,
        authorizer: &Arc<dyn Authorizer>,
        challenge: &str,
        extra_scopes: Vec<String>,
        reason: AuthorizationReason,
    ) -> Result<(), String> {
        let mut manager = new_manager(&self.config, &self.server, &self.fetcher).await?;
        let metadata = self.discover(&manager, challenge).await?;
        let issuer = metadata.issuer.clone();
        manager.set_metadata(metadata);
        let mut request = AuthorizationRequest::new(authorizer.redirect_uri()).with_client_name(
            self.config
                .client_name
                .as_deref()
                .unwrap_or(&self.client_name),
        );
        let mut scopes = self.config.scopes.clone();
        for scope in extra_scopes {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        request = if scopes.is_empty() {
            request.with_initial_scope_selection()
        } else {
            request.with_scopes(scopes)
        };
        if let Some(client_id) = &self.config.client_id {
            request = request.with_preregistered_client(client_id);
            if let Some(secret) = &self.config.client_secret {
                request = request.with_client_secret(secret);
            }
        }
        if let Some(url) = &self.config.client_metadata_url {
            request = request.with_client_metadata_url(url);
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, err)| describe(&err))?;
        let redirected = self
            .ask_user(authorizer, &session.auth_url, issuer.clone(), reason)
            .await?;
        let callback = Callback::read(&redirected)?;
        session
            .handle_callback_with_issuer(
                &callback.code,
                &callback.state,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(|err| describe(&err))?;
        *self.issuer.lock().unwrap_or_else(PoisonError::into_inner) = issuer;
        *self.manager.lock().await = session.auth_manager;
        Ok(())
    }

    /// More scopes for the signed-in client: the union of what was granted and what the server
    /// asks for (SEP-2350). A client that never signed in signs in with the asked scope.
    async fn step_up(
        &self,
        authorizer: &Arc<dyn Authorizer>,
        challenge: &str,
        scope: &str,
    ) -> Result<(), String> {
        let manager = self.manager.lock().await;
        if manager.get_credentials().await.is_err() {
            drop(manager);
            let scopes = scope.split_whitespace().map(str::to_owned).collect();
            return self
                .sign_in(
                    authorizer,
                    challenge,
                    scopes,
                    AuthorizationReason::MoreScopes,
                )
                .await;
        }
        let url = manager
            .request_scope_upgrade(scope)
            .await
            .map_err(|err| describe(&err))?;
        let issuer = self
            .issuer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        // The manager stays locked: other requests wait for the new token rather than go out
        // with the old one.
        let redirected = self
            .ask_user(authorizer, &url, issuer, AuthorizationReason::MoreScopes)
            .await?;
        let callback = Callback::read(&redirected)?;
        manager
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.state,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(|err| describe(&err))?;
        Ok(())
    }

    /// The scopes for a grant without a user: the config's, else the challenge's; for a 403,
    /// also those granted so far and those the server asks for.
    async fn machine_scopes(&self, refusal: &Refusal) -> Vec<String> {
        let mut scopes = self.config.scopes.clone();
        if scopes.is_empty() {
            scopes.extend(
                challenge_scope(refusal.challenge(), &self.server)
                    .iter()
                    .flat_map(|scope| scope.split_whitespace().map(str::to_owned)),
            );
        }
        if let Refusal::InsufficientScope {
            scope: Some(extra), ..
        } = refusal
        {
            let old = self.manager.lock().await.get_current_scopes().await;
            for scope in old
                .into_iter()
                .chain(extra.split_whitespace().map(str::to_owned))
            {
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
        }
        scopes
    }

    /// Machine to machine: a token for the client's own credentials (a secret or a signed
    /// JWT), with the challenge's scope (plus more, for a 403).
    async fn client_credentials(
        &self,
        client_id: &str,
        authentication: &ClientAuthentication,
        refusal: &Refusal,
    ) -> Result<(), String> {
        let mut manager = new_manager(&self.config, &self.server, &self.fetcher).await?;
        let metadata = self.discover(&manager, refusal.challenge()).await?;
        let issuer = metadata.issuer.clone();
        manager.set_metadata(metadata);
        let scopes = self.machine_scopes(refusal).await;
        let resource = Some(self.server.to_string());
        let credentials = match authentication {
            ClientAuthentication::Secret(client_secret) => ClientCredentialsConfig::ClientSecret {
                client_id: client_id.to_owned(),
                client_secret: client_secret.clone(),
                scopes,
                resource,
            },
            ClientAuthentication::PrivateKey { pem, algorithm } => {
                ClientCredentialsConfig::PrivateKeyJwt {
                    client_id: client_id.to_owned(),
                    signing_key: pem.clone().into_bytes(),
                    signing_algorithm: rmcp_algorithm(*algorithm),
                    token_endpoint_audience: None,
                    scopes,
                    resource,
                }
            }
        };
        manager
            .validate_client_credentials_metadata(&credentials)
            .and_then(|()| manager.configure_client_credentials(&credentials))
            .map_err(|err| describe(&err))?;
        let manager = exchange_client_credentials(manager, credentials).await?;
        *self.issuer.lock().unwrap_or_else(PoisonError::into_inner) = issuer;
        *self.manager.lock().await = manager;
        Ok(())
    }

    /// Workload identity federation: the platform's token for an access token (JWT bearer).
    async fn workload_identity(
        &self,
        source: &dyn AssertionSource,
        refusal: &Refusal,
    ) -> Result<(), String> {
        let manager = new_manager(&self.config, &self.server, &self.fetcher).await?;
        let metadata = self.discover(&manager, refusal.challenge()).await?;
        let scopes = self.machine_scopes(refusal).await;
        let assertion = source
            .assertion()
            .await
            .map_err(|err| format!("no workload identity token from its source: {err}"))?;
        let tokens = jwt_bearer::exchange(
            &self.fetcher,
            &JwtBearerRequest {
                token_endpoint: &metadata.token_endpoint,
                assertion: &assertion,
                client_id: self.config.client_id.as_deref(),
                scopes: &scopes,
                resource: self.server.as_str(),
            },
        )
        .await?;
        let client_id = self.config.client_id.clone().unwrap_or_default();
        self.keep_tokens(manager, metadata, client_id, tokens).await
    }

    /// Enterprise-managed authorization: the user's ID token for an ID-JAG at the identity
    /// provider, the ID-JAG for an access token here.
    async fn enterprise(&self, idp: &IdentityProvider, refusal: &Refusal) -> Result<(), String> {
        let client_id = self.config.client_id.as_deref().ok_or(
            "enterprise-managed authorization needs this client's id at the MCP server's authorization server (OAuthConfig::client_id)",
        )?;
        let manager = new_manager(&self.config, &self.server, &self.fetcher).await?;
        let metadata = self.discover(&manager, refusal.challenge()).await?;
        let scopes = self.machine_scopes(refusal).await;
        let tokens = enterprise::exchange(
            idp,
            self.fetcher.as_ref(),
            &metadata,
            ResourceClient {
                client_id,
                client_secret: self.config.client_secret.as_deref(),
            },
            self.server.as_str(),
            &scopes,
        )
        .await?;
        self.keep_tokens(manager, metadata, client_id.to_owned(), tokens)
            .await
    }

    /// Keeps tokens obtained outside rmcp's manager in the store, where the manager takes them
    /// from. Without the time they were received: they are used until the server refuses them,
    /// then the grant is made again (there is no refresh token to renew them with).
    async fn keep_tokens(
        &self,
        mut manager: AuthorizationManager,
        metadata: AuthorizationMetadata,
        client_id: String,
        tokens: OAuthTokenResponse,
    ) -> Result<(), String> {
        use oauth2::TokenResponse as _;
        let issuer = metadata.issuer.clone();
        let scopes = tokens
            .scopes()
            .map(|scopes| scopes.iter().map(|scope| scope.to_string()).collect())
            .unwrap_or_default();
        let stored = StoredCredentials::new(client_id, Some(tokens), scopes, None)
            .with_issuer(issuer.clone());
        let slot = ServerSlot {
            store: Arc::clone(&self.config.store),
            server: self.server.to_string(),
        };
        rmcp::transport::auth::CredentialStore::save(&slot, stored)
            .await
            .map_err(|err| describe(&err))?;
        manager.set_metadata(metadata);
        *self.issuer.lock().unwrap_or_else(PoisonError::into_inner) = issuer;
        *self.manager.lock().await = manager;
        Ok(())
    }

    /// The authorization server's metadata, found from the challenge (RFC 9728, then RFC 8414 /
    /// OpenID Connect). A server without any, or one that does not offer PKCE with S256, is
    /// refused.
    async fn discover(
        &self,
        manager: &AuthorizationManager,
        challenge: &str,
    ) -> Result<AuthorizationMetadata, String> {
        let found = manager
            .resolve_metadata_from_challenge(Some(challenge))
            .await
            .map_err(|err| describe(&err))?;
        let discovered = found.source.is_discovered();
        self.without_metadata.store(!discovered, Ordering::Release);
        if !discovered {
            // The 2025-03-26 revision's rule: without metadata, the default endpoints at the
            // server's root (/authorize, /token, /register). A server that is not OAuth at all
            // then fails at registration or at the token endpoint, reported with that.
            tracing::debug!(
                "{}: no OAuth metadata found; using the default endpoints of the 2025-03-26 revision",
                self.server
            );
        }
        let metadata = found.metadata;
        if discovered && matches!(self.config.grant, Grant::AuthorizationCode(_)) {
            let offers_s256 = metadata
                .code_challenge_methods_supported
                .as_ref()
                .is_some_and(|methods| methods.iter().any(|method| method == "S256"));
            if !offers_s256 {
                let server = metadata
                    .issuer
                    .clone()
                    .unwrap_or_else(|| metadata.authorization_endpoint.clone());
                return Err(format!(
                    "the authorization server {server} does not offer PKCE with S256 (its metadata's code_challenge_methods_supported is {}), which MCP requires; refusing to sign in there",
                    match &metadata.code_challenge_methods_supported {
                        Some(methods) => format!("{methods:?}"),
                        None => "missing".to_owned(),
                    }
                ));
            }
        }
        Ok(metadata)
    }

    /// Has the application show the user `url`; the wait does not count against timeouts.
    async fn ask_user(
        &self,
        authorizer: &Arc<dyn Authorizer>,
        url: &str,
        issuer: Option<String>,
        reason: AuthorizationReason,
    ) -> Result<String, String> {
        let scopes = Url::parse(url)
            .ok()
            .and_then(|url| {
                url.query_pairs()
                    .find(|(key, _)| key == "scope")
                    .map(|(_, scope)| scope.split_whitespace().map(str::to_owned).collect())
            })
            .unwrap_or_default();
        let prompt = AuthorizationPrompt {
            server: self.server.to_string(),
            url: url.to_owned(),
            issuer,
            scopes,
            reason,
        };
        let _waiting = self.waits.begin();
        authorizer
            .authorize(prompt)
            .await
            .map_err(|err| format!("the sign-in did not complete: {err}"))
    }
}

/// rmcp's `exchange_client_credentials`, on a blocking thread of its own: with the
/// `auth-client-credentials-jwt` feature its future is not `Send` (a form serializer held across
/// an await in rmcp 3.11), and the transport's futures must be.
async fn exchange_client_credentials(
    manager: AuthorizationManager,
    credentials: ClientCredentialsConfig,
) -> Result<AuthorizationManager, String> {
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        runtime.block_on(async move {
            manager
                .exchange_client_credentials(&credentials)
                .await
                .map(|_| manager)
        })
    })
    .await
    .map_err(|err| format!("the token request stopped: {err}"))?
    .map_err(|err| describe(&err))
}

fn rmcp_algorithm(algorithm: SigningAlgorithm) -> JwtSigningAlgorithm {
    match algorithm {
        SigningAlgorithm::Es256 => JwtSigningAlgorithm::ES256,
        SigningAlgorithm::Es384 => JwtSigningAlgorithm::ES384,
        SigningAlgorithm::Rs256 => JwtSigningAlgorithm::RS256,
        SigningAlgorithm::Rs384 => JwtSigningAlgorithm::RS384,
        SigningAlgorithm::Rs512 => JwtSigningAlgorithm::RS512,
    }
}

async fn new_manager(
    config: &OAuthConfig,
    server: &Url,
    fetcher: &Arc<OAuthFetcher>,
) -> Result<AuthorizationManager, String> {
    let http: Arc<dyn OAuthHttpClient> = Arc::clone(fetcher) as Arc<dyn OAuthHttpClient>;
    let mut manager = AuthorizationManager::new_with_oauth_http_client(server.as_str(), http)
        .await
        .map_err(|err| describe(&err))?;
    manager.set_credential_store(ServerSlot {
        store: Arc::clone(&config.store),
        server: server.to_string(),
    });
    Ok(manager)
}

/// The `scope` of a `WWW-Authenticate` challenge.
fn challenge_scope(challenge: &str, server: &Url) -> Option<String> {
    WWWAuthenticateParams::parse(challenge, server)
        .scope
        .filter(|scope| !scope.trim().is_empty())
}

/// Where the authorization server sent the browser back: the code, the `state` and the issuer,
/// or the error it reported.
struct Callback {
    code: String,
    state: String,
    issuer: Option<String>,
}

impl Callback {
    fn read(redirected: &str) -> Result<Callback, String> {
        let url = Url::parse(redirected).map_err(|err| {
            format!("the sign-in came back to `{redirected}`, which is not a URL: {err}")
        })?;
        let query = |name: &str| {
            url.query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        if let Some(error) = query("error") {
            return Err(match query("error_description") {
                Some(description) => {
                    format!("the authorization server refused: {error} ({description})")
                }
                None => format!("the authorization server refused: {error}"),
            });
        }
        Ok(Callback {
            code: query("code").ok_or("the authorization server's redirect carries no code")?,
            state: query("state").ok_or("the authorization server's redirect carries no state")?,
            issuer: query("iss"),
        })
    }
}

/// An rmcp authorization error in the user's words.
pub(crate) fn describe(err: &AuthError) -> String {
    match err {
        AuthError::AuthorizationServerMismatch {
            expected_issuer,
            received_issuer,
        } => format!(
            "the authorization server's answer names the issuer {received_issuer}, but the sign-in went to {expected_issuer}; refusing it (RFC 9207 / RFC 8414 issuer check)"
        ),
        AuthError::AuthorizationServerMissingIssuer { expected_issuer } => format!(
            "the authorization server {expected_issuer} says it names itself in its answers (iss), but this answer does not; refusing it (RFC 9207)"
        ),
        AuthError::InternalError(message) if message == "Authorization state not found" => {
            "the sign-in's answer does not belong to a sign-in this client started (unknown state)"
                .to_owned()
        }
        AuthError::PkceUnsupported => {
            "the authorization server does not offer PKCE with S256, which MCP requires".to_owned()
        }
        AuthError::AuthorizationRequired => "the server requires signing in".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redirect_is_read_with_its_error_first() {
        let ok =
            Callback::read("http://127.0.0.1:5/callback?code=c1&state=s1&iss=https%3A%2F%2Fas")
                .unwrap();
        assert_eq!((ok.code.as_str(), ok.state.as_str()), ("c1", "s1"));
        assert_eq!(ok.issuer.as_deref(), Some("https://as"));
        let refused = Callback::read(
            "http://127.0.0.1:5/callback?error=access_denied&error_description=User+said+no&state=s1",
        )
        .err()
        .unwrap();
        assert_eq!(
            refused,
            "the authorization server refused: access_denied (User said no)"
        );
        assert!(Callback::read("http://127.0.0.1:5/callback?state=s").is_err());
        assert!(Callback::read("not a url").is_err());
    }

    #[test]
    fn the_challenges_scope_is_read() {
        let server = Url::parse("http://127.0.0.1:1/mcp").unwrap();
        assert_eq!(
            challenge_scope(
                r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp""#,
                &server
            )
            .as_deref(),
            Some("mcp:basic mcp:write")
        );
        assert_eq!(challenge_scope("Bearer", &server), None);
    }

    /// A PKCS#8 PEM of a fresh P-256 key.
    #[cfg(feature = "jwt")]
    fn fresh_key_pem() -> String {
        use base64::Engine as _;
        use p256::pkcs8::EncodePrivateKey as _;
        let mut bytes = [7u8; 32];
        getrandom::fill(&mut bytes).unwrap();
        let der = p256::SecretKey::from_slice(&bytes)
            .unwrap()
            .to_pkcs8_der()
            .unwrap();
        let text = base64::engine::general_purpose::STANDARD.encode(der.as_bytes());
        let lines: Vec<&str> = text
            .as_bytes()
            .chunks(64)
            .map(|line| std::str::from_utf8(line).unwrap())
            .collect();
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        )
    }

    /// rmcp's private_key_jwt exchange runs on a blocking thread with the runtime's handle:
    /// it must work on a current-thread runtime too (this test's), where only the thread in
    /// `block_on` drives the I/O.
    #[cfg(feature = "jwt")]
    #[tokio::test]
    async fn a_private_key_jwt_token_request_works_on_a_current_thread_runtime() {
        use axum::http::StatusCode;
        let app = axum::Router::new().route(
            "/token",
            axum::routing::post(|body: String| async move {
                let form: std::collections::HashMap<String, String> =
                    url::form_urlencoded::parse(body.as_bytes())
                        .into_owned()
                        .collect();
                let signed = form.get("client_assertion_type").map(String::as_str)
                    == Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
                    && form
                        .get("client_assertion")
                        .is_some_and(|jwt| jwt.split('.').count() == 3)
                    && form.get("grant_type").map(String::as_str) == Some("client_credentials");
                if signed {
                    (
                        StatusCode::OK,
                        r#"{"access_token":"at-1","token_type":"Bearer","expires_in":3600}"#,
                    )
                } else {
                    (StatusCode::UNAUTHORIZED, r#"{"error":"invalid_client"}"#)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });

        let server = Url::parse(&format!("{base}/mcp")).unwrap();
        let config = OAuthConfig::client_credentials_private_key(
            "svc",
            fresh_key_pem(),
            SigningAlgorithm::Es256,
        );
        let fetcher = Arc::new(OAuthFetcher::new(&server, false).unwrap());
        let mut manager = new_manager(&config, &server, &fetcher).await.unwrap();
        let mut metadata = AuthorizationMetadata::default();
        metadata.issuer = Some(base.clone());
        metadata.authorization_endpoint = format!("{base}/authorize");
        metadata.token_endpoint = format!("{base}/token");
        manager.set_metadata(metadata);
        let Grant::ClientCredentials {
            authentication: ClientAuthentication::PrivateKey { pem, algorithm },
            ..
        } = &config.grant
        else {
            unreachable!()
        };
        let credentials = ClientCredentialsConfig::PrivateKeyJwt {
            client_id: "svc".to_owned(),
            signing_key: pem.clone().into_bytes(),
            signing_algorithm: rmcp_algorithm(*algorithm),
            token_endpoint_audience: None,
            scopes: Vec::new(),
            resource: Some(server.to_string()),
        };
        manager.configure_client_credentials(&credentials).unwrap();
        let manager = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            exchange_client_credentials(manager, credentials),
        )
        .await
        .expect("the exchange does not hang")
        .unwrap();
        assert_eq!(manager.get_access_token().await.unwrap(), "at-1");
    }
}
