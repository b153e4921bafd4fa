//! The tools pi-tool wraps (`Deferred`, `ApprovalRequired`) answer every `AgentTool` question
//! as the tool they wrap, except the one they exist to change: a method added to the trait
//! and not forwarded would silently drop a tool's setting (a deferred tool lost its input
//! examples, a tool needing approval its state types).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use pi_tool::{
    AgentTool, ApprovalRequired, BoxFuture, Deferred, ExecutionMode, Replay, StateType,
    ToolAnnotations, ToolCallers, ToolContext, ToolError, ToolResult, ToolSpec,
};
use serde_json::{Value, json};

/// A tool that answers every question with something other than the default.
struct Probe {
    spec: ToolSpec,
    examples: Vec<Value>,
    keywords: Vec<String>,
    output_schema: Value,
}

impl Probe {
    fn new() -> Self {
        Probe {
            spec: ToolSpec {
                name: "probe".to_owned(),
                description: "Answers every question.".to_owned(),
                parameters: json!({"type": "object"}),
            },
            examples: vec![json!({})],
            keywords: vec!["sonde".to_owned()],
            output_schema: json!({"type": "object"}),
        }
    }
}

impl AgentTool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn label(&self) -> &str {
        "Probe"
    }
    fn execution_mode(&self) -> Option<ExecutionMode> {
        Some(ExecutionMode::Sequential)
    }
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(7))
    }
    fn blocking(&self) -> bool {
        true
    }
    fn input_examples(&self) -> &[Value] {
        &self.examples
    }
    fn keywords(&self) -> &[String] {
        &self.keywords
    }
    fn state_types(&self) -> Vec<StateType> {
        vec![StateType::of::<u32>()]
    }
    fn eager_input_streaming(&self) -> bool {
        true
    }
    fn callers(&self) -> ToolCallers {
        ToolCallers::Code
    }
    fn replay(&self) -> Option<Replay> {
        Some(Replay::Never)
    }
    fn aborted_message(&self) -> &str {
        "Probe aborted"
    }
    fn needs_approval(&self, _args: &Value, _ctx: &ToolContext) -> bool {
        true
    }
    fn external(&self) -> bool {
        true
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().read_only(true)
    }
    fn output_schema(&self) -> Option<&Value> {
        Some(&self.output_schema)
    }
    fn prepare_arguments(&self, _args: Value) -> Result<Value, ToolError> {
        Ok(json!({"prepared": true}))
    }
    fn rewrites_arguments(&self) -> bool {
        true
    }
    fn execute(
        &self,
        _args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        Box::pin(async { Ok(ToolResult::text("probed")) })
    }
}

/// Every answer of `wrapped` but `deferred` and `needs_approval` (which the wrappers change).
fn assert_forwarded(wrapped: &dyn AgentTool, probe: &Probe, which: &str) {
    let ctx = ToolContext::new("c1");
    assert_eq!(wrapped.spec(), probe.spec(), "{which}: spec");
    assert_eq!(wrapped.label(), probe.label(), "{which}: label");
    assert_eq!(
        wrapped.execution_mode(),
        probe.execution_mode(),
        "{which}: execution_mode"
    );
    assert_eq!(wrapped.timeout(), probe.timeout(), "{which}: timeout");
    assert_eq!(wrapped.blocking(), probe.blocking(), "{which}: blocking");
    assert_eq!(
        wrapped.input_examples(),
        probe.input_examples(),
        "{which}: input_examples"
    );
    assert_eq!(wrapped.keywords(), probe.keywords(), "{which}: keywords");
    assert_eq!(
        wrapped.state_types(),
        probe.state_types(),
        "{which}: state_types"
    );
    assert_eq!(
        wrapped.eager_input_streaming(),
        probe.eager_input_streaming(),
        "{which}: eager_input_streaming"
    );
    assert_eq!(wrapped.callers(), probe.callers(), "{which}: callers");
    assert_eq!(wrapped.replay(), probe.replay(), "{which}: replay");
    assert_eq!(
        wrapped.aborted_message(),
        probe.aborted_message(),
        "{which}: aborted_message"
    );
    assert_eq!(wrapped.external(), probe.external(), "{which}: external");
    assert_eq!(
        wrapped.annotations(),
        probe.annotations(),
        "{which}: annotations"
    );
    assert_eq!(
        wrapped.output_schema(),
        probe.output_schema(),
        "{which}: output_schema"
    );
    assert_eq!(
        wrapped.prepare_arguments(json!({})).ok(),
        probe.prepare_arguments(json!({})).ok(),
        "{which}: prepare_arguments"
    );
    assert_eq!(
        wrapped.rewrites_arguments(),
        probe.rewrites_arguments(),
        "{which}: rewrites_arguments"
    );
    assert!(
        wrapped.needs_approval(&json!({}), &ctx),
        "{which}: needs_approval"
    );
}

#[test]
fn a_deferred_tool_answers_as_the_tool_it_wraps() {
    let probe = Probe::new();
    let deferred = Deferred::wrap(Arc::new(Probe::new()));
    assert!(deferred.deferred());
    assert_forwarded(deferred.as_ref(), &probe, "Deferred");
}

#[test]
fn a_tool_made_to_need_approval_answers_as_the_tool_it_wraps() {
    let probe = Probe::new();
    let approval = ApprovalRequired::wrap(Deferred::wrap(Arc::new(Probe::new())));
    assert!(approval.deferred(), "the deferral underneath is kept");
    assert_forwarded(approval.as_ref(), &probe, "ApprovalRequired");
}

#[test]
fn a_deferred_tool_may_need_approval_as_the_tool_it_wraps_and_an_approval_wrapper_always() {
    let plain: Arc<dyn AgentTool> = Arc::new(
        pi_tool::tool_fn("plain", "Plain.", json!({"type": "object"}), |_, _| async {
            "ok"
        })
        .expect("a valid tool"),
    );
    assert!(!plain.may_need_approval());
    let deferred = Deferred::wrap(Arc::clone(&plain));
    assert!(!deferred.may_need_approval(), "Deferred forwards it");
    assert!(Deferred::wrap(Arc::new(Probe::new())).may_need_approval());
    let approval = ApprovalRequired::wrap(deferred);
    assert!(approval.may_need_approval(), "ApprovalRequired always may");
    assert!(approval.needs_approval(&json!({}), &ToolContext::new("c1")));
}

#[test]
fn wrapped_tools_run_the_wrapped_body() {
    let tool = ApprovalRequired::wrap(Deferred::wrap(Arc::new(Probe::new())));
    let result = block_on(tool.execute(json!({}), ToolContext::new("c1")));
    assert_eq!(result.expect("the body's answer").text_content(), "probed");
}

/// The body answers at once: one poll with a no-op waker is enough.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the probe's body answers at once"),
    }
}
