//! Calls that wait, in every host: what a host reports about a call it did not run because it
//! needs a decision ([`WaitingCall`]), the decisions that settle it ([`Decision`]), an approver
//! that decides in process ([`Approver`]), and the outcome of a single call that may wait
//! ([`CallOutcome`], from [`ToolRegistry::run_or_wait`](crate::ToolRegistry::run_or_wait)).
//!
//! The agent loop (`pi-runtime`) pauses a run on a waiting call; a registry gives it back to its
//! caller; the MCP server asks its client; pi-restate waits on an awakeable. All of them decide
//! with the same [`Decision`].

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::{Either, select};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AgentTool, BoxFuture, ToolCall, ToolContext, ToolResult, WaitKind};

/// A call that was not run: it waits for approval, or for an answer from outside.
///
/// Nothing is in a transcript for it until it is decided: the model never sees a placeholder.
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

    /// The waiting call of `tool` with these (prepared) arguments, if it waits: an external
    /// tool always, any other tool when it [needs approval](AgentTool::needs_approval) for them.
    pub fn of(
        tool: &dyn AgentTool,
        id: &str,
        arguments: &Value,
        ctx: &ToolContext,
    ) -> Option<WaitingCall> {
        let name = &tool.spec().name;
        let (kind, reason) = if tool.external() {
            (WaitKind::External, crate::external_reason(name))
        } else if tool.needs_approval(arguments, ctx) {
            (WaitKind::Approval, crate::approval_reason(name))
        } else {
            return None;
        };
        Some(WaitingCall::new(
            id,
            name.as_str(),
            arguments.clone(),
            reason,
            kind,
        ))
    }
}

/// What was decided about a waiting call.
///
/// Closed on purpose (not `#[non_exhaustive]`): every host must settle each kind of decision,
/// and a new one should fail to compile where it is not handled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
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

    /// The text of a denied call's result ([`denied_message`]).
    #[doc(hidden)]
    pub fn denied_message(tool: &str, reason: &str) -> String {
        denied_message(tool, reason)
    }
}

/// `Tool <tool> was not run: the call was denied: <reason>`: the result of a denied call, in
/// every host.
pub fn denied_message(tool: &str, reason: &str) -> String {
    format!("Tool {tool} was not run: the call was denied: {reason}")
}

/// The result of an approval given to an external tool's call, which only an answer settles.
pub fn external_needs_answer_message(tool: &str) -> String {
    format!("Tool {tool} is external: only an answer settles its call, not an approval")
}

/// Decides a waiting call in process: asked with the call, answers with a [`Decision`]. The
/// agent loop (`AgentLoopConfig::approver`) and a registry
/// ([`ToolRegistry::with_approver`](crate::ToolRegistry::with_approver)) take one.
pub type Approver = Arc<dyn Fn(WaitingCall) -> BoxFuture<'static, Decision> + Send + Sync>;

/// An [`Approver`] from an async closure.
pub fn approver<F, Fut>(decide: F) -> Approver
where
    F: Fn(WaitingCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    Arc::new(move |waiting| Box::pin(decide(waiting)))
}

/// The outcome of one call in a host that may wait
/// ([`ToolRegistry::run_or_wait`](crate::ToolRegistry::run_or_wait)): the call ran (or was
/// answered: an unknown tool, invalid arguments, a denial are error results), or it waits for a
/// decision and did not run. Closed, so a caller's `match` needs no wildcard.
#[derive(Clone, Debug, PartialEq)]
pub enum CallOutcome {
    /// The call's result.
    Done(ToolResult),
    /// The call did not run: it needs approval, or its tool is external. Decide it and run it
    /// again with [`ToolRegistry::decide`](crate::ToolRegistry::decide).
    Waiting(WaitingCall),
}

impl CallOutcome {
    /// The result, if the call did not wait.
    pub fn done(self) -> Option<ToolResult> {
        match self {
            CallOutcome::Done(result) => Some(result),
            CallOutcome::Waiting(_) => None,
        }
    }

    /// The waiting call, if the call waits.
    pub fn waiting(&self) -> Option<&WaitingCall> {
        match self {
            CallOutcome::Done(_) => None,
            CallOutcome::Waiting(waiting) => Some(waiting),
        }
    }
}

/// What applying a decision leaves to do.
pub(crate) enum Settled {
    /// Run the call with the arguments it waited with.
    Run,
    /// Run the call with these arguments instead (not yet prepared).
    RunWith(ToolCall),
    /// The call's result, without running it.
    Answered(ToolResult),
}

/// What `decision` means for a call of `tool`: an external tool runs on nothing but an answer.
pub(crate) fn settle(tool: &dyn AgentTool, call: &ToolCall, decision: Decision) -> Settled {
    let name = &tool.spec().name;
    match decision {
        Decision::Deny { reason } => {
            Settled::Answered(ToolResult::error(denied_message(name, &reason)))
        }
        Decision::Answer { result } => Settled::Answered(result),
        Decision::Approve | Decision::ApproveWith { .. } if tool.external() => {
            Settled::Answered(ToolResult::error(external_needs_answer_message(name)))
        }
        Decision::Approve => Settled::Run,
        Decision::ApproveWith { arguments } => {
            Settled::RunWith(ToolCall::new(call.id.clone(), name.clone(), arguments))
        }
    }
}

/// Asks `approver` about `waiting`: its decision, or a result when the call's run is aborted
/// first (the tool's aborted text) or the approver panics (an error result naming the panic).
pub(crate) async fn ask(
    approver: &Approver,
    tool: &dyn AgentTool,
    waiting: WaitingCall,
    ctx: &ToolContext,
) -> Result<Decision, ToolResult> {
    let asked = AssertUnwindSafe(async { approver(waiting).await }).catch_unwind();
    let outcome = if ctx.may_be_aborted() {
        match select(pin!(asked), pin!(ctx.abort_signal().cancelled())).await {
            Either::Left((outcome, _)) => outcome,
            Either::Right(_) => return Err(ToolResult::error(tool.aborted_message())),
        }
    } else {
        asked.await
    };
    outcome.map_err(|panic| {
        ToolResult::error(format!(
            "Tool {} was not run: the approver panicked: {}",
            tool.spec().name,
            crate::run::panic_message(&*panic)
        ))
    })
}
