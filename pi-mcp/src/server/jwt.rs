//! The built-in [`TokenVerifier`] for OAuth 2.1 access tokens that are JWTs (RFC 9068), checked
//! against the authorization server's published keys (JWKS) with `jsonwebtoken`: signature,
//! issuer, audience (this resource), expiry and not-before (with a small leeway); scopes are
//! read for the server to check.
//!
//! Keys are fetched over HTTPS when first needed, kept, fetched again when they are older than
//! the maximum age, and when a token names a key id the set lacks (the issuer rotated its
//! keys), at most once per refresh interval so that made-up key ids cannot make the server
//! hammer the issuer. Only asymmetric algorithms are accepted (RSA, RSA-PSS, ECDSA P-256/P-384,
//! Ed25519): a published key set holds public keys, and an `HS256` token "signed" with one
//! would be a forgery.

use std::str::FromStr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::Url;
use serde_json::{Map, Value};

use super::auth::{TokenError, TokenVerifier, VerifiedToken};
use super::resource::{AuthConfigError, secure_url};

/// How far `exp` and `nbf` may be off, for clocks that disagree a little.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// The least time between two fetches caused by unknown key ids.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(30);
/// How long fetched keys are used before they are fetched again (a removed key stops working).
pub const DEFAULT_MAX_KEY_AGE: Duration = Duration::from_secs(3600);

/// The largest key set or metadata document read; a real one is a few kilobytes.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;
/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Verifies JWT access tokens from one authorization server, for
/// [`McpServer::with_oauth`](crate::McpServer::with_oauth) (cargo feature `jwt`, on by default).
///
/// ```no_run
/// use pi_mcp::{JwtVerifier, McpServer, ProtectedResource};
/// # async fn demo(registry: pi_tool::ToolRegistry) -> Result<(), Box<dyn std::error::Error>> {
/// let resource = ProtectedResource::new("https://mcp.example.com/mcp", ["https://auth.example.com"])?
///     .require_scopes(["mcp:tools"]);
/// // The keys' URL is read from the issuer's metadata, or given with `.jwks_url(..)`.
/// let verifier = JwtVerifier::builder("https://auth.example.com", "https://mcp.example.com/mcp")
///     .build()?;
/// McpServer::new(registry)
///     .with_oauth(resource, verifier)
///     .with_allowed_hosts(["mcp.example.com"])
///     .serve_http("127.0.0.1:8080") // behind a TLS reverse proxy
///     .await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct JwtVerifier {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.inner.issuer)
            .field("audiences", &self.inner.audiences)
            .field("jwks_url", &self.inner.jwks_url.as_ref().map(Url::as_str))
            .finish_non_exhaustive()
    }
}

/// Settings for a [`JwtVerifier`], from [`JwtVerifier::builder`].
#[derive(Debug)]
#[must_use]
pub struct JwtVerifierBuilder {
    issuer: String,
    audiences: Vec<String>,
    jwks_url: Option<String>,
    leeway: Duration,
    refresh_interval: Duration,
    max_key_age: Duration,
    http: Option<reqwest::Client>,
}

struct Inner {
    issuer: String,
    audiences: Vec<String>,
    /// Given, or `None` to read `jwks_uri` from the issuer's metadata.
    jwks_url: Option<Url>,
    leeway: Duration,
    refresh_interval: Duration,
    max_key_age: Duration,
    http: reqwest::Client,
    keys: RwLock<KeySet>,
    /// One fetch at a time; the others wait for its result.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct KeySet {
    keys: Arc<[Key]>,
    /// When the set was last fetched (successfully or not).
    fetched: Option<Instant>,
    /// Whether the last fetch worked.
    ok: bool,
    /// `jwks_uri` from the issuer's metadata, once read.
    discovered: Option<Url>,
}

struct Key {
    kid: Option<String>,
    algorithms: Vec<Algorithm>,
    key: DecodingKey,
}

