//! Calls that wait outside the agent loop: `ToolRegistry::run_or_wait` gives a call that needs
//! approval, or whose tool is external, back as a waiting outcome (it does not run);
//! `ToolRegistry::decide` settles it; a registry with an approver asks it, in `run` too.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use pi_tool::serde_json::{self, Value, json};
use pi_tool::{
    CallOutcome, Decision, FnTool, ToolCall, ToolRegistry, ToolResult, WaitKind, WaitingCall,
    approver, tool,
};

static REFUNDS: AtomicUsize = AtomicUsize::new(0);

/// Refund an order.
#[tool(approval)]
async fn refund(order: String, cents: u32) -> String {
    REFUNDS.fetch_add(1, Ordering::SeqCst);
    format!("refunded {cents} on {order}")
}

/// Pick a color in the user's browser: answered from outside.
fn pick_color() -> FnTool {
    FnTool::external(
        "pick_color",
        "Ask the user to pick a color.",
        json!({"type": "object", "properties": {"prompt": {"type": "string"}}}),
    )
    .expect("a valid tool")
}

/// A tool that counts its runs and needs approval only for big amounts.
fn transfer(runs: Arc<AtomicUsize>) -> FnTool {
    FnTool::builder(
        "transfer",
        "Move money.",
        json!({"type": "object", "properties": {"amount": {"type": "integer"}},
               "required": ["amount"]}),
    )
    .approval_when(|args: &Value, _ctx: &pi_tool::ToolContext| args["amount"].as_i64() > Some(100))
    .build(move |args: Value, _ctx| {
        let runs = Arc::clone(&runs);
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            format!("moved {}", args["amount"])
        }
    })
    .expect("a valid tool")
}

fn waiting(outcome: CallOutcome) -> WaitingCall {
    match outcome {
        CallOutcome::Waiting(waiting) => waiting,
        CallOutcome::Done(result) => panic!("the call ran: {}", result.text_content()),
    }
}

fn done(outcome: CallOutcome) -> ToolResult {
    match outcome {
        CallOutcome::Done(result) => result,
        CallOutcome::Waiting(waiting) => panic!("the call waits: {waiting:?}"),
    }
}

#[tokio::test]
async fn a_call_that_needs_approval_comes_back_waiting_and_runs_once_approved() {
    let tools = ToolRegistry::new().with(RefundTool);
    // "cents" arrives as a string: the waiting call holds the arguments as they would run.
    let call = ToolCall::new("c1", "refund", json!({"order": "A-7", "cents": "250"}));
    let before = REFUNDS.load(Ordering::SeqCst);
    let waiting = waiting(tools.run_or_wait(&call).await);
    assert_eq!(REFUNDS.load(Ordering::SeqCst), before, "nothing ran");
    assert_eq!(waiting.id, "c1");
    assert_eq!(waiting.tool, "refund");
    assert_eq!(waiting.arguments, json!({"order": "A-7", "cents": 250}));
    assert_eq!(waiting.kind, WaitKind::Approval);
    assert_eq!(waiting.reason, "Tool refund needs approval before it runs");

    // The waiting call is data: kept as JSON, decided later.
    let kept = serde_json::to_string(&waiting).expect("serializes");
    let waiting: WaitingCall = serde_json::from_str(&kept).expect("reads back");
    let result = tools.decide(&waiting, Decision::Approve).await;
    assert!(!result.is_error, "{}", result.text_content());
    assert_eq!(result.text_content(), "refunded 250 on A-7");
    assert_eq!(REFUNDS.load(Ordering::SeqCst), before + 1);

    // `run` without an approver still refuses it, with an error result.
    let refused = tools.run(&call).await;
    assert!(refused.is_error);
    assert!(
        refused.text_content().contains("needs approval"),
        "{}",
        refused.text_content()
    );
}

