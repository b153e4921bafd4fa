//! Calls that wait: what the loop reports about a call it did not run because it needs a
//! decision ([`WaitingCall`]), and the decisions that settle it ([`Decision`]).

use pi_tool::{ToolResult, WaitKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A call the loop did not run: it waits for approval, or for an answer from outside.
///
/// Nothing is in the transcript for it until it is decided: the model never sees a placeholder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WaitingCall {
    /// The call's id (as the model sent it).
    pub id: String,
    /// The called tool.
    pub tool: String,
    /// The arguments as they would run: after `prepare_arguments`, validation and any
    /// `before_tool_call` replacement.
    pub arguments: Value,
    /// Why it waits, for the person (or system) deciding.
    pub reason: String,
    /// Approval, or an answer from outside.
    pub kind: WaitKind,
}

impl WaitingCall {
    /// A waiting call.
    pub fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        arguments: Value,
        reason: impl Into<String>,
        kind: WaitKind,
    ) -> Self {
        WaitingCall {
            id: id.into(),
            tool: tool.into(),
            arguments,
            reason: reason.into(),
            kind,
        }
    }
}

/// What was decided about a waiting call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// Run it with the arguments it waited with.
    Approve,
    /// Run it with these arguments instead (validated again, as the model's would be).
    ApproveWith {
        /// The arguments to run with.
        arguments: Value,
    },
    /// Do not run it: the model gets an error result with the reason.
    Deny {
        /// Why, for the model.
        reason: String,
    },
    /// The call's result, given from outside (an external tool's answer; also allowed for a
    /// call waiting for approval, which then does not run).
    Answer {
        /// The result the model gets.
        result: ToolResult,
    },
}

impl Decision {
    /// Whether the call runs.
    pub fn runs(&self) -> bool {
        matches!(self, Decision::Approve | Decision::ApproveWith { .. })
    }

    /// The text of a denied call's result.
    pub(crate) fn denied_message(tool: &str, reason: &str) -> String {
        format!("Tool {tool} was not run: the call was denied: {reason}")
    }
}
