//! The handler side of the journal bridge: turns each step the loop sends into one Restate
//! journal entry, while the loop itself runs on the same task.

use std::future::Future;
use std::pin::pin;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesUnordered;
use pi_tool::CancellationToken;
use restate_sdk::context::{
    ContextAwakeables, ContextClient, ContextSideEffects, ObjectContext, RequestTarget, RunFuture,
};
use restate_sdk::errors::{HandlerError, TerminalError};
use restate_sdk::serde::Json;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::error::StepError;
use crate::journal::{StepKind, StepRequest, Target};

/// Runs `run` (the agent loop) to its end, executing every step it sends through Restate.
///
/// Steps run concurrently (a parallel batch stays parallel) and enter the journal in the order
/// they arrive: the loop sends them in source order, the queue below polls new entries in push
/// order, so the journal order is the same on every replay. A step Restate reports as cancelled
/// (the invocation was aborted) cancels `abort`, so the loop ends as `Aborted`.
pub(crate) async fn drive<'ctx, R>(
    ctx: &ObjectContext<'ctx>,
    mut steps: UnboundedReceiver<StepRequest>,
    run: impl Future<Output = R>,
    abort: &CancellationToken,
) -> R {
    let mut run = pin!(run);
    let mut pending: FuturesUnordered<BoxFuture<'ctx, ()>> = FuturesUnordered::new();
    loop {
        tokio::select! {
            biased;
            Some(step) = steps.recv() => pending.push(execute(ctx, step, abort.clone())),
            Some(()) = pending.next(), if !pending.is_empty() => {}
            out = &mut run => return out,
        }
    }
}

fn execute<'ctx>(
    ctx: &ObjectContext<'ctx>,
    step: StepRequest,
    abort: CancellationToken,
) -> BoxFuture<'ctx, ()> {
    let StepRequest { kind, outcome } = step;
    let work: BoxFuture<'ctx, Result<Value, TerminalError>> = match kind {
        StepKind::Run { name, go, done } => {
            let run = ctx
                .run(move || async move {
                    let _ = go.send(());
                    match done.await {
                        Ok(Ok(value)) => Ok(Json(value)),
                        Ok(Err(message)) => Err(HandlerError::from(TerminalError::new(message))),
                        // The loop dropped the step (its run was aborted): record that, rather
                        // than retry a step nobody waits for.
                        Err(_) => {
                            Err(TerminalError::new("the step was abandoned by the loop").into())
                        }
                    }
                })
                .name(name);
            Box::pin(async move { run.await.map(Json::into_inner) })
        }
        StepKind::Call {
            target,
            payload,
            idempotency_key,
        } => {
            let target = match target {
                Target::Service { name, handler } => RequestTarget::service(name, handler),
                Target::Object { name, key, handler } => RequestTarget::object(name, key, handler),
            };
            let mut request = ctx.request::<Json<Value>, Json<Value>>(target, Json(payload));
            if let Some(key) = idempotency_key {
                request = request.idempotency_key(key);
            }
            let call = request.call();
            Box::pin(async move { call.await.map(Json::into_inner) })
        }
        StepKind::Awakeable { announce } => {
            let (id, promise) = ctx.awakeable::<Json<Value>>();
            let announced = ctx
                .run(move || async move { announce(id).await.map_err(HandlerError::from) })
                .name("announce-awakeable");
            Box::pin(async move {
                announced.await?;
                promise.await.map(Json::into_inner)
            })
        }
    };
    Box::pin(async move {
        let result = work.await.map_err(StepError::from);
        if result.as_ref().is_err_and(StepError::is_cancelled) {
            abort.cancel();
        }
        let _ = outcome.send(result);
    })
}
