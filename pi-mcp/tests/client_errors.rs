//! What a user reads when connecting fails: plain words (no rmcp or reqwest type names), the
//! variable and the server named when a configuration's `${VAR}` is not set, and never a value a
//! `${VAR}` expanded to.

use std::time::Duration;

use pi_mcp::{McpClientError, McpConfig};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn plain_words(text: &str) {
    for internal in [
        "rmcp::",
        "reqwest::",
        "WorkerTransport",
        "StreamableHttp",
        "hyper::",
    ] {
        assert!(!text.contains(internal), "{internal} in: {text}");
    }
}

#[tokio::test]
async fn a_server_that_is_not_there_is_said_in_plain_words() {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let err = pi_mcp::McpClient::http(&url)
        .connect_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, McpClientError::Connect { .. }), "{text}");
    assert!(
        text.starts_with(&format!("could not connect to {url}: ")),
        "{text}"
    );
    assert!(text.contains("Connection refused"), "{text}");
    // Said once, although both handshakes were tried.
    assert_eq!(text.matches("Connection refused").count(), 1, "{text}");
    plain_words(&text);
}

#[tokio::test]
async fn an_unset_variable_names_itself_and_the_server() {
    let config = McpConfig::from_json(
        r#"{"mcpServers": {
            "gh": {"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
            "local": {"command": "my-server", "args": ["--key", "${API_KEY}"], "env": {"MODE": "${MODE:-fast}"}}
        }}"#,
    )
    .unwrap();
    let lookup = |_: &str| None;
    let err = config.servers["gh"]
        .builder_with_env(lookup)
        .connect()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server `https://api.example.com/mcp`: headers.Authorization: the environment variable GITHUB_TOKEN is not set (the configuration uses ${GITHUB_TOKEN}; set it, or write ${GITHUB_TOKEN:-default})"
    );
    let err = config.servers["local"]
        .builder_with_env(lookup)
        .connect()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server `my-server --key ${API_KEY}`: args: the environment variable API_KEY is not set (the configuration uses ${API_KEY}; set it, or write ${API_KEY:-default})"
    );
}

#[tokio::test]
async fn what_a_variable_expands_to_appears_in_no_message() {
    let config = McpConfig::from_json(
        r#"{"mcpServers": {
            "web": {"url": "http://127.0.0.1:1/mcp", "headers": {"X-Key": "${KEY}"}},
            "cmd": {"command": "/nonexistent/${KEY}/server", "args": ["${KEY}"]}
        }}"#,
    )
    .unwrap();
    // A value HTTP does not accept in a header: the error names the header, not the value.
    let lookup = |name: &str| (name == "KEY").then(|| "hunter2\nsecret".to_owned());
    let err = config.servers["web"]
        .builder_with_env(lookup)
        .connect()
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("invalid HTTP header `X-Key`"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    // A command that does not start: named as the configuration wrote it.
    let lookup = |name: &str| (name == "KEY").then(|| "hunter2".to_owned());
    let err = config.servers["cmd"]
        .builder_with_env(lookup)
        .connect()
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("could not start MCP server `/nonexistent/${KEY}/server ${KEY}`"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    // Debug output of the configuration shows no header or environment values.
    let shown = format!("{config:?}");
    assert!(shown.contains(r#"headers: ["X-Key"]"#), "{shown}");
}

/// Never shows a page: the tests below must fail before a user would be asked.
struct NoBrowser;

impl pi_mcp::Authorizer for NoBrowser {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:9/callback".to_owned()
    }

    fn authorize(
        &self,
        prompt: pi_mcp::AuthorizationPrompt,
    ) -> pi_tool::BoxFuture<'_, Result<String, pi_mcp::AuthorizeError>> {
        panic!("the user was sent to {}", prompt.url)
    }
}

/// A server that answers 401 to MCP requests and 404 to everything else: no OAuth metadata, no
/// default endpoints. Counts the requests to `/register`.
async fn server_without_oauth() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use axum::http::{StatusCode, Uri};
    let registrations = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&registrations);
    let app = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::any(|| async {
                (
                    StatusCode::UNAUTHORIZED,
                    [("WWW-Authenticate", "Bearer realm=\"mcp\"")],
                )
            }),
        )
        .fallback(move |uri: Uri| {
            let counted = std::sync::Arc::clone(&counted);
            async move {
                if uri.path() == "/register" {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                StatusCode::NOT_FOUND
            }
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, registrations)
}

#[tokio::test]
async fn a_server_without_oauth_metadata_is_tried_at_the_default_endpoints_then_named() {
    let (url, registrations) = server_without_oauth().await;
    let err = pi_mcp::McpClient::http(&url)
        .oauth(pi_mcp::OAuthConfig::new(NoBrowser))
        .connect_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap_err();
    let text = err.to_string();
    eprintln!("{text}");
    plain_words(&text);
    assert_eq!(
        registrations.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "registration at the 2025-03-26 default endpoint: {text}"
    );
    for said in [
        "publishes no OAuth metadata",
        "2025-03-26",
        "a bearer token or a header",
    ] {
        assert!(text.contains(said), "{said:?} not in: {text}");
    }
}
