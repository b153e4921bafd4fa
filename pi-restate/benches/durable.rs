//! What durability costs on loopback: one turn (a model request and a tool call) in process,
//! durable with the tool in the session (two journaled steps), and durable with the tool on a
//! `PiTools` service (a journaled step and a durable RPC); then completed sessions per second
//! with 100 concurrent sessions of 5 turns each. Needs the Restate server from
//! `.ci/install-test-deps`.
//!
//! ```text
//! cargo bench -p pi-restate --bench durable
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pi_restate::local::LocalRestate;
use pi_restate::loopback_http::request;
use pi_restate::restate_sdk::prelude::*;
use pi_restate::{PiSession, PiTools, RemoteToolSpec, TOOL_SERVICE};
use pi_runtime::{Agent, AssistantContent, AssistantMessage, FnModel, Message, Model, StopReason};
use pi_tool::{ToolRegistry, tool};
use serde_json::json;

/// Does nothing (the cost measured is the call's, not the tool's).
#[tool]
async fn noop(n: u64) -> String {
    n.to_string()
}

/// A model that answers a prompt `turns:N` with N-1 turns of one `noop` call, then a text.
fn model() -> Arc<dyn Model> {
    Arc::new(FnModel::new(|request| async move {
        let prompt_at = request
            .messages
            .iter()
            .rposition(|m| matches!(**m, Message::User(_)))
            .unwrap_or(0);
        let turns: usize = match &*request.messages[prompt_at] {
            Message::User(user) => serde_json::to_value(&user.content)
                .ok()
                .and_then(|c| c[0]["text"].as_str()?.strip_prefix("turns:")?.parse().ok()),
            _ => None,
        }
        .unwrap_or(1);
        let done = request.messages[prompt_at..]
            .iter()
            .filter(|m| matches!(***m, Message::Assistant(_)))
            .count();
        if done + 1 < turns {
            let id = format!("call_{done}");
            AssistantMessage::new(
                vec![AssistantContent::tool_call(id, "noop", json!({"n": done}))],
                StopReason::ToolUse,
            )
        } else {
            AssistantMessage::new(vec![AssistantContent::text("done")], StopReason::Stop)
        }
    }))
}

fn tools() -> ToolRegistry {
    ToolRegistry::new().with(NoopTool)
}

fn prompt(ingress: SocketAddr, session: &str, turns: usize) -> Duration {
    let body = serde_json::to_vec(&format!("turns:{turns}")).expect("json");
    let started = Instant::now();
    let (status, answer) = request(
        ingress,
        "POST",
        &format!("/PiSession/{session}/prompt"),
        &[("content-type", "application/json")],
        &body,
    )
    .expect("the ingress answers");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    started.elapsed()
}

/// Serves `session` (and `PiTools`) on a free port, registers it; returns the service runtime.
fn serve(restate: &LocalRestate, session: PiSession) -> tokio::runtime::Runtime {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let url = runtime.block_on(async {
        let endpoint = Endpoint::builder()
            .bind(session)
            .bind(PiTools::new(tools()))
            .build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        tokio::spawn(HttpServer::new(endpoint).serve(listener));
        url
    });
    restate.register(&url).expect("registered");
    runtime
}

fn main() {
    let restate = match LocalRestate::start() {
        Ok(server) => server,
        Err(err) => {
            eprintln!("skipped: {err}");
            return;
        }
    };
    const TURNS: usize = 50;
    let per_turn = |elapsed: Duration| elapsed.as_secs_f64() * 1e3 / TURNS as f64;

    // In process: the same loop, model and tool.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let in_process = runtime.block_on(async {
        let mut best = Duration::MAX;
        for _ in 0..5 {
            let agent = Agent::new(model()).with_tools(tools());
            let started = Instant::now();
            agent.prompt(format!("turns:{TURNS}")).await.expect("a run");
            best = best.min(started.elapsed());
        }
        best
    });

    let local = serve(&restate, PiSession::new(model()).with_tools(tools()));
    let best_of = |name: &str| {
        (0..5)
            .map(|i| prompt(restate.ingress, &format!("{name}-{i}"), TURNS))
            .min()
            .expect("runs")
    };
    let durable_local = best_of("local");
    drop(local);
    let remote = serve(
        &restate,
        PiSession::new(model()).with_remote_tools(RemoteToolSpec::all_of(TOOL_SERVICE, &tools())),
    );
    let durable_remote = best_of("remote");

    println!("one turn = one model request + one tool call ({TURNS} turns per run, best of 5)");
    println!(
        "  in process:                       {:8.3} ms/turn",
        per_turn(in_process)
    );
    println!(
        "  durable, tool in the session:     {:8.3} ms/turn",
        per_turn(durable_local)
    );
    println!(
        "  durable, tool on PiTools (RPC):   {:8.3} ms/turn",
        per_turn(durable_remote)
    );

    // 100 concurrent sessions of 5 turns each (4 tool calls and a final answer).
    let sessions = 100;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for i in 0..sessions {
            let ingress = restate.ingress;
            scope.spawn(move || prompt(ingress, &format!("concurrent-{i}"), 5));
        }
    });
    let elapsed = started.elapsed();
    println!(
        "{sessions} concurrent sessions x 5 turns (tools on PiTools): {:.2} s, {:.1} sessions/s",
        elapsed.as_secs_f64(),
        f64::from(sessions) / elapsed.as_secs_f64()
    );
    drop(remote);
}
