//! An MCP server's tools in an `Agent`: connect, import, let a (scripted) model call them.
//!
//! By default it starts `@modelcontextprotocol/server-everything` (the MCP reference server)
//! from the folder `.ci/install-test-deps` fills, so it runs offline and without an API key
//! (`ScriptedModel` plays the model). Any other stdio server works too:
//!
//! ```text
//! bash .ci/install-test-deps
//! cargo run -p pi-examples --example mcp_import
//! cargo run -p pi-examples --example mcp_import -- npx -y @modelcontextprotocol/server-everything
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use pi_mcp::McpClient;
use pi_runtime::{
    Agent, AgentEvent, AssistantContent, AssistantMessage, ScriptedModel, StopReason,
};
use pi_tool::{AgentTool, ToolRegistry};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let command = server_command()?;
    let client = McpClient::stdio(command)
        .prefix("everything")
        .discard_stderr()
        .connect()
        .await?;
    println!(
        "connected to {:?} (MCP {})",
        client
            .server_info()
            .map(|(name, _)| name)
            .unwrap_or_default(),
        client.protocol_version().unwrap_or_default()
    );
    for tool in client.mcp_tools().iter() {
        let hints = tool.annotations();
        println!(
            "  {:<45} read-only: {:<5} idempotent: {}",
            AgentTool::spec(tool.as_ref()).name,
            hints.read_only.unwrap_or(false),
            hints.idempotent.unwrap_or(false)
        );
    }

    let mut tools = ToolRegistry::new();
    client.add_to(&mut tools);

    // The model adds two numbers, runs a long operation (which reports progress), then answers.
    let model = Arc::new(ScriptedModel::new([
        AssistantMessage::new(
            vec![
                AssistantContent::tool_call("c1", "everything__get-sum", json!({"a": 19, "b": 23})),
                AssistantContent::tool_call(
                    "c2",
                    "everything__trigger-long-running-operation",
                    json!({"duration": 1, "steps": 4}),
                ),
            ],
            StopReason::ToolUse,
        ),
        AssistantMessage::new(
            vec![AssistantContent::text("19 + 23 = 42.")],
            StopReason::Stop,
        ),
    ]));
    let agent = Agent::new(model).with_tools(tools);
    agent.subscribe(|event, _signal| {
        match &event {
            AgentEvent::ToolExecutionStart { call } => println!("→ {}", call.name()),
            AgentEvent::ToolExecutionUpdate {
                call,
                partial_result,
            } => println!("  … {} {}", call.name(), partial_result.text_content()),
            AgentEvent::ToolExecutionEnd { call, result, .. } => println!(
                "← {}: {}",
                call.name(),
                result
                    .as_tool_result()
                    .map(|r| r.text())
                    .unwrap_or_default()
            ),
            _ => {}
        }
        async {}
    });
    agent.prompt("What is 19 + 23?").await?;
    if let Some(answer) = agent
        .last_message()
        .and_then(|m| m.as_assistant().map(|a| a.text()))
    {
        println!("model: {answer}");
    }
    Ok(())
}

/// The command line from the arguments, else server-everything from the test dependencies.
fn server_command() -> Result<tokio::process::Command, String> {
    let mut args = std::env::args().skip(1);
    if let Some(program) = args.next() {
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        return Ok(command);
    }
    let deps = std::env::var_os("PI_TEST_DEPS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/pi-tool-test-deps"))
        })
        .ok_or("set PI_TEST_DEPS or HOME")?;
    let script = deps.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !script.exists() {
        return Err(format!(
            "{} is missing: run `bash .ci/install-test-deps`, or pass a server command",
            script.display()
        ));
    }
    let mut command = tokio::process::Command::new(deps.join("node22"));
    command.arg(script).arg("stdio");
    Ok(command)
}
