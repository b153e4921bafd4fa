//! Our client against a server written with the official Python SDK (PyPI `mcp` 2.3.0,
//! `MCPServer`, formerly FastMCP), `tests/servers/python_sdk_server.py`: over streamable HTTP, and
//! once over stdio.

mod client_support;

use std::time::Duration;

use client_support::{
    PythonServer, first_update, python_stdio, recording_context, test_deps, within,
};
use pi_mcp::{McpClient, McpClientError};
use pi_tool::{AgentTool, CancellationToken, ToolCall, ToolRegistry, ToolResult};
use serde_json::json;

const GUARD: Duration = Duration::from_secs(60);
const PYTHON: &str = "venv/bin/python";

async fn connect(url: &str) -> McpClient {
    within(
        GUARD,
        "connecting to the Python server",
        McpClient::http(url).connect(),
    )
    .await
    .expect("connects to the Python server")
}

fn registry(client: &McpClient) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    client.add_to(&mut registry);
    registry
}

/// Starts the server's `wait_forever` tagged `tag`, aborts it once it reports progress, and
/// waits until the server records that this call's handler was cancelled (the session goes on).
async fn abort_wait_forever(tools: &ToolRegistry, tag: &str) {
    let signal = CancellationToken::new();
    let (ctx, updates) = recording_context(tag);
    let ctx = ctx.with_signal(signal.clone());
    let call = ToolCall::new(tag, "wait_forever", json!({"tag": tag}));
    let running = tokio::spawn({
        let tools = tools.clone();
        async move { tools.run_with(&call, ctx).await }
    });
    first_update(&updates).await;
    signal.cancel();
    let result = within(GUARD, "the aborted call", running).await.unwrap();
    assert_eq!(result.text_content(), "Operation aborted");
    within(GUARD, "the server to record the cancellation", async {
        loop {
            let cancelled = tools
                .run(&ToolCall::new("status", "cancelled_calls", json!({})))
                .await;
            if cancelled.text_content() == tag {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_and_calls_over_http() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    let server = PythonServer::start(&deps).await;
    let client = connect(&server.url).await;
    // The Python SDK 2.x speaks the new revision: the `server/discover` path.
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    assert_eq!(
        client.server_info().map(|(name, _)| name).as_deref(),
        Some("python-fastmcp")
    );
    assert_eq!(
        client.instructions().as_deref(),
        Some("Test tools for pi-mcp.")
    );
    let add = client
        .mcp_tools()
        .iter()
        .find(|tool| tool.mcp_name() == "add")
        .cloned()
        .expect("add is listed");
    assert_eq!(add.spec().description, "Add two integers.");
    assert_eq!(add.annotations().read_only, Some(true));
    assert_eq!(add.annotations().idempotent, Some(true));
    assert_eq!(add.annotations().destructive, None);
    assert!(!add.may_need_approval());

    let tools = registry(&client);
    let sum = tools
        .run(&ToolCall::new("c1", "add", json!({"a": "40", "b": 2})))
        .await;
    assert!(!sum.is_error, "{sum:?}");
    assert_eq!(sum.text_content(), "42");

    // Our validation texts, not the server's.
    let invalid = tools
        .run(&ToolCall::new("c2", "add", json!({"a": 1.5, "b": 2})))
        .await;
    assert!(invalid.is_error);
    assert!(
        invalid
            .text_content()
            .starts_with("Validation failed for tool \"add\":"),
        "{}",
        invalid.text_content()
    );

    let weather = tools
        .run(&ToolCall::new("c3", "weather", json!({"city": "Oslo"})))
        .await;
    assert!(!weather.is_error, "{weather:?}");
    assert_eq!(weather.details, json!({"city": "Oslo", "celsius": 21.5}));

    let beep = tools.run(&ToolCall::new("c4", "beep", json!({}))).await;
    assert!(!beep.is_error, "{beep:?}");
    assert!(
        beep.text_content()
            .starts_with("[audio content: audio/wav,"),
        "{}",
        beep.text_content()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_errors_become_error_results() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    let server = PythonServer::start(&deps).await;
    let client = connect(&server.url).await;
    let tools = registry(&client);
    let failed = tools
        .run(&ToolCall::new("e1", "fail", json!({"reason": "because"})))
        .await;
    assert!(failed.is_error);
    assert!(
        failed.text_content().contains("failed on purpose: because"),
        "{}",
        failed.text_content()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calling_a_tool_the_server_no_longer_has_is_an_error_result() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    let server = PythonServer::start(&deps).await;
    let client = connect(&server.url).await;
    let tools = registry(&client);
    let removed = tools
        .run(&ToolCall::new("f1", "forget", json!({"name": "weather"})))
        .await;
    assert_eq!(removed.text_content(), "removed");
    let stale = tools
        .run(&ToolCall::new("f2", "weather", json!({"city": "Oslo"})))
        .await;
    assert!(stale.is_error, "{stale:?}");
    assert!(
        stale.text_content().contains("weather"),
        "{}",
        stale.text_content()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_with_messages_becomes_updates() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    let server = PythonServer::start(&deps).await;
    let client = connect(&server.url).await;
    let tools = registry(&client);
    let (ctx, updates) = recording_context("p1");
    let result = within(
        GUARD,
        "the slow call",
        tools.run_with(&ToolCall::new("p1", "slow", json!({"steps": 3})), ctx),
    )
    .await;
    assert_eq!(result.text_content(), "done after 3 steps");
    let texts: Vec<String> = updates
        .lock()
        .unwrap()
        .iter()
        .map(ToolResult::text_content)
        .collect();
    assert!(texts.len() >= 2, "{texts:?}");
    assert_eq!(
        texts[..],
        ["step 1 of 3", "step 2 of 3", "step 3 of 3"][..texts.len()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_abort_reaches_the_server_as_a_cancellation() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    let server = PythonServer::start(&deps).await;
    let client = connect(&server.url).await;
    let tools = registry(&client);
    abort_wait_forever(&tools, "first").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_call_gives_an_error_result() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    let mut server = PythonServer::start(&deps).await;
    let client = connect(&server.url).await;
    let tools = registry(&client);
    let result = within(
        GUARD,
        "the call to a dying server",
        tools.run(&ToolCall::new("d1", "die", json!({}))),
    )
    .await;
    assert!(result.is_error, "{result:?}");
    assert!(
        result
            .text_content()
            .contains("the connection to the MCP server was lost during the call to die"),
        "{}",
        result.text_content()
    );
    within(GUARD, "the server process to exit", async {
        while server.is_running() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let after = within(
        GUARD,
        "a call after the server died",
        tools.run(&ToolCall::new("d2", "add", json!({"a": 1, "b": 2}))),
    )
    .await;
    assert!(after.is_error, "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_over_http_refreshes_the_tools() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    let server = PythonServer::start(&deps).await;
    let client = connect(&server.url).await;
    let mut watch = client.watch_tools();
    assert!(
        !client
            .tools()
            .iter()
            .any(|tool| tool.spec().name == "added_later")
    );
    let tools = registry(&client);
    let added = tools.run(&ToolCall::new("l1", "add_tool", json!({}))).await;
    assert_eq!(added.text_content(), "added");
    within(GUARD, "the refreshed tool list", async {
        while !watch
            .borrow_and_update()
            .iter()
            .any(|tool| tool.mcp_name() == "added_later")
        {
            watch.changed().await.expect("the client is alive");
        }
    })
    .await;
    let mut refreshed = ToolRegistry::new();
    client.add_to(&mut refreshed);
    let result = refreshed
        .run(&ToolCall::new("l2", "added_later", json!({})))
        .await;
    assert_eq!(result.text_content(), "new");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_problems_are_clear_errors() {
    // Nothing listens on this port (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = within(
        GUARD,
        "connecting to nothing",
        McpClient::http(format!("http://127.0.0.1:{port}/mcp"))
            .connect_timeout(Duration::from_secs(20))
            .connect(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            McpClientError::Connect { .. } | McpClientError::ConnectTimeout { .. }
        ),
        "{err}"
    );

    let err = McpClient::http("http://127.0.0.1:1/mcp")
        .header("bad header", "x")
        .connect()
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid HTTP header `bad header`"),
        "{err}"
    );

    let err = McpClient::stdio(tokio::process::Command::new("/nonexistent/mcp-server"))
        .connect()
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("could not start MCP server `/nonexistent/mcp-server`"),
        "{err}"
    );

    let err = McpClient::stdio(tokio::process::Command::new("true"))
        .bearer_token("t")
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(err, McpClientError::HeadersOnStdio { .. }),
        "{err}"
    );

    // A process that exits at once is not an MCP server.
    let err = within(
        GUARD,
        "a server that exits",
        McpClient::stdio(tokio::process::Command::new("true")).connect(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, McpClientError::Connect { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_the_new_revision_and_cancellation_work_too() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    let client = within(
        GUARD,
        "connecting to the Python server over stdio",
        McpClient::stdio(python_stdio(&deps))
            .discard_stderr()
            .connect(),
    )
    .await
    .expect("connects");
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    let tools = registry(&client);
    let sum = tools
        .run(&ToolCall::new("s1", "add", json!({"a": 1, "b": 2})))
        .await;
    assert_eq!(sum.text_content(), "3");

    abort_wait_forever(&tools, "stdio").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_slower_to_start_than_ten_seconds_still_connects() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    // rmcp's `Auto` lifecycle gives up on `server/discover` after 10 s and sends `initialize`
    // on the same pipe; the late discover answer then failed the handshake. An `npx` or `uvx`
    // server's first start easily takes that long. Here the server starts after 11 s.
    let server = python_stdio(&deps);
    let std = server.as_std();
    let mut line = format!("sleep 11; exec '{}'", std.get_program().to_string_lossy());
    for arg in std.get_args() {
        line.push_str(&format!(" '{}'", arg.to_string_lossy()));
    }
    let mut command = tokio::process::Command::new("sh");
    command.arg("-c").arg(line);
    let client = within(
        GUARD,
        "connecting to a slow server",
        McpClient::stdio(command).discard_stderr().connect(),
    )
    .await
    .expect("connects");
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    let tools = registry(&client);
    let sum = tools
        .run(&ToolCall::new("s1", "add", json!({"a": 1, "b": 2})))
        .await;
    assert_eq!(sum.text_content(), "3");
}

/// Answers every elicitation with `answer` and keeps the requests.
fn answering(
    answer: pi_mcp::ElicitationResponse,
) -> (
    impl pi_mcp::ElicitationHandler,
    std::sync::Arc<std::sync::Mutex<Vec<pi_mcp::ElicitationRequest>>>,
) {
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&asked);
    let handler = move |request: pi_mcp::ElicitationRequest| {
        seen.lock().unwrap().push(request);
        let answer = answer.clone();
        async move { answer }
    };
    (handler, asked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_required_round_is_answered_by_the_elicitation_handler() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    // The Python SDK asks through `Resolve(..)`/`Elicit`: on 2026-07-28 that is an
    // `input_required` result, and the call is sent again with the answer.
    let server = PythonServer::start(&deps).await;
    let (handler, asked) = answering(pi_mcp::ElicitationResponse::Accept(
        json!({"name": "Grace"}),
    ));
    let client = within(
        GUARD,
        "connecting",
        McpClient::http(&server.url).elicitation(handler).connect(),
    )
    .await
    .expect("connects");
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    let tools = registry(&client);
    let greeting = within(
        GUARD,
        "greet",
        tools.run(&ToolCall::new("g1", "greet", json!({}))),
    )
    .await;
    // `age` was left out: its default (36) was filled in by the client.
    assert_eq!(greeting.text_content(), "hello Grace (36)");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].message, "Who is asking?");
    let pi_mcp::ElicitationKind::Form { schema } = &asked[0].kind else {
        panic!("a form, got {:?}", asked[0].kind);
    };
    assert_eq!(schema["properties"]["age"]["default"], 36);

    // Over stdio, with a user who says no.
    let (handler, _) = answering(pi_mcp::ElicitationResponse::Decline);
    let client = within(
        GUARD,
        "connecting over stdio",
        McpClient::stdio(python_stdio(&deps))
            .discard_stderr()
            .elicitation(handler)
            .connect(),
    )
    .await
    .expect("connects");
    let declined = registry(&client)
        .run(&ToolCall::new("g2", "greet", json!({})))
        .await;
    assert_eq!(declined.text_content(), "no greeting: decline");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_handler_the_client_does_not_offer_elicitation() {
    let Some(deps) = test_deps(PYTHON) else {
        return;
    };
    // No handler, no `elicitation` capability: the Python SDK refuses to ask, and the model
    // reads why.
    let server = PythonServer::start(&deps).await;
    let client = connect(&server.url).await;
    let refused = registry(&client)
        .run(&ToolCall::new("g1", "greet", json!({})))
        .await;
    assert!(refused.is_error);
    assert!(
        refused.text_content().starts_with(
            "MCP server \"python-fastmcp\": calling tool greet failed: Client did not declare the form elicitation capability"
        ),
        "{}",
        refused.text_content()
    );
}
