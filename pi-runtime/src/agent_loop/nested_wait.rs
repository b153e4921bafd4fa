//! Nested calls that wait, in the loop: what one batch records of the nested calls each of its
//! calls made (a journal of those that completed, the values recorded for a replay, the one
//! that paused the run), and what a resumed batch replays from a [`NestedWait`].
//!
//! A nested call that needs a decision is put to the approver; when none decides (or the
//! timeout says pause), the nested call is answered with an error, every later nested call of
//! the same outer call is refused, and the outer call, once it returns, becomes a waiting call
//! whose [`NestedWait`] holds the journal. On resume the outer call runs again: each nested
//! call is matched by its id (its place in the order the code made its calls) against the
//! journal, answered from it when its tool and arguments are the ones recorded, and refused
//! with a clear error (which becomes the outer call's result) when they are not.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use pi_tool::{Replay, ToolCall, ToolResult};
use serde_json::Value;

use super::resume::{CallJournal, interrupted_message, recorded_result};
use crate::message::{Message, ToolResultMessage};
use crate::wait::{Decision, WaitingCall};
use crate::wait::{NestedCallRecord, NestedWait, diverged_message};

/// The id of the top-level call a nested call of `depth` with this `id` descends from: child
/// ids are `<parent id>/<number>`, so it is `id` without its last `depth` parts.
pub(super) fn root_id(id: &str, depth: u32) -> &str {
    let mut root = id;
    for _ in 0..depth {
        match root.rsplit_once('/') {
            Some((parent, _)) => root = parent,
            None => break,
        }
    }
    root
}

/// What a resumed run replays: the nested waits of the calls that run again, with their
/// decisions, and what a store recorded of the approved nested calls before a crash.
pub(crate) struct NestedResume {
    /// By outer call id: what it waited on, and the decision (`None`: left undecided, the call
    /// runs again and waits again at the same place).
    pub(crate) waits: BTreeMap<String, (NestedWait, Option<Decision>)>,
    /// Results a store recorded for approved nested calls that finished, by nested call id.
    pub(crate) finished: BTreeMap<String, Arc<Message>>,
    /// Approved nested calls a store recorded as started.
    pub(crate) started: BTreeSet<String>,
    /// Where an approved nested call is recorded as started and finished.
    pub(crate) journal: Option<Arc<dyn CallJournal>>,
}

impl NestedResume {
    /// The decided nested call `id` of the outer call `root`, with the wait it settles.
    fn decided(&self, root: &str, id: &str) -> Option<(&NestedWait, Option<&Decision>)> {
        let (wait, decision) = self.waits.get(root)?;
        (wait.call.id == id).then_some((wait, decision.as_ref()))
    }
}

/// How the nested calls of one outer call ended, when it matters to the outer call.
pub(super) enum NestedEnd {
    /// A nested call waits: the outer call waits with it.
    Paused(Box<NestedWait>),
    /// The replay did not make the calls the journal recorded: this is the outer call's error.
    Diverged(String),
}

/// What one batch keeps of its calls' nested calls, by outer call id.
#[derive(Default)]
pub(super) struct NestedRecords {
    roots: Mutex<HashMap<String, RootRecord>>,
}

#[derive(Default)]
struct RootRecord {
    /// The nested calls that completed, in the order they did.
    journal: Vec<NestedCallRecord>,
    values: BTreeMap<String, BTreeMap<String, Value>>,
    /// The nested call that paused the run (as it waits, and its arguments as made).
    paused: Option<(WaitingCall, Value)>,
    diverged: Option<String>,
    /// Nested calls decided (approved) already: a `before_tool_call` suspending one again does
    /// not make it wait twice.
    decided: BTreeSet<String>,
}

impl NestedRecords {
    fn roots(&self) -> MutexGuard<'_, HashMap<String, RootRecord>> {
        self.roots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The refusal of a nested call of `root` made after its run paused or its replay diverged.
    pub(super) fn refusal(&self, root: &str, tool: &str) -> Option<ToolResult> {
        let roots = self.roots();
        let record = roots.get(root)?;
        if let Some((waiting, _)) = &record.paused {
            return Some(ToolResult::error(format!(
                "Tool {tool} was not run: the run pauses for a decision on the call {} ({}) made \
                 from this code; it is run again when the run resumes",
                waiting.id, waiting.tool
            )));
        }
        record.diverged.as_ref().map(|_| {
            ToolResult::error(format!(
                "Tool {tool} was not run: the replay of this code did not make the calls it made \
                 before the run paused"
            ))
        })
    }

