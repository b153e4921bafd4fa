//! Calls that wait: a tool that needs approval (`#[tool(approval)]`, `approval = path`, the
//! builder's `approval`, a registry policy), a `before_tool_call` that suspends, and an external
//! tool. The other calls of the batch run; the run ends paused, listing each waiting call with
//! the arguments it would run with; nothing is in the transcript for a waiting call.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{call, calls, text};
use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, BeforeToolCall, Message, RunState, ScriptedModel,
    ToolExecution, WaitKind, WaitingCall, agent_loop,
};
use pi_tool::{AgentTool, CancellationToken, FnTool, ToolContext, ToolRegistry, tool};
use serde_json::{Value, json};

/// Refund an order.
#[tool(approval)]
async fn refund(cents: u64) -> String {
    format!("refunded {cents}")
}

fn large(args: &TransferParams, _ctx: &ToolContext) -> bool {
    args.cents > 10_000
}

/// Transfer money.
#[tool(approval = large)]
async fn transfer(cents: u64) -> String {
    format!("transferred {cents}")
}

/// Read a note.
#[tool]
async fn read(name: String) -> String {
    format!("note {name}")
}

fn pick_file() -> Arc<dyn AgentTool> {
    Arc::new(
        FnTool::external(
            "pick_file",
            "Ask the user to pick a file.",
            json!({"type": "object", "properties": {"accept": {"type": "string"}}}),
        )
        .unwrap(),
    )
}

/// Runs the loop with the prompt `go`; returns the events and the paused state.
async fn run(
    context: AgentContext,
    config: AgentLoopConfig,
    model: Arc<ScriptedModel>,
) -> (Vec<AgentEvent>, Option<RunState>) {
    let mut stream = agent_loop(
        vec![Message::user("go")],
        context,
        config,
        model,
        CancellationToken::new(),
    );
    let mut events = Vec::new();
    while let Some(event) = stream.next_event().await {
        events.push(event);
    }
    (events, stream.take_paused())
}

fn waiting_events(events: &[AgentEvent]) -> Vec<WaitingCall> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolCallWaiting { waiting, .. } => Some((**waiting).clone()),
            _ => None,
        })
        .collect()
}

fn result_ids(messages: &[Arc<Message>]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| r.tool_call_id.clone())
        .collect()
}

async fn mixed_batch(mode: ToolExecution) {
    let model = Arc::new(ScriptedModel::new([
        calls(vec![
            call("c1", "refund", json!({"cents": 500})),
            call("c2", "read", json!({"name": "a"})),
            call("c3", "pick_file", json!({"accept": ".txt"})),
            call("c4", "transfer", json!({"cents": 20})),
            call("c5", "transfer", json!({"cents": 20_000})),
        ]),
        text("never asked"),
    ]));
    let context = AgentContext::new("test")
        .with_tool(RefundTool)
        .with_tool(ReadTool)
        .with_tool(TransferTool)
        .with_tools([pick_file()]);
    let config = AgentLoopConfig::new().tool_execution(mode);
    let (events, paused) = run(context, config, Arc::clone(&model)).await;

    let paused = paused.expect("the run paused");
    let expected = vec![
        WaitingCall::new(
            "c1",
            "refund",
            json!({"cents": 500}),
            "Tool refund needs approval before it runs",
            WaitKind::Approval,
        ),
        WaitingCall::new(
            "c3",
            "pick_file",
            json!({"accept": ".txt"}),
            "Tool pick_file is external: its call is answered from outside",
            WaitKind::External,
        ),
        WaitingCall::new(
            "c5",
            "transfer",
            json!({"cents": 20_000}),
            "Tool transfer needs approval before it runs",
            WaitKind::Approval,
        ),
    ];
    assert_eq!(paused.waiting(), expected.as_slice());
    assert_eq!(waiting_events(&events), expected);
    let paused_event = events.iter().find_map(|event| match event {
        AgentEvent::RunPaused { waiting } => Some(waiting.clone()),
        _ => None,
    });
    assert_eq!(paused_event, Some(expected));
    // The other calls ran; the waiting ones have no result anywhere.
    assert_eq!(result_ids(&paused.messages), ["c2", "c4"]);
    let ends: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolExecutionEnd { call, .. } => Some(call.id()),
            _ => None,
        })
        .collect();
    assert_eq!(ends, ["c2", "c4"]);
    // The transcript ends with the assistant message and the results: no second request.
    assert_eq!(model.calls(), 1);
    assert_eq!(paused.messages.len(), 4);
    assert_eq!(paused.requests, 1);
    let kinds: Vec<&str> = events.iter().map(AgentEvent::kind).collect();
    assert_eq!(
        &kinds[kinds.len() - 3..],
        ["turn_end", "run_paused", "agent_end"]
    );
}

#[tokio::test]
async fn a_parallel_batch_runs_the_other_calls_and_pauses_on_the_waiting_ones() {
    mixed_batch(ToolExecution::Parallel).await;
}

