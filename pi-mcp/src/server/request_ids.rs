//! The JSON-RPC request ids in flight in each HTTP session: an id stays taken until its call's
//! answer has been routed by rmcp's session, whatever the client did meanwhile, and is free
//! before the client can have that answer.
//!
//! rmcp routes an answer to the request stream registered under its id, and replaces the
//! registration when a request with the same id comes: a client that hung up on a call (or
//! cancelled it) and sent its id again would get the old call's answer for the new request,
//! and the old call's end would cancel the new one. So a request whose id is taken is refused
//! (a JSON-RPC error naming the id) until the old call's answer went out to the old stream. A
//! client's `notifications/cancelled` cancels the call here (its token) and is handed to rmcp
//! only when the call has ended: its answer is then dropped (the spec's "should not respond"),
//! rmcp closes the old stream, and only then is the id free.
//!
//! An answered id is freed by whichever comes first: the request's stream handing the answer
//! on towards the client (rmcp's session has routed it then: it handles one event at a time,
//! so a request reusing the id is registered after the answer left), or the session's
//! transport once rmcp's session took the answer (the client hung up: no stream reads it).
//! Freeing it only in the transport let a client that reused the id right after reading the
//! answer be refused: the answer reaches the client while the transport's task still waits to
//! be woken. Each taking of an id has its own [`Ticket`], so the later of the two frees never
//! frees a new request that reused the id in between.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::{Stream, StreamExt};

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ErrorData, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::{RequestContext, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{SessionId, SessionManager};
use tokio_util::sync::CancellationToken;

/// The ids in flight, by session.
#[derive(Default)]
pub(crate) struct RequestIds {
    sessions: Mutex<HashMap<SessionId, HashMap<RequestId, Flight>>>,
    tickets: AtomicU64,
}

/// One taking of a request id: a release names it, so it frees that request's id and never a
/// later request's that reused the id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket(u64);

/// One request in flight: its ticket, the token of its call once the handler runs it, and the
/// client's cancel of it, if any (handed to rmcp once the call ended).
struct Flight {
    ticket: Ticket,
    token: Option<CancellationToken>,
    cancel: Option<ClientJsonRpcMessage>,
}

impl RequestIds {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, HashMap<RequestId, Flight>>> {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether a request with `id` has not been answered yet in `session`.
    pub(crate) fn is_taken(&self, session: &str, id: &RequestId) -> bool {
        self.lock()
            .get(session)
            .is_some_and(|flights| flights.contains_key(id))
    }

    /// Takes `id` in `session`; `None` when a request with it has not been answered yet.
    pub(crate) fn take(&self, session: &SessionId, id: &RequestId) -> Option<Ticket> {
        let mut sessions = self.lock();
        let flights = sessions.entry(session.clone()).or_default();
        if flights.contains_key(id) {
            return None;
        }
        let ticket = Ticket(self.tickets.fetch_add(1, Ordering::Relaxed));
        flights.insert(
            id.clone(),
            Flight {
                ticket,
                token: None,
                cancel: None,
            },
        );
        Some(ticket)
    }

    /// Frees `id` in `session` if `ticket` still holds it: its answer has been routed by rmcp's
    /// session (or the request never got there).
    pub(crate) fn release(&self, session: &SessionId, id: &RequestId, ticket: Ticket) {
        let mut sessions = self.lock();
        if let Some(flights) = sessions.get_mut(session)
            && flights
                .get(id)
                .is_some_and(|flight| flight.ticket == ticket)
        {
            flights.remove(id);
        }
    }

    /// Forgets a session that ended.
    pub(crate) fn forget(&self, session: &SessionId) {
        self.lock().remove(session);
    }

    /// Whether `message` is a client's cancel of a request in flight here: if so its call is
    /// cancelled (now, or when the handler starts it) and the message kept for rmcp.
    pub(crate) fn cancels(&self, session: &SessionId, message: &ClientJsonRpcMessage) -> bool {
        let ClientJsonRpcMessage::Notification(notification) = message else {
            return false;
        };
        let ClientNotification::CancelledNotification(cancelled) = &notification.notification
        else {
            return false;
        };
        let Some(id) = &cancelled.params.request_id else {
            return false;
        };
        let mut sessions = self.lock();
        let Some(flight) = sessions.get_mut(session).and_then(|f| f.get_mut(id)) else {
            return false;
        };
        if let Some(token) = &flight.token {
            token.cancel();
        }
        flight.cancel.get_or_insert_with(|| message.clone());
        true
    }

    /// The ticket of the request `id` being answered, and the client's cancel of it if it sent
    /// one; `None` when no request with `id` is in flight in `session`.
    fn answering(
        &self,
        session: &SessionId,
        id: &RequestId,
    ) -> Option<(Ticket, Option<ClientJsonRpcMessage>)> {
        let sessions = self.lock();
        let flight = sessions.get(session)?.get(id)?;
        Some((flight.ticket, flight.cancel.clone()))
    }

    /// Gives the request of `context` its call's token, so a client's cancel reaches the call;
    /// cancelled at once if the client cancelled it already. Nothing for a request outside an
    /// HTTP session.
    pub(crate) fn attach(&self, context: &RequestContext<RoleServer>) {
        let Some(session) = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
        else {
            return;
        };
        let mut sessions = self.lock();
        let Some(flight) = sessions
            .get_mut(session)
            .and_then(|flights| flights.get_mut(&context.id))
        else {
            return;
        };
        if flight.cancel.is_some() {
            context.ct.cancel();
        }
        flight.token = Some(context.ct.clone());
    }
}

/// What a request whose id is taken is told (a JSON-RPC `-32600`).
pub(crate) fn id_in_use_message(id: &RequestId) -> String {
    format!(
        "Invalid Request: the id {} is already used by a request in flight in this session (a \
         call goes on after its client hangs up, and a cancelled one until it has stopped); \
         each request needs an id of its own",
        serde_json::json!(id)
    )
}

/// The one message a request whose id is taken is answered with, when it got past
/// [`messages`](super::messages)' check (two such requests at once).
pub(crate) fn id_in_use(id: &RequestId) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        ErrorData::invalid_request(id_in_use_message(id), None),
        Some(id.clone()),
    )
}

