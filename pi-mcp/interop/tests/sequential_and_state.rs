//! Server behaviour the official clients' scripts do not reach: concurrent calls of a
//! `sequential` tool are serialized (each runs alone, as in the agent loop), and `State<T>` values
//! given to the registry reach the tools. Driven by rmcp's client over stdio.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, JsonObject,
};
use rmcp::service::PeerRequestOptions;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

fn params(name: &'static str, arguments: serde_json::Value) -> CallToolRequestParams {
    let arguments: JsonObject = match arguments {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    CallToolRequestParams::new(name).with_arguments(arguments)
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_calls_never_overlap_and_state_reaches_tools() {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi-mcp-fixture-server"));
    command.arg("stdio").stderr(std::process::Stdio::null());
    let client = ().serve(TokioChildProcess::new(command).expect("spawn")).await.expect("connect");

    // Four concurrent calls of the sequential tool, plus a parallel tool alongside.
    let calls = (0..4).map(|_| client.call_tool(params("one_at_a_time", json!({"ms": 100}))));
    let (results, echo) = tokio::join!(
        futures_util::future::join_all(calls),
        client.call_tool(params("echo", json!({"text": "alongside"})))
    );
    for result in results {
        assert_eq!(text(&result.expect("call")), "done");
    }
    assert_eq!(text(&echo.expect("echo")), "alongside");
    let most = client
        .call_tool(params("most_overlap", json!({})))
        .await
        .expect("most_overlap");
    // `State<Overlap>` is the registry's: the calls above counted into the same value.
    assert_eq!(text(&most), "1", "sequential calls overlapped");

    // `wait_for_cancel` sleeps for a minute unless cancelled: a call that is still running does
    // not hold up other calls of other tools.
    let waiting = client.call_tool(params("wait_for_cancel", json!({})));
    let quick = tokio::time::timeout(
        Duration::from_secs(30),
        client.call_tool(params("cancelled_calls", json!({}))),
    );
    tokio::select! {
        result = quick => assert_eq!(text(&result.expect("not blocked").expect("call")), "0"),
        _ = waiting => panic!("wait_for_cancel returned without a cancel"),
    }
    client.cancel().await.expect("close");
}

/// A call of a sequential tool that is cancelled while it waits for its turn never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequential_call_cancelled_while_waiting_never_runs() {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi-mcp-fixture-server"));
    command.arg("stdio").stderr(std::process::Stdio::null());
    let client = ().serve(TokioChildProcess::new(command).expect("spawn")).await.expect("connect");

    // The first call holds the tool's turn for 3 s; the second waits behind it.
    let holding = client.call_tool(params("one_at_a_time", json!({"ms": 3000})));
    let waiting = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params(
            "one_at_a_time",
            json!({"ms": 0}),
        )));
        let handle = client
            .peer()
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .expect("send");
        tokio::time::sleep(Duration::from_millis(300)).await;
        handle
            .cancel(Some("no longer needed".into()))
            .await
            .expect("cancel");
    };
    let (held, ()) = tokio::join!(holding, waiting);
    assert_eq!(text(&held.expect("first call")), "done");
    // Had the cancelled call kept waiting, it would start as soon as the first one ended.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let runs = client
        .call_tool(params("one_at_a_time_runs", json!({})))
        .await
        .expect("runs");
    assert_eq!(text(&runs), "1", "the cancelled call ran after all");
    client.cancel().await.expect("close");
}
