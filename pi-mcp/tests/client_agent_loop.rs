//! The loop end to end: an `Agent` (pi-runtime) on a `ScriptedModel` whose tools come from an
//! MCP server we did not write (`@modelcontextprotocol/server-everything`, stdio).

mod client_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use client_support::{server_everything, test_deps, within};
use pi_mcp::McpClient;
use pi_runtime::{
    Agent, AgentEvent, AssistantContent, AssistantMessage, ScriptedModel, StopReason,
};
use pi_tool::ToolRegistry;
use serde_json::json;

fn calls(calls: &[(&str, &str, serde_json::Value)]) -> AssistantMessage {
    let content = calls
        .iter()
        .map(|(id, name, args)| AssistantContent::tool_call(*id, *name, args.clone()))
        .collect();
    AssistantMessage::new(content, StopReason::ToolUse)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_runs_an_mcp_servers_tools() {
    let Some(deps) = test_deps("node_modules/@modelcontextprotocol/server-everything") else {
        return;
    };
    let client = within(
        Duration::from_secs(60),
        "connecting",
        McpClient::stdio(server_everything(&deps))
            .prefix("everything")
            .discard_stderr()
            .connect(),
    )
    .await
    .expect("connects");
    let mut tools = ToolRegistry::new();
    client.add_to(&mut tools);

    let model = Arc::new(ScriptedModel::recording([
        // Turn 1: two MCP tools at once, one of them reporting progress.
        calls(&[
            ("c1", "everything__get-sum", json!({"a": 1, "b": "2"})),
            (
                "c2",
                "everything__trigger-long-running-operation",
                json!({"duration": 0.4, "steps": 2}),
            ),
        ]),
        // Turn 2: a mistake the model can read and correct.
        calls(&[("c3", "everything__get-sum", json!({"a": 1}))]),
        calls(&[("c4", "everything__echo", json!({"message": "fixed"}))]),
        AssistantMessage::new(vec![AssistantContent::text("1 + 2 = 3")], StopReason::Stop),
    ]));
    let agent = Agent::new(model.clone()).with_tools(tools);
    let ends = Arc::new(Mutex::new(Vec::new()));
    let updates = Arc::new(Mutex::new(Vec::new()));
    let (seen_ends, seen_updates) = (Arc::clone(&ends), Arc::clone(&updates));
    agent.subscribe(move |event, _signal| {
        match &event {
            AgentEvent::ToolExecutionEnd {
                call,
                result,
                is_error,
                ..
            } => {
                let text = result.as_tool_result().expect("a tool result").text();
                seen_ends
                    .lock()
                    .unwrap()
                    .push((call.id().to_owned(), *is_error, text));
            }
            AgentEvent::ToolExecutionUpdate {
                call,
                partial_result,
            } => {
                seen_updates
                    .lock()
                    .unwrap()
                    .push((call.id().to_owned(), partial_result.text_content()));
            }
            _ => {}
        }
        async {}
    });

    within(
        Duration::from_secs(60),
        "the agent run",
        agent.prompt("Add 1 and 2."),
    )
    .await
    .expect("idle agent");

    let mut ends = ends.lock().unwrap().clone();
    ends.sort();
    assert_eq!(ends.len(), 4, "{ends:?}");
    assert_eq!(
        ends[0],
        ("c1".into(), false, "The sum of 1 and 2 is 3.".into())
    );
    assert_eq!(ends[1].0, "c2");
    assert!(!ends[1].1);
    assert!(
        ends[1].2.starts_with("Long running operation completed."),
        "{}",
        ends[1].2
    );
    assert_eq!(ends[2].0, "c3");
    assert!(ends[2].1);
    assert!(
        ends[2].2.starts_with(
            "Validation failed for tool \"everything__get-sum\":\n  - b: missing required property"
        ),
        "{}",
        ends[2].2
    );
    assert_eq!(ends[3], ("c4".into(), false, "Echo: fixed".into()));
    let updates = updates.lock().unwrap().clone();
    assert!(
        updates.contains(&("c2".to_owned(), "1/2".to_owned())),
        "{updates:?}"
    );

    // The model was offered the server's tools under their prefixed names.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let offered = requests[0].tool_names();
    for name in [
        "everything__echo",
        "everything__get-sum",
        "everything__trigger-long-running-operation",
    ] {
        assert!(offered.contains(&name), "{name} not in {offered:?}");
    }
}

/// `defer_tools`: the server's tools are known to the loop but not sent; `tool_search` finds
/// one by what it does, and the model calls it from the next turn on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_servers_tools_are_found_by_tool_search() {
    let Some(deps) = test_deps("node_modules/@modelcontextprotocol/server-everything") else {
        return;
    };
    let client = within(
        Duration::from_secs(60),
        "connecting",
        McpClient::stdio(server_everything(&deps))
            .prefix("everything")
            .defer_tools()
            .discard_stderr()
            .connect(),
    )
    .await
    .expect("connects");
    let mut tools = ToolRegistry::new();
    client.add_to(&mut tools);
    assert!(tools.tools().all(|tool| tool.deferred()));

    let model = Arc::new(ScriptedModel::recording([
        calls(&[(
            "s1",
            "tool_search",
            json!({"query": "sum of two numbers", "limit": 1}),
        )]),
        calls(&[("c1", "everything__get-sum", json!({"a": 1, "b": 2}))]),
        AssistantMessage::new(vec![AssistantContent::text("3")], StopReason::Stop),
    ]));
    let agent = Agent::new(model.clone()).with_tools(tools);
    within(
        Duration::from_secs(60),
        "the agent run",
        agent.prompt("1+2?"),
    )
    .await
    .expect("idle agent");

    let requests = model.requests();
    assert_eq!(requests[0].tool_names(), ["tool_search"]);
    assert_eq!(
        requests[1].tool_names(),
        ["tool_search", "everything__get-sum"]
    );
    let last = agent.messages();
    let sum = last
        .iter()
        .filter_map(|m| m.as_tool_result())
        .find(|r| r.tool_call_id == "c1")
        .expect("the call's result");
    assert!(!sum.is_error, "{}", sum.text());
    assert_eq!(sum.text(), "The sum of 1 and 2 is 3.");
}
