//! Our client against `@modelcontextprotocol/server-everything` (npm, the MCP reference server,
//! TypeScript SDK, stdio): a server we did not write, which speaks only the `initialize`
//! handshake (so this also covers the fallback from `server/discover`).

mod client_support;

use std::time::Duration;

use client_support::{first_update, recording_context, server_everything, test_deps, within};
use pi_mcp::McpClient;
use pi_tool::{CancellationToken, Content, ToolCall, ToolRegistry, ToolResult};
use serde_json::json;

const GUARD: Duration = Duration::from_secs(60);

async fn connect(deps: &std::path::Path) -> McpClient {
    within(
        GUARD,
        "connecting to server-everything",
        McpClient::stdio(server_everything(deps))
            .prefix("everything")
            .discard_stderr()
            .connect(),
    )
    .await
    .expect("connects to server-everything")
}

fn registry(client: &McpClient) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    assert!(client.add_to(&mut registry).is_empty());
    registry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_tools_with_prefixed_names_schemas_and_annotations() {
    let Some(deps) = test_deps("node_modules/@modelcontextprotocol/server-everything") else {
        return;
    };
    let client = connect(&deps).await;
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));
    let tools = client.mcp_tools();
    let names: Vec<&str> = tools.iter().map(|tool| tool.mcp_name()).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "trigger-long-running-operation",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let sum = tools
        .iter()
        .find(|tool| tool.mcp_name() == "get-sum")
        .unwrap();
    use pi_tool::AgentTool;
    assert_eq!(sum.spec().name, "everything__get-sum");
    assert_eq!(sum.spec().parameters["type"], "object");
    assert_eq!(sum.spec().parameters["required"], json!(["a", "b"]));
    let image = tools
        .iter()
        .find(|tool| tool.mcp_name() == "get-tiny-image")
        .unwrap();
    assert_eq!(image.label(), "Get Tiny Image Tool");
    let hints = image.annotations();
    assert_eq!(hints.read_only, Some(true));
    assert_eq!(hints.idempotent, Some(true));
    assert_eq!(hints.destructive, Some(false));
    assert_eq!(hints.open_world, Some(false));
    let structured = tools
        .iter()
        .find(|tool| tool.mcp_name() == "get-structured-content")
        .unwrap();
    assert_eq!(structured.output_schema().unwrap()["type"], "object");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_go_through_our_validation_and_map_text_images_and_structured_content() {
    let Some(deps) = test_deps("node_modules/@modelcontextprotocol/server-everything") else {
        return;
    };
    let client = connect(&deps).await;
    let tools = registry(&client);

    // "3" is normalized to 3 by our validation before the server sees it.
    let sum = tools
        .run(&ToolCall::new(
            "c1",
            "everything__get-sum",
            json!({"a": 2, "b": "3"}),
        ))
        .await;
    assert!(!sum.is_error, "{sum:?}");
    assert_eq!(sum.text_content(), "The sum of 2 and 3 is 5.");

    // Invalid arguments never reach the server: the model gets our text.
    let invalid = tools
        .run(&ToolCall::new(
            "c2",
            "everything__get-sum",
            json!({"a": "two"}),
        ))
        .await;
    assert!(invalid.is_error);
    let text = invalid.text_content();
    assert!(
        text.starts_with("Validation failed for tool \"everything__get-sum\":"),
        "{text}"
    );
    assert!(text.contains("b: missing required property"), "{text}");

    let image = tools
        .run(&ToolCall::new(
            "c3",
            "everything__get-tiny-image",
            json!({}),
        ))
        .await;
    assert!(!image.is_error, "{image:?}");
    assert_eq!(image.content.len(), 3);
    assert!(
        matches!(&image.content[1], Content::Image { mime_type, data } if mime_type == "image/png" && data.starts_with("iVBORw0KGgo")),
        "{:?}",
        image.content[1]
    );

    let structured = tools
        .run(&ToolCall::new(
            "c4",
            "everything__get-structured-content",
            json!({"location": "Chicago"}),
        ))
        .await;
    assert!(!structured.is_error, "{structured:?}");
    assert_eq!(
        structured.details,
        json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82})
    );

    let links = tools
        .run(&ToolCall::new(
            "c5",
            "everything__get-resource-links",
            json!({"count": 2}),
        ))
        .await;
    assert!(!links.is_error, "{links:?}");
    assert!(
        links.text_content().contains("[resource link: "),
        "{}",
        links.text_content()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notifications_become_updates() {
    let Some(deps) = test_deps("node_modules/@modelcontextprotocol/server-everything") else {
        return;
    };
    let client = connect(&deps).await;
    let tools = registry(&client);
    let (ctx, updates) = recording_context("p1");
    let result = within(
        GUARD,
        "the long-running operation",
        tools.run_with(
            &ToolCall::new(
                "p1",
                "everything__trigger-long-running-operation",
                json!({"duration": 0.3, "steps": 3}),
            ),
            ctx,
        ),
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    let updates = updates.lock().unwrap();
    let texts: Vec<String> = updates.iter().map(ToolResult::text_content).collect();
    // The steps are 100 ms apart, so the first two always arrive before the result; rmcp
    // delivers each notification on its own task, so the last may lose the race with the result.
    assert!(texts.len() >= 2, "{texts:?}");
    assert_eq!(texts[..], ["1/3", "2/3", "3/3"][..texts.len()]);
    assert_eq!(updates[0].details["progress"], json!(1.0));
    assert_eq!(updates[0].details["total"], json!(3.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_abort_cancels_the_request_and_the_session_goes_on() {
    let Some(deps) = test_deps("node_modules/@modelcontextprotocol/server-everything") else {
        return;
    };
    let client = connect(&deps).await;
    let tools = registry(&client);
    let signal = CancellationToken::new();
    let (ctx, updates) = recording_context("a1");
    let ctx = ctx.with_signal(signal.clone());
    let call = ToolCall::new(
        "a1",
        "everything__trigger-long-running-operation",
        json!({"duration": 600, "steps": 6000}),
    );
    let running = tokio::spawn({
        let tools = tools.clone();
        async move { tools.run_with(&call, ctx).await }
    });
    // Abort once the server has shown it is working.
    first_update(&updates).await;
    signal.cancel();
    let result = within(GUARD, "the aborted call to return", running)
        .await
        .unwrap();
    assert!(result.is_error);
    assert_eq!(result.text_content(), "Operation aborted");
    // The session is still usable.
    let echo = tools
        .run(&ToolCall::new(
            "a2",
            "everything__echo",
            json!({"message": "still here"}),
        ))
        .await;
    assert_eq!(echo.text_content(), "Echo: still here");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_gives_an_error_result() {
    let Some(deps) = test_deps("node_modules/@modelcontextprotocol/server-everything") else {
        return;
    };
    let client = connect(&deps).await;
    let tools = registry(&client);
    let (ctx, updates) = recording_context("k1");
    let call = ToolCall::new(
        "k1",
        "everything__trigger-long-running-operation",
        json!({"duration": 600, "steps": 6000}),
    );
    let running = tokio::spawn({
        let tools = tools.clone();
        async move { tools.run_with(&call, ctx).await }
    });
    first_update(&updates).await;
    let pid = client
        .process_id()
        .expect("a stdio server has a process id");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let result = within(GUARD, "the call to a killed server to return", running)
        .await
        .unwrap();
    assert!(result.is_error);
    let text = result.text_content();
    assert!(
        text.contains("connection to the MCP server was lost"),
        "{text}"
    );
    // Later calls fail the same way, at once.
    let after = within(
        GUARD,
        "a call after the server died",
        tools.run(&ToolCall::new(
            "k2",
            "everything__echo",
            json!({"message": "x"}),
        )),
    )
    .await;
    assert!(after.is_error, "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_answer_or_progress_times_out_with_an_error_result() {
    let Some(deps) = test_deps("node_modules/@modelcontextprotocol/server-everything") else {
        return;
    };
    let client = within(
        GUARD,
        "connecting",
        McpClient::stdio(server_everything(&deps))
            .discard_stderr()
            .call_timeout(Duration::from_millis(300))
            .connect(),
    )
    .await
    .unwrap();
    let tools = registry(&client);
    // One step of 60 s: no progress before the step ends, so the 300 ms timeout fires first.
    let result = within(
        GUARD,
        "the timed-out call",
        tools.run(&ToolCall::new(
            "t1",
            "trigger-long-running-operation",
            json!({"duration": 60, "steps": 1}),
        )),
    )
    .await;
    assert!(result.is_error);
    assert!(
        result
            .text_content()
            .contains("sent neither a result nor progress for 300 ms"),
        "{}",
        result.text_content()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_refreshes_the_tools() {
    let Some(deps) = test_deps("node_modules/@modelcontextprotocol/server-everything") else {
        return;
    };
    // server-everything registers more tools once initialized, which makes its SDK send
    // `notifications/tools/list_changed`; the client lists again and publishes the new list
    // (a receiver sees every refresh made after the client was connected).
    let client = connect(&deps).await;
    let mut watch = client.watch_tools();
    within(GUARD, "a refresh after list_changed", watch.changed())
        .await
        .expect("the client is alive");
    let refreshed = watch.borrow_and_update().clone();
    assert!(
        refreshed
            .iter()
            .any(|tool| tool.mcp_name() == "simulate-research-query"),
        "{:?}",
        refreshed
            .iter()
            .map(|tool| tool.mcp_name())
            .collect::<Vec<_>>()
    );
    assert!(
        client
            .tools()
            .iter()
            .any(|tool| tool.spec().name == "everything__simulate-research-query")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_request_reaches_the_handler_and_gets_the_forms_defaults() {
    let Some(deps) = test_deps("node_modules/@modelcontextprotocol/server-everything") else {
        return;
    };
    // server-everything offers `trigger-elicitation-request` only to a client that declares
    // elicitation; the request comes to the client mid-call (2025-11-25). The user takes longer
    // than the call timeout to answer: that time is not counted.
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&asked);
    let client = within(
        GUARD,
        "connecting to server-everything",
        McpClient::stdio(server_everything(&deps))
            .prefix("everything")
            .discard_stderr()
            .call_timeout(Duration::from_millis(500))
            .elicitation(move |request: pi_mcp::ElicitationRequest| {
                seen.lock().unwrap().push(request.message.clone());
                async move {
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    pi_mcp::ElicitationResponse::Accept(json!({"name": "Ada", "check": true}))
                }
            })
            .connect(),
    )
    .await
    .expect("connects");
    let tools = registry(&client);
    let result = within(
        GUARD,
        "the elicitation tool",
        tools.run(&ToolCall::new(
            "e1",
            "everything__trigger-elicitation-request",
            json!({}),
        )),
    )
    .await;
    let text = result.text_content();
    assert!(!result.is_error, "{text}");
    assert!(text.contains("- Name: Ada"), "{text}");
    assert!(text.contains("- Agreed to terms: true"), "{text}");
    // Left out by the user, filled in from the form (SEP-1034).
    assert!(text.contains("- Favorite Integer: 42"), "{text}");
    assert!(text.contains("It was a dark and stormy night."), "{text}");
    assert_eq!(
        asked.lock().unwrap().as_slice(),
        ["Please provide inputs for the following fields:"]
    );
}