#[tokio::test]
async fn a_sequential_batch_runs_the_other_calls_and_pauses_on_the_waiting_ones() {
    mixed_batch(ToolExecution::Sequential).await;
}

#[tokio::test]
async fn a_run_without_waiting_calls_does_not_pause() {
    let model = Arc::new(ScriptedModel::new([
        calls(vec![call("c1", "transfer", json!({"cents": 20}))]),
        text("done"),
    ]));
    let context = AgentContext::new("test").with_tool(TransferTool);
    let (events, paused) = run(context, AgentLoopConfig::new(), model).await;
    assert!(paused.is_none());
    assert!(waiting_events(&events).is_empty());
    assert!(!events.iter().any(|e| e.kind() == "run_paused"));
}

#[tokio::test]
async fn before_tool_call_suspends_a_call_with_its_reason_and_the_prepared_arguments() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    // `prepare_arguments` rewrites the model's old shape: the waiting call shows the new one.
    let delete = FnTool::builder(
        "delete",
        "Delete a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )
    .prepare_arguments(|args: Value| -> Result<Value, pi_tool::ToolError> {
        Ok(json!({"path": args["file"].as_str().unwrap_or_default()}))
    })
    .build(move |_args: Value, _ctx| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { "deleted" }
    })
    .unwrap();
    let model = Arc::new(ScriptedModel::new([calls(vec![call(
        "c1",
        "delete",
        json!({"file": "/etc/passwd"}),
    )])]));
    let config = AgentLoopConfig::new().before_tool_call(|ctx| async move {
        assert_eq!(ctx.args, json!({"path": "/etc/passwd"}));
        Ok(BeforeToolCall::suspend("deleting needs the user's yes"))
    });
    let context = AgentContext::new("test").with_tool(delete);
    let (events, paused) = run(context, config, model).await;
    let paused = paused.expect("paused");
    assert_eq!(
        paused.waiting(),
        [WaitingCall::new(
            "c1",
            "delete",
            json!({"path": "/etc/passwd"}),
            "deleting needs the user's yes",
            WaitKind::Approval,
        )]
    );
    assert_eq!(waiting_events(&events).len(), 1);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert!(result_ids(&paused.messages).is_empty());
}

#[tokio::test]
async fn a_blocking_hook_still_blocks_a_call_that_needs_approval() {
    let model = Arc::new(ScriptedModel::new([
        calls(vec![call("c1", "refund", json!({"cents": 1}))]),
        text("ok"),
    ]));
    let config = AgentLoopConfig::new()
        .before_tool_call(|_ctx| async { Ok(BeforeToolCall::block("no refunds today")) });
    let context = AgentContext::new("test").with_tool(RefundTool);
    let (events, paused) = run(context, config, model).await;
    assert!(paused.is_none());
    let results = common::results(&events);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
}

#[tokio::test]
async fn the_registry_policy_and_the_builder_make_calls_wait() {
    /// Wipe the disk.
    #[tool(destructive)]
    async fn wipe() -> String {
        "wiped".into()
    }
    let confirm = FnTool::builder("confirm", "Confirm.", json!({"type": "object"}))
        .approval()
        .build(|_args: Value, _ctx| async { "confirmed" })
        .unwrap();
    let big = FnTool::builder(
        "spend",
        "Spend.",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
    )
    .approval_when(|args, _ctx| args["n"].as_i64().unwrap_or(0) > 10)
    .build(|_args: Value, _ctx| async { "spent" })
    .unwrap();
    let registry = ToolRegistry::new()
        .with(WipeTool)
        .with(ReadTool)
        .with(confirm)
        .with(big)
        .require_approval(|tool| tool.annotations().destructive == Some(true));
    let model = Arc::new(ScriptedModel::new([calls(vec![
        call("c1", "wipe", json!({})),
        call("c2", "read", json!({"name": "x"})),
        call("c3", "confirm", json!({})),
        call("c4", "spend", json!({"n": 5})),
        call("c5", "spend", json!({"n": 50})),
    ])]));
    let context = AgentContext::new("test").with_registry(registry);
    let (_, paused) = run(context, AgentLoopConfig::new(), model).await;
    let paused = paused.expect("paused");
    let ids: Vec<&str> = paused.waiting().iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c3", "c5"]);
    assert_eq!(result_ids(&paused.messages), ["c2", "c4"]);
}

#[tokio::test]
async fn an_external_tool_run_by_a_plain_registry_answers_that_it_cannot_wait() {
    let registry = ToolRegistry::new()
        .with(FnTool::external("pick", "Pick.", json!({"type": "object"})).unwrap());
    let result = registry
        .run(&pi_tool::ToolCall::new("c1", "pick", json!({})))
        .await;
    assert!(result.is_error);
    assert!(result.text_content().contains("is external"));
}