impl JwtVerifier {
    /// Tokens from `issuer` (exactly the `iss` it puts in them, and the issuer URL whose
    /// metadata names the key set) for `audience` (this server's resource URL).
    pub fn builder(issuer: impl Into<String>, audience: impl Into<String>) -> JwtVerifierBuilder {
        JwtVerifierBuilder {
            issuer: issuer.into(),
            audiences: vec![audience.into()],
            jwks_url: None,
            leeway: DEFAULT_LEEWAY,
            refresh_interval: DEFAULT_REFRESH_INTERVAL,
            max_key_age: DEFAULT_MAX_KEY_AGE,
            http: None,
        }
    }
}

impl JwtVerifierBuilder {
    /// Another audience to accept (the resource URL with and without a trailing slash, say).
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// The key set's URL; without it, `jwks_uri` of the issuer's metadata (RFC 8414
    /// `/.well-known/oauth-authorization-server`, else OpenID Connect discovery).
    pub fn jwks_url(mut self, url: impl Into<String>) -> Self {
        self.jwks_url = Some(url.into());
        self
    }

    /// How far `exp` and `nbf` may be off (default [`DEFAULT_LEEWAY`]).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The least time between two fetches of the key set caused by unknown key ids (default
    /// [`DEFAULT_REFRESH_INTERVAL`]).
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// How long fetched keys are used before being fetched again (default
    /// [`DEFAULT_MAX_KEY_AGE`]).
    pub fn max_key_age(mut self, age: Duration) -> Self {
        self.max_key_age = age;
        self
    }

