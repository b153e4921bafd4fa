//! What durability costs on loopback: one turn (a model request and a tool call) in process,
//! durable with the tool in the session (two journaled steps), and durable with the tool on a
//! `PiTools` service (a journaled step and a durable RPC), each next to a handler written with
//! the bare restate-sdk that journals the same steps (what pi-restate itself adds is the
//! difference); then completed sessions per second with 100 concurrent sessions of 5 turns
//! each. Every service is served on connections without Nagle's delay ([`pi_restate::bind`]);
//! `--nagle` serves them with the SDK's own listener instead. Needs the Restate server from
//! `.ci/install-test-deps`.
//!
//! ```text
//! cargo bench -p pi-restate --bench durable [-- --rounds N] [--nagle]
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pi_restate::local::LocalRestate;
use pi_restate::loopback_http::request;
use pi_restate::restate_sdk::prelude::*;
use pi_restate::{PiSession, PiTools, RemoteCall, RemoteToolSpec, TOOL_SERVICE, idempotency_key};
use pi_runtime::{Agent, AssistantContent, AssistantMessage, FnModel, Message, Model, StopReason};
use pi_tool::{ToolRegistry, ToolResult, tool};
use restate_sdk::context::RequestTarget;
use serde_json::{Value, json};

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
        answer(done, turns)
    }))
}

/// The model's answer after `done` of `turns` turns.
fn answer(done: usize, turns: usize) -> AssistantMessage {
    if done + 1 < turns {
        let id = format!("call_{done}");
        AssistantMessage::new(
            vec![AssistantContent::tool_call(id, "noop", json!({"n": done}))],
            StopReason::ToolUse,
        )
    } else {
        AssistantMessage::new(vec![AssistantContent::text("done")], StopReason::Stop)
    }
}

// In a module of its own: the object macro's generated items have no docs.
#[allow(missing_docs)]
mod bare {
    use super::*;

    /// The baseline: a prompt's journal written by hand with the bare restate-sdk, the same
    /// entries a `PiSession` prompt makes (read the transcript, note the invocation, per turn a
    /// `model` step and a `tool` step or a `PiTools/call` request with the same payloads, the
    /// stamps step, store the transcript), without pi-runtime's loop and pi-restate's bridge.
    pub(crate) struct Bare {
        pub(crate) tools: ToolRegistry,
        pub(crate) remote: bool,
    }

    #[restate_sdk::object]
    impl Bare {
        /// Journals a prompt of `turns:N` as a `PiSession` would.
        #[handler]
        async fn prompt(
            &self,
            ctx: ObjectContext<'_>,
            prompt: Json<String>,
        ) -> Result<Json<Vec<Value>>, HandlerError> {
            let prompt = prompt.into_inner();
            let turns: usize = prompt
                .strip_prefix("turns:")
                .and_then(|n| n.parse().ok())
                .unwrap_or(1);
            let mut transcript = ctx
                .get::<Json<Vec<Value>>>("transcript")
                .await?
                .map(Json::into_inner)
                .unwrap_or_default();
            ctx.set("running", ctx.invocation_id().to_owned());
            let mut added = vec![serde_json::to_value(Message::user(prompt))?];
            for done in 0..turns {
                let message = ctx
                    .run(move || async move { Ok(Json(answer(done, turns))) })
                    .name("model")
                    .await?
                    .into_inner();
                added.push(serde_json::to_value(&message)?);
                for block in message.tool_calls() {
                    let call = block.call.clone();
                    let key = idempotency_key(ctx.key(), transcript.len(), &call.id);
                    let result: ToolResult = if self.remote {
                        let request = RemoteCall {
                            tool: call.name,
                            tool_call_id: call.id,
                            arguments: call.arguments,
                            idempotency_key: key.clone(),
                        };
                        ctx.request::<Json<RemoteCall>, Json<ToolResult>>(
                            RequestTarget::service(TOOL_SERVICE, "call"),
                            Json(request),
                        )
                        .idempotency_key(key)
                        .call()
                        .await?
                        .into_inner()
                    } else {
                        let tools = self.tools.clone();
                        ctx.run(move || async move {
                            let context = tools.context(&call.id).with_idempotency_key(key);
                            Ok(Json(tools.run_with(&call, context).await))
                        })
                        .name("tool")
                        .await?
                        .into_inner()
                    };
                    added.push(serde_json::to_value(result)?);
                }
            }
            let stamps: Vec<i64> = vec![0; added.len()];
            ctx.run(move || async move { Ok(Json(stamps)) })
                .name("stamps")
                .await?;
            transcript.extend(added.iter().cloned());
            ctx.set("transcript", Json(transcript));
            ctx.clear("running");
            Ok(Json(added))
        }
    }
}
use bare::Bare;

fn tools() -> ToolRegistry {
    ToolRegistry::new().with(NoopTool)
}

