//! Calls that wait, on Restate: the backend of `pi-tool`'s approval for a durable session. A
//! call that waits (its tool is marked `#[tool(approval)]` or `approval = path`, picked by
//! `ToolRegistry::require_approval`, suspended by `BeforeToolCall::suspend`, external, or
//! selected by the session's own rule) waits on a Restate awakeable, durably (across crashes and
//! restarts of the service), until someone resolves it over Restate's HTTP API. The awakeable
//! is the loop's approver: the decision goes through the loop's own pipeline.

use std::fmt;
use std::sync::Arc;

use pi_runtime::{
    ApprovalTimeout, BeforeToolCall, BeforeToolCallContext, BeforeToolCallHook, Decision,
};
use pi_tool::{Approver, BoxFuture, ToolCall, ToolResult, WaitKind, WaitingCall};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::journal::Journal;

/// A call waiting for a human: publish `awakeable_id` to whoever decides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// Resolve it with `POST <ingress>/restate/awakeables/<id>/resolve` and a JSON body: a
    /// [`Decision`] (`{"decision": "approve"}`, `{"decision": "deny", "reason": ".."}`,
    /// `{"decision": "approve_with", "arguments": {..}}`, `{"decision": "answer", "result":
    /// {..}}`) or an [`ApprovalDecision`] (`{"approved": true}`). Rejecting it denies the call
    /// with the rejection's reason.
    pub awakeable_id: String,
    /// The session (virtual object key).
    pub session_id: String,
    /// The call, with the arguments it would run with.
    pub tool_call: ToolCall,
    /// Why it waits.
    #[serde(default)]
    pub reason: String,
    /// Approval, or an answer from outside (an external tool: only `answer` settles it).
    #[serde(default = "approval_kind")]
    pub kind: WaitKind,
}

fn approval_kind() -> WaitKind {
    WaitKind::Approval
}

/// The first body that resolves an approval's awakeable, still accepted: `approved: true` runs
/// the call; otherwise its result is an error with `reason` (`Tool execution was blocked`
/// without one). A [`Decision`] says more.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalDecision {
    /// Whether the call may run.
    pub approved: bool,
    /// Why not (the model sees it); without one a denied call reads `Tool execution was blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Decides which calls need a human, besides those marked as needing approval.
pub type NeedsApproval = Arc<dyn Fn(&ToolCall) -> bool + Send + Sync>;
/// Publishes a waiting call (runs once per call, as a journaled step).
pub type AnnounceApproval =
    Arc<dyn Fn(ApprovalRequest) -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// The approval of a [`PiSession`](crate::PiSession): how its waiting calls are announced,
/// and optionally a rule of its own for which calls wait.
#[derive(Clone)]
pub struct Approval {
    needs_approval: Option<NeedsApproval>,
    announce: AnnounceApproval,
}

/// The text of a blocked call with no reason (as `BeforeToolCall::block_silently` gives).
const BLOCKED: &str = "Tool execution was blocked";

/// The reason a call the session's own rule selected waits.
fn rule_reason(tool: &str) -> String {
    format!("Tool {tool} needs approval before it runs (the session's approval rule)")
}

impl Approval {
    /// The calls that wait by the common marks (`#[tool(approval)]`, `approval = path`,
    /// `FnToolBuilder::approval_when`, `ToolRegistry::require_approval`,
    /// `BeforeToolCall::suspend`, external tools) wait on an awakeable; `announce` publishes
    /// each waiting call (a queue, a chat message, a file), once.
    pub fn announce<A, Fut>(announce: A) -> Self
    where
        A: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        Approval {
            needs_approval: None,
            announce: Arc::new(move |request| Box::pin(announce(request))),
        }
    }

    /// [`announce`](Self::announce), and the calls for which `needs_approval` is true wait too
    /// (the session's `before_tool_call` hook is then this rule: it suspends them).
    pub fn new<N, A, Fut>(needs_approval: N, announce: A) -> Self
    where
        N: Fn(&ToolCall) -> bool + Send + Sync + 'static,
        A: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        Approval {
            needs_approval: Some(Arc::new(needs_approval)),
            ..Approval::announce(announce)
        }
    }

    /// The session's own rule as a `before_tool_call` hook that suspends the calls it selects,
    /// if there is a rule.
    pub(crate) fn rule_hook(&self) -> Option<BeforeToolCallHook> {
        let needs_approval = Arc::clone(self.needs_approval.as_ref()?);
        Some(Arc::new(move |call: BeforeToolCallContext| {
            let waits = needs_approval(&call.tool_call);
            let name = call.tool_call.name.clone();
            Box::pin(async move {
                Ok(if waits {
                    BeforeToolCall::suspend(rule_reason(&name))
                } else {
                    BeforeToolCall::allow()
                })
            })
        }))
    }

    /// The loop's approver for one invocation: each waiting call waits on an awakeable.
    pub(crate) fn approver(&self, journal: Journal, session_id: Arc<str>) -> Approver {
        let announce = Arc::clone(&self.announce);
        Arc::new(move |waiting: WaitingCall| {
            let announce = Arc::clone(&announce);
            let journal = journal.clone();
            let session_id = session_id.to_string();
            Box::pin(
                async move { wait_on_awakeable(waiting, &journal, session_id, announce).await },
            )
        })
    }
}

