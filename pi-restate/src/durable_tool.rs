//! An [`AgentTool`] whose every execution is one journaled step.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pi_tool::{
    AgentTool, ArgumentValidator, BoxFuture, CallLimits, ExecutionMode, PreparedArguments, Replay,
    StateType, ToolAnnotations, ToolCallers, ToolContext, ToolError, ToolResult, ToolSpec,
    execute_within, outcome_unknown_message,
};
use serde_json::Value;

use crate::journal::Journal;

/// The idempotency key of one tool call: `<session id>/<prompt>/<tool call id>`, where
/// `prompt` is the length of the session's transcript when the prompt's invocation began. The
/// same on every retry of the call, so a side-effecting tool can deduplicate with it; and never
/// the same for calls of two prompts, even when a model reuses call ids (`call_0` from some
/// OpenAI-compatible servers, scripted ids).
pub fn idempotency_key(session_id: &str, prompt: usize, tool_call_id: &str) -> String {
    format!("{session_id}/{prompt}/{tool_call_id}")
}

/// Where a wrapped tool's calls belong: the session, and the prompt (the transcript's length
/// when the invocation began).
#[derive(Clone, Debug)]
pub(crate) struct CallScope {
    pub(crate) session_id: Arc<str>,
    pub(crate) prompt: usize,
}

impl CallScope {
    /// The key of the call `tool_call_id` in this scope.
    pub(crate) fn key(&self, tool_call_id: &str) -> String {
        idempotency_key(&self.session_id, self.prompt, tool_call_id)
    }
}

/// Wraps a local tool for a durable session: the tool runs inside `ctx.run`, its
/// [`ToolResult`] is journaled, and its context carries the call's idempotency key.
///
/// A call that completed is never run again (a replay reads its result from the journal); a
/// call interrupted by a crash runs again, with the same key (at-least-once), unless its tool
/// says [`Replay::Never`]: then its start is journaled first, and a call found started but
/// without a result is not run again but answered that its outcome is unknown (with its key).
///
/// The tool's timeout and `blocking` apply inside the step (with the session's
/// [`CallLimits`]), so what is journaled is what the call came to, a timeout included; the loop
/// sees a tool with neither.
pub struct DurableTool {
    inner: Arc<dyn AgentTool>,
    journal: Journal,
    scope: CallScope,
    limits: CallLimits,
}

impl DurableTool {
    pub(crate) fn new(
        inner: Arc<dyn AgentTool>,
        journal: Journal,
        scope: CallScope,
        limits: CallLimits,
    ) -> Self {
        DurableTool {
            inner,
            journal,
            scope,
            limits,
        }
    }
}

// Keep in step with `AgentTool`: every method but `timeout` and `blocking` (applied inside the
// step) and `execute` is the wrapped tool's answer, or the durable session would silently drop
// a tool's setting.
impl AgentTool for DurableTool {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    fn label(&self) -> &str {
        self.inner.label()
    }

    fn execution_mode(&self) -> Option<ExecutionMode> {
        self.inner.execution_mode()
    }

    fn annotations(&self) -> ToolAnnotations {
        self.inner.annotations()
    }

    /// A deferred tool stays deferred in a durable session; what was loaded comes back with the
    /// journaled transcript.
    fn deferred(&self) -> bool {
        self.inner.deferred()
    }

    fn input_examples(&self) -> &[Value] {
        self.inner.input_examples()
    }

    fn keywords(&self) -> &[String] {
        self.inner.keywords()
    }

    fn state_types(&self) -> Vec<StateType> {
        self.inner.state_types()
    }

    fn eager_input_streaming(&self) -> bool {
        self.inner.eager_input_streaming()
    }

    fn aborted_message(&self) -> &str {
        self.inner.aborted_message()
    }

    fn callers(&self) -> ToolCallers {
        self.inner.callers()
    }

    fn replay(&self) -> Option<Replay> {
        self.inner.replay()
    }

    fn needs_approval(&self, args: &Value, ctx: &ToolContext) -> bool {
        self.inner.needs_approval(args, ctx)
    }

    fn may_need_approval(&self) -> bool {
        self.inner.may_need_approval()
    }

    fn external(&self) -> bool {
        self.inner.external()
    }

