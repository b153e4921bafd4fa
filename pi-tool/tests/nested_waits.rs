//! A nested call that must wait (its tool needs approval, or is external) is its host's to
//! decide ([`CallHooks::wait`]): a host that decides runs it (or answers it), a host that does
//! not refuses it; values a call records for a replay ([`ToolContext::replayable_value`]) go to
//! its host and come back from it.

use std::sync::{Arc, Mutex};

use pi_tool::{
    AgentTool, BeforeCall, BoxFuture, CallHooks, CallLimits, NestedHost, ToolCall, ToolContext,
    ToolHost, ToolResult, WaitKind, WaitingCall, run_nested_call, tool,
};
use serde_json::{Value, json};

/// Refund an order.
#[tool(approval)]
async fn refund(cents: u64) -> String {
    format!("refunded {cents}")
}

/// Call `refund`, and say what a replay-safe seed was.
#[tool]
async fn settle(ctx: ToolContext) -> String {
    let seed = ctx.replayable_value("seed", || json!(7));
    let refunded = ctx.call_tool("refund", json!({"cents": 5})).await;
    format!("{} (seed {seed})", refunded.text_content())
}

/// A host whose hooks decide waiting calls with `decision` (none: the default, refuse), and
/// that keeps recorded values (replaying `replayed`).
struct Host {
    tools: Vec<Arc<dyn AgentTool>>,
    limits: CallLimits,
    decision: Option<BeforeCall>,
    asked: Mutex<Vec<WaitingCall>>,
    replayed: Option<Value>,
    recorded: Mutex<Vec<(String, String, Value)>>,
}

impl ToolHost for Host {
    fn tool(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        self.tools.iter().find(|tool| tool.spec().name == name)
    }
    fn tool_names(&self) -> Vec<&str> {
        self.tools
            .iter()
            .map(|tool| tool.spec().name.as_str())
            .collect()
    }
    fn limits(&self) -> &CallLimits {
        &self.limits
    }
}

impl NestedHost for Host {
    fn run_nested<'a>(
        &'a self,
        call: &'a ToolCall,
        parent: &'a ToolContext,
        ctx: ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(run_nested_call(self, Some(self), call, parent, ctx))
    }
    fn limits(&self) -> &CallLimits {
        &self.limits
    }
    fn recorded_value(&self, _ctx: &ToolContext, _name: &str) -> Option<Value> {
        self.replayed.clone()
    }
    fn record_value(&self, ctx: &ToolContext, name: &str, value: Value) {
        let mut recorded = self.recorded.lock().unwrap();
        recorded.push((ctx.tool_call_id().to_owned(), name.to_owned(), value));
    }
}

impl CallHooks for Host {
    fn has_before_call(&self) -> bool {
        false
    }
    fn before_call<'a>(
        &'a self,
        _: &'a ToolCall,
        _: &'a Value,
        _: &'a ToolContext,
    ) -> BoxFuture<'a, BeforeCall> {
        unreachable!("has_before_call is false")
    }
    fn has_after_call(&self) -> bool {
        false
    }
    fn after_call<'a>(
        &'a self,
        _: &'a ToolCall,
        _: &'a Value,
        result: ToolResult,
        _: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move { result })
    }
    fn wait<'a>(
        &'a self,
        call: &'a ToolCall,
        waiting: WaitingCall,
        parent: &'a ToolContext,
    ) -> BoxFuture<'a, BeforeCall> {
        self.asked.lock().unwrap().push(waiting.clone());
        match &self.decision {
            Some(decision) => Box::pin(std::future::ready(decision.clone())),
            None => Box::pin(async move {
                // The trait's own answer: a refusal.
                struct Refuses;
                impl CallHooks for Refuses {
                    fn before_call<'a>(
                        &'a self,
                        _: &'a ToolCall,
                        _: &'a Value,
                        _: &'a ToolContext,
                    ) -> BoxFuture<'a, BeforeCall> {
                        Box::pin(std::future::ready(BeforeCall::Run))
                    }
                    fn after_call<'a>(
                        &'a self,
                        _: &'a ToolCall,
                        _: &'a Value,
                        result: ToolResult,
                        _: &'a ToolContext,
                    ) -> BoxFuture<'a, ToolResult> {
                        Box::pin(async move { result })
                    }
                }
                Refuses.wait(call, waiting, parent).await
            }),
        }
    }
}

async fn settle_with(decision: Option<BeforeCall>, replayed: Option<Value>) -> (String, Arc<Host>) {
    let host = Arc::new(Host {
        tools: vec![Arc::new(RefundTool), Arc::new(SettleTool)],
        limits: CallLimits::default(),
        decision,
        asked: Mutex::default(),
        replayed,
        recorded: Mutex::default(),
    });
    let ctx = ToolContext::new("c1").with_nested_host(Arc::clone(&host) as Arc<dyn NestedHost>);
    let result = SettleTool.execute(json!({}), ctx).await.unwrap();
    (result.text_content(), host)
}

#[tokio::test]
async fn a_nested_call_that_needs_approval_is_the_hosts_to_decide() {
    let (said, host) = settle_with(Some(BeforeCall::Run), None).await;
    assert_eq!(said, "refunded 5 (seed 7)");
    let asked = host.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0].id.as_str(), asked[0].tool.as_str()),
        ("c1/1", "refund")
    );
    assert_eq!(asked[0].kind, WaitKind::Approval);
    assert_eq!(asked[0].arguments, json!({"cents": 5}));

    let (said, _) = settle_with(Some(BeforeCall::RunWith(json!({"cents": 2}))), None).await;
    assert_eq!(said, "refunded 2 (seed 7)");
    let answer = BeforeCall::Answer(ToolResult::error("not now"));
    let (said, _) = settle_with(Some(answer), None).await;
    assert_eq!(said, "not now (seed 7)");
}

#[tokio::test]
async fn a_host_that_does_not_decide_refuses_the_call() {
    let (said, _) = settle_with(None, None).await;
    assert_eq!(
        said,
        "Tool refund was not run: it needs approval before it runs, and this host cannot wait for \
         a decision (seed 7)"
    );
}

#[tokio::test]
async fn replayable_values_are_recorded_with_the_host_and_replayed_from_it() {
    let (said, host) = settle_with(Some(BeforeCall::Run), None).await;
    assert!(said.ends_with("(seed 7)"));
    assert_eq!(
        *host.recorded.lock().unwrap(),
        [("c1".to_owned(), "seed".to_owned(), json!(7))]
    );
    // A host says whether it replays (this one does not: the default).
    assert!(!ToolContext::new("c").replays());
    let ctx = ToolContext::new("c").with_nested_host(host.clone() as Arc<dyn NestedHost>);
    assert!(!ctx.replays());
    // Replayed: the recorded value, not a new reading (and nothing recorded again).
    let (said, host) = settle_with(Some(BeforeCall::Run), Some(json!(42))).await;
    assert!(said.ends_with("(seed 42)"), "{said}");
    assert!(host.recorded.lock().unwrap().is_empty());
}
