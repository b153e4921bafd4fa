//! The script's tool calls, run on the engine's own thread. Each is a nested call
//! ([`ToolContext::call_tool`]) through the host's pipeline, polled right there, inside the
//! host's tokio runtime (which the engine's thread enters for its whole run, so the tools'
//! timers, I/O and the blocking pool work as on the host). A call is first polled when the
//! script makes it, as an async function's body starts at once in JavaScript: one that
//! finishes then (most do) settles its promise before the script goes on, with no hand-off
//! between threads and no bookkeeping. One that waits is kept here, and its waker unparks the
//! thread when it can go on.

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

/// The calls of one script that are waiting, and what starts new ones.
pub(crate) struct Calls {
    /// The `code` call's context: the parent of every call.
    ctx: ToolContext,
    waiting: FuturesUnordered<Tagged>,
    /// Unparks the engine's thread.
    waker: Waker,
}

/// How a call's first poll went.
pub(crate) enum Started {
    /// It finished at once.
    Done(ToolResult),
    /// It waits; [`Calls::wait_for`] keeps it.
    Waiting(Call),
}

/// A call that has started and not finished.
pub(crate) struct Call(BoxFuture<'static, ToolResult>);

impl Calls {
    /// Calls made from the current thread (the engine's), which their wake-ups unpark.
    pub(crate) fn new(ctx: ToolContext) -> Self {
        Calls {
            ctx,
            waiting: FuturesUnordered::new(),
            waker: Waker::from(Arc::new(Unpark(thread::current()))),
        }
    }

    /// Starts call `id` of tool `name` and polls it once.
    pub(crate) fn start(&self, id: u64, name: Arc<str>, arguments: Value) -> Started {
        let ctx = self.ctx.clone();
        let mut call: BoxFuture<'static, ToolResult> = Box::pin(async move {
            let mut call = ctx.call_tool(&*name, arguments);
            if ctx.has_update_sink() {
                call = call.on_update(progress(&ctx, name, id));
            }
            call.into_future().await
        });
        match call.as_mut().poll(&mut Context::from_waker(&self.waker)) {
            Poll::Ready(result) => Started::Done(result),
            Poll::Pending => Started::Waiting(Call(call)),
        }
    }

    /// Keeps a call that waits, to settle call `id` when it finishes.
    pub(crate) fn wait_for(&mut self, id: u64, call: Call) {
        self.waiting.push(Tagged { id, call: call.0 });
    }

    /// Cancels the calls that wait (drops them).
    pub(crate) fn cancel_all(&mut self) {
        self.waiting.clear();
    }

    /// Whether no call is waiting.
    pub(crate) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Runs the waiting calls that can go on, and returns those that finished (id and result).
    pub(crate) fn ready(&mut self) -> Vec<(u64, ToolResult)> {
        let mut cx = Context::from_waker(&self.waker);
        let mut ready = Vec::new();
        while let Poll::Ready(Some(done)) = self.waiting.poll_next_unpin(&mut cx) {
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

/// A call with the id the script knows it by.
struct Tagged {
    id: u64,
    call: BoxFuture<'static, ToolResult>,
}

impl Future for Tagged {
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