    /// Records a completed nested call of `root` (not one whose own nested call paused the
    /// run: its result was made by the pause; `false` then).
    pub(super) fn completed(&self, root: &str, call: &ToolCall, result: &ToolResult) -> bool {
        let mut roots = self.roots();
        let record = roots.entry(root.to_owned()).or_default();
        if let Some((waiting, _)) = &record.paused
            && (waiting.id == call.id
                || waiting
                    .id
                    .strip_prefix(call.id.as_str())
                    .is_some_and(|rest| rest.starts_with('/')))
        {
            return false;
        }
        record.journal.push(NestedCallRecord::new(
            call.id.as_str(),
            call.name.as_str(),
            call.arguments.clone(),
            result.clone(),
        ));
        true
    }

    /// Records that `waiting` (made with `requested`) pauses the run; `false` when another
    /// nested call of the same outer call paused it first.
    pub(super) fn pause(&self, root: &str, waiting: WaitingCall, requested: Value) -> bool {
        let mut roots = self.roots();
        let record = roots.entry(root.to_owned()).or_default();
        if record.paused.is_some() {
            return false;
        }
        record.paused = Some((waiting, requested));
        true
    }

    /// Records that the replay of `root` diverged from its journal.
    fn diverge(&self, root: &str, message: String) {
        let mut roots = self.roots();
        let record = roots.entry(root.to_owned()).or_default();
        record.diverged.get_or_insert(message);
    }

    /// Records that the nested call `id` of `root` was approved.
    pub(super) fn approve(&self, root: &str, id: &str) {
        let mut roots = self.roots();
        roots
            .entry(root.to_owned())
            .or_default()
            .decided
            .insert(id.to_owned());
    }

    /// Whether the nested call `id` of `root` was approved already.
    pub(super) fn approved(&self, root: &str, id: &str) -> bool {
        self.roots()
            .get(root)
            .is_some_and(|record| record.decided.contains(id))
    }

    /// Keeps a value the call `call` of `root` recorded for its replay.
    pub(super) fn record_value(&self, root: &str, call: &str, name: &str, value: Value) {
        let mut roots = self.roots();
        roots
            .entry(root.to_owned())
            .or_default()
            .values
            .entry(call.to_owned())
            .or_default()
            .insert(name.to_owned(), value);
    }

    /// Takes what was kept of the nested calls of the outer call `root`, which returned: how
    /// they ended, if it matters.
    pub(super) fn end(&self, root: &str) -> Option<NestedEnd> {
        let record = self.roots().remove(root)?;
        if let Some(message) = record.diverged {
            return Some(NestedEnd::Diverged(message));
        }
        let (waiting, requested) = record.paused?;
        let mut wait = NestedWait::new(waiting, requested, record.journal);
        wait.values = record.values;
        Some(NestedEnd::Paused(Box::new(wait)))
    }
}

/// What replaying a nested call from a resumed run's journal gave.
pub(super) enum Replayed {
    /// Not in the journal: it runs (an approved call runs without asking again).
    Run,
    /// Its result, without running it.
    Answered(Box<ToolResult>),
}

impl NestedRecords {
    /// Replays the nested call `call` of `root` from `resume`: a recorded result for a call the
    /// journal holds (with the same tool and arguments), the decision on the call that waited,
    /// or [`Replayed::Run`]. A call at a recorded place with another tool or other arguments is
    /// an error, and so is every later call of the outer call.
    pub(super) fn replay(
        &self,
        resume: &NestedResume,
        root: &str,
        call: &ToolCall,
        replay_policy: Option<Replay>,
    ) -> Replayed {
        let Some((wait, _)) = resume.waits.get(root) else {
            return Replayed::Run;
        };
        let diverged = |tool: &str, arguments: &Value| {
            let message = diverged_message(&call.id, tool, arguments, &call.name, &call.arguments);
            self.diverge(root, message.clone());
            Replayed::Answered(Box::new(ToolResult::error(message)))
        };
        if let Some(entry) = wait.journal.iter().find(|entry| entry.id == call.id) {
            if entry.tool != call.name || entry.arguments != call.arguments {
                return diverged(&entry.tool, &entry.arguments);
            }
            return self.answered(root, call, entry.result.clone());
        }
        let Some((wait, decision)) = resume.decided(root, &call.id) else {
            return self.recorded(resume, root, call, replay_policy);
        };
        if wait.call.tool != call.name || wait.requested != call.arguments {
            return diverged(&wait.call.tool, &wait.requested);
        }
        let result = match decision {
            None => return Replayed::Run,
            Some(Decision::Deny { reason }) => {
                ToolResult::error(Decision::denied_message(&call.name, reason))
            }
            Some(Decision::Answer { result }) => result.clone(),
            Some(_) => {
                if let Some(Message::ToolResult(recorded)) =
                    resume.finished.get(&call.id).map(Arc::as_ref)
                {
                    recorded_result(recorded)
                } else if resume.started.contains(&call.id) && replay_policy == Some(Replay::Never)
                {
                    ToolResult::error(interrupted_message(&call.name, &call.id))
                } else {
                    self.approve(root, &call.id);
                    return Replayed::Run;
                }
            }
        };
        self.answered(root, call, result)
    }

