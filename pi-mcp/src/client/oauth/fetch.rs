//! The HTTP requests of signing in (metadata discovery, registration, token requests), on our
//! TLS setup, refusing addresses the MCP server's own address does not justify: a server's
//! metadata must not be able to point the client at the local network (SSRF).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Url, redirect};
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

/// A metadata document, registration or token response larger than this is refused.
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_REDIRECTS: usize = 10;

/// What an address is, for deciding whether a server's metadata may send us there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AddressClass {
    /// The internet.
    Public,
    /// This machine.
    Loopback,
    /// A private network (RFC 1918, unique-local IPv6, carrier-grade NAT).
    Private,
    /// Link-local (cloud metadata services live there), unspecified, broadcast, multicast and
    /// other reserved ranges: never.
    Reserved,
}

fn classify(address: IpAddr) -> AddressClass {
    match address {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            if v4.is_loopback() {
                AddressClass::Loopback
            } else if v4.is_private() || (a == 100 && (64..=127).contains(&b)) {
                AddressClass::Private
            } else if v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || a == 0
                || a >= 240
                || (a == 198 && (b == 18 || b == 19))
            {
                AddressClass::Reserved
            } else {
                AddressClass::Public
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return classify(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            if v6.is_loopback() {
                AddressClass::Loopback
            } else if first & 0xfe00 == 0xfc00 {
                AddressClass::Private
            } else if v6.is_unspecified() || v6.is_multicast() || first & 0xffc0 == 0xfe80 {
                AddressClass::Reserved
            } else {
                AddressClass::Public
            }
        }
    }
}

/// Which addresses signing in may reach: public ones always; this machine only for a server on
/// this machine; a private network only for a server on one (or when the application says so).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AddressPolicy {
    loopback: bool,
    private: bool,
}

