//! A paused run as plain data ([`RunState`]): what the loop needs to go on in this process or
//! another, and the decisions taken on its waiting calls before it resumes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use pi_tool::{ToolResult, WaitKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::Message;
use crate::wait::NestedWait;
use crate::wait::{Decision, WaitingCall};

/// The newest format version this build writes and reads. A state of a newer format is
/// refused.
///
/// Format 2 added [`RunState::nested`] (calls that wait because a call they made from code
/// waits). A state without such calls is still written as format 1, which earlier builds read;
/// this build reads both.
pub const RUN_STATE_FORMAT: u32 = 2;

/// The oldest format this build reads (and the one it writes for a state without nested waits).
pub(crate) const FIRST_RUN_STATE_FORMAT: u32 = 1;

/// Whether this build reads a state of `format`.
pub(crate) fn reads_format(format: u32) -> bool {
    (FIRST_RUN_STATE_FORMAT..=RUN_STATE_FORMAT).contains(&format)
}

/// The format a state with these nested waits is written in: the first one when it has none
/// (so that earlier builds still read it), else the one that added them.
pub(crate) fn format_for(nested: &BTreeMap<String, NestedWait>) -> u32 {
    if nested.is_empty() {
        FIRST_RUN_STATE_FORMAT
    } else {
        RUN_STATE_FORMAT
    }
}

/// A paused run: the transcript, the calls that wait, the tools the run loaded, its counters,
/// and the decisions taken so far. Plain data (serde): no closures; on resume the tools are
/// found again by name in the resuming process's context.
///
/// A run that paused gives one ([`AgentStream::take_paused`](crate::AgentStream::take_paused));
/// decide each waiting call, then resume it ([`agent_loop_resume`](crate::agent_loop_resume),
/// [`Agent::resume`](crate::Agent::resume)), in this process or after storing it
/// ([`RunStore`](crate::RunStore)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunState {
    /// The format it was written in: 1, or [`RUN_STATE_FORMAT`] when it has nested waits.
    pub format: u32,
    /// The system prompt.
    pub system_prompt: String,
    /// The whole transcript; it ends with the assistant message whose calls wait, then the
    /// results of the calls of that message that did not wait.
    pub messages: Vec<Arc<Message>>,
    /// The calls that wait, in call order.
    pub waiting: Vec<WaitingCall>,
    /// The waiting calls that wait because a call they made from code waits, by the outer
    /// call's id: the nested call, and the journal of the nested calls that completed before
    /// it (format 2).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nested: BTreeMap<String, NestedWait>,
    /// Tools the run activated from its registry (`added_tool_names`), activated again on
    /// resume. Deferred tools a search loaded are found again from the transcript.
    #[serde(default)]
    pub activated_tools: Vec<String>,
    /// Model requests made so far.
    #[serde(default)]
    pub requests: u64,
    /// The decisions taken, by call id.
    #[serde(default)]
    pub decisions: BTreeMap<String, Decision>,
    /// Approved calls a store recorded as started (exactly-once bookkeeping; see
    /// [`RunClaim`](crate::RunClaim)).
    #[serde(default)]
    pub started: BTreeSet<String>,
    /// Results of decided calls that finished but are not in `messages` yet (written by a
    /// store as each call finishes), by call id.
    #[serde(default)]
    pub finished: BTreeMap<String, Arc<Message>>,
    /// How often the stored run changed (0 for a state never stored): a store refuses to
    /// resume a state loaded before the run changed.
    #[serde(default)]
    pub revision: u64,
}

/// Why a decision or a resume was refused. Nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// No waiting call has this id.
    #[error("no waiting call has the id `{0}`")]
    UnknownCall(String),
    /// The call was decided already.
    #[error("the call `{0}` was decided already")]
    AlreadyDecided(String),
    /// An answer was given for a call waiting for approval, or an approval for an external one.
    #[error("the call `{id}` waits for {expected}; `{given}` does not settle it")]
    WrongDecision {
        /// The call.
        id: String,
        /// What it waits for.
        expected: &'static str,
        /// The decision given.
        given: &'static str,
    },
    /// Calls are undecided and the resume did not ask to leave them waiting.
    #[error("calls still wait for a decision: {}", .0.join(", "))]
    Undecided(Vec<String>),
    /// A call to run names a tool the resuming context does not have.
    #[error("the call `{id}` names the tool `{tool}`, which this context does not have")]
    ToolGone {
        /// The call.
        id: String,
        /// Its tool.
        tool: String,
    },
    /// The arguments of a call to run do not validate (any more) against its tool.
    #[error("the arguments of the call `{id}` no longer validate: {message}")]
    InvalidArguments {
        /// The call.
        id: String,
        /// The validation error.
        message: String,
    },
    /// The state was written by a newer (or unknown) format.
    #[error("the run state has format {found}; this build reads formats 1 to {RUN_STATE_FORMAT}")]
    UnsupportedFormat {
        /// The format found.
        found: u32,
    },
    /// The agent is running: it resumes once idle.
    #[error("the agent is running; resume once it is idle")]
    AgentBusy,
    /// The store's claim could not record the decisions.
    #[error("the run store could not record the decisions: {0}")]
    Store(String),
    /// The state is not a paused run (it waits for nothing).
    #[error("the run state has no waiting call: there is nothing to resume")]
    NotPaused,
}