    /// A nested call the outer call made after its approved one, in a resume a crash stopped:
    /// the result the store recorded when it finished, the interrupted error when it started
    /// and its tool says `replay = "never"`, else it runs.
    fn recorded(
        &self,
        resume: &NestedResume,
        root: &str,
        call: &ToolCall,
        replay_policy: Option<Replay>,
    ) -> Replayed {
        if let Some(Message::ToolResult(recorded)) = resume.finished.get(&call.id).map(Arc::as_ref)
            && recorded.tool_name == call.name
        {
            return self.answered(root, call, recorded_result(recorded));
        }
        if resume.started.contains(&call.id) && replay_policy == Some(Replay::Never) {
            let result =
                ToolResult::error(interrupted_after_approval_message(&call.name, &call.id));
            return self.answered(root, call, result);
        }
        Replayed::Run
    }

    /// A replayed call's result, kept in the journal again (a later pause keeps it).
    fn answered(&self, root: &str, call: &ToolCall, result: ToolResult) -> Replayed {
        self.completed(root, call, &result);
        Replayed::Answered(Box::new(result))
    }
}

/// Whether the outer call `root` runs again in a resumed run that records in a store: its
/// nested calls that run (the approved one and those after it) are recorded as started and
/// finished, so that a crash never runs a finished one again.
pub(super) fn records_in_store(resume: Option<&NestedResume>, root: &str) -> bool {
    resume.is_some_and(|resume| resume.journal.is_some() && resume.waits.contains_key(root))
}

/// The decision a resumed run replays for the nested call `id` of `root`, if it was approved.
pub(super) fn replayed_approval<'r>(
    resume: Option<&'r NestedResume>,
    root: &str,
    id: &str,
) -> Option<&'r Decision> {
    let (_, decision) = resume?.decided(root, id)?;
    decision.filter(|decision| decision.runs())
}

/// Records in the store that a nested call of a resumed outer call starts (the approved one,
/// or one made after it); `Err` is its result instead.
pub(super) fn record_start(resume: Option<&NestedResume>, call: &ToolCall) -> Result<(), String> {
    match resume.and_then(|resume| resume.journal.as_ref()) {
        Some(journal) => journal.started(&call.id).map_err(|err| {
            format!(
                "Tool {} was not run: recording that it starts failed: {err}",
                call.name
            )
        }),
        None => Ok(()),
    }
}

/// Records in the store the result of a nested call of a resumed outer call (a failure is
/// logged: it ran).
pub(super) fn record_finish(resume: Option<&NestedResume>, call: &ToolCall, result: &ToolResult) {
    let Some(journal) = resume.and_then(|resume| resume.journal.as_ref()) else {
        return;
    };
    let timestamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        });
    let message = Arc::new(Message::ToolResult(ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: result.content.clone(),
        details: result.details.clone(),
        is_error: result.is_error,
        duration_ms: None,
        timestamp,
    }));
    if let Err(err) = journal.finished(&call.id, &message) {
        tracing::error!(
            "recording the result of the resumed nested call `{}` failed: {err}",
            call.id
        );
    }
}

/// The error of a nested call made after an approved one, interrupted by a crash, whose tool
/// must not run twice.
fn interrupted_after_approval_message(tool: &str, id: &str) -> String {
    format!(
        "Tool {tool} was interrupted: the process stopped after the call {id} (made from code \
         after an approved call) started and before its result was recorded, and the tool must \
         not run twice (replay = \"never\"), so it was not run again. Whether it took effect is \
         unknown; check before retrying."
    )
}

/// The result a nested call gets when it pauses the run (the outer call's result is not
/// kept: the outer call waits, and runs again on resume).
pub(super) fn pausing_message(tool: &str) -> String {
    format!(
        "Tool {tool} was not run yet: it waits for a decision, and the run pauses here; this \
         code runs again when the run resumes"
    )
}

/// The reason the outer call `outer` (of `tool`) waits: its nested call's.
pub(super) fn outer_reason(nested: &WaitingCall, tool: &str) -> String {
    format!(
        "{} (called from code by {tool}, as its nested call {})",
        nested.reason, nested.id
    )
}
