//! Human approval of tool calls by Restate awakeable: the run waits durably (across crashes and
//! restarts of the service) until someone approves or denies over Restate's HTTP API.

use std::fmt;
use std::sync::Arc;

use pi_runtime::{BeforeToolCall, BeforeToolCallContext, BeforeToolCallHook};
use pi_tool::{BoxFuture, ToolCall, ToolError};
use serde::{Deserialize, Serialize};

use crate::journal::Journal;

/// A call waiting for a human: publish `awakeable_id` to whoever decides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// Resolve it with `POST <ingress>/restate/awakeables/<id>/resolve` and a JSON
    /// [`ApprovalDecision`] body (or reject it: the call is then blocked with the reason).
    pub awakeable_id: String,
    /// The session (virtual object key).
    pub session_id: String,
    /// The call, with the arguments it would run with.
    pub tool_call: ToolCall,
}

/// The body that resolves an approval's awakeable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalDecision {
    /// Whether the call may run.
    pub approved: bool,
    /// Why not (the model sees it); without one a denied call reads `Tool execution was blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Decides which calls need a human.
pub type NeedsApproval = Arc<dyn Fn(&ToolCall) -> bool + Send + Sync>;
/// Publishes a waiting call (runs once per call, as a journaled step).
pub type AnnounceApproval =
    Arc<dyn Fn(ApprovalRequest) -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// The approval policy of a [`PiSession`](crate::PiSession).
#[derive(Clone)]
pub struct Approval {
    needs_approval: NeedsApproval,
    announce: AnnounceApproval,
}

impl Approval {
    /// Calls for which `needs_approval` is true wait for a decision; `announce` publishes each
    /// waiting call (a queue, a chat message, a file), once.
    pub fn new<N, A, Fut>(needs_approval: N, announce: A) -> Self
    where
        N: Fn(&ToolCall) -> bool + Send + Sync + 'static,
        A: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        Approval {
            needs_approval: Arc::new(needs_approval),
            announce: Arc::new(move |request| Box::pin(announce(request))),
        }
    }

    /// The `before_tool_call` hook of one invocation.
    pub(crate) fn hook(&self, journal: Journal, session_id: Arc<str>) -> BeforeToolCallHook {
        let policy = self.clone();
        Arc::new(move |call: BeforeToolCallContext| {
            let policy = policy.clone();
            let journal = journal.clone();
            let session_id = Arc::clone(&session_id);
            Box::pin(async move { policy.decide(call, &journal, &session_id).await })
        })
    }

    async fn decide(
        &self,
        call: BeforeToolCallContext,
        journal: &Journal,
        session_id: &str,
    ) -> Result<BeforeToolCall, ToolError> {
        if !(self.needs_approval)(&call.tool_call) {
            return Ok(BeforeToolCall::allow());
        }
        let mut tool_call = call.tool_call;
        tool_call.arguments = call.args;
        let announce = Arc::clone(&self.announce);
        let session_id = session_id.to_owned();
        let answer = journal
            .awakeable(Box::new(move |awakeable_id| {
                announce(ApprovalRequest {
                    awakeable_id,
                    session_id,
                    tool_call,
                })
            }))
            .await;
        let decision = match answer {
            Ok(value) => serde_json::from_value::<ApprovalDecision>(value).map_err(|err| {
                ToolError::new(format!("the approval's answer is not a decision: {err}"))
            })?,
            Err(rejected) => ApprovalDecision {
                approved: false,
                reason: Some(rejected.to_string()),
            },
        };
        Ok(match decision {
            ApprovalDecision { approved: true, .. } => BeforeToolCall::allow(),
            ApprovalDecision {
                reason: Some(reason),
                ..
            } => BeforeToolCall::block(reason),
            ApprovalDecision { reason: None, .. } => BeforeToolCall::block_silently(),
        })
    }
}

impl fmt::Debug for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Approval").finish_non_exhaustive()
    }
}
