//! `pi`'s MCP support end to end: a `--mcp` option naming a server we did not write
//! (`@modelcontextprotocol/server-everything`, run by the Node 22 of `.ci/install-test-deps`),
//! its tools next to the built-in ones, called by a `CodingAgent` on a scripted model.

use std::path::PathBuf;
use std::sync::Arc;

use pi_coder::mcp::{McpServers, McpTools};
use pi_coder::{Approval, CodingAgent, Renderer, Workspace, default_tools};
use pi_runtime::{AssistantContent, AssistantMessage, ScriptedModel, StopReason};
use pi_tool::CancellationToken;
use serde_json::json;

/// The test dependencies' folder, or `None` (skipped) outside CI when it is missing.
fn test_deps() -> Option<PathBuf> {
    let dir = std::env::var_os("PI_TEST_DEPS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/pi-tool-test-deps"))
        });
    let found = dir.filter(|dir| {
        dir.join("node_modules/@modelcontextprotocol/server-everything")
            .exists()
    });
    if found.is_none() {
        let message = "server-everything is missing: run .ci/install-test-deps";
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        eprintln!("skipped: {message}");
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_option_tools_join_the_built_in_ones() {
    let Some(deps) = test_deps() else { return };
    let option = format!(
        "everything={} '{}' stdio",
        deps.join("node22").display(),
        deps.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
            .display()
    );
    let servers = McpServers::from_options(&[option]).unwrap();
    let mut warnings = Vec::new();
    let mcp = McpTools::connect(&servers.trusted, |warning| warnings.push(warning)).await;
    assert!(warnings.is_empty(), "{warnings:?}");

    let project = tempfile::tempdir().unwrap();
    let mut tools = default_tools(Workspace::new(project.path()));
    mcp.add_to(&mut tools, |warning| warnings.push(warning));
    assert!(warnings.is_empty(), "{warnings:?}");
    let names: Vec<&str> = tools.names().collect();
    for name in ["bash", "read", "everything__echo", "everything__get-sum"] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }

    let model = Arc::new(ScriptedModel::recording([
        AssistantMessage::new(
            vec![AssistantContent::tool_call(
                "c1",
                "everything__get-sum",
                json!({"a": 20, "b": 22}),
            )],
            StopReason::ToolUse,
        ),
        AssistantMessage::new(vec![AssistantContent::text("42")], StopReason::Stop),
    ]));
    let mut agent =
        CodingAgent::new(model.clone(), tools, project.path()).with_approval(Approval::Always);
    // Offered after the built-ins; as in pi, the system prompt lists only the built-ins and
    // says other tools may be there.
    let offered = agent.tool_names();
    assert_eq!(offered[..4], ["read", "bash", "edit", "write"]);
    assert!(offered.contains(&"everything__get-sum"), "{offered:?}");
    assert!(!agent.system_prompt().contains("everything__get-sum"));
    assert!(
        agent
            .system_prompt()
            .contains("you may have access to other custom tools")
    );
    let (mut out, mut log) = (Vec::new(), Vec::new());
    let mut renderer = Renderer::new(&mut out, &mut log);
    let outcome = agent
        .prompt("Add 20 and 22.", CancellationToken::new(), &mut renderer)
        .await;
    drop(renderer);
    assert_eq!(outcome.stop_reason, StopReason::Stop);
    let requests = model.requests();
    let result = requests[1]
        .messages
        .last()
        .and_then(|message| message.as_tool_result())
        .expect("the tool result went back to the model")
        .text();
    assert_eq!(result, "The sum of 20 and 22 is 42.");
}
