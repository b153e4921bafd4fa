//! Our client against an OAuth-protected server on the official Python SDK (PyPI `mcp` 2.3.0:
//! `MCPServer` with the SDK's authorization server, its protected resource metadata and its
//! bearer middleware; `tests/servers/python_oauth_server.py`), end to end: the 401, discovery,
//! dynamic registration, the sign-in through `LoopbackAuthorizer` (a "browser" follows the
//! authorization page to the loopback redirect), the token, its refresh (before it expires, and
//! after the server revoked it), tokens kept in a file for the next run, and the errors.

mod client_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use client_support::{PythonServer, test_deps, within};
use pi_mcp::{
    AuthorizationPrompt, AuthorizeError, Authorizer, CredentialStore, FileCredentialStore,
    LoopbackAuthorizer, McpClient, McpClientError, OAuthConfig, OAuthCredentials,
};
use pi_tool::{BoxFuture, ToolCall, ToolRegistry};
use serde_json::json;

const GUARD: Duration = Duration::from_secs(60);
const PYTHON: &str = "venv/bin/python";

/// A browser: follows the authorization page's redirects, which end at the loopback listener.
fn browser() -> reqwest::Client {
    reqwest::Client::new()
}

/// A `LoopbackAuthorizer` whose "user" opens each page in [`browser`]; counts the pages shown.
fn loopback(shown: Arc<AtomicUsize>) -> LoopbackAuthorizer {
    let http = browser();
    LoopbackAuthorizer::bind(0, move |prompt: &AuthorizationPrompt| {
        shown.fetch_add(1, Ordering::SeqCst);
        let (http, url) = (http.clone(), prompt.url.clone());
        tokio::spawn(async move {
            let page = http
                .get(&url)
                .send()
                .await
                .expect("the authorization page loads");
            assert!(page.status().is_success(), "{}", page.status());
        });
        Ok(())
    })
    .expect("binds 127.0.0.1")
}

async fn call(tools: &ToolRegistry, name: &str) -> String {
    let result = within(
        GUARD,
        name,
        tools.run(&ToolCall::new(name, name, json!({}))),
    )
    .await;
    assert!(!result.is_error, "{name}: {}", result.text_content());
    result.text_content()
}

