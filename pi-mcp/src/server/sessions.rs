//! Sessions (the 2025-11-25 handshake) capped in all and per principal, each costing what it
//! needs, and a client's `DELETE` answered as the official clients expect.
//!
//! rmcp creates a session in its `SessionManager::create_session`, which knows nothing of the
//! request; the principal reaches it in a task-local set by [`admit`] around the request (rmcp
//! handles a request inline, in the task that called it). A refusal there makes rmcp answer 500;
//! [`admit`] turns that answer into 503 or 429 with `Retry-After`. A session's place is given
//! back when rmcp closes it: at the client's `DELETE`, when it has been idle too long, or when
//! its handshake fails.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use futures_util::{Stream, StreamExt};
use http::{HeaderValue, Method, StatusCode, header};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

use super::auth::VerifiedToken;
use super::request_ids::{ReleasingTransport, RequestIds, freed_at_answer, id_in_use};

/// The channel capacity of a session (rmcp's default is 16): the cache of events kept for its
/// standalone stream, allocated when the session is made, and its queue of client messages. A
/// tools-only server sends nothing on that stream, and each request's answer has its own. This
/// saves little (600 bytes a session): most of a session's 100-odd KB are the first blocks of
/// its six tokio channels, 32 slots of a 330-520 byte message each whatever the capacity (see
/// the README's "Sessions and memory").
const SESSION_CHANNEL_CAPACITY: usize = 4;

/// `Retry-After` on a refused `initialize`, in seconds: sessions end when their clients
/// delete them, which cannot be foreseen.
const RETRY_AFTER_SECONDS: &str = "10";

tokio::task_local! {
    /// The principal of the request being handled, and what became of its session.
    static ADMISSION: Arc<Admission>;
}

/// One request's principal (none when the token names no one), and the cap it hit if rmcp
/// tried to make a session for it.
struct Admission {
    principal: Option<Arc<str>>,
    refused: Mutex<Option<Refusal>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    /// Every session of the server is taken: 503.
    Total,
    /// This principal's are: 429.
    Principal,
}

/// Who holds which session, for the caps.
pub(crate) struct Sessions {
    max_total: usize,
    max_per_principal: usize,
    inner: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    by_id: HashMap<SessionId, Option<Arc<str>>>,
    per_principal: HashMap<Arc<str>, usize>,
}

impl Sessions {
    pub(crate) fn new(max_total: usize, max_per_principal: usize) -> Self {
        Sessions {
            max_total,
            max_per_principal,
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes a place for `principal`'s new session, or says which cap is in the way. A
    /// session of no one in particular (a static token's, `without_auth`'s) counts in all only.
    fn take(&self, id: &SessionId, principal: Option<Arc<str>>) -> Result<(), Refusal> {
        let mut held = self.lock();
        if held.by_id.len() >= self.max_total {
            return Err(Refusal::Total);
        }
        if let Some(principal) = &principal {
            let count = held.per_principal.entry(principal.clone()).or_default();
            if *count >= self.max_per_principal {
                return Err(Refusal::Principal);
            }
            *count += 1;
        }
        held.by_id.insert(id.clone(), principal);
        Ok(())
    }

    fn give_back(&self, id: &SessionId) {
        let mut held = self.lock();
        let Some(Some(principal)) = held.by_id.remove(id) else {
            return;
        };
        if let Some(count) = held.per_principal.get_mut(&principal) {
            *count -= 1;
            if *count == 0 {
                held.per_principal.remove(&principal);
            }
        }
    }

    /// Sessions held now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().by_id.len()
    }
}

/// rmcp's in-memory session manager, with the caps of [`Sessions`] and each session's request
/// ids kept taken until answered ([`RequestIds`]).
pub(crate) struct CappedSessions {
    local: Arc<LocalSessionManager>,
    sessions: Arc<Sessions>,
    ids: Arc<RequestIds>,
}

impl CappedSessions {
    pub(crate) fn new(sessions: Arc<Sessions>, ids: Arc<RequestIds>) -> Self {
        let mut local = LocalSessionManager::default();
        local.session_config.channel_capacity = SESSION_CHANNEL_CAPACITY;
        CappedSessions {
            local: Arc::new(local),
            sessions,
            ids,
        }
    }
}

/// Why a session was not made: a cap (answered 503 or 429 by [`admit`]) or rmcp's own error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CappedSessionError {
    #[error("too many sessions")]
    Refused,
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

impl SessionManager for CappedSessions {
    type Error = CappedSessionError;
    type Transport = ReleasingTransport<<LocalSessionManager as SessionManager>::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let id = rmcp::transport::common::server_side_http::session_id();
        let admission = ADMISSION.try_with(Arc::clone).ok();
        let principal = admission
            .as_ref()
            .and_then(|admission| admission.principal.clone());
        if let Err(refusal) = self.sessions.take(&id, principal) {
            if let Some(admission) = admission {
                *admission
                    .refused
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(refusal);
            }
            return Err(CappedSessionError::Refused);
        }
        // rmcp's manager makes its own id; ours is the one counted, so the session is
        // registered under it the way `restore_session` does.
        match self.local.restore_session(id.clone()).await {
            Ok(RestoreOutcome::Restored(transport)) => {
                let transport = ReleasingTransport::new(
                    transport,
                    id.clone(),
                    self.ids.clone(),
                    self.local.clone(),
                );
                Ok((id, transport))
            }
            Ok(_) => {
                self.sessions.give_back(&id);
                Err(CappedSessionError::Refused)
            }
            Err(err) => {
                self.sessions.give_back(&id);
                Err(err.into())
            }
        }
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.sessions.give_back(id);
        self.ids.forget(id);
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let taken = match &message {
            ClientJsonRpcMessage::Request(request) => match self.ids.take(id, &request.id) {
                Some(ticket) => Some((request.id.clone(), ticket)),
                None => {
                    let refusal = ServerSseMessage::from_message(id_in_use(&request.id));
                    return Ok(futures_util::stream::iter([refusal]).right_stream());
                }
            },
            _ => None,
        };
        match (self.local.create_stream(id, message).await, taken) {
            (Ok(stream), Some((request_id, ticket))) => {
                let ids = Arc::clone(&self.ids);
                Ok(freed_at_answer(stream, ids, id.clone(), request_id, ticket)
                    .left_stream()
                    .left_stream())
            }
            (Ok(stream), None) => Ok(stream.right_stream().left_stream()),
            (Err(err), taken) => {
                if let Some((request_id, ticket)) = taken {
                    self.ids.release(id, &request_id, ticket);
                }
                Err(err.into())
            }
        }
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        // A cancel of a request in flight cancels its call here: rmcp would free its id.
        if self.ids.cancels(id, &message) {
            return Ok(());
        }
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.resume(id, last_event_id).await?)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        None
    }
}

