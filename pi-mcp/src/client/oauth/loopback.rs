//! The redirect of a sign-in received on 127.0.0.1, as native apps do it (RFC 8252 §7.3): the
//! application only shows the user the page.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Html;
use pi_tool::BoxFuture;
use reqwest::Url;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::authorizer::{AuthorizationPrompt, AuthorizeError, Authorizer};

/// How long a sign-in may wait for the browser by default.
pub const DEFAULT_SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);

/// Shows the user the page (prints the URL, opens a browser, ...).
type ShowPage = dyn Fn(&AuthorizationPrompt) -> Result<(), AuthorizeError> + Send + Sync;

/// Sign-ins waiting for their redirect, by the `state` they sent, and where the listener is.
struct Inbox {
    origin: String,
    waiting: Mutex<HashMap<String, oneshot::Sender<String>>>,
}

impl Inbox {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<String>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An [`Authorizer`] that listens on `127.0.0.1` for the authorization server's redirect and
/// leaves showing the page to a function: the `pi` command prints the URL and tries to open a
/// browser; a test can fetch the page itself.
///
/// The redirect URI is `http://127.0.0.1:PORT/callback`. Several sign-ins may wait at once (one
/// per server), each matched by its `state`.
pub struct LoopbackAuthorizer {
    redirect_uri: String,
    show: Arc<ShowPage>,
    timeout: Duration,
    inbox: Arc<Inbox>,
    listener: Mutex<Option<std::net::TcpListener>>,
    server: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for LoopbackAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackAuthorizer")
            .field("redirect_uri", &self.redirect_uri)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackAuthorizer {
    /// Listens on `127.0.0.1:port` (`0`: a port the system picks); `show` shows the user each
    /// authorization page.
    pub fn bind(
        port: u16,
        show: impl Fn(&AuthorizationPrompt) -> Result<(), AuthorizeError> + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let origin = format!("http://127.0.0.1:{port}");
        Ok(LoopbackAuthorizer {
            redirect_uri: format!("{origin}/callback"),
            show: Arc::new(show),
            timeout: DEFAULT_SIGN_IN_TIMEOUT,
            inbox: Arc::new(Inbox {
                origin,
                waiting: Mutex::default(),
            }),
            listener: Mutex::new(Some(listener)),
            server: Mutex::new(None),
        })
    }

    /// How long a sign-in waits for the browser (default [`DEFAULT_SIGN_IN_TIMEOUT`]).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Starts answering on the listener, once (it needs a running tokio runtime, which `bind`
    /// does not).
    fn serve(&self) -> Result<(), AuthorizeError> {
        let Some(listener) = self
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return Ok(());
        };
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let app = axum::Router::new()
            .route("/callback", axum::routing::get(redirected))
            .with_state(Arc::clone(&self.inbox));
        let task = tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, app).await {
                tracing::warn!("the sign-in redirect listener stopped: {err}");
            }
        });
        *self.server.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
        Ok(())
    }
}

impl Drop for LoopbackAuthorizer {
    fn drop(&mut self) {
        if let Some(task) = self
            .server
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

/// The browser arriving at the redirect URI: hands the full URL to the sign-in that sent its
/// `state`.
async fn redirected(State(inbox): State<Arc<Inbox>>, uri: Uri) -> (StatusCode, Html<&'static str>) {
    let state = uri.query().and_then(|query| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(key, _)| key == "state")
            .map(|(_, value)| value.into_owned())
    });
    let waiter = state.and_then(|state| inbox.waiting().remove(&state));
    match waiter {
        Some(waiter) => {
            let _ = waiter.send(format!("{}{uri}", inbox.origin));
            (
                StatusCode::OK,
                Html(
                    "<!doctype html><title>Signed in</title><p>Done. You can close this page and return to the application.</p>",
                ),
            )
        }
        None => (
            StatusCode::BAD_REQUEST,
            Html(
                "<!doctype html><title>Unexpected</title><p>No sign-in is waiting for this page (it may have timed out). Start again from the application.</p>",
            ),
        ),
    }
}