    /// The HTTP client for the key set and metadata (a proxy, custom roots); by default one
    /// that follows no redirects and gives up after 10 s.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// The verifier; an error when a URL is not an `https` one (`http` only on a loopback
    /// host), or the HTTP client cannot be built.
    pub fn build(self) -> Result<JwtVerifier, AuthConfigError> {
        secure_url("the issuer", &self.issuer)?;
        let jwks_url = self
            .jwks_url
            .as_deref()
            .map(|url| secure_url("the key set URL", url))
            .transpose()?;
        let http = match self.http {
            Some(client) => client,
            None => reqwest::Client::builder()
                .timeout(FETCH_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|err| {
                    AuthConfigError::new(format!("cannot build the HTTP client: {err}"))
                })?,
        };
        // jsonwebtoken picks its crypto from its features, and panics when Cargo's feature
        // unification turned on both: name ours (an error means one is installed already).
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
        Ok(JwtVerifier {
            inner: Arc::new(Inner {
                issuer: self.issuer,
                audiences: self.audiences,
                jwks_url,
                leeway: self.leeway,
                refresh_interval: self.refresh_interval,
                max_key_age: self.max_key_age,
                http,
                keys: RwLock::new(KeySet::default()),
                fetching: tokio::sync::Mutex::new(()),
            }),
        })
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, TokenError>> {
        Box::pin(self.inner.verify(token))
    }
}

/// The algorithms a published key may verify: asymmetric only.
const ACCEPTED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

impl Inner {
    async fn verify(&self, token: &str) -> Result<VerifiedToken, TokenError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| TokenError::invalid("the token is not a JWT"))?;
        if !ACCEPTED.contains(&header.alg) {
            return Err(TokenError::invalid(format!(
                "the algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let keys = self.keys_for(header.kid.as_deref(), header.alg).await?;
        let key = choose(&keys, header.kid.as_deref(), header.alg)?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&self.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = self.leeway.as_secs();
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|err| TokenError::invalid(describe(err.kind())))?;
        Ok(verified(data.claims))
    }

    /// The current keys, fetched first when there are none yet, when they are too old, or
    /// when none fits the token (at most once per refresh interval).
    async fn keys_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<Arc<[Key]>, TokenError> {
        let (keys, fetched, ok) = self.snapshot();
        let fresh = ok && fetched.is_some_and(|at| at.elapsed() < self.max_key_age);
        if fresh && choose(&keys, kid, alg).is_ok() {
            return Ok(keys);
        }
        let may_refetch = fetched.is_none_or(|at| at.elapsed() >= self.refresh_interval);
        if !may_refetch {
            if keys.is_empty() {
                // The last fetch failed a moment ago.
                return Err(TokenError::unavailable(
                    "the issuer's key set could not be fetched (the next try is due soon)",
                ));
            }
            return Ok(keys);
        }
        let _one_at_a_time = self.fetching.lock().await;
        // Someone else may have fetched while this one waited.
        let (keys, again, _) = self.snapshot();
        if again != fetched {
            return Ok(keys);
        }
        match self.fetch().await {
            Ok((fetched_keys, discovered)) => {
                let fetched_keys: Arc<[Key]> = fetched_keys.into();
                let mut set = self.keys.write().unwrap_or_else(|p| p.into_inner());
                set.keys = fetched_keys.clone();
                set.fetched = Some(Instant::now());
                set.ok = true;
                if discovered.is_some() {
                    set.discovered = discovered;
                }
                Ok(fetched_keys)
            }
            Err(reason) => {
                let mut set = self.keys.write().unwrap_or_else(|p| p.into_inner());
                set.fetched = Some(Instant::now());
                set.ok = false;
                tracing::warn!(%reason, issuer = %self.issuer, "the issuer's key set could not be fetched");
                // While the issuer is unreachable, the keys it had still verify its tokens.
                match choose(&set.keys, kid, alg) {
                    Ok(_) => Ok(set.keys.clone()),
                    Err(_) => Err(TokenError::unavailable(reason)),
                }
            }
        }
    }

    fn snapshot(&self) -> (Arc<[Key]>, Option<Instant>, bool) {
        let set = self.keys.read().unwrap_or_else(|p| p.into_inner());
        (set.keys.clone(), set.fetched, set.ok)
    }

    /// The key set, and the `jwks_uri` discovered on the way (if it was).
    async fn fetch(&self) -> Result<(Vec<Key>, Option<Url>), String> {
        let known = self
            .keys
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .discovered
            .clone();
        let (url, discovered) = match self.jwks_url.clone().or(known) {
            Some(url) => (url, None),
            None => {
                let url = self.discover().await?;
                (url.clone(), Some(url))
            }
        };
        let document = self.get_json(&url).await?;
        let Some(entries) = document.get("keys").and_then(Value::as_array) else {
            return Err(format!("{url} has no \"keys\" list"));
        };
        let keys: Vec<Key> = entries.iter().filter_map(usable_key).collect();
        if keys.is_empty() {
            return Err(format!("{url} has no key this server can use"));
        }
        Ok((keys, discovered))
    }

    /// `jwks_uri` from the issuer's metadata: RFC 8414's well-known URL (the well-known
    /// segment before the issuer's path), else OpenID Connect's (after it).
    async fn discover(&self) -> Result<Url, String> {
        let issuer = Url::parse(&self.issuer).map_err(|err| err.to_string())?;
        let path = issuer.path().trim_end_matches('/');
        let origin = issuer.origin().ascii_serialization();
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ];
        let mut problems = Vec::new();
        for candidate in candidates {
            let Ok(url) = Url::parse(&candidate) else {
                continue;
            };
            match self.get_json(&url).await {
                Ok(metadata) => {
                    // RFC 8414 §3.3: the metadata must name the issuer it was fetched for.
                    if metadata.get("issuer").and_then(Value::as_str) != Some(self.issuer.as_str())
                    {
                        return Err(format!("{url} is the metadata of another issuer"));
                    }
                    let jwks = metadata
                        .get("jwks_uri")
                        .and_then(Value::as_str)
                        .ok_or_else(|| format!("{url} names no jwks_uri"))?;
                    return secure_url("the jwks_uri", jwks).map_err(|err| err.to_string());
                }
                Err(problem) => problems.push(problem),
            }
        }
        Err(format!(
            "the issuer's metadata could not be read: {}",
            problems.join("; ")
        ))
    }

    async fn get_json(&self, url: &Url) -> Result<Value, String> {
        let mut response = self
            .http
            .get(url.clone())
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|err| format!("{url}: {err}"))?;
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|err| format!("{url}: {err}"))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(format!("{url} sent more than {MAX_DOCUMENT_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|err| format!("{url} is not JSON: {err}"))
    }
}

/// The key for a token: the one with its `kid`; without one, the only key for its algorithm.
fn choose<'k>(keys: &'k [Key], kid: Option<&str>, alg: Algorithm) -> Result<&'k Key, TokenError> {
    let mut fitting = keys.iter().filter(|key| key.algorithms.contains(&alg));
    match kid {
        Some(kid) => fitting
            .find(|key| key.kid.as_deref() == Some(kid))
            .ok_or_else(|| {
                TokenError::invalid(format!("the issuer's key set has no key {kid} for {alg:?}"))
            }),
        None => match (fitting.next(), fitting.next()) {
            (Some(key), None) => Ok(key),
            (None, _) => Err(TokenError::invalid(format!(
                "the issuer's key set has no key for {alg:?}"
            ))),
            (Some(_), Some(_)) => Err(TokenError::invalid(
                "the token names no key id (kid) and the issuer has several keys",
            )),
        },
    }
}