/// The axum middleware around rmcp: the request's principal for the caps, 503 or 429 with
/// `Retry-After` for an `initialize` past one, and 204 for a `DELETE` that ended a session (rmcp
/// answers 202, which the official Python client logs as "Session termination failed: 202").
pub(crate) async fn admit(request: Request, next: Next) -> Response {
    let principal = request
        .extensions()
        .get::<VerifiedToken>()
        .and_then(|token| token.subject.as_deref().or(token.client_id.as_deref()))
        .map(Arc::from);
    let deleting = request.method() == Method::DELETE;
    let admission = Arc::new(Admission {
        principal,
        refused: Mutex::new(None),
    });
    let mut response = ADMISSION.scope(admission.clone(), next.run(request)).await;
    let refused = *admission
        .refused
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    match refused {
        Some(Refusal::Total) => refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            "Service Unavailable: this MCP server has as many sessions as it allows; \
             end one (DELETE) or try again later",
        ),
        Some(Refusal::Principal) => refusal(
            StatusCode::TOO_MANY_REQUESTS,
            "Too Many Requests: this principal has as many MCP sessions as it may; \
             end one (DELETE) or try again later",
        ),
        None => {
            if deleting && response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::NO_CONTENT;
            }
            response
        }
    }
}

fn refusal(status: StatusCode, text: &'static str) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::RETRY_AFTER,
        HeaderValue::from_static(RETRY_AFTER_SECONDS),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_count_in_all_and_per_principal_and_places_come_back() {
        let sessions = Sessions::new(3, 2);
        let id = |n: u8| SessionId::from(format!("s{n}"));
        let (alice, bob): (Option<Arc<str>>, Option<Arc<str>>) =
            (Some("alice".into()), Some("bob".into()));
        assert_eq!(sessions.take(&id(1), alice.clone()), Ok(()));
        assert_eq!(sessions.take(&id(2), alice.clone()), Ok(()));
        assert_eq!(
            sessions.take(&id(3), alice.clone()),
            Err(Refusal::Principal)
        );
        assert_eq!(sessions.take(&id(3), bob.clone()), Ok(()));
        assert_eq!(sessions.take(&id(4), bob.clone()), Err(Refusal::Total));
        sessions.give_back(&id(1));
        sessions.give_back(&id(1)); // twice (a DELETE, then the worker's end) counts once
        assert_eq!(sessions.len(), 2);
        assert_eq!(sessions.take(&id(4), alice), Ok(()));
        // No one in particular: the total only.
        assert_eq!(sessions.take(&id(5), None), Err(Refusal::Total));
        sessions.give_back(&id(4));
        assert_eq!(sessions.take(&id(5), None), Ok(()));
    }
}
