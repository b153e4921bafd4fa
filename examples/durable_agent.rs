//! A durable agent session on Restate: the session service and a tool service in this process,
//! a Restate server found on 127.0.0.1 (admin 9070, ingress 8080) or started from the test
//! dependency cache, and one prompt through Restate's ingress. No network beyond loopback:
//! `ScriptedModel` plays the model.
//!
//! ```text
//! bash .ci/install-test-deps        # once: the Restate server from npm, into a cache folder
//! cargo run -p pi-examples --example durable_agent
//! ```

use std::net::SocketAddr;
use std::sync::Arc;

use pi_restate::local::{LocalRestate, LocalRestateError, is_running, register_deployment};
use pi_restate::loopback_http::request;
use pi_restate::restate_sdk::prelude::*;
use pi_restate::{PiSession, PiTools, RemoteToolSpec, TOOL_SERVICE};
use pi_runtime::{AssistantContent, AssistantMessage, Message, ScriptedModel, StopReason};
use pi_tool::{Content, ToolContext, ToolRegistry, tool};
use serde_json::json;

/// Add two numbers. A tool with side effects would deduplicate with the idempotency key.
#[tool]
async fn add(a: i64, b: i64, ctx: ToolContext) -> String {
    println!(
        "  [tool] add({a}, {b}) with idempotency key {:?}",
        ctx.idempotency_key()
    );
    (a + b).to_string()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Find a running server, or start one from the test-dependency cache.
    let default_admin: SocketAddr = "127.0.0.1:9070".parse()?;
    let (_started, admin, ingress) = if is_running(default_admin) {
        println!("using the Restate server at {default_admin}");
        (None, default_admin, "127.0.0.1:8080".parse()?)
    } else {
        match LocalRestate::start() {
            Ok(server) => {
                println!("started restate-server (ingress {})", server.ingress);
                let (admin, ingress) = (server.admin, server.ingress);
                (Some(server), admin, ingress)
            }
            Err(LocalRestateError::NotInstalled) => {
                eprintln!(
                    "No Restate server: run `bash .ci/install-test-deps` (installs npm \
                     @restatedev/restate-server@1.7.12 into ~/.cache/pi-tool-test-deps), set \
                     RESTATE_SERVER_BIN to a restate-server binary, or start one on 127.0.0.1:9070."
                );
                std::process::exit(2);
            }
            Err(err) => return Err(err.into()),
        }
    };

    // The services: a session whose tools live on a tool service (here, the same endpoint).
    let tools = ToolRegistry::new().with(AddTool);
    let model = ScriptedModel::new([
        AssistantMessage::new(
            vec![AssistantContent::tool_call(
                "call_1",
                "add",
                json!({"a": 2, "b": 3}),
            )],
            StopReason::ToolUse,
        ),
        AssistantMessage::new(vec![AssistantContent::text("2 + 3 = 5")], StopReason::Stop),
    ]);
    let session = PiSession::new(Arc::new(model))
        .with_system_prompt("You add numbers.")
        .with_remote_tools(RemoteToolSpec::all_of(TOOL_SERVICE, &tools));
    let endpoint = Endpoint::builder()
        .bind(session)
        .bind(PiTools::new(tools))
        .build();
    // `pi_restate::bind`: connections without Nagle's delay (with tokio's own listener each
    // invocation could wait 40 ms for Restate's delayed acknowledgement).
    let listener = pi_restate::bind("127.0.0.1:0".parse()?).await?;
    let service_url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(HttpServer::new(endpoint).serve(listener));

    // Register, then prompt through the ingress (blocking calls: off the async workers).
    let answer = tokio::task::spawn_blocking(move || -> Result<_, LocalRestateError> {
        register_deployment(admin, &service_url)?;
        println!("registered {service_url}");
        let session = format!("demo-{}", std::process::id());
        let (status, body) = request(
            ingress,
            "POST",
            &format!("/PiSession/{session}/prompt"),
            &[
                ("content-type", "application/json"),
                ("idempotency-key", "first-prompt"),
            ],
            br#""What is 2 + 3?""#,
        )?;
        let transcript = request(
            ingress,
            "POST",
            &format!("/PiSession/{session}/transcript"),
            &[],
            b"",
        )?;
        Ok((status, body, transcript.1))
    })
    .await??;
    let (status, body, transcript) = answer;
    if status != 200 {
        return Err(format!(
            "the prompt failed: HTTP {status}: {}",
            String::from_utf8_lossy(&body)
        )
        .into());
    }
    let transcript: Vec<Message> = serde_json::from_slice(&transcript)?;
    println!(
        "transcript stored in Restate ({} messages):",
        transcript.len()
    );
    for message in &transcript {
        let text = match message {
            Message::User(user) => {
                let texts: Vec<&str> = user
                    .content
                    .iter()
                    .filter_map(|content| match content {
                        Content::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                format!("user: {}", texts.join(" "))
            }
            Message::Assistant(assistant) => format!("assistant: {}", assistant.text()),
            Message::ToolResult(result) => {
                format!("tool result ({}): {}", result.tool_name, result.text())
            }
            Message::Custom(custom) => format!("custom: {}", custom.kind),
        };
        println!("  {text}");
    }
    Ok(())
}