impl AddressPolicy {
    /// The policy for an MCP server at `server`.
    pub(crate) fn for_server(server: &Url, allow_private: bool) -> Self {
        let class = match server.host() {
            Some(url::Host::Ipv4(v4)) => classify(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => classify(IpAddr::V6(v6)),
            Some(url::Host::Domain(domain)) if is_localhost(domain) => AddressClass::Loopback,
            _ => AddressClass::Public,
        };
        AddressPolicy {
            loopback: class == AddressClass::Loopback,
            private: allow_private
                || matches!(class, AddressClass::Private | AddressClass::Loopback),
        }
    }

    fn allows(self, address: IpAddr) -> bool {
        match classify(address) {
            AddressClass::Public => true,
            AddressClass::Loopback => self.loopback,
            AddressClass::Private => self.private,
            AddressClass::Reserved => false,
        }
    }

    /// A URL whose host is an address literal (names go through the resolver).
    fn allows_url(self, url: &Url) -> bool {
        match url.host() {
            Some(url::Host::Ipv4(v4)) => self.allows(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => self.allows(IpAddr::V6(v6)),
            Some(url::Host::Domain(domain)) => !is_localhost(domain) || self.loopback,
            None => false,
        }
    }
}

fn is_localhost(domain: &str) -> bool {
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    domain == "localhost" || domain.ends_with(".localhost")
}

/// Resolves names with the system resolver and keeps only the addresses the policy allows.
struct PolicyResolver(AddressPolicy);

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|address| policy.allows(address.ip()))
                .collect();
            if allowed.is_empty() && !found.is_empty() {
                return Err(format!(
                    "{host} resolves only to addresses that signing in to this MCP server may not reach (this machine, a private network or a reserved range)"
                )
                .into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// rmcp's OAuth requests, sent by two reqwest clients on our TLS setup: one that follows
/// redirects (checking each target against the policy), one that does not.
pub(crate) struct OAuthFetcher {
    follow: reqwest::Client,
    stop: reqwest::Client,
    policy: AddressPolicy,
    /// With DPoP: token requests carry a proof (and the nonce the server demands).
    #[cfg(feature = "jwt")]
    dpop: Option<Arc<super::dpop::DpopKey>>,
}

impl OAuthFetcher {
    pub(crate) fn new(server: &Url, allow_private: bool) -> Result<Self, String> {
        let policy = AddressPolicy::for_server(server, allow_private);
        let resolver = Arc::new(PolicyResolver(policy));
        let build = |redirects: redirect::Policy| {
            super::super::transport::tls_client_builder()?
                .timeout(REQUEST_TIMEOUT)
                .dns_resolver(resolver.clone())
                .redirect(redirects)
                .build()
                .map_err(|err| format!("could not build the HTTP client: {err}"))
        };
        let follow = redirect::Policy::custom(move |attempt| {
            if !policy.allows_url(attempt.url()) {
                let refused = format!("a redirect to {} was refused", attempt.url());
                attempt.error(refused)
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else {
                attempt.follow()
            }
        });
        Ok(OAuthFetcher {
            follow: build(follow)?,
            stop: build(redirect::Policy::none())?,
            policy,
            #[cfg(feature = "jwt")]
            dpop: None,
        })
    }

    /// Token requests get DPoP proofs made with `key`.
    #[cfg(feature = "jwt")]
    pub(crate) fn with_dpop(mut self, key: Arc<super::dpop::DpopKey>) -> Self {
        self.dpop = Some(key);
        self
    }

    /// Sends one request; with DPoP, a token request carries a proof, and is sent once more
    /// with the nonce when the authorization server demands one (RFC 9449 section 8).
    pub(crate) async fn send(
        &self,
        request: http::Request<Vec<u8>>,
        follow: bool,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        #[cfg(feature = "jwt")]
        if let Some(key) = self.dpop.as_ref().filter(|_| is_token_request(&request)) {
            return self.send_with_proof(key, request, follow).await;
        }
        self.send_once(request, follow).await
    }

    #[cfg(feature = "jwt")]
    async fn send_with_proof(
        &self,
        key: &super::dpop::DpopKey,
        request: http::Request<Vec<u8>>,
        follow: bool,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        use super::dpop::{DPOP_HEADER, DPOP_NONCE_HEADER, asks_for_nonce};
        let url = request.uri().to_string();
        let with_proof = |request: &http::Request<Vec<u8>>| -> Result<_, OAuthHttpClientError> {
            let mut copy = http::Request::builder()
                .method(request.method().clone())
                .uri(request.uri().clone())
                .body(request.body().clone())?;
            *copy.headers_mut() = request.headers().clone();
            let proof = key.proof(request.method().as_str(), &url, None)?;
            copy.headers_mut()
                .insert(DPOP_HEADER, http::HeaderValue::from_str(&proof)?);
            Ok(copy)
        };
        let mut answer = self.send_once(with_proof(&request)?, follow).await?;
        let nonce = answer
            .headers()
            .get(DPOP_NONCE_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        if let Some(nonce) = nonce {
            let is_new = key.remember_nonce(&url, &nonce);
            if is_new
                && answer.status() == http::StatusCode::BAD_REQUEST
                && asks_for_nonce(&String::from_utf8_lossy(answer.body()))
            {
                answer = self.send_once(with_proof(&request)?, follow).await?;
            }
        }
        if answer.status().is_success() {
            #[derive(serde::Deserialize)]
            struct TokenType {
                token_type: String,
            }
            if let Ok(tokens) = serde_json::from_slice::<TokenType>(answer.body()) {
                key.set_bound(tokens.token_type.eq_ignore_ascii_case("dpop"));
            }
        }
        Ok(answer)
    }
}

/// A POST of a form with a `grant_type`: a token request (registration posts JSON).
#[cfg(feature = "jwt")]
fn is_token_request(request: &http::Request<Vec<u8>>) -> bool {
    request.method() == http::Method::POST
        && request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"))
        && url::form_urlencoded::parse(request.body()).any(|(key, _)| key == "grant_type")
}

impl OAuthFetcher {
    /// Sends one request (following redirects the policy allows when `follow`) and reads the
    /// whole answer, up to [`MAX_RESPONSE_BYTES`].
    async fn send_once(
        &self,
        request: http::Request<Vec<u8>>,
        follow: bool,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        let client = if follow { &self.follow } else { &self.stop };
        let request = reqwest::Request::try_from(request)?;
        if !self.policy.allows_url(request.url()) {
            return Err(format!(
                "{} is an address that signing in to this MCP server may not reach",
                request.url()
            )
            .into());
        }
        let response = client.execute(request).await?;
        let mut answer = http::Response::builder()
            .status(response.status())
            .version(response.version());
        for (name, value) in response.headers() {
            answer = answer.header(name, value);
        }
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk?;
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(format!(
                    "the response is larger than {} KiB",
                    MAX_RESPONSE_BYTES / 1024
                )
                .into());
            }
            body.extend_from_slice(&chunk);
        }
        answer
            .body(body)
            .map_err(|err| Box::new(err) as OAuthHttpClientError)
    }
}

impl OAuthHttpClient for OAuthFetcher {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        let follow = !matches!(request.redirect_policy, OAuthHttpRedirectPolicy::Stop);
        Box::pin(self.send(request.request, follow))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(server: &str) -> AddressPolicy {
        AddressPolicy::for_server(&Url::parse(server).unwrap(), false)
    }

    #[test]
    fn a_public_server_cannot_send_us_to_this_machine_or_the_local_network() {
        let public = policy("https://mcp.example.com/mcp");
        for (address, allowed) in [
            ("93.184.215.14", true),
            ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", true),
            ("127.0.0.1", false),
            ("::1", false),
            ("10.1.2.3", false),
            ("192.168.0.10", false),
            ("172.20.0.1", false),
            ("100.100.1.1", false),
            ("fd00::1", false),
            ("169.254.169.254", false),
            ("fe80::1", false),
            ("0.0.0.0", false),
            ("::ffff:127.0.0.1", false),
            ("::ffff:8.8.8.8", true),
        ] {
            assert_eq!(
                public.allows(address.parse().unwrap()),
                allowed,
                "{address}"
            );
        }
        assert!(!public.allows_url(&Url::parse("http://localhost:8080/token").unwrap()));
        assert!(!public.allows_url(&Url::parse("http://[::1]/token").unwrap()));
        assert!(public.allows_url(&Url::parse("https://auth.example.com/token").unwrap()));
    }

    #[test]
    fn a_server_on_this_machine_may_use_an_authorization_server_here_too() {
        for server in ["http://127.0.0.1:8000/mcp", "http://localhost:3000/mcp"] {
            let local = policy(server);
            assert!(local.allows("127.0.0.1".parse().unwrap()), "{server}");
            assert!(local.allows("192.168.1.5".parse().unwrap()), "{server}");
            assert!(
                !local.allows("169.254.169.254".parse().unwrap()),
                "{server}"
            );
            assert!(local.allows_url(&Url::parse("http://localhost:9/token").unwrap()));
        }
        let private = policy("http://10.0.0.5/mcp");
        assert!(private.allows("10.0.0.9".parse().unwrap()));
        assert!(!private.allows("127.0.0.1".parse().unwrap()));
        let allowed = AddressPolicy::for_server(&Url::parse("https://mcp.corp/mcp").unwrap(), true);
        assert!(allowed.allows("10.0.0.9".parse().unwrap()));
        assert!(!allowed.allows("127.0.0.1".parse().unwrap()));
    }

    /// A token endpoint on 127.0.0.1 that demands the nonce `n-1` (RFC 9449 section 8) and
    /// answers a proof carrying it with `token_type`; every proof it got, decoded.
    #[cfg(feature = "jwt")]
    async fn nonce_demanding_token_endpoint(
        token_type: Option<&'static str>,
    ) -> (String, Arc<std::sync::Mutex<Vec<serde_json::Value>>>) {
        use axum::http::{HeaderMap, StatusCode};
        let proofs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&proofs);
        let app = axum::Router::new().route(
            "/token",
            axum::routing::post(move |headers: HeaderMap| {
                let seen = Arc::clone(&seen);
                async move {
                    let proof = headers["dpop"].to_str().unwrap().to_owned();
                    let payload = proof.split('.').nth(1).unwrap().to_owned();
                    use base64::Engine as _;
                    let claims: serde_json::Value = serde_json::from_slice(
                        &base64::engine::general_purpose::URL_SAFE_NO_PAD
                            .decode(payload)
                            .unwrap(),
                    )
                    .unwrap();
                    let has_nonce = claims["nonce"] == "n-1";
                    seen.lock().unwrap().push(claims);
                    match token_type.filter(|_| has_nonce) {
                        Some(token_type) => (
                            StatusCode::OK,
                            [("DPoP-Nonce", "n-1")],
                            format!(r#"{{"access_token":"at","token_type":"{token_type}"}}"#),
                        ),
                        None => (
                            StatusCode::BAD_REQUEST,
                            [("DPoP-Nonce", "n-1")],
                            r#"{"error":"use_dpop_nonce"}"#.to_owned(),
                        ),
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, proofs)
    }

    #[cfg(feature = "jwt")]
    fn token_request(url: &str) -> http::Request<Vec<u8>> {
        http::Request::builder()
            .method("POST")
            .uri(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(b"grant_type=client_credentials&scope=a".to_vec())
            .unwrap()
    }

    #[cfg(feature = "jwt")]
    #[tokio::test]
    async fn a_token_request_is_sent_again_with_the_nonce_the_server_demands() {
        let (url, proofs) = nonce_demanding_token_endpoint(Some("DPoP")).await;
        let key = Arc::new(super::super::dpop::DpopKey::generate().unwrap());
        let fetcher = OAuthFetcher::new(&Url::parse(&url).unwrap(), false)
            .unwrap()
            .with_dpop(Arc::clone(&key));
        let answer = fetcher.send(token_request(&url), false).await.unwrap();
        assert_eq!(answer.status(), 200);
        let proofs = proofs.lock().unwrap().clone();
        assert_eq!(proofs.len(), 2, "{proofs:?}");
        assert!(proofs[0].get("nonce").is_none());
        assert_eq!(proofs[1]["nonce"], "n-1");
        assert_eq!(proofs[1]["htm"], "POST");
        assert_eq!(proofs[1]["htu"], url.as_str());
        assert_ne!(proofs[0]["jti"], proofs[1]["jti"]);
        assert!(key.is_bound(), "a DPoP token is bound to the key");
    }

    #[cfg(feature = "jwt")]
    #[tokio::test]
    async fn a_nonce_the_server_refuses_again_is_not_tried_twice() {
        // The server keeps demanding the nonce it already got: one retry, then its answer.
        let (url, proofs) = nonce_demanding_token_endpoint(None).await;
        let key = Arc::new(super::super::dpop::DpopKey::generate().unwrap());
        let fetcher = OAuthFetcher::new(&Url::parse(&url).unwrap(), false)
            .unwrap()
            .with_dpop(Arc::clone(&key));
        let answer = fetcher.send(token_request(&url), false).await.unwrap();
        assert_eq!(answer.status(), 400);
        assert_eq!(proofs.lock().unwrap().len(), 2);
        let again = fetcher.send(token_request(&url), false).await.unwrap();
        assert_eq!(again.status(), 400);
        assert_eq!(
            proofs.lock().unwrap().len(),
            3,
            "the known nonce is not retried"
        );
        assert!(!key.is_bound());
    }

    #[cfg(feature = "jwt")]
    #[tokio::test]
    async fn a_bearer_token_is_not_bound_and_other_requests_carry_no_proof() {
        let (url, proofs) = nonce_demanding_token_endpoint(Some("Bearer")).await;
        let key = Arc::new(super::super::dpop::DpopKey::generate().unwrap());
        let fetcher = OAuthFetcher::new(&Url::parse(&url).unwrap(), false)
            .unwrap()
            .with_dpop(Arc::clone(&key));
        fetcher.send(token_request(&url), false).await.unwrap();
        assert!(!key.is_bound(), "the server issued a bearer token");
        let registration = http::Request::builder()
            .method("POST")
            .uri(&url)
            .header("content-type", "application/json")
            .body(b"{}".to_vec())
            .unwrap();
        assert!(!is_token_request(&registration));
        assert!(is_token_request(&token_request(&url)));
        assert_eq!(proofs.lock().unwrap().len(), 2);
    }
}
