#![doc = include_str!("../README.md")]

mod approval;
mod driver;
mod durable_model;
mod durable_tool;
mod error;
mod inbox;
mod journal;
pub mod local;
pub mod loopback_http;
#[cfg(test)]
mod probe_tool;
mod remote_tool;
mod serve;
mod session;
mod stamps;
mod tool_service;

pub use approval::{AnnounceApproval, Approval, ApprovalDecision, ApprovalRequest, NeedsApproval};
pub use durable_model::DurableModel;
pub use durable_tool::{DurableTool, idempotency_key};
pub use error::StepError;
pub use inbox::{INBOX_OBJECT, PiSessionInbox};
pub use remote_tool::{RemoteTool, RemoteToolSpec};
pub use serve::{bind, serve};
pub use session::{PiSession, PromptRequest, RUNNING_KEY, RunOutcome, TRANSCRIPT_KEY};
pub use tool_service::{PiTools, RemoteCall, TOOL_SERVICE};

/// The Restate SDK this crate is built on (its `Endpoint` binds the services; [`serve`] serves
/// it as its `HttpServer` does, on connections without Nagle's delay).
pub use restate_sdk;
