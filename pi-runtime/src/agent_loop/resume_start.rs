//! Starting a run again from a [`RunState`]: the checks that refuse a bad state before
//! anything changes, and the run's resumed first batch.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use pi_tool::{AgentTool, ArgumentLimits, prepare_call_within};

use super::context::AgentContext;
use super::nested_wait::NestedResume;
use super::resume::{CallJournal, Resumed};
use crate::message::{AssistantContent, Message};
use crate::run_state::{ResumeError, RunState, reads_format};
use crate::store::RunClaim;
use crate::wait::Decision;

/// A paused run to resume: its state (with the decisions taken), and how.
///
/// ```
/// # use pi_runtime::{Resume, RunState};
/// # fn f(state: RunState) {
/// let resume = Resume::new(state).leave_undecided_waiting();
/// # let _ = resume; }
/// ```
#[must_use = "a resume does nothing until it is given to `agent_loop_resume` or `Agent::resume`"]
pub struct Resume {
    pub(crate) state: RunState,
    pub(crate) leave_undecided: bool,
    pub(crate) claim: Option<Arc<dyn RunClaim>>,
}

impl Resume {
    /// Resumes `state`; every waiting call must be decided.
    pub fn new(state: RunState) -> Self {
        Resume {
            state,
            leave_undecided: false,
            claim: None,
        }
    }

    /// Lets undecided calls wait on: the decided ones run, and the run pauses again with the
    /// others (and any new ones) listed.
    pub fn leave_undecided_waiting(mut self) -> Self {
        self.leave_undecided = true;
        self
    }

    /// Records the run in a store as it goes (a claim from [`RunStore::claim`](crate::RunStore::claim)):
    /// the decisions first, then each approved call before it starts and its result when it
    /// finishes (so a crash never runs a finished call again), the messages of each turn, and
    /// the state where the run pauses again or ends.
    pub fn with_claim(mut self, claim: Box<dyn RunClaim>) -> Self {
        self.claim = Some(Arc::from(claim));
        self
    }

    /// The state.
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// Takes the state back.
    pub fn into_state(self) -> RunState {
        self.state
    }
}

impl fmt::Debug for Resume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resume")
            .field("waiting", &self.state.waiting.len())
            .field("decisions", &self.state.decisions.len())
            .field("leave_undecided", &self.leave_undecided)
            .field("claim", &self.claim.is_some())
            .finish()
    }
}

/// A resume that was refused: why, and the resume as it was given (nothing changed).
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct ResumeRefused {
    /// Why.
    pub error: ResumeError,
    /// The resume, unchanged.
    pub resume: Box<Resume>,
}

/// The calls of the paused batch that still have no result in the transcript (after a crash a
/// store may hold more of the run than its pause).
fn unanswered(state: &RunState) -> BTreeSet<String> {
    let mut open: BTreeSet<String> = state.waiting.iter().map(|w| w.id.clone()).collect();
    for message in state.messages.iter().rev() {
        match message.as_ref() {
            Message::ToolResult(result) => {
                open.remove(&result.tool_call_id);
            }
            // The assistant message that made the calls: nothing before it answers them.
            Message::Assistant(assistant)
                if assistant.content.iter().any(|block| {
                    matches!(block, AssistantContent::ToolCall(call) if open.contains(&call.call.id))
                }) =>
            {
                break;
            }
            _ => {}
        }
    }
    open
}

/// Finds the tool of `name` among the context's tools or its registry.
fn find_tool<'a>(context: &'a AgentContext, name: &str) -> Option<&'a Arc<dyn AgentTool>> {
    context
        .tools
        .iter()
        .find(|tool| tool.spec().name == name)
        .or_else(|| {
            context
                .available
                .tools()
                .find(|tool| tool.spec().name == name)
        })
}