/// The approver of a session without an [`Approval`]: nobody would hear of an awakeable, so
/// a call that waits is refused at once, saying how to let it wait.
pub(crate) fn refusing_approver() -> Approver {
    Arc::new(|waiting: WaitingCall| {
        let text = format!(
            "Tool {} was not run: {}, and this session has no approval configured \
             (PiSession::with_approval)",
            waiting.tool,
            lowercase_first(&waiting.reason)
        );
        Box::pin(async move {
            Decision::Answer {
                result: ToolResult::error(text),
            }
        })
    })
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The loop waits for its approver as long as it takes: on Restate the wait is durable, and a
/// paused run has no place in a session's handler.
pub(crate) const TIMEOUT: ApprovalTimeout = ApprovalTimeout::WaitForever;

async fn wait_on_awakeable(
    waiting: WaitingCall,
    journal: &Journal,
    session_id: String,
    announce: AnnounceApproval,
) -> Decision {
    let request = ApprovalRequest {
        awakeable_id: String::new(),
        session_id,
        tool_call: ToolCall::new(
            waiting.id.clone(),
            waiting.tool.clone(),
            waiting.arguments.clone(),
        ),
        reason: waiting.reason.clone(),
        kind: waiting.kind,
    };
    let answer = journal
        .awakeable(Box::new(move |awakeable_id| {
            announce(ApprovalRequest {
                awakeable_id,
                ..request
            })
        }))
        .await;
    match answer {
        Ok(value) => decision_of(value),
        Err(rejected) => Decision::Answer {
            result: ToolResult::error(rejected.to_string()),
        },
    }
}

/// The awakeable's value as a decision: a [`Decision`], or the first API's
/// [`ApprovalDecision`] (whose texts stay what they were); anything else is an error result.
fn decision_of(value: Value) -> Decision {
    if value.get("decision").is_some() {
        return serde_json::from_value::<Decision>(value).unwrap_or_else(|err| Decision::Answer {
            result: ToolResult::error(format!("the approval's answer is not a decision: {err}")),
        });
    }
    match serde_json::from_value::<ApprovalDecision>(value) {
        Ok(ApprovalDecision { approved: true, .. }) => Decision::Approve,
        Ok(ApprovalDecision { reason, .. }) => Decision::Answer {
            result: ToolResult::error(reason.unwrap_or_else(|| BLOCKED.to_owned())),
        },
        Err(err) => Decision::Answer {
            result: ToolResult::error(format!("the approval's answer is not a decision: {err}")),
        },
    }
}

impl fmt::Debug for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Approval")
            .field("rule", &self.needs_approval.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(decision: Decision) -> String {
        match decision {
            Decision::Answer { result } => result.text_content(),
            other => panic!("not an answer: {other:?}"),
        }
    }

    #[test]
    fn both_bodies_resolve_an_approval() {
        assert_eq!(decision_of(json!({"approved": true})), Decision::Approve);
        assert_eq!(
            text(decision_of(
                json!({"approved": false, "reason": "not on a Friday"})
            )),
            "not on a Friday"
        );
        assert_eq!(text(decision_of(json!({"approved": false}))), BLOCKED);
        assert_eq!(
            decision_of(json!({"decision": "approve"})),
            Decision::Approve
        );
        assert_eq!(
            decision_of(json!({"decision": "deny", "reason": "no"})),
            Decision::Deny {
                reason: "no".into()
            }
        );
        assert_eq!(
            decision_of(json!({"decision": "approve_with", "arguments": {"a": 1}})),
            Decision::ApproveWith {
                arguments: json!({"a": 1})
            }
        );
        assert!(
            text(decision_of(json!({"decision": "maybe"}))).starts_with("the approval's answer")
        );
        assert!(text(decision_of(json!("yes"))).starts_with("the approval's answer"));
    }
}