fn registry(client: &McpClient) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    client.add_to(&mut tools);
    tools
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signs_in_refreshes_and_signs_in_again_only_when_it_must() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    // Access tokens live 3 s, so the second round of calls needs a refresh.
    let server = PythonServer::start_script(&deps, "python_oauth_server.py", &["3"]).await;
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("mcp-oauth.json");
    let shown = Arc::new(AtomicUsize::new(0));

    let client = within(
        GUARD,
        "connecting with a sign-in",
        McpClient::http(&server.url)
            .oauth(
                OAuthConfig::new(loopback(Arc::clone(&shown)))
                    .credential_store(FileCredentialStore::new(&tokens)),
            )
            .connect(),
    )
    .await
    .expect("signs in and connects");
    assert_eq!(
        shown.load(Ordering::SeqCst),
        1,
        "one page shown to the user"
    );
    let tools = registry(&client);
    let whoami = call(&tools, "whoami").await;
    assert!(
        whoami.ends_with(" mcp"),
        "the token carries the scope: {whoami}"
    );
    assert_eq!(
        call(&tools, "grants").await,
        "authorization_code=1 refresh_token=0 registrations=1"
    );

    // The token expires: the client refreshes it (rmcp renews a token close to its end) without
    // the user.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(call(&tools, "whoami").await, whoami);
    let grants = call(&tools, "grants").await;
    assert!(
        grants.starts_with("authorization_code=1 refresh_token=")
            && !grants.contains("refresh_token=0"),
        "{grants}"
    );

    // The server forgets every access token: the 401 is answered with a refresh and the call
    // goes through again, still without the user.
    assert_eq!(call(&tools, "revoke_access_tokens").await, "revoked");
    assert_eq!(call(&tools, "whoami").await, whoami);
    assert_eq!(shown.load(Ordering::SeqCst), 1);
    assert!(
        call(&tools, "grants")
            .await
            .starts_with("authorization_code=1 ")
    );
    client.close();

    // The tokens were kept in the file (mode 0600, checked by the store's own test), bound to
    // the authorization server that issued them; the next run uses them without a sign-in.
    let stored = FileCredentialStore::new(&tokens)
        .load(&server.url)
        .await
        .unwrap()
        .expect("the tokens are stored under the server's URL");
    let port = server
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches("/mcp");
    assert_eq!(
        stored.issuer(),
        Some(format!("http://127.0.0.1:{port}/").as_str())
    );
    assert!(stored.can_refresh());
    assert_eq!(stored.scopes(), ["mcp"]);
    let again = within(
        GUARD,
        "connecting with stored tokens",
        McpClient::http(&server.url)
            .oauth(
                OAuthConfig::new(loopback(Arc::clone(&shown)))
                    .credential_store(FileCredentialStore::new(&tokens)),
            )
            .connect(),
    )
    .await
    .expect("connects with the stored tokens");
    assert_eq!(call(&registry(&again), "whoami").await, whoami);
    assert_eq!(shown.load(Ordering::SeqCst), 1, "no second sign-in");
    assert!(
        call(&registry(&again), "grants")
            .await
            .contains("registrations=1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_from_another_authorization_server_are_not_used() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    let server = PythonServer::start_script(&deps, "python_oauth_server.py", &[]).await;
    let store = pi_mcp::InMemoryCredentialStore::new();
    let foreign: OAuthCredentials = serde_json::from_value(json!({
        "client_id": "someone-else",
        "token_response": {"access_token": "minted-elsewhere", "token_type": "Bearer", "expires_in": 3600},
        "granted_scopes": ["mcp"],
        "token_received_at": 4_000_000_000u64,
        "issuer": "https://other-authorization-server.example"
    }))
    .unwrap();
    store.save(&server.url, foreign).await.unwrap();
    let shown = Arc::new(AtomicUsize::new(0));
    let client = within(
        GUARD,
        "connecting",
        McpClient::http(&server.url)
            .oauth(OAuthConfig::new(loopback(Arc::clone(&shown))).credential_store(store.clone()))
            .connect(),
    )
    .await
    .expect("signs in anew");
    assert_eq!(shown.load(Ordering::SeqCst), 1);
    let whoami = call(&registry(&client), "whoami").await;
    assert!(!whoami.starts_with("someone-else"), "{whoami}");
    let stored = store.load(&server.url).await.unwrap().unwrap();
    assert_ne!(stored.client_id(), "someone-else");
    assert_ne!(
        stored.issuer(),
        Some("https://other-authorization-server.example")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_oauth_the_error_keeps_the_servers_challenge() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    let server = PythonServer::start_script(&deps, "python_oauth_server.py", &[]).await;
    let err = within(GUARD, "connecting", McpClient::http(&server.url).connect())
        .await
        .unwrap_err();
    let McpClientError::AuthorizationRequired { challenge, .. } = &err else {
        panic!("expected AuthorizationRequired, got {err:?}");
    };
    assert!(
        challenge.contains("resource_metadata=")
            && challenge.contains("/.well-known/oauth-protected-resource/mcp"),
        "{challenge}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "{} requires authorization (HTTP 401, WWW-Authenticate: Bearer ",
            server.url
        )),
        "{text}"
    );
    assert!(
        !text.contains("rmcp::") && !text.contains("reqwest::"),
        "{text}"
    );

    // A static bearer token the server does not know: the same error, with the same challenge.
    let err = within(
        GUARD,
        "connecting",
        McpClient::http(&server.url)
            .bearer_token("made-up")
            .connect(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, McpClientError::AuthorizationRequired { .. }),
        "{err:?}"
    );
}

/// An authorizer whose user closes the page.
struct Refusing(Arc<AtomicUsize>);

impl Authorizer for Refusing {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:9/callback".to_owned()
    }

    fn authorize(
        &self,
        _prompt: AuthorizationPrompt,
    ) -> BoxFuture<'_, Result<String, AuthorizeError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Err("the user closed the page".into()) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_the_user_does_not_finish_is_reported_once() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    let server = PythonServer::start_script(&deps, "python_oauth_server.py", &[]).await;
    let asked = Arc::new(AtomicUsize::new(0));
    let err = within(
        GUARD,
        "connecting",
        McpClient::http(&server.url)
            .oauth(OAuthConfig::new(Refusing(Arc::clone(&asked))))
            .connect(),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, McpClientError::SignIn { .. }), "{err:?}");
    assert!(
        text.starts_with(&format!(
            "signing in to {} failed: the sign-in did not complete: the user closed the page (the server's challenge: WWW-Authenticate: Bearer ",
            server.url
        )),
        "{text}"
    );
    // The failed sign-in is not retried with the older handshake.
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}
