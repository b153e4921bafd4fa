//! Makes the transcript a durable session stores the same on every replay.
//!
//! The loop stamps messages with the wall clock (a tool result's `timestamp` and `duration_ms`,
//! a prompt's `timestamp`). Restate checks that a replayed handler writes the same state, so
//! the stamps of the first execution are journaled once and put back on every replay.

use std::sync::Arc;

use pi_runtime::Message;
use serde::{Deserialize, Serialize};

/// The clock-derived fields of one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stamp {
    timestamp: i64,
    duration_ms: Option<u64>,
}

/// The stamps of `messages`, in order.
pub(crate) fn stamps_of(messages: &[Arc<Message>]) -> Vec<Stamp> {
    messages
        .iter()
        .map(|message| match &**message {
            Message::User(user) => Stamp {
                timestamp: user.timestamp,
                duration_ms: None,
            },
            Message::Assistant(assistant) => Stamp {
                timestamp: assistant.timestamp,
                duration_ms: None,
            },
            Message::ToolResult(result) => Stamp {
                timestamp: result.timestamp,
                duration_ms: result.duration_ms,
            },
            Message::Custom(custom) => Stamp {
                timestamp: custom.timestamp,
                duration_ms: None,
            },
        })
        .collect()
}

/// Puts journaled stamps back on `messages` (a replay produces the same messages in the same
/// order, so they pair up one to one; extra messages on either side are left alone).
pub(crate) fn apply_stamps(messages: Vec<Arc<Message>>, stamps: &[Stamp]) -> Vec<Message> {
    messages
        .into_iter()
        .zip(stamps.iter().map(Some).chain(std::iter::repeat(None)))
        .map(|(message, stamp)| {
            let mut message = Arc::unwrap_or_clone(message);
            if let Some(stamp) = stamp {
                match &mut message {
                    Message::User(user) => user.timestamp = stamp.timestamp,
                    Message::Assistant(assistant) => assistant.timestamp = stamp.timestamp,
                    Message::ToolResult(result) => {
                        result.timestamp = stamp.timestamp;
                        result.duration_ms = stamp.duration_ms;
                    }
                    Message::Custom(custom) => custom.timestamp = stamp.timestamp,
                }
            }
            message
        })
        .collect()
}
