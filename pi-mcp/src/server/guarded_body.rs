//! A response body that holds something until the answer has been sent or dropped: a request
//! counted as in flight on its connection. An SSE answer lasts as long as its stream. (A
//! JSON-RPC id in use in its session is held longer, until its call has answered: see
//! `request_ids`.)

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use http_body::{Body as HttpBody, Frame, SizeHint};

/// `body`, holding `guard` until it is sent in full or dropped.
pub(crate) fn with_guard<G: Send + Sync + Unpin + 'static>(body: Body, guard: G) -> Body {
    Body::new(Guarded {
        body,
        _guard: guard,
    })
}

struct Guarded<G> {
    body: Body,
    _guard: G,
}

impl<G: Unpin> HttpBody for Guarded<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
