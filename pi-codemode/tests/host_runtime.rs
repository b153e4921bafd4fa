//! The script's calls run on the engine's thread, inside the tokio runtime of the host that runs
//! the `code` call: tools that wait on tokio's timer, spawn a task, run on the blocking pool or
//! time out behave as they do when the host calls them, in a current-thread runtime as in a
//! multi-thread one, one after the other as at once.

use std::time::Duration;

use pi_codemode::CodeTool;
use pi_tool::{FnTool, ToolCall, ToolContext, ToolRegistry};
use serde_json::{Value, json};

fn object() -> Value {
    json!({"type": "object"})
}

fn host() -> ToolRegistry {
    let tools = ToolRegistry::new()
        .with(
            FnTool::builder("nap", "Waits on tokio's timer.", object())
                .build(|_: Value, _| async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    "rested"
                })
                .unwrap(),
        )
        .with(
            FnTool::builder("spawned", "Answers from a task it spawns.", object())
                .build(|_: Value, _| async {
                    let task = tokio::spawn(async {
                        tokio::task::yield_now().await;
                        "from a task"
                    });
                    task.await.unwrap()
                })
                .unwrap(),
        )
        .with(
            FnTool::builder("pool", "Blocks a thread of the blocking pool.", object())
                .blocking()
                .build(|_: Value, _| async {
                    std::thread::sleep(Duration::from_millis(20));
                    "off the pool"
                })
                .unwrap(),
        )
        .with(
            FnTool::builder(
                "late",
                "Runs past its timeout (and stops when told).",
                object(),
            )
            .timeout(Duration::from_millis(50))
            .build(|_: Value, ctx: ToolContext| async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(30)) => "too late",
                    () = ctx.signal().cancelled() => "stopped",
                }
            })
            .unwrap(),
        );
    tools.clone().with(CodeTool::new(&tools))
}

const IN_TURN: &str = "return [await tools.nap({}), await tools.spawned({}), await tools.pool({}), \
    await tools.late({}).catch(e => e.message)];";
const AT_ONCE: &str = "return await Promise.all([tools.nap({}), tools.spawned({}), tools.pool({}), \
    tools.late({}).catch(e => e.message)]);";

async fn check(script: &str) {
    let result = host()
        .run(&ToolCall::new("c1", "code", json!({ "script": script })))
        .await;
    assert!(!result.is_error, "{result:?}");
    let answers = &result.details["result"];
    assert_eq!(answers[0], "rested");
    assert_eq!(answers[1], "from a task");
    assert_eq!(answers[2], "off the pool");
    let late = answers[3].as_str().unwrap();
    assert!(late.starts_with("late: "), "{late}");
    assert!(late.contains("timed out"), "{late}");
}

#[tokio::test]
async fn in_a_current_thread_runtime() {
    check(IN_TURN).await;
    check(AT_ONCE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_multi_thread_runtime() {
    check(IN_TURN).await;
    check(AT_ONCE).await;
}
