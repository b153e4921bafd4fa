//! The HTTP client under rmcp's streamable HTTP transport: our TLS setup, the bearer token of a
//! signed-in server (rmcp's `AuthClient`), and what to do when the server refuses a request:
//! sign in (or ask for more scopes) and send it again, or remember the refusal so the error
//! says what happened, with the server's `WWW-Authenticate` challenge.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::oauth::session::{MAX_SIGN_INS_IN_A_ROW, OAuthHttp, OAuthSession, Refusal};

type HttpError = StreamableHttpError<reqwest::Error>;

/// reqwest with rustls on the aws-lc-rs provider, passed explicitly (the workspace installs no
/// process-wide default), and the system's certificate roots.
pub(crate) fn tls_client_builder() -> Result<reqwest::ClientBuilder, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
        .map_err(|err| format!("could not load the system's TLS certificate roots: {err}"))?;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("could not configure TLS: {err}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(reqwest::Client::builder().tls_backend_preconfigured(tls))
}

/// The client for MCP requests: no redirects (they could carry our headers to another host).
/// Idle connections are not pooled, as in rmcp's own client (a reused connection whose last
/// response was not fully read stalls on delayed ACKs).
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    tls_client_builder()?
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|err| format!("could not build the HTTP client: {err}"))
}

/// Why requests to the server failed, in words for the error a user sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The server wants a token and the client has no way to get one.
    Unauthorized { challenge: String },
    /// The token lacks a scope and the client has no way to ask for it.
    InsufficientScope { challenge: String },
    /// Signing in failed.
    SignIn { reason: String, challenge: String },
    /// The request did not reach the server, or its answer was unusable.
    Transport { reason: String },
}

/// What all clones of one connection's client share.
#[derive(Default)]
pub(crate) struct HttpState {
    session: Option<Arc<OAuthSession>>,
    last_failure: Mutex<Option<Failure>>,
}

impl HttpState {
    /// The last failure, if the last request failed.
    pub(crate) fn last_failure(&self) -> Option<Failure> {
        self.last_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, failure: Option<Failure>) {
        *self
            .last_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = failure;
    }
}

#[derive(Clone)]
enum Inner {
    /// Headers and a static bearer token only.
    Plain(reqwest::Client),
    /// OAuth: rmcp's client that adds the token (and refreshes it once when refused).
    OAuth(AuthClient<reqwest::Client>),
    /// OAuth with DPoP-bound tokens: the same, with a proof on each request.
    #[cfg(feature = "jwt")]
    Dpop(AuthClient<super::oauth::dpop_http::DpopHttp>),
}

/// rmcp's `StreamableHttpClient` for one connection (cloned by the transport's tasks).
#[derive(Clone)]
pub(crate) struct HttpClient {
    inner: Inner,
    state: Arc<HttpState>,
}

impl HttpClient {
    /// Without OAuth.
    pub(crate) fn plain(client: reqwest::Client) -> Self {
        HttpClient {
            inner: Inner::Plain(client),
            state: Arc::default(),
        }
    }

    /// Signing in with `session`.
    pub(crate) fn oauth(client: OAuthHttp, session: Arc<OAuthSession>) -> Self {
        HttpClient {
            inner: match client {
                OAuthHttp::Bearer(client) => Inner::OAuth(client),
                #[cfg(feature = "jwt")]
                OAuthHttp::Dpop(client) => Inner::Dpop(client),
            },
            state: Arc::new(HttpState {
                session: Some(session),
                last_failure: Mutex::default(),
            }),
        }
    }

    pub(crate) fn state(&self) -> &Arc<HttpState> {
        &self.state
    }