fn prompt(ingress: SocketAddr, object: &str, session: &str, turns: usize) -> Duration {
    let body = serde_json::to_vec(&format!("turns:{turns}")).expect("json");
    let started = Instant::now();
    let (status, answer) = request(
        ingress,
        "POST",
        &format!("/{object}/{session}/prompt"),
        &[("content-type", "application/json")],
        &body,
    )
    .expect("the ingress answers");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    started.elapsed()
}

/// Serves `service` on a free port, registers it; returns the service runtime. Its connections
/// send without Nagle's delay ([`pi_restate::bind`]), unless `--nagle` asks for the SDK's own
/// listener, with which an invocation could wait 40 ms for Restate's delayed acknowledgement.
fn serve(restate: &LocalRestate, service: impl IntoServiceDefinition) -> tokio::runtime::Runtime {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let url = runtime.block_on(async {
        let endpoint = Endpoint::builder().bind(service).build();
        let any_port = "127.0.0.1:0".parse().expect("an address");
        let listener = if std::env::args().any(|arg| arg == "--nagle") {
            tokio::net::TcpListener::bind(any_port).await
        } else {
            pi_restate::bind(any_port).await
        }
        .expect("a port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        tokio::spawn(HttpServer::new(endpoint).serve(listener));
        url
    });
    restate.register(&url).expect("registered");
    runtime
}

fn main() {
    // Rounds of the four variants: `--rounds N`, default 5.
    let mut args = std::env::args().skip_while(|arg| arg != "--rounds").skip(1);
    let rounds_run: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(5).max(1);
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

    // The four variants take turns, 5 rounds (`--rounds N`), each served afresh and warmed up
    // with one short prompt before its timed one; the best and the median round are shown. (Measured one after the other, the
    // first variant on a fresh server or deployment came out slower whichever it was.)
    // `PiTools` is one deployment of its own, registered once.
    let _tool_service = serve(&restate, PiTools::new(tools()));
    let mut rounds: [Vec<Duration>; 4] = Default::default();
    let mut served = None;
    for round in 0..rounds_run {
        for (variant, times) in rounds.iter_mut().enumerate() {
            drop(served.take());
            let (object, runtime) = match variant {
                0 => (
                    "PiSession",
                    serve(&restate, PiSession::new(model()).with_tools(tools())),
                ),
                1 => (
                    "Bare",
                    serve(
                        &restate,
                        Bare {
                            tools: tools(),
                            remote: false,
                        },
                    ),
                ),
                2 => (
                    "PiSession",
                    serve(
                        &restate,
                        PiSession::new(model())
                            .with_remote_tools(RemoteToolSpec::all_of(TOOL_SERVICE, &tools())),
                    ),
                ),
                _ => (
                    "Bare",
                    serve(
                        &restate,
                        Bare {
                            tools: tools(),
                            remote: true,
                        },
                    ),
                ),
            };
            served = Some(runtime);
            prompt(
                restate.ingress,
                object,
                &format!("warm-{variant}-{round}"),
                2,
            );
            let took = prompt(
                restate.ingress,
                object,
                &format!("run-{variant}-{round}"),
                TURNS,
            );
            times.push(took);
        }
    }
    let [durable_local, bare_local, durable_remote, bare_remote] = rounds;
    // The concurrent sessions below run on the last variant served: put the session with
    // remote tools back.
    drop(served.take());
    let remote = serve(
        &restate,
        PiSession::new(model()).with_remote_tools(RemoteToolSpec::all_of(TOOL_SERVICE, &tools())),
    );

    println!(
        "one turn = one model request + one tool call ({TURNS} turns per run, {rounds_run} rounds: best, median)"
    );
    println!(
        "  in process:                            {:8.3} ms/turn",
        per_turn(in_process)
    );
    let row = |name: &str, times: &[Duration]| {
        let mut sorted = times.to_vec();
        sorted.sort();
        println!(
            "  {name:<38}{:8.3} {:8.3} ms/turn",
            per_turn(sorted[0]),
            per_turn(sorted[sorted.len() / 2])
        );
    };
    row("durable, tool in the session:", &durable_local);
    row("  bare restate-sdk, same steps:", &bare_local);
    row("durable, tool on PiTools (RPC):", &durable_remote);
    row("  bare restate-sdk, same steps:", &bare_remote);
    // What pi-restate adds, round by round (each round runs both next to each other).
    let added = |durable: &[Duration], bare: &[Duration]| {
        let mut added: Vec<f64> = durable
            .iter()
            .zip(bare)
            .map(|(d, b)| per_turn(*d) - per_turn(*b))
            .collect();
        added.sort_by(f64::total_cmp);
        added[added.len() / 2]
    };
    println!(
        "  pi-restate adds (median of the rounds' differences): {:.3} ms/turn in the session, {:.3} ms/turn on PiTools",
        added(&durable_local, &bare_local),
        added(&durable_remote, &bare_remote)
    );

    // 100 concurrent sessions of 5 turns each (4 tool calls and a final answer).
    let sessions = 100;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for i in 0..sessions {
            let ingress = restate.ingress;
            scope.spawn(move || prompt(ingress, "PiSession", &format!("concurrent-{i}"), 5));
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