#[tokio::test]
async fn a_paused_state_round_trips_through_json() {
    let model = Arc::new(ScriptedModel::new([calls(vec![call(
        "c1",
        "refund",
        json!({"cents": 7}),
    )])]));
    let context = AgentContext::new("test").with_tool(RefundTool);
    let (_, paused) = run(context, AgentLoopConfig::new(), model).await;
    let paused = paused.unwrap();
    let text = paused.to_json();
    assert_eq!(RunState::from_json(&text).unwrap(), paused);
}

#[tokio::test]
async fn hosts_that_cannot_wait_refuse_a_call_that_needs_approval_and_the_loop_waits() {
    // A plain registry.
    let registry = ToolRegistry::new().with(RefundTool).with(TransferTool);
    let refused = registry
        .run(&pi_tool::ToolCall::new("c1", "refund", json!({"cents": 5})))
        .await;
    assert!(refused.is_error);
    assert!(
        refused.text_content().contains("needs approval"),
        "{}",
        refused.text_content()
    );
    let small = registry
        .run(&pi_tool::ToolCall::new(
            "c2",
            "transfer",
            json!({"cents": 5}),
        ))
        .await;
    assert_eq!(small.text_content(), "transferred 5");

    // A call a tool makes from code, inside the loop.
    let caller = FnTool::builder("caller", "Call refund.", json!({"type": "object"}))
        .build(|_args: Value, ctx: ToolContext| async move {
            let result = ctx.call_tool("refund", json!({"cents": 9})).await;
            result.text_content()
        })
        .unwrap();
    let model = Arc::new(ScriptedModel::new([
        calls(vec![call("c1", "caller", json!({}))]),
        text("done"),
    ]));
    let context = AgentContext::new("test")
        .with_tool(caller)
        .with_tool(RefundTool);
    // The loop can wait: the call waits with its nested call (see tests/nested_waits.rs).
    let (_, paused) = run(context, AgentLoopConfig::new(), model).await;
    let paused = paused.expect("the run pauses on the nested call");
    assert_eq!(paused.waiting()[0].id, "c1");
    assert_eq!(paused.nested["c1"].call.tool, "refund");
}

/// `read` with its own `needs_approval` (always `true`, counted) and a chosen
/// `may_need_approval`.
struct AskedRead {
    asked: Arc<AtomicUsize>,
    may_need_approval: bool,
}

impl AgentTool for AskedRead {
    fn spec(&self) -> &pi_tool::ToolSpec {
        ReadTool.spec()
    }
    fn label(&self) -> &str {
        "Read"
    }
    fn needs_approval(&self, _args: &Value, _ctx: &ToolContext) -> bool {
        self.asked.fetch_add(1, Ordering::SeqCst);
        true
    }
    fn may_need_approval(&self) -> bool {
        self.may_need_approval
    }
    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> pi_tool::BoxFuture<'static, Result<pi_tool::ToolResult, pi_tool::ToolError>> {
        ReadTool.execute(args, ctx)
    }
}

#[tokio::test]
async fn the_loop_asks_needs_approval_only_of_a_tool_that_may_need_it() {
    // What `#[tool]` and `FnTool` answer.
    assert!(!ReadTool.may_need_approval(), "#[tool] without approval");
    assert!(RefundTool.may_need_approval(), "#[tool(approval)]");
    assert!(TransferTool.may_need_approval(), "#[tool(approval = path)]");
    let plain = FnTool::builder("plain", "Plain.", json!({"type": "object"}))
        .build(|_args: Value, _ctx| async { "ok" })
        .unwrap();
    assert!(!plain.may_need_approval(), "FnTool without a rule");
    let ruled = FnTool::builder("ruled", "Ruled.", json!({"type": "object"}))
        .approval()
        .build(|_args: Value, _ctx| async { "ok" })
        .unwrap();
    assert!(ruled.may_need_approval(), "FnTool with a rule");

    for mode in [ToolExecution::Parallel, ToolExecution::Sequential] {
        for may_need_approval in [true, false] {
            let asked = Arc::new(AtomicUsize::new(0));
            let tool = AskedRead {
                asked: Arc::clone(&asked),
                may_need_approval,
            };
            let model = Arc::new(ScriptedModel::new([
                calls(vec![call("c1", "read", json!({"name": "a"}))]),
                text("done"),
            ]));
            let context = AgentContext::new("test").with_tool(tool);
            let config = AgentLoopConfig::new().tool_execution(mode);
            let (events, paused) = run(context, config, model).await;
            let waiting = waiting_events(&events);
            if may_need_approval {
                // Asked once, and its answer counts.
                assert_eq!(asked.load(Ordering::SeqCst), 1, "{mode:?}");
                assert_eq!(waiting.len(), 1, "{mode:?}");
                assert!(paused.is_some(), "{mode:?}");
            } else {
                // Never asked: the call runs.
                assert_eq!(asked.load(Ordering::SeqCst), 0, "{mode:?}");
                assert!(waiting.is_empty(), "{mode:?}");
                assert!(paused.is_none(), "{mode:?}");
            }
        }
    }
}
