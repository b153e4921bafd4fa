//! The script's tool calls, run on the engine's own thread. Each is a nested call
//! ([`ToolContext::call_tool`]) through the host's pipeline, polled right there, inside the
//! host's tokio runtime (so the tools' timers, I/O and the blocking pool work as on the host),
//! and the thread parks while none is ready. A call that finishes when first polled (most do)
//! costs no hand-off between threads; one that waits wakes the engine through its waker.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Instant;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use pi_tool::{BoxFuture, ToolContext, ToolResult, UpdateSink};
use serde_json::{Value, json};
use tokio::runtime::Handle;

/// The calls of one script that are running.
pub(crate) struct Calls<'a> {
    /// The `code` call's context: the parent of every call.
    ctx: &'a ToolContext,
    runtime: &'a Handle,
    running: FuturesUnordered<Tagged<'a>>,
    /// Unparks the engine's thread.
    waker: Waker,
}

impl<'a> Calls<'a> {
    /// Calls made from the current thread (the engine's), which their wake-ups unpark.
    pub(crate) fn new(ctx: &'a ToolContext, runtime: &'a Handle) -> Self {
        Calls {
            ctx,
            runtime,
            running: FuturesUnordered::new(),
            waker: Waker::from(Arc::new(Unpark(thread::current()))),
        }
    }

    /// Starts a call; it first runs at the next [`Calls::ready`].
    pub(crate) fn start(&mut self, id: u64, name: Arc<str>, arguments: Value) {
        let mut call = self.ctx.call_tool(&*name, arguments);
        if self.ctx.has_update_sink() {
            call = call.on_update(progress(self.ctx, name, id));
        }
        let call = call.into_future();
        self.running.push(Tagged { id, call });
    }

    /// Whether no call is running.
    pub(crate) fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Runs the calls that can go on, and returns those that finished (id and result).
    pub(crate) fn ready(&mut self) -> Vec<(u64, ToolResult)> {
        let _entered = self.runtime.enter();
        let mut cx = Context::from_waker(&self.waker);
        let mut ready = Vec::new();
        while let Poll::Ready(Some(done)) = self.running.poll_next_unpin(&mut cx) {
            ready.push(done);
        }
        ready
    }

    /// Parks the thread until a call wakes it, `deadline` passes or the host unparks it (an
    /// abort). It may also wake for nothing: the caller looks again.
    pub(crate) fn park_until(&self, deadline: Instant) {
        thread::park_timeout(deadline.saturating_duration_since(Instant::now()));
    }
}

impl Drop for Calls<'_> {
    /// Calls still running are cancelled by dropping them, inside the runtime their timers and
    /// tasks belong to.
    fn drop(&mut self) {
        let _entered = self.runtime.enter();
        self.running.clear();
    }
}

/// A call with the id the script knows it by.
struct Tagged<'a> {
    id: u64,
    call: BoxFuture<'a, ToolResult>,
}

impl Future for Tagged<'_> {
    type Output = (u64, ToolResult);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let id = self.id;
        self.call.as_mut().poll(cx).map(|result| (id, result))
    }
}

struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// A child's partial results as progress of the `code` call, tagged with the tool.
fn progress(ctx: &ToolContext, name: Arc<str>, id: u64) -> UpdateSink {
    let ctx = ctx.clone();
    Arc::new(move |partial: ToolResult| {
        let details = json!({ "tool": &*name, "call": id, "details": partial.details });
        ctx.update(ToolResult::new(partial.content, details));
    })
}