#[tokio::test]
async fn decisions_deny_replace_or_answer_a_waiting_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    let tools = ToolRegistry::new().with(transfer(Arc::clone(&runs)));
    // Below the rule's threshold the call runs as usual.
    let small = ToolCall::new("c1", "transfer", json!({"amount": 5}));
    assert_eq!(
        done(tools.run_or_wait(&small).await).text_content(),
        "moved 5"
    );
    let big = ToolCall::new("c2", "transfer", json!({"amount": 500}));
    let waiting = waiting(tools.run_or_wait(&big).await);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let denied = tools
        .decide(
            &waiting,
            Decision::Deny {
                reason: "over the limit".into(),
            },
        )
        .await;
    assert!(denied.is_error);
    assert_eq!(
        denied.text_content(),
        "Tool transfer was not run: the call was denied: over the limit"
    );
    // Arguments a person gives are validated as the model's are.
    let invalid = tools
        .decide(
            &waiting,
            Decision::ApproveWith {
                arguments: json!({"amount": "lots"}),
            },
        )
        .await;
    assert!(invalid.is_error);
    assert!(
        invalid.text_content().contains("amount"),
        "{}",
        invalid.text_content()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "neither ran");

    let replaced = tools
        .decide(
            &waiting,
            Decision::ApproveWith {
                arguments: json!({"amount": 90}),
            },
        )
        .await;
    assert_eq!(replaced.text_content(), "moved 90");
    let answered = tools
        .decide(
            &waiting,
            Decision::Answer {
                result: ToolResult::text("done by hand"),
            },
        )
        .await;
    assert_eq!(answered.text_content(), "done by hand");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_external_tool_waits_for_an_answer_and_an_approval_does_not_settle_it() {
    let tools = ToolRegistry::new().with(pick_color());
    let call = ToolCall::new("c1", "pick_color", json!({"prompt": "Your favourite?"}));
    let waiting = waiting(tools.run_or_wait(&call).await);
    assert_eq!(waiting.kind, WaitKind::External);
    assert_eq!(waiting.arguments, json!({"prompt": "Your favourite?"}));
    let approved = tools.decide(&waiting, Decision::Approve).await;
    assert!(approved.is_error);
    assert_eq!(
        approved.text_content(),
        "Tool pick_color is external: only an answer settles its call, not an approval"
    );
    let answered = tools
        .decide(
            &waiting,
            Decision::Answer {
                result: ToolResult::text("teal"),
            },
        )
        .await;
    assert_eq!(answered.text_content(), "teal");
}

#[tokio::test]
async fn the_registry_wide_policy_makes_calls_wait() {
    let runs = Arc::new(AtomicUsize::new(0));
    let tools = ToolRegistry::new()
        .with(transfer(Arc::clone(&runs)))
        .require_approval(|tool| tool.spec().name == "transfer");
    let small = ToolCall::new("c1", "transfer", json!({"amount": 5}));
    let waiting = waiting(tools.run_or_wait(&small).await);
    assert_eq!(waiting.kind, WaitKind::Approval);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_approver_decides_in_process_in_run_and_run_or_wait() {
    let runs = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let tools = ToolRegistry::new()
        .with(transfer(Arc::clone(&runs)))
        .with(pick_color())
        .with_approver(approver(move |waiting: WaitingCall| {
            seen.lock()
                .unwrap()
                .push((waiting.id.clone(), waiting.kind));
            async move {
                match waiting.tool.as_str() {
                    "pick_color" => Decision::Answer {
                        result: ToolResult::text("red"),
                    },
                    _ if waiting.arguments["amount"].as_i64() > Some(1000) => Decision::Deny {
                        reason: "too much".into(),
                    },
                    _ => Decision::Approve,
                }
            }
        }));
    let approved = tools
        .run(&ToolCall::new("c1", "transfer", json!({"amount": 500})))
        .await;
    assert_eq!(approved.text_content(), "moved 500");
    let denied = done(
        tools
            .run_or_wait(&ToolCall::new("c2", "transfer", json!({"amount": 5000})))
            .await,
    );
    assert_eq!(
        denied.text_content(),
        "Tool transfer was not run: the call was denied: too much"
    );
    let answered = tools
        .run(&ToolCall::new("c3", "pick_color", json!({})))
        .await;
    assert_eq!(answered.text_content(), "red");
    // A call that needs no approval is not put to the approver.
    let small = tools
        .run(&ToolCall::new("c4", "transfer", json!({"amount": 1})))
        .await;
    assert_eq!(small.text_content(), "moved 1");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        *asked.lock().unwrap(),
        vec![
            ("c1".to_owned(), WaitKind::Approval),
            ("c2".to_owned(), WaitKind::Approval),
            ("c3".to_owned(), WaitKind::External),
        ]
    );
}

#[tokio::test]
async fn a_panicking_approver_is_an_error_result_and_the_call_does_not_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let tools = ToolRegistry::new()
        .with(transfer(Arc::clone(&runs)))
        .with_approver(approver(|_waiting: WaitingCall| async {
            panic!("the approval service is down");
        }));
    let result = tools
        .run(&ToolCall::new("c1", "transfer", json!({"amount": 500})))
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "Tool transfer was not run: the approver panicked: the approval service is down"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