/// Checks a resume against the context it resumes in; `Ok` gives what the loop needs.
pub(crate) fn check(
    resume: &Resume,
    context: &AgentContext,
    limits: &ArgumentLimits,
) -> Result<Resumed, ResumeError> {
    let state = &resume.state;
    if !reads_format(state.format) {
        return Err(ResumeError::UnsupportedFormat {
            found: state.format,
        });
    }
    if state.waiting.is_empty() {
        return Err(ResumeError::NotPaused);
    }
    if let Some(id) = state
        .decisions
        .keys()
        .find(|id| !state.waiting.iter().any(|w| &w.id == *id))
    {
        return Err(ResumeError::UnknownCall(id.clone()));
    }
    let open = unanswered(state);
    let undecided: Vec<String> = state
        .undecided()
        .filter(|call| open.contains(&call.id))
        .map(|call| call.id.clone())
        .collect();
    if !undecided.is_empty() && !resume.leave_undecided {
        return Err(ResumeError::Undecided(undecided));
    }
    let calls: BTreeMap<&str, &pi_tool::ToolCall> = state
        .messages
        .iter()
        .filter_map(|m| m.as_assistant())
        .flat_map(|m| m.tool_calls())
        .filter(|block| open.contains(&block.call.id))
        .map(|block| (block.call.id.as_str(), &block.call))
        .collect();
    for waiting in state.waiting.iter().filter(|w| open.contains(&w.id)) {
        let Some(call) = calls.get(waiting.id.as_str()) else {
            return Err(ResumeError::UnknownCall(waiting.id.clone()));
        };
        let decision = state.decisions.get(&waiting.id);
        // A call that waited on a call it made from code runs again whatever was decided.
        let nested = state.nested.get(&waiting.id);
        let runs = nested.is_some() || decision.is_none_or(Decision::runs);
        if !runs || state.finished.contains_key(&waiting.id) {
            continue;
        }
        let Some(tool) = find_tool(context, &call.name) else {
            return Err(ResumeError::ToolGone {
                id: waiting.id.clone(),
                tool: call.name.clone(),
            });
        };
        let arguments = match (nested, decision) {
            (None, Some(Decision::ApproveWith { arguments })) => arguments,
            _ => &call.arguments,
        };
        if let Err(err) = prepare_call_within(tool.as_ref(), arguments, limits) {
            return Err(ResumeError::InvalidArguments {
                id: waiting.id.clone(),
                message: err.message().to_owned(),
            });
        }
        if let Some(nested) = nested
            && decision.is_some_and(Decision::runs)
        {
            check_nested(context, nested, decision, limits)?;
        }
    }
    let journal = resume
        .claim
        .clone()
        .map(|claim| Arc::new(ClaimJournal(claim)) as Arc<dyn CallJournal>);
    // A journal must belong to a call that waits.
    if let Some(id) = state
        .nested
        .keys()
        .find(|id| !state.waiting.iter().any(|w| &w.id == *id))
    {
        return Err(ResumeError::UnknownCall(id.clone()));
    }
    let waits: BTreeMap<String, _> = state
        .nested
        .iter()
        .filter(|(id, _)| open.contains(*id))
        .map(|(id, wait)| (id.clone(), (wait.clone(), state.decisions.get(id).cloned())))
        .collect();
    let nested = (!waits.is_empty()).then(|| {
        Arc::new(NestedResume {
            waits,
            finished: state.finished.clone(),
            started: state.started.clone(),
            journal: journal.clone(),
        })
    });
    Ok(Resumed {
        nested,
        waiting: open,
        decisions: state.decisions.clone(),
        finished: state.finished.clone(),
        started: state.started.clone(),
        journal,
    })
}

/// Checks the approved nested call of a call that waited on it: its tool is still there and
/// takes the arguments it runs with.
fn check_nested(
    context: &AgentContext,
    nested: &crate::wait::NestedWait,
    decision: Option<&Decision>,
    limits: &ArgumentLimits,
) -> Result<(), ResumeError> {
    let call = &nested.call;
    let Some(tool) = find_tool(context, &call.tool) else {
        return Err(ResumeError::ToolGone {
            id: call.id.clone(),
            tool: call.tool.clone(),
        });
    };
    let arguments = match decision {
        Some(Decision::ApproveWith { arguments }) => arguments,
        _ => &call.arguments,
    };
    prepare_call_within(tool.as_ref(), arguments, limits)
        .map(drop)
        .map_err(|err| ResumeError::InvalidArguments {
            id: call.id.clone(),
            message: err.message().to_owned(),
        })
}

/// A store's claim as the loop's journal.
struct ClaimJournal(Arc<dyn RunClaim>);

impl CallJournal for ClaimJournal {
    fn started(&self, id: &str) -> Result<(), String> {
        self.0.call_started(id).map_err(|err| err.to_string())
    }

    fn finished(&self, id: &str, result: &Arc<Message>) -> Result<(), String> {
        self.0
            .call_finished(id, result)
            .map_err(|err| err.to_string())
    }
}
