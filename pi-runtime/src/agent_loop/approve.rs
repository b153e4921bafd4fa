//! Deciding a waiting call in process: the configured approver is asked, within the
//! configured timeout, and its decision becomes the call's preparation (run, refused,
//! answered) — or the call waits after all, when the timeout says to pause.

use std::pin::pin;

use futures_util::future::{Either, select};
use pi_tool::{Deadline, PreparedArguments, ToolResult, prepare_call_within};

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

impl<'b> Batch<'_, 'b> {
    /// Asks the approver about a waiting call and applies its decision.
    pub(super) async fn ask_approver(
        &self,
        approver: &Approver,
        call: ToolCallRef,
        waiting: WaitingCall,
        started: Instant,
    ) -> Preparation<'b> {
        let asked = guarded(|| approver(waiting.clone()));
        let signal = self.env.signal;
        let decision = {
            let asked = pin!(asked);
            let aborted = pin!(signal.cancelled());
            let answer = select(asked, aborted);
            let limit = match self.env.config.approval_timeout {
                ApprovalTimeout::DenyAfter(after) | ApprovalTimeout::PauseAfter(after) => {
                    Some(after)
                }
                _ => None,
            };
            match limit {
                None => match answer.await {
                    Either::Left((decision, _)) => Some(decision),
                    Either::Right(_) => {
                        return Preparation::Immediate(call, ToolResult::error(ABORTED));
                    }
                },
                Some(after) => match select(answer, pin!(Deadline::after(after))).await {
                    Either::Left((Either::Left((decision, _)), _)) => Some(decision),
                    Either::Left((Either::Right(_), _)) => {
                        return Preparation::Immediate(call, ToolResult::error(ABORTED));
                    }
                    Either::Right(_) => None,
                },
            }
        };
        let decision = match decision {
            Some(Ok(decision)) => decision,
            Some(Err(panic)) => {
                let refusal = format!(
                    "Tool {} was not run: the approver panicked: {panic}",
                    call.name()
                );
                return Preparation::Immediate(call, ToolResult::error(refusal));
            }
            None => {
                return match self.env.config.approval_timeout {
                    ApprovalTimeout::DenyAfter(after) => {
                        let refusal = timed_out_message(call.name(), after);
                        Preparation::Immediate(call, ToolResult::error(refusal))
                    }
                    _ => Preparation::Wait(call, waiting),
                };
            }
        };
        self.apply(decision, call, waiting, started)
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
