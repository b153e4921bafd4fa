//! `McpServer::with_oauth` and `JwtVerifier`: ES256 access tokens signed in the test with keys
//! made fresh for each run, whose key set (JWKS) and issuer metadata a local authorization
//! server on 127.0.0.1 publishes. Requests go to a real server in raw HTTP; a `touch` tool's
//! marker file proves a call ran only when the token was good.

#![cfg(feature = "jwt")]

mod server_support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use pi_mcp::{JwtVerifier, McpServer, ProtectedResource, TokenError, TokenVerifier};
use pi_tool::{State, ToolRegistry, tool};
use serde_json::{Value, json};
use server_support::{Answer, call_headers, request, tools_call};
use tokio::net::{TcpListener, TcpStream};

/// Where `touch` leaves its markers.
struct Markers(PathBuf);

/// Create the file `name` in the markers folder.
#[tool]
async fn touch(name: String, markers: State<Markers>) -> Result<String, std::io::Error> {
    std::fs::write(markers.0.join(&name), "ran")?;
    Ok(format!("touched {name}"))
}

/// A P-256 signing key and its public JWK.
struct SigningKey {
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
}

impl SigningKey {
    fn new(kid: &str) -> SigningKey {
        use p256::pkcs8::EncodePrivateKey;
        let secret = loop {
            let mut seed = [0u8; 32];
            getrandom::fill(&mut seed).unwrap();
            if let Ok(secret) = p256::SecretKey::from_slice(&seed) {
                break secret;
            }
        };
        let der = secret.to_pkcs8_der().unwrap();
        let encoding = EncodingKey::from_ec_der(der.as_bytes());
        let mut jwk =
            serde_json::to_value(Jwk::from_encoding_key(&encoding, Algorithm::ES256).unwrap())
                .unwrap();
        jwk["kid"] = json!(kid);
        jwk["use"] = json!("sig");
        SigningKey {
            kid: kid.to_owned(),
            encoding,
            jwk,
        }
    }

    /// A token with these claims, signed by this key, naming `kid` (or none).
    fn sign_as(&self, kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = kid.map(str::to_owned);
        header.typ = Some("at+jwt".to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_as(Some(&self.kid), claims)
    }
}

/// The authorization server's published side: its key set and metadata, counted.
struct Issuer {
    url: String,
    jwks: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
}

impl Issuer {
    async fn start(keys: &[&SigningKey]) -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let jwks = Arc::new(Mutex::new(json!({
            "keys": keys.iter().map(|key| key.jwk.clone()).collect::<Vec<_>>()
        })));
        let fetches = Arc::new(AtomicUsize::new(0));
        let down = Arc::new(AtomicBool::new(false));
        let metadata = json!({
            "issuer": url,
            "authorization_endpoint": format!("{url}/authorize"),
            "token_endpoint": format!("{url}/token"),
            "jwks_uri": format!("{url}/jwks"),
            "code_challenge_methods_supported": ["S256"],
        })
        .to_string();
        let (served, counted, failing) = (jwks.clone(), fetches.clone(), down.clone());
        let app = axum::Router::new()
            .route(
                "/jwks",
                axum::routing::get(move || {
                    let (served, counted, failing) =
                        (served.clone(), counted.clone(), failing.clone());
                    async move {
                        counted.fetch_add(1, Ordering::SeqCst);
                        if failing.load(Ordering::SeqCst) {
                            return Err(http::StatusCode::SERVICE_UNAVAILABLE);
                        }
                        Ok(served.lock().unwrap().to_string())
                    }
                }),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(move || std::future::ready(metadata.clone())),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        Issuer {
            url,
            jwks,
            fetches,
            down,
        }
    }

