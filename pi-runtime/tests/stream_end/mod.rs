//! How a provider's stream ended, for the provider tests: the final message and its stop
//! reason, or the error's text.
#![allow(dead_code)] // Each test file uses what it needs.

use pi_runtime::{AssistantEvent, AssistantMessage, StopReason};

/// The stream's last event: the message with its stop reason (`None` for an error).
pub(crate) fn last(events: &[AssistantEvent]) -> (&AssistantMessage, Option<StopReason>) {
    match events.last() {
        Some(AssistantEvent::Done { message, reason }) => (message, Some(*reason)),
        Some(AssistantEvent::Error { error, .. }) => (error, None),
        other => panic!("the stream did not end: {other:?}"),
    }
}

/// The text of the error the stream ended with (fails when it ended without one).
pub(crate) fn error_text(events: &[AssistantEvent]) -> String {
    let (message, reason) = last(events);
    assert_eq!(reason, None, "expected an error: {message:?}");
    message.error_message.clone().unwrap_or_default()
}