    fn output_schema(&self) -> Option<&Value> {
        self.inner.output_schema()
    }

    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        self.inner.prepare_arguments(args)
    }

    fn rewrites_arguments(&self) -> bool {
        self.inner.rewrites_arguments()
    }

    fn validator(&self) -> Option<&ArgumentValidator> {
        self.inner.validator()
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        let key = self.scope.key(ctx.tool_call_id());
        let ctx = ctx.with_idempotency_key(key.clone());
        let tool = Arc::clone(&self.inner);
        let journal = self.journal.clone();
        let limits = self.limits;
        let never_twice = tool.replay() == Some(Replay::Never);
        Box::pin(async move {
            // Whether this attempt is the call's first: for a tool that must not run twice,
            // its start is journaled before it runs, and found journaled already on a replay.
            let first_attempt = !never_twice
                || started_now(&journal)
                    .await
                    .map_err(|err| ToolError::new(err.to_string()))?;
            // `execute_within` turns an `Err`, a panic or a timeout into an error result, so
            // what is journaled is exactly what the loop would have made of the call in process.
            let work = async move {
                if first_attempt {
                    execute_within(&tool, &args, PreparedArguments::default(), ctx, &limits).await
                } else {
                    ToolResult::error(outcome_unknown_message(&tool.spec().name, &key))
                }
            };
            journal
                .run("tool", work)
                .await
                .map_err(|err| ToolError::new(err.to_string()))
        })
    }
}

/// Journals the start of a call that must not run twice; `true` when it was journaled now,
/// `false` when the journal had it already (an earlier attempt started the call, and was
/// interrupted before its result was journaled, or the result step comes next from the
/// journal too, and then the work never runs).
async fn started_now(journal: &Journal) -> Result<bool, crate::error::StepError> {
    let fresh = AtomicBool::new(false);
    journal
        .run("tool started", async {
            fresh.store(true, Ordering::SeqCst);
        })
        .await?;
    Ok(fresh.load(Ordering::SeqCst))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::probe_tool::Probe;

    /// The durable wrapper answers every question as its tool does, but `timeout` and
    /// `blocking`, which it applies inside its journaled step (a method not forwarded would
    /// silently drop a tool's setting in a durable session).
    #[test]
    fn a_durable_tool_answers_as_the_tool_it_wraps() {
        let probe = Arc::new(Probe::new());
        let (journal, _steps) = Journal::new();
        let scope = CallScope {
            session_id: Arc::from("s1"),
            prompt: 0,
        };
        let durable = DurableTool::new(probe.clone(), journal, scope, CallLimits::default());
        let ctx = ToolContext::new("c1");
        assert_eq!(durable.spec(), probe.spec());
        assert_eq!(durable.label(), "Probe");
        assert_eq!(durable.execution_mode(), Some(ExecutionMode::Sequential));
        assert!(durable.deferred());
        assert_eq!(durable.input_examples(), probe.input_examples());
        assert_eq!(durable.keywords(), probe.keywords());
        assert_eq!(durable.state_types(), probe.state_types());
        assert!(durable.eager_input_streaming());
        assert_eq!(durable.callers(), ToolCallers::Code);
        assert_eq!(durable.replay(), Some(Replay::Never));
        assert_eq!(durable.aborted_message(), "Probe aborted");
        assert!(durable.needs_approval(&json!({}), &ctx));
        assert!(durable.may_need_approval());
        assert!(durable.external());
        assert_eq!(durable.annotations(), probe.annotations());
        assert_eq!(durable.output_schema(), probe.output_schema());
        assert_eq!(
            durable.prepare_arguments(json!({})).unwrap(),
            json!({"prepared": true})
        );
        assert!(durable.rewrites_arguments());
        // Applied inside the step, not by the loop.
        assert_eq!(durable.timeout(), None);
        assert!(!durable.blocking());
    }

    /// A tool that never needs approval says so through the wrapper too, so the agent loop
    /// skips the question for durable calls as it does for the tool itself.
    #[test]
    fn a_durable_tool_never_needs_approval_when_its_tool_never_does() {
        let plain = pi_tool::tool_fn("plain", "Plain.", json!({"type": "object"}), |_, _| async {
            "ok"
        })
        .unwrap();
        assert!(!plain.may_need_approval());
        let (journal, _steps) = Journal::new();
        let scope = CallScope {
            session_id: Arc::from("s1"),
            prompt: 0,
        };
        let durable = DurableTool::new(Arc::new(plain), journal, scope, CallLimits::default());
        assert!(!durable.may_need_approval());
    }
}
