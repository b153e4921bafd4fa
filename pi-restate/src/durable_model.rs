//! A [`Model`] whose every request is one journaled step.

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use pi_runtime::{AssistantEvent, AssistantMessage, Context, Model, StopReason, StreamOptions};

use crate::journal::Journal;

/// Wraps a model so that each request runs once: its final message is journaled, and a replay
/// after a crash gets that message back without sending the request again.
///
/// The loop sees `Start` and the final `Done`/`Error`: deltas are not journaled (a replay could
/// not repeat them), so listeners of a durable session get whole messages.
pub struct DurableModel {
    inner: Arc<dyn Model>,
    journal: Journal,
}

impl DurableModel {
    pub(crate) fn new(inner: Arc<dyn Model>, journal: Journal) -> Self {
        DurableModel { inner, journal }
    }
}

impl Model for DurableModel {
    fn api(&self) -> &str {
        self.inner.api()
    }

    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn id(&self) -> &str {
        self.inner.id()
    }

    fn accepts_images(&self) -> bool {
        self.inner.accepts_images()
    }

    fn native_tool_search(&self) -> bool {
        self.inner.native_tool_search()
    }

    fn native_code_calls(&self) -> bool {
        self.inner.native_code_calls()
    }

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> BoxStream<'a, AssistantEvent> {
        let request = async move {
            let journaled = self
                .journal
                .run("model", final_message(self.inner.stream(context, options)))
                .await;
            let message = journaled.unwrap_or_else(|err| {
                let reason = if err.is_cancelled() || options.signal.is_cancelled() {
                    StopReason::Aborted
                } else {
                    StopReason::Error
                };
                let mut message = AssistantMessage::new(Vec::new(), reason);
                message.api = self.inner.api().to_owned();
                message.provider = self.inner.provider().to_owned();
                message.model = self.inner.id().to_owned();
                message.error_message = Some(err.to_string());
                message
            });
            replay_events(message)
        };
        stream::once(request).flat_map(stream::iter).boxed()
    }
}

/// Drains a model's stream to its final message (a stream that ends without one counts as an
/// error, as in the loop).
async fn final_message(mut events: BoxStream<'_, AssistantEvent>) -> AssistantMessage {
    let mut last_partial = None;
    while let Some(event) = events.next().await {
        match event {
            AssistantEvent::Done { message, .. } => return message,
            AssistantEvent::Error { error, .. } => return error,
            AssistantEvent::Start { partial } => last_partial = Some(partial),
            _ => {}
        }
    }
    let mut message =
        last_partial.unwrap_or_else(|| AssistantMessage::new(Vec::new(), StopReason::Error));
    message.stop_reason = StopReason::Error;
    message.error_message = Some("the model's stream ended without a final message".into());
    message
}

/// The events the loop needs for a finished message: `Start`, then `Done` or `Error`.
fn replay_events(message: AssistantMessage) -> Vec<AssistantEvent> {
    let mut partial = message.clone();
    partial.content.clear();
    let start = AssistantEvent::Start { partial };
    let end = match message.stop_reason {
        StopReason::Error | StopReason::Aborted => AssistantEvent::Error {
            reason: message.stop_reason,
            error: message,
        },
        reason => AssistantEvent::Done { reason, message },
    };
    vec![start, end]
}