impl RunState {
    /// The calls that wait.
    pub fn waiting(&self) -> &[WaitingCall] {
        &self.waiting
    }

    /// The waiting calls no decision was taken for yet.
    pub fn undecided(&self) -> impl Iterator<Item = &WaitingCall> {
        self.waiting
            .iter()
            .filter(|call| !self.decisions.contains_key(&call.id))
    }

    /// Records a decision for the waiting call `id`.
    ///
    /// # Errors
    ///
    /// An unknown call, a second decision for the same call, or a decision that does not fit
    /// the call (an approval for an external call; an external call is settled only by
    /// [`answer`](Self::answer) or [`deny`](Self::deny)). The state is unchanged.
    pub fn decide(&mut self, id: &str, decision: Decision) -> Result<(), ResumeError> {
        let call = self
            .waiting
            .iter()
            .find(|call| call.id == id)
            .ok_or_else(|| ResumeError::UnknownCall(id.to_owned()))?;
        if self.decisions.contains_key(id) {
            return Err(ResumeError::AlreadyDecided(id.to_owned()));
        }
        if call.kind == WaitKind::External && decision.runs() {
            return Err(ResumeError::WrongDecision {
                id: id.to_owned(),
                expected: "an answer from outside",
                given: "approve",
            });
        }
        self.decisions.insert(id.to_owned(), decision);
        Ok(())
    }

    /// Approves the call `id`: it runs with the arguments it waited with.
    ///
    /// # Errors
    ///
    /// As [`decide`](Self::decide).
    pub fn approve(&mut self, id: &str) -> Result<(), ResumeError> {
        self.decide(id, Decision::Approve)
    }

    /// Approves the call `id` with other arguments (validated again when it runs).
    ///
    /// # Errors
    ///
    /// As [`decide`](Self::decide).
    pub fn approve_with(&mut self, id: &str, arguments: Value) -> Result<(), ResumeError> {
        self.decide(id, Decision::ApproveWith { arguments })
    }

    /// Denies the call `id`: the model gets an error result with `reason`.
    ///
    /// # Errors
    ///
    /// As [`decide`](Self::decide).
    pub fn deny(&mut self, id: &str, reason: impl Into<String>) -> Result<(), ResumeError> {
        self.decide(
            id,
            Decision::Deny {
                reason: reason.into(),
            },
        )
    }

    /// Answers the call `id` with `result` (an external tool's answer).
    ///
    /// # Errors
    ///
    /// As [`decide`](Self::decide).
    pub fn answer(&mut self, id: &str, result: ToolResult) -> Result<(), ResumeError> {
        self.decide(id, Decision::Answer { result })
    }

    /// Reads a state from JSON, refusing a newer or unknown format with
    /// [`ResumeError::UnsupportedFormat`] (the JSON error otherwise).
    ///
    /// # Errors
    ///
    /// Text that is not a run state, or a format this build does not read.
    pub fn from_json(text: &str) -> Result<RunState, RunStateReadError> {
        #[derive(Deserialize)]
        struct Header {
            format: u32,
        }
        let header: Header = serde_json::from_str(text).map_err(RunStateReadError::Json)?;
        if !reads_format(header.format) {
            return Err(RunStateReadError::Format(ResumeError::UnsupportedFormat {
                found: header.format,
            }));
        }
        serde_json::from_str(text).map_err(RunStateReadError::Json)
    }

    /// The state as JSON.
    pub fn to_json(&self) -> String {
        // A state holds only JSON values and strings: it always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Why [`RunState::from_json`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunStateReadError {
    /// Not JSON, or not a run state.
    #[error("not a run state: {0}")]
    Json(serde_json::Error),
    /// A format this build does not read.
    #[error(transparent)]
    Format(ResumeError),
}