impl Authorizer for LoopbackAuthorizer {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(
        &self,
        prompt: AuthorizationPrompt,
    ) -> BoxFuture<'_, Result<String, AuthorizeError>> {
        Box::pin(async move {
            self.serve()?;
            let state = Url::parse(&prompt.url)?
                .query_pairs()
                .find(|(key, _)| key == "state")
                .map(|(_, value)| value.into_owned())
                .ok_or("the authorization URL carries no state")?;
            let (tx, rx) = oneshot::channel();
            self.inbox.waiting().insert(state.clone(), tx);
            let answer = match (self.show)(&prompt) {
                Ok(()) => tokio::time::timeout(self.timeout, rx).await,
                Err(err) => {
                    self.forget(&state);
                    return Err(err);
                }
            };
            match answer {
                Ok(Ok(url)) => Ok(url),
                Ok(Err(_)) => Err("the sign-in listener stopped".into()),
                Err(_) => {
                    self.forget(&state);
                    Err(format!(
                        "the browser did not come back to {} within {} s",
                        self.redirect_uri,
                        self.timeout.as_secs()
                    )
                    .into())
                }
            }
        })
    }
}

impl LoopbackAuthorizer {
    fn forget(&self, state: &str) {
        self.inbox.waiting().remove(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AuthorizationReason;

    fn prompt(url: &str) -> AuthorizationPrompt {
        AuthorizationPrompt {
            server: "http://127.0.0.1:1/mcp".into(),
            url: url.into(),
            issuer: None,
            scopes: Vec::new(),
            reason: AuthorizationReason::SignIn,
        }
    }

    /// What an authorization server does: redirect the browser to the `redirect_uri` of its
    /// authorization URL, with the `state` and a code.
    fn redirect_target(authorization_url: &str) -> String {
        let url = Url::parse(authorization_url).unwrap();
        let query = |name: &str| {
            url.query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
                .unwrap()
        };
        format!(
            "{}?state={}&code=abc",
            query("redirect_uri"),
            query("state")
        )
    }

    #[tokio::test]
    async fn the_redirect_reaches_the_sign_in_that_sent_its_state() {
        let authorizer = LoopbackAuthorizer::bind(0, |prompt| {
            let target = redirect_target(&prompt.url);
            tokio::spawn(async move { plain_get(&target).await });
            Ok(())
        })
        .unwrap();
        let redirect_uri = authorizer.redirect_uri();
        assert!(
            redirect_uri.starts_with("http://127.0.0.1:"),
            "{redirect_uri}"
        );
        let mut authorization = Url::parse("https://as.example/authorize").unwrap();
        authorization
            .query_pairs_mut()
            .append_pair("state", "xyz")
            .append_pair("redirect_uri", &redirect_uri);
        let back = authorizer
            .authorize(prompt(authorization.as_str()))
            .await
            .unwrap();
        assert_eq!(back, format!("{redirect_uri}?state=xyz&code=abc"));
    }

    #[tokio::test]
    async fn a_sign_in_the_user_never_finishes_times_out() {
        let authorizer = LoopbackAuthorizer::bind(0, |_| Ok(()))
            .unwrap()
            .timeout(Duration::from_millis(50));
        let err = authorizer
            .authorize(prompt("https://as.example/authorize?state=s"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("did not come back"), "{err}");
        // A page that arrives later finds nobody waiting.
        let late = format!("{}?state=s&code=c", authorizer.redirect_uri());
        assert_eq!(plain_get(&late).await, 400);
    }

    /// A plain HTTP GET with tokio (what a browser does here).
    async fn plain_get(url: &str) -> u16 {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let url = Url::parse(url).unwrap();
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", url.port().unwrap()))
            .await
            .unwrap();
        let path = format!("{}?{}", url.path(), url.query().unwrap_or_default());
        stream
            .write_all(
                format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer[9..12].parse().unwrap()
    }
}