/// A signing key of the set, or `None` for what cannot verify a token here (encryption keys,
/// symmetric keys, unknown curves).
fn usable_key(entry: &Value) -> Option<Key> {
    let jwk: Jwk = serde_json::from_value(entry.clone()).ok()?;
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    let family: &[Algorithm] = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => &ACCEPTED[..6],
        AlgorithmParameters::EllipticCurve(params) => match params.curve {
            EllipticCurve::P256 => &[Algorithm::ES256],
            EllipticCurve::P384 => &[Algorithm::ES384],
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(params) if params.curve == EllipticCurve::Ed25519 => {
            &[Algorithm::EdDSA]
        }
        // Symmetric (`oct`) keys are secrets: a published one verifies nothing.
        _ => return None,
    };
    let algorithms = match jwk.common.key_algorithm {
        Some(declared) => {
            let declared = Algorithm::from_str(&declared.to_string()).ok()?;
            if !family.contains(&declared) {
                return None;
            }
            vec![declared]
        }
        None => family.to_vec(),
    };
    Some(Key {
        kid: jwk.common.key_id.clone(),
        algorithms,
        key: DecodingKey::from_jwk(&jwk).ok()?,
    })
}

/// What was wrong with a token, in words a client (and its user) can act on.
fn describe(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        ErrorKind::InvalidIssuer => "the token is from another issuer".to_owned(),
        ErrorKind::InvalidAudience => "the token is for another resource (aud)".to_owned(),
        ErrorKind::InvalidSignature => "the token's signature is not valid".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key".to_owned(),
        _ => "the token is malformed".to_owned(),
    }
}

/// Subject, client, scopes (`scope`, space-separated, RFC 9068; or `scp`, a list or string,
/// as Azure AD and Okta write it) and expiry of valid claims.
fn verified(claims: Map<String, Value>) -> VerifiedToken {
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
    let scopes: Vec<String> = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) | (None, Some(Value::String(scope))) => {
            scope.split_whitespace().map(str::to_owned).collect()
        }
        (None, Some(Value::Array(list))) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let mut token = VerifiedToken::new().with_scopes(scopes);
    token.subject = text("sub");
    token.client_id = text("client_id").or_else(|| text("azp"));
    token.expires_at = claims
        .get("exp")
        .and_then(Value::as_u64)
        .map(|exp| UNIX_EPOCH + Duration::from_secs(exp));
    token.claims = claims;
    token
}