/// The stream of the request `id` (taken with `ticket`), freeing the id when the request's
/// answer comes out of it, before the answer is written to the client: rmcp's session put it
/// there, so the answer has been routed, and the call has finished.
pub(crate) fn freed_at_answer(
    stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ids: Arc<RequestIds>,
    session: SessionId,
    id: RequestId,
    ticket: Ticket,
) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
    stream.inspect(move |event| {
        let answered = match event.message.as_deref() {
            Some(ServerJsonRpcMessage::Response(response)) => response.id == id,
            Some(ServerJsonRpcMessage::Error(error)) => error.id.as_ref() == Some(&id),
            _ => false,
        };
        if answered {
            ids.release(&session, &id, ticket);
        }
    })
}

/// A session's transport, freeing each request's id once its answer has been handed to the
/// session (rmcp's worker has routed it when `send` returns) if the request's stream did not
/// free it first ([`freed_at_answer`]), or, for a request the client cancelled, once its cancel
/// has been handed over in place of the answer.
pub(crate) struct ReleasingTransport<T> {
    inner: T,
    session: SessionId,
    ids: Arc<RequestIds>,
    local: Arc<LocalSessionManager>,
}

impl<T> ReleasingTransport<T> {
    pub(crate) fn new(
        inner: T,
        session: SessionId,
        ids: Arc<RequestIds>,
        local: Arc<LocalSessionManager>,
    ) -> Self {
        ReleasingTransport {
            inner,
            session,
            ids,
            local,
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for ReleasingTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            ServerJsonRpcMessage::Response(response) => Some(response.id.clone()),
            ServerJsonRpcMessage::Error(error) => error.id.clone(),
            _ => None,
        };
        // Read before the answer goes in, while the id is still this request's.
        let (ticket, cancel) = answered
            .as_ref()
            .and_then(|id| self.ids.answering(&self.session, id))
            .unzip();
        let cancel = cancel.flatten();
        // A cancelled request's answer is not sent; its cancel goes to rmcp, which closes the
        // request's stream (the session handles its messages in order, so a request that
        // reuses the id after the release comes after it).
        let sent = match cancel {
            None => Ok(self.inner.send(item)),
            Some(cancel) => Err(cancel),
        };
        let (ids, session, local) = (
            Arc::clone(&self.ids),
            self.session.clone(),
            Arc::clone(&self.local),
        );
        async move {
            let result = match sent {
                Ok(sent) => sent.await,
                Err(cancel) => {
                    let _ = local.accept_message(&session, cancel).await;
                    Ok(())
                }
            };
            if let (Some(id), Some(ticket)) = (answered, ticket) {
                ids.release(&session, &id, ticket);
            }
            result
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.inner.receive()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.ids.forget(&self.session);
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_release_of_an_answered_request_leaves_the_id_s_new_request_taken() {
        let ids = RequestIds::default();
        let session: SessionId = Arc::from("session");
        let id = RequestId::Number(3);
        let first = ids.take(&session, &id).expect("a free id");
        assert_eq!(ids.take(&session, &id), None, "taken until answered");
        // The stream frees it when the answer comes out; the client reuses the id at once.
        ids.release(&session, &id, first);
        let second = ids.take(&session, &id).expect("free once answered");
        // The first call's transport frees it too, once rmcp took its answer: too late now.
        ids.release(&session, &id, first);
        assert!(
            ids.is_taken(&session, &id),
            "the second request's id was freed"
        );
        ids.release(&session, &id, second);
        assert!(!ids.is_taken(&session, &id));
    }
}