    fn publish(&self, key: &SigningKey) {
        let mut jwks = self.jwks.lock().unwrap();
        jwks["keys"].as_array_mut().unwrap().push(key.jwk.clone());
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Claims of a good token for `audience` from `issuer`, with `overrides` on top.
fn claims(issuer: &str, audience: &str, overrides: Value) -> Value {
    let mut claims = json!({
        "iss": issuer,
        "aud": audience,
        "sub": "alice",
        "client_id": "pi-test-client",
        "scope": "mcp:tools files:read",
        "iat": now(),
        "exp": now() + 600,
    });
    for (name, value) in overrides.as_object().unwrap() {
        match value {
            Value::Null => claims.as_object_mut().unwrap().remove(name),
            value => claims
                .as_object_mut()
                .unwrap()
                .insert(name.clone(), value.clone()),
        };
    }
    claims
}

/// A running MCP server with OAuth: its address and resource URL.
struct Protected {
    address: String,
    resource: String,
}

async fn serve_protected(markers: &Path, issuer: &Issuer, verifier: JwtVerifier) -> Protected {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let resource = format!("http://{address}/mcp");
    let server = McpServer::new(
        ToolRegistry::new()
            .with(TouchTool)
            .with_state(Markers(markers.to_owned())),
    )
    .with_oauth(
        ProtectedResource::new(&resource, [&issuer.url])
            .unwrap()
            .require_scopes(["mcp:tools"])
            .with_resource_name("pi test server"),
        verifier,
    );
    tokio::spawn(server.serve_http_on(listener));
    Protected { address, resource }
}

async fn call(address: &str, marker: &str, token: Option<&str>) -> Answer {
    let mut headers = call_headers("touch");
    if let Some(token) = token {
        headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
    }
    let body = tools_call(1, "touch", &json!({ "name": marker }));
    let stream = TcpStream::connect(address).await.unwrap();
    request(stream, "POST", "/mcp", address, &headers, &body).await
}

async fn get(address: &str, path: &str) -> Answer {
    let stream = TcpStream::connect(address).await.unwrap();
    request(stream, "GET", path, address, &[], "").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwt_access_tokens_are_checked_before_anything_runs() {
    let markers = tempfile::tempdir().unwrap();
    let ran = |marker: &str| markers.path().join(marker).exists();
    let key = SigningKey::new("key-1");
    let issuer = Issuer::start(&[&key]).await;
    let verifier_for = |resource: &str| {
        JwtVerifier::builder(&issuer.url, resource)
            .jwks_url(format!("{}/jwks", issuer.url))
            .refresh_interval(Duration::ZERO)
            .build()
            .unwrap()
    };
    // Bind first, to know the resource URL the verifier checks `aud` against.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let resource = format!("http://{address}/mcp");
    let metadata_url = format!("http://{address}/.well-known/oauth-protected-resource/mcp");
    tokio::spawn(
        McpServer::new(
            ToolRegistry::new()
                .with(TouchTool)
                .with_state(Markers(markers.path().to_owned())),
        )
        .with_oauth(
            ProtectedResource::new(&resource, [&issuer.url])
                .unwrap()
                .require_scopes(["mcp:tools"]),
            verifier_for(&resource),
        )
        .serve_http_on(listener),
    );
    let token = |overrides: Value| key.sign(&claims(&issuer.url, &resource, overrides));

    let answer = call(&address, "none", None).await;
    assert_eq!(answer.status, 401, "{answer:?}");
    assert_eq!(
        answer.header("www-authenticate").unwrap(),
        format!("Bearer scope=\"mcp:tools\", resource_metadata=\"{metadata_url}\"")
    );
    assert_eq!(issuer.fetches(), 0, "no token, no fetch");

    let answer = call(&address, "good", Some(&token(json!({})))).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.contains("touched good") && ran("good"));
    assert_eq!(issuer.fetches(), 1);

    // Refused with 401 invalid_token, saying why.
    for (marker, bad, why) in [
        (
            "expired",
            token(json!({"exp": now() - 120})),
            "the token has expired",
        ),
        (
            "early",
            token(json!({"nbf": now() + 300})),
            "the token is not valid yet (nbf)",
        ),
        (
            "issuer",
            token(json!({"iss": "https://evil.example"})),
            "the token is from another issuer",
        ),
        (
            "audience",
            token(json!({"aud": "https://other.example/mcp"})),
            "the token is for another resource (aud)",
        ),
        (
            "no-exp",
            token(json!({"exp": null})),
            "the token has no exp claim",
        ),
        (
            "no-aud",
            token(json!({"aud": null})),
            "the token has no aud claim",
        ),
        (
            "forged",
            SigningKey::new("key-1").sign(&claims(&issuer.url, &resource, json!({}))),
            "the token's signature is not valid",
        ),
        (
            "unknown-kid",
            SigningKey::new("key-9").sign(&claims(&issuer.url, &resource, json!({}))),
            "the issuer's key set has no key key-9 for ES256",
        ),
        ("not-a-jwt", "abc.def".to_owned(), "the token is not a JWT"),
    ] {
        let answer = call(&address, marker, Some(&bad)).await;
        assert_eq!(answer.status, 401, "{marker}: {answer:?}");
        assert_eq!(
            answer.header("www-authenticate").unwrap(),
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{why}\", scope=\"mcp:tools\", \
                 resource_metadata=\"{metadata_url}\""
            ),
            "{marker}"
        );
        assert!(!ran(marker), "{marker} ran");
    }
    // The unknown key id made the verifier look for a rotated key once.
    assert_eq!(issuer.fetches(), 2);

    // Within the leeway (30 s), a just-expired token still passes.
    let answer = call(&address, "leeway", Some(&token(json!({"exp": now() - 10})))).await;
    assert_eq!(answer.status, 200, "{answer:?}");

    // Valid, but without the required scope: 403 naming it.
    let answer = call(
        &address,
        "scope",
        Some(&token(json!({"scope": "files:read"}))),
    )
    .await;
    assert_eq!(answer.status, 403, "{answer:?}");
    assert_eq!(
        answer.header("www-authenticate").unwrap(),
        format!(
            "Bearer error=\"insufficient_scope\", error_description=\"the token lacks a required scope\", \
             scope=\"mcp:tools\", resource_metadata=\"{metadata_url}\""
        )
    );
    assert!(!ran("scope"));
    // Scopes as Azure AD and Okta write them (`scp`) count too.
    let answer = call(
        &address,
        "scp",
        Some(&token(json!({"scope": null, "scp": ["mcp:tools"]}))),
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");

    // The issuer rotates: a token of a newly published key is taken after one fetch.
    let rotated = SigningKey::new("key-2");
    issuer.publish(&rotated);
    let fetches = issuer.fetches();
    let answer = call(
        &address,
        "rotated",
        Some(&rotated.sign(&claims(&issuer.url, &resource, json!({})))),
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(ran("rotated"));
    assert_eq!(issuer.fetches(), fetches + 1);

    // An HS256 token "signed" with the published key is a forgery, whatever the library does
    // with it.
    let public_jwk = serde_json::to_vec(&key.jwk).unwrap();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("key-1".to_owned());
    let hs256 = jsonwebtoken::encode(
        &header,
        &claims(&issuer.url, &resource, json!({})),
        &EncodingKey::from_secret(&public_jwk),
    )
    .unwrap();
    let answer = call(&address, "hs256", Some(&hs256)).await;
    assert_eq!(answer.status, 401);
    assert!(
        answer
            .header("www-authenticate")
            .unwrap()
            .contains("the algorithm HS256 is not accepted")
    );
    assert!(!ran("hs256"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_document_is_served_where_clients_look() {
    let markers = tempfile::tempdir().unwrap();
    let key = SigningKey::new("key-1");
    let issuer = Issuer::start(&[&key]).await;
    let verifier = JwtVerifier::builder(&issuer.url, "unused").build().unwrap();
    let server = serve_protected(markers.path(), &issuer, verifier).await;
    let expected = json!({
        "resource": server.resource,
        "authorization_servers": [issuer.url],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["mcp:tools"],
        "resource_name": "pi test server",
    });
    // RFC 9728's path form (first), and the bare form clients fall back to.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let answer = get(&server.address, path).await;
        assert_eq!(answer.status, 200, "{path}: {answer:?}");
        assert_eq!(answer.header("content-type"), Some("application/json"));
        assert_eq!(answer.header("access-control-allow-origin"), Some("*"));
        let document: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(document, expected, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_found_from_the_issuer_metadata_and_fetched_sparingly() {
    let key = SigningKey::new("key-1");
    let issuer = Issuer::start(&[&key]).await;
    let audience = "https://mcp.example.com/mcp";
    // No key set URL: RFC 8414 metadata names it. The default refresh interval (30 s) holds.
    let verifier = JwtVerifier::builder(&issuer.url, audience).build().unwrap();
    let good = key.sign(&claims(&issuer.url, audience, json!({})));
    let verified = verifier.verify(&good).await.unwrap();
    assert_eq!(verified.subject.as_deref(), Some("alice"));
    assert_eq!(verified.client_id.as_deref(), Some("pi-test-client"));
    assert_eq!(verified.scopes, ["mcp:tools", "files:read"]);
    assert_eq!(verified.claims["sub"], "alice");
    assert!(verified.expires_at.unwrap() > SystemTime::now());
    assert_eq!(issuer.fetches(), 1);

    // Made-up key ids do not make it fetch again within the interval.
    for n in 0..5 {
        let stranger = SigningKey::new(&format!("made-up-{n}"));
        let err = verifier
            .verify(&stranger.sign(&claims(&issuer.url, audience, json!({}))))
            .await
            .unwrap_err();
        assert!(matches!(err, TokenError::Invalid(_)), "{err}");
    }
    assert!(verifier.verify(&good).await.is_ok());
    assert_eq!(issuer.fetches(), 1);

    // A token without a key id is checked with the only key there is.
    let no_kid = key.sign_as(None, &claims(&issuer.url, audience, json!({})));
    assert!(verifier.verify(&no_kid).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_key_set_is_503_not_a_pass() {
    let markers = tempfile::tempdir().unwrap();
    let key = SigningKey::new("key-1");
    let issuer = Issuer::start(&[&key]).await;
    issuer.down.store(true, Ordering::SeqCst);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let resource = format!("http://{address}/mcp");
    let verifier = JwtVerifier::builder(&issuer.url, &resource)
        .jwks_url(format!("{}/jwks", issuer.url))
        .refresh_interval(Duration::ZERO)
        .build()
        .unwrap();
    tokio::spawn(
        McpServer::new(
            ToolRegistry::new()
                .with(TouchTool)
                .with_state(Markers(markers.path().to_owned())),
        )
        .with_oauth(
            ProtectedResource::new(&resource, [&issuer.url]).unwrap(),
            verifier,
        )
        .serve_http_on(listener),
    );
    let good = key.sign(&claims(&issuer.url, &resource, json!({})));
    let answer = call(&address, "down", Some(&good)).await;
    assert_eq!(answer.status, 503, "{answer:?}");
    assert!(!markers.path().join("down").exists());
    issuer.down.store(false, Ordering::SeqCst);
    let answer = call(&address, "up", Some(&good)).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    // Once fetched, the keys outlive an outage.
    issuer.down.store(true, Ordering::SeqCst);
    let answer = call(&address, "outage", Some(&good)).await;
    assert_eq!(answer.status, 200, "{answer:?}");
}

#[test]
fn urls_must_be_https_except_on_loopback() {
    for (issuer, jwks, message) in [
        (
            "http://auth.example.com",
            None,
            "the issuer \"http://auth.example.com\" must be an https URL (http only on a loopback host)",
        ),
        (
            "https://auth.example.com",
            Some("http://keys.example.com/jwks"),
            "the key set URL \"http://keys.example.com/jwks\" must be an https URL (http only on a loopback host)",
        ),
    ] {
        let mut builder = JwtVerifier::builder(issuer, "https://mcp.example.com/mcp");
        if let Some(jwks) = jwks {
            builder = builder.jwks_url(jwks);
        }
        assert_eq!(builder.build().unwrap_err().to_string(), message);
    }
    assert!(
        JwtVerifier::builder("http://127.0.0.1:9000", "https://mcp.example.com/mcp")
            .build()
            .is_ok()
    );
}
