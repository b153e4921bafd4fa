//! Deciding a waiting call in process: the configured approver is asked, within the
//! configured timeout, and its decision becomes the call's preparation (run, refused,
//! answered) — or the call waits after all, when the timeout says to pause.

use std::pin::pin;

use futures_util::future::{Either, select};
use pi_tool::{CancellationToken, Deadline, PreparedArguments, ToolResult, prepare_call_within};

use super::batch::Batch;
use super::call::{Preparation, Prepared};
use super::clock::Instant;
use super::context::ToolSet;
use super::guard::guarded;
use super::run::ABORTED;
use crate::config::{ApprovalTimeout, Approver};
use crate::event::ToolCallRef;
use crate::wait::{Decision, WaitingCall};

/// The result of a call the approver did not decide in time (`DenyAfter`).
fn timed_out_message(tool: &str, after: std::time::Duration) -> String {
    format!("Tool {tool} was not run: no decision on it came within {after:?}")
}

/// What the approver made of a waiting call.
pub(super) enum Asked {
    /// Its decision.
    Decided(Decision),
    /// No decision: this is the call's result (aborted, the approver panicked, or no decision
    /// came in time and the timeout says deny).
    Refused(ToolResult),
    /// No decision came in time and the timeout says pause: the call waits in the run's state.
    Pause,
}

/// Asks `approver` about `waiting` within `timeout`; the run's `signal` ends the wait.
pub(super) async fn ask(
    approver: &Approver,
    timeout: ApprovalTimeout,
    waiting: WaitingCall,
    signal: &CancellationToken,
) -> Asked {
    let tool = waiting.tool.clone();
    let asked = guarded(|| approver(waiting));
    let decision = {
        let asked = pin!(asked);
        let aborted = pin!(signal.cancelled());
        let answer = select(asked, aborted);
        let limit = match timeout {
            ApprovalTimeout::DenyAfter(after) | ApprovalTimeout::PauseAfter(after) => Some(after),
            _ => None,
        };
        match limit {
            None => match answer.await {
                Either::Left((decision, _)) => Some(decision),
                Either::Right(_) => return Asked::Refused(ToolResult::error(ABORTED)),
            },
            Some(after) => match select(answer, pin!(Deadline::after(after))).await {
                Either::Left((Either::Left((decision, _)), _)) => Some(decision),
                Either::Left((Either::Right(_), _)) => {
                    return Asked::Refused(ToolResult::error(ABORTED));
                }
                Either::Right(_) => None,
            },
        }
    };
    match decision {
        Some(Ok(decision)) => Asked::Decided(decision),
        Some(Err(panic)) => Asked::Refused(ToolResult::error(format!(
            "Tool {tool} was not run: the approver panicked: {panic}"
        ))),
        None => match timeout {
            ApprovalTimeout::DenyAfter(after) => {
                Asked::Refused(ToolResult::error(timed_out_message(&tool, after)))
            }
            _ => Asked::Pause,
        },
    }
}

impl<'b> Batch<'_, 'b> {
    /// Asks the approver about a waiting call and applies its decision.
    pub(super) async fn ask_approver(
        &self,
        approver: &Approver,
        call: ToolCallRef,
        waiting: WaitingCall,
        started: Instant,
    ) -> Preparation<'b> {
        let timeout = self.env.config.approval_timeout;
        match ask(approver, timeout, waiting.clone(), self.env.signal).await {
            Asked::Decided(decision) => self.apply(decision, call, waiting, started),
            Asked::Refused(result) => Preparation::Immediate(call, result),
            Asked::Pause => Preparation::Wait(call, waiting),
        }
    }

    /// A decision taken in process on a waiting call, as its preparation.
    fn apply(
        &self,
        decision: Decision,
        call: ToolCallRef,
        waiting: WaitingCall,
        started: Instant,
    ) -> Preparation<'b> {
        let arguments = match decision {
            Decision::Deny { reason } => {
                let refusal = Decision::denied_message(call.name(), &reason);
                return Preparation::Immediate(call, ToolResult::error(refusal));
            }
            Decision::Answer { result } => return Preparation::Immediate(call, result),
            Decision::Approve => waiting.arguments,
            Decision::ApproveWith { arguments } => arguments,
        };
        let tools: &'b ToolSet = self.env.tools;
        let Some(tool) = tools.get(call.name()) else {
            // Found when the call was prepared; a waiting call keeps its tool.
            return Preparation::Immediate(call, ToolResult::error("the tool is gone"));
        };
        if tool.external() {
            let refusal = format!(
                "Tool {} is external: only an answer settles its call, not an approval",
                call.name()
            );
            return Preparation::Immediate(call, ToolResult::error(refusal));
        }
        // Arguments a person gave are validated as the model's are.
        match prepare_call_within(tool.as_ref(), &arguments, &self.env.limits.arguments) {
            Ok(prepared) => {
                let args = if prepared.is_unchanged() {
                    PreparedArguments::replaced(arguments)
                } else {
                    prepared
                };
                Preparation::Ready(Prepared {
                    call,
                    tool,
                    args,
                    started,
                })
            }
            Err(err) => Preparation::Immediate(call, ToolResult::error(err.message())),
        }
    }
}
