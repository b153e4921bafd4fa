//! The bridge between the agent loop and a Restate handler's context.
//!
//! The loop's futures must be `Send + 'static` and know nothing of Restate, while a Restate
//! context is borrowed by its handler. So the wrappers ([`DurableModel`](crate::DurableModel),
//! [`DurableTool`](crate::DurableTool), [`RemoteTool`](crate::RemoteTool), the approval hook) send
//! each step to the handler over a channel, and the handler turns it into one journal entry.
//!
//! A `run` step does its work in the wrapper (so a model request borrows its context and a tool
//! streams its updates as usual), but only when the handler's `ctx.run` closure asks for it: on
//! replay Restate answers from the journal, the closure never runs, and neither does the work.

use std::future::Future;

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::error::StepError;

/// What the handler does for one step.
pub(crate) enum StepKind {
    /// `ctx.run`: the wrapper does the work once the handler's closure sends `go`, and hands
    /// the result back on `done`.
    Run {
        name: &'static str,
        go: oneshot::Sender<()>,
        done: oneshot::Receiver<Result<Value, String>>,
    },
    /// A durable request to another Restate handler.
    Call {
        target: Target,
        payload: Value,
        idempotency_key: Option<String>,
    },
    /// An awakeable: `announce` gets its id (inside one journaled step, so it runs once), then
    /// the step waits until someone resolves or rejects it.
    Awakeable { announce: Announce },
}

/// Publishes an awakeable's id (to a queue, a chat, a file): run once, inside `ctx.run`.
pub(crate) type Announce =
    Box<dyn FnOnce(String) -> BoxFuture<'static, Result<(), String>> + Send + 'static>;

/// A Restate handler to call.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// A service handler.
    Service { name: String, handler: String },
    /// A virtual object's handler for one key.
    Object {
        name: String,
        key: String,
        handler: String,
    },
}

/// One step and where its journaled outcome goes.
pub(crate) struct StepRequest {
    pub(crate) kind: StepKind,
    pub(crate) outcome: oneshot::Sender<Result<Value, StepError>>,
}

/// The loop side of the bridge: cheap to clone, one per handler invocation.
#[derive(Clone)]
pub(crate) struct Journal {
    steps: mpsc::UnboundedSender<StepRequest>,
}

impl Journal {
    /// A journal and the receiver the handler drains.
    pub(crate) fn new() -> (Journal, mpsc::UnboundedReceiver<StepRequest>) {
        let (steps, receiver) = mpsc::unbounded_channel();
        (Journal { steps }, receiver)
    }

    /// Sends a step; the request leaves before the first `.await`, so steps reach the handler
    /// in the order the loop first polls them (source order for a parallel batch).
    fn send(&self, kind: StepKind) -> oneshot::Receiver<Result<Value, StepError>> {
        let (outcome, receiver) = oneshot::channel();
        // A closed channel drops `outcome`, and the caller sees `StepError::Detached`.
        let _ = self.steps.send(StepRequest { kind, outcome });
        receiver
    }

    /// Runs `work` as one journaled step, or returns its journaled result without running it.
    pub(crate) async fn run<T, F>(&self, name: &'static str, work: F) -> Result<T, StepError>
    where
        T: Serialize + DeserializeOwned,
        F: Future<Output = T>,
    {
        let (go, go_received) = oneshot::channel();
        let (done_sender, done) = oneshot::channel();
        let outcome = self.send(StepKind::Run { name, go, done });
        // `go` is dropped unsent when the journal already has the result (replay).
        if go_received.await.is_ok() {
            let value = serde_json::to_value(work.await).map_err(|err| err.to_string());
            let _ = done_sender.send(value);
        }
        let value = outcome.await.map_err(|_| StepError::Detached)??;
        serde_json::from_value(value).map_err(|err| StepError::Decode(err.to_string()))
    }

    /// Calls another handler by durable RPC.
    pub(crate) async fn call(
        &self,
        target: Target,
        payload: Value,
        idempotency_key: Option<String>,
    ) -> Result<Value, StepError> {
        let outcome = self.send(StepKind::Call {
            target,
            payload,
            idempotency_key,
        });
        outcome.await.map_err(|_| StepError::Detached)?
    }

    /// Creates an awakeable, announces its id once, and waits for its value.
    pub(crate) async fn awakeable(&self, announce: Announce) -> Result<Value, StepError> {
        let outcome = self.send(StepKind::Awakeable { announce });
        outcome.await.map_err(|_| StepError::Detached)?
    }
}
