//! Calls that wait: what the loop reports about a call it did not run because it needs a
//! decision ([`WaitingCall`]), and the decisions that settle it ([`Decision`]).
//!
//! Both are `pi-tool`'s, shared by every host (a registry's `run_or_wait`, the MCP server,
//! pi-restate): one way to wait, one way to decide.

pub use pi_tool::{Decision, WaitingCall};

mod nested;

pub(crate) use nested::diverged_message;
pub use nested::{NestedCallRecord, NestedWait};