    /// Sends with `send`, signing in and sending again when the server refuses and the client
    /// can sign in; records what went wrong otherwise.
    async fn guarded<T, F, Fut>(&self, send: F) -> Result<T, HttpError>
    where
        F: Fn(Inner) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        // Sign-ins for this one request; the session also counts them across requests.
        let mut sign_ins = 0;
        loop {
            let generation = self
                .state
                .session
                .as_ref()
                .map(|session| session.generation());
            let error = match send(self.inner.clone()).await {
                Ok(answer) => {
                    if let Some(session) = &self.state.session {
                        session.succeeded();
                    }
                    self.state.record(None);
                    return Ok(answer);
                }
                Err(error) => error,
            };
            let Some(refusal) = refusal(&error) else {
                self.state.record(Some(Failure::Transport {
                    reason: transport_reason(&error),
                }));
                return Err(error);
            };
            let (Some(session), Some(generation)) = (&self.state.session, generation) else {
                self.state.record(Some(match refusal {
                    Refusal::Unauthorized { challenge } => Failure::Unauthorized { challenge },
                    Refusal::InsufficientScope { challenge, .. } => {
                        Failure::InsufficientScope { challenge }
                    }
                }));
                return Err(error);
            };
            sign_ins += 1;
            let recovered = if sign_ins > MAX_SIGN_INS_IN_A_ROW {
                Err(format!(
                    "gave up after {MAX_SIGN_INS_IN_A_ROW} sign-ins in a row that the server still refused"
                ))
            } else {
                session.recover(&refusal, generation).await
            };
            if let Err(reason) = recovered {
                self.state.record(Some(Failure::SignIn {
                    reason,
                    challenge: refusal.challenge().to_owned(),
                }));
                return Err(error);
            }
        }
    }
}

/// A 401 or a 403 `insufficient_scope` (with or without `WWW-Authenticate`).
fn refusal(error: &HttpError) -> Option<Refusal> {
    match error {
        StreamableHttpError::AuthRequired(required) => Some(Refusal::Unauthorized {
            challenge: required.www_authenticate_header.clone(),
        }),
        StreamableHttpError::InsufficientScope(insufficient) => {
            let challenge = &insufficient.www_authenticate_header;
            let is_scope = challenge
                .to_ascii_lowercase()
                .contains("insufficient_scope");
            is_scope.then(|| Refusal::InsufficientScope {
                challenge: challenge.clone(),
                scope: insufficient.required_scope.clone(),
            })
        }
        StreamableHttpError::Client(error)
            if error.status() == Some(reqwest::StatusCode::UNAUTHORIZED) =>
        {
            // A 401 without a challenge: discovery starts from the well-known URLs.
            Some(Refusal::Unauthorized {
                challenge: String::new(),
            })
        }
        _ => None,
    }
}

/// A transport error without rmcp's or reqwest's type names.
fn transport_reason(error: &HttpError) -> String {
    match error {
        StreamableHttpError::Client(error) => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            text
        }
        StreamableHttpError::InsufficientScope(insufficient) => format!(
            "the server refused the request (HTTP 403, WWW-Authenticate: {})",
            insufficient.www_authenticate_header
        ),
        StreamableHttpError::Auth(error) => super::oauth::session::describe(error),
        other => other.to_string(),
    }
}

/// Calls the same method on whichever client `inner` holds (the plain one or rmcp's OAuth
/// client: two types with one trait).
macro_rules! with_client {
    ($inner:expr, |$client:ident| $call:expr) => {
        match $inner {
            Inner::Plain($client) => $call.await,
            Inner::OAuth($client) => $call.await,
            #[cfg(feature = "jwt")]
            Inner::Dpop($client) => $call.await,
        }
    };
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.guarded(|inner| {
            let (uri, message, session_id, auth_header, custom_headers) = (
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            );
            async move {
                with_client!(inner, |client| client.post_message(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers
                ))
            }
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.guarded(|inner| {
            let (uri, message, session_id, auth_header, custom_headers) = (
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            );
            async move {
                with_client!(inner, |client| client.post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits
                ))
            }
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        // Ending a session never starts a sign-in.
        with_client!(&self.inner, |client| client.delete_session(
            uri,
            session_id,
            auth_header,
            custom_headers
        ))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.guarded(|inner| {
            let (uri, session_id, last_event_id, auth_header, custom_headers) = (
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            );
            async move {
                with_client!(inner, |client| client.get_stream(
                    uri,
                    session_id,
                    last_event_id,
                    auth_header,
                    custom_headers
                ))
            }
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.guarded(|inner| {
            let (uri, session_id, last_event_id, auth_header, custom_headers) = (
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            );
            async move {
                with_client!(inner, |client| client.get_stream_with_max_sse_event_size(
                    uri,
                    session_id,
                    last_event_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size
                ))
            }
        })
        .await
    }
}
