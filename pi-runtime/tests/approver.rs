//! Deciding waiting calls in process, without saving anything: an approver (an async
//! callback) with a timeout policy (wait as long as it takes, deny after a duration, pause the
//! run after a duration).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{call, calls, text};
use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, ApprovalTimeout, Decision, Message, RunState,
    ScriptedModel, agent_loop,
};
use pi_tool::{AgentTool, CancellationToken, FnTool, ToolResult, tool};
use serde_json::json;

/// Refund an order.
#[tool(approval)]
async fn refund(cents: u64) -> String {
    format!("refunded {cents}")
}

/// Delete a file.
#[tool(approval)]
async fn delete(path: String) -> String {
    format!("deleted {path}")
}

fn pick_file() -> Arc<dyn AgentTool> {
    Arc::new(FnTool::external("pick_file", "Pick a file.", json!({"type": "object"})).unwrap())
}

async fn run(config: AgentLoopConfig) -> (Vec<(String, bool, String)>, Option<RunState>, usize) {
    let model = Arc::new(ScriptedModel::new([
        calls(vec![
            call("c1", "refund", json!({"cents": 500})),
            call("c2", "delete", json!({"path": "/etc"})),
            call("c3", "pick_file", json!({})),
        ]),
        text("done"),
    ]));
    let context = AgentContext::new("test")
        .with_tool(RefundTool)
        .with_tool(DeleteTool)
        .with_tools([pick_file()]);
    let mut stream = agent_loop(
        vec![Message::user("go")],
        context,
        config,
        Arc::clone(&model) as Arc<dyn pi_runtime::Model>,
        CancellationToken::new(),
    );
    let mut results = Vec::new();
    while let Some(event) = stream.next_event().await {
        if let AgentEvent::ToolExecutionEnd {
            call,
            result,
            is_error,
            ..
        } = event
        {
            let text = result
                .as_tool_result()
                .map(|r| r.text())
                .unwrap_or_default();
            results.push((call.id().to_owned(), is_error, text));
        }
    }
    results.sort();
    (results, stream.take_paused(), model.calls())
}

#[tokio::test]
async fn the_approver_decides_each_waiting_call_and_the_run_goes_on() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let config = AgentLoopConfig::new().approver(
        move |call| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move {
                // A person takes a moment.
                tokio::time::sleep(Duration::from_millis(5)).await;
                match call.tool.as_str() {
                    "refund" => Decision::ApproveWith {
                        arguments: json!({"cents": 400}),
                    },
                    "delete" => Decision::Deny {
                        reason: "never /etc".into(),
                    },
                    _ => Decision::Answer {
                        result: ToolResult::text("a.txt"),
                    },
                }
            }
        },
        ApprovalTimeout::WaitForever,
    );
    let (results, paused, requests) = run(config).await;
    assert!(paused.is_none());
    assert_eq!(asked.load(Ordering::SeqCst), 3);
    assert_eq!(requests, 2);
    assert_eq!(
        results,
        [
            ("c1".to_owned(), false, "refunded 400".to_owned()),
            (
                "c2".to_owned(),
                true,
                "Tool delete was not run: the call was denied: never /etc".to_owned()
            ),
            ("c3".to_owned(), false, "a.txt".to_owned()),
        ]
    );
}

#[tokio::test]
async fn approving_an_external_call_or_giving_bad_arguments_is_an_error_result() {
    let config = AgentLoopConfig::new().approver(
        |call| async move {
            match call.tool.as_str() {
                "refund" => Decision::ApproveWith {
                    arguments: json!({"cents": "lots"}),
                },
                _ => Decision::Approve,
            }
        },
        ApprovalTimeout::WaitForever,
    );
    let (results, paused, _) = run(config).await;
    assert!(paused.is_none());
    assert!(results[0].1, "{results:?}");
    assert!(results[0].2.contains("cents"), "{results:?}");
    assert_eq!(
        results[1],
        ("c2".to_owned(), false, "deleted /etc".to_owned())
    );
    assert!(
        results[2].1 && results[2].2.contains("only an answer settles"),
        "{results:?}"
    );
}

#[tokio::test]
async fn deny_after_a_duration() {
    let config = AgentLoopConfig::new().approver(
        |_call| std::future::pending::<Decision>(),
        ApprovalTimeout::DenyAfter(Duration::from_millis(30)),
    );
    let (results, paused, requests) = run(config).await;
    assert!(paused.is_none());
    assert_eq!(requests, 2);
    assert_eq!(results.len(), 3);
    for (_, is_error, text) in &results {
        assert!(is_error);
        assert!(
            text.contains("no decision on it came within 30ms"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn pause_after_a_duration() {
    let config = AgentLoopConfig::new().approver(
        |call| async move {
            if call.tool == "refund" {
                Decision::Approve
            } else {
                std::future::pending::<Decision>().await
            }
        },
        ApprovalTimeout::PauseAfter(Duration::from_millis(30)),
    );
    let (results, paused, requests) = run(config).await;
    let paused = paused.expect("the run paused on the unanswered calls");
    let waiting: Vec<&str> = paused.waiting().iter().map(|w| w.id.as_str()).collect();
    assert_eq!(waiting, ["c2", "c3"]);
    assert_eq!(
        results,
        [("c1".to_owned(), false, "refunded 500".to_owned())]
    );
    assert_eq!(requests, 1);
}

#[tokio::test]
async fn an_abort_ends_the_wait_for_the_approver() {
    let signal = CancellationToken::new();
    let cancel = signal.clone();
    let config = AgentLoopConfig::new().approver(
        move |_call| {
            cancel.cancel();
            std::future::pending::<Decision>()
        },
        ApprovalTimeout::WaitForever,
    );
    let model = Arc::new(ScriptedModel::new([calls(vec![call(
        "c1",
        "refund",
        json!({"cents": 1}),
    )])]));
    let stream = agent_loop(
        vec![Message::user("go")],
        AgentContext::new("test").with_tool(RefundTool),
        config,
        model,
        signal,
    );
    let (messages, paused) = tokio::time::timeout(Duration::from_secs(10), stream.outcome())
        .await
        .expect("the run ends");
    assert!(paused.is_none());
    let result = messages.iter().find_map(|m| m.as_tool_result()).unwrap();
    assert!(result.is_error);
    assert_eq!(result.text(), "Operation aborted");
}
