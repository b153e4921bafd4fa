//! What a resumed run knows about the calls that waited: the decisions, the results a store
//! recorded before a crash, the calls recorded as started, and the journal that records more.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use pi_tool::{Replay, ToolResult};
use serde_json::Value;

use super::context::ToolSet;
use super::nested_wait::NestedResume;
use crate::event::ToolCallRef;
use crate::message::{Message, ToolResultMessage};
use crate::wait::Decision;

/// Where a resumed run records that an approved call starts and what it returned, before and
/// after it runs, so that a crash in between never runs a finished call again. A store's claim
/// on a run implements it.
pub(crate) trait CallJournal: Send + Sync {
    /// Records that the call `id` is about to run; an error keeps it from running.
    fn started(&self, id: &str) -> Result<(), String>;
    /// Records the result of the call `id`.
    fn finished(&self, id: &str, result: &Arc<Message>) -> Result<(), String>;
}

/// The decided calls of a resumed run's first batch.
pub(crate) struct Resumed {
    /// The ids of the calls that waited (only these run in the resumed batch).
    pub(crate) waiting: BTreeSet<String>,
    pub(crate) decisions: BTreeMap<String, Decision>,
    /// Results a store recorded for calls that finished before the process stopped.
    pub(crate) finished: BTreeMap<String, Arc<Message>>,
    /// Calls a store recorded as started (and that may have been interrupted).
    pub(crate) started: BTreeSet<String>,
    pub(crate) journal: Option<Arc<dyn CallJournal>>,
    /// What the calls that waited on a call they made from code replay (`None`: no such call).
    pub(crate) nested: Option<Arc<NestedResume>>,
}

/// What a decision settles about a call before it is prepared.
pub(super) enum Settled<'a> {
    /// Nothing: prepare it as usual (approved, or still undecided).
    No,
    /// Its result is known: denied, answered, recorded, or interrupted and not to run again.
    Result(Box<ToolResult>),
    /// Approved with these arguments instead of the model's.
    RunWith(&'a Value),
}

impl Resumed {
    /// Whether the call waited (calls of the message that did not are answered already).
    pub(crate) fn is_waiting(&self, id: &str) -> bool {
        self.waiting.contains(id)
    }

    /// Whether the call was approved (it runs without asking again). A call that waited on a
    /// call it made from code runs again whatever was decided: the decision is its nested
    /// call's.
    pub(super) fn approved(&self, id: &str) -> bool {
        self.decisions.get(id).is_some_and(Decision::runs) || self.waits_on_nested(id)
    }

    /// Whether the call waited on a call it made from code.
    fn waits_on_nested(&self, id: &str) -> bool {
        self.nested
            .as_ref()
            .is_some_and(|nested| nested.waits.contains_key(id))
    }

    /// What the decision on `call` settles.
    pub(super) fn settled<'a>(&'a self, call: &ToolCallRef, tools: &ToolSet) -> Settled<'a> {
        let id = call.id();
        if let Some(Message::ToolResult(recorded)) = self.finished.get(id).map(Arc::as_ref) {
            return Settled::Result(Box::new(recorded_result(recorded)));
        }
        let nested = self.waits_on_nested(id);
        let arguments = match self.decisions.get(id) {
            // The decision is the nested call's: this call runs again.
            _ if nested => None,
            None => return Settled::No,
            Some(Decision::Deny { reason }) => {
                return Settled::Result(Box::new(ToolResult::error(Decision::denied_message(
                    call.name(),
                    reason,
                ))));
            }
            Some(Decision::Answer { result }) => return Settled::Result(Box::new(result.clone())),
            Some(Decision::Approve) => None,
            Some(Decision::ApproveWith { arguments }) => Some(arguments),
        };
        if self.started.contains(id) {
            let never = tools
                .get(call.name())
                .is_some_and(|tool| tool.replay() == Some(Replay::Never));
            if never {
                return Settled::Result(Box::new(ToolResult::error(interrupted_message(
                    call.name(),
                    id,
                ))));
            }
        }
        arguments.map_or(Settled::No, Settled::RunWith)
    }

    /// Records that an approved call starts; `Err` is the error result it gets instead.
    pub(super) fn record_start(&self, id: &str, tool: &str) -> Result<(), Box<ToolResult>> {
        match &self.journal {
            Some(journal) if self.approved(id) => journal.started(id).map_err(|err| {
                Box::new(ToolResult::error(format!(
                    "Tool {tool} was not run: recording that it starts failed: {err}"
                )))
            }),
            _ => Ok(()),
        }
    }

    /// Records a decided call's result (a failure is logged: the call has run).
    pub(super) fn record_result(&self, id: &str, message: &Arc<Message>) {
        if let Some(journal) = &self.journal
            && self.decisions.contains_key(id)
            && let Err(err) = journal.finished(id, message)
        {
            tracing::error!("recording the result of the resumed call `{id}` failed: {err}");
        }
    }
}

/// The result of an approved `replay = "never"` call that was interrupted: it is not run again.
pub(crate) fn interrupted_message(tool: &str, id: &str) -> String {
    format!(
        "Tool {tool} was interrupted: the process stopped after the approved call {id} started and \
         before its result was recorded, and the tool must not run twice (replay = \"never\"), so \
         it was not run again. Whether it took effect is unknown; check before retrying."
    )
}

/// The result a run store recorded for a finished call, to answer it again without running it.
pub(super) fn recorded_result(recorded: &ToolResultMessage) -> ToolResult {
    let mut result = ToolResult::new(recorded.content.clone(), recorded.details.clone());
    result.is_error = recorded.is_error;
    result
}
