//! The host matrix: one tool set (a timeout, a `blocking` tool, a sequential tool, oversized and
//! invalid arguments, an oversized result, a panic, nested calls of each, a tool only code may
//! call) run through every host, each of which must
//! give the same results: `ToolRegistry::run`, the agent loop on a `ScriptedModel`, pi-mcp's
//! `McpServer` (to rmcp's client over an in-process pipe), `PiTools`' handler alone, and
//! `PiTools` served to a real Restate server and called through its ingress (skipped, or
//! failed under `CI`, without the server).
//!
//! Every host runs on a current-thread runtime, so a `blocking` tool run on the caller's task
//! would hold up the call that releases it (and answer "nobody released me").

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use pi_mcp::McpServer;
use pi_restate::{PiTools, RemoteCall};
use pi_runtime::{
    Agent, AgentLoopConfig, AssistantContent, AssistantMessage, ScriptedModel, StopReason,
};
use pi_tool::{ArgumentLimits, CallLimits, State, ToolCall, ToolRegistry, ToolResult, tool};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

/// Never answers: its timeout ends it.
#[tool(timeout = "100ms")]
async fn slow() -> String {
    std::future::pending::<()>().await;
    String::new()
}

/// Blocks its thread until `release` runs (at most 10 s).
#[tool(blocking)]
fn wait_for_release(gate: State<Release>) -> String {
    let (lock, cvar) = &*gate.0;
    let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
    let (_guard, waited) = cvar
        .wait_timeout_while(guard, Duration::from_secs(10), |go| !*go)
        .unwrap_or_else(|p| p.into_inner());
    if waited.timed_out() {
        "nobody released me".to_owned()
    } else {
        "released".to_owned()
    }
}

/// Lets `wait_for_release` go on.
#[tool]
async fn release(gate: State<Release>) -> &'static str {
    let (lock, cvar) = &*gate.0;
    *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
    cvar.notify_all();
    "let go"
}

/// What `wait_for_release` waits for.
#[derive(Default)]
struct Release(Arc<(Mutex<bool>, Condvar)>);

/// Counts the probes running and started, so a sequential probe can tell whether another call
/// ran next to it.
#[derive(Default)]
struct Probes {
    running: AtomicUsize,
    started: AtomicUsize,
}

impl Probes {
    /// Runs a probe for 30 ms; whether no other probe ran meanwhile.
    async fn run(&self) -> bool {
        let running = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        let started = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::time::sleep(Duration::from_millis(30)).await;
        let alone = running == 1
            && self.started.load(Ordering::SeqCst) == started
            && self.running.load(Ordering::SeqCst) == 1;
        self.running.fetch_sub(1, Ordering::SeqCst);
        alone
    }
}

/// A sequential probe: says whether it ran alone.
#[tool(sequential)]
async fn alone(probes: State<Probes>) -> &'static str {
    if probes.run().await {
        "ran alone"
    } else {
        "ran next to another call"
    }
}

/// A parallel probe.
#[tool]
async fn together(probes: State<Probes>) -> &'static str {
    probes.run().await;
    "together"
}

/// Echoes its text.
#[tool]
async fn echo(text: String) -> String {
    text
}

/// Returns 1,700 bytes of text.
#[tool]
async fn big() -> String {
    "0123456789abcdef\n".repeat(100)
}

/// Panics.
#[tool]
async fn boom() -> String {
    panic!("boom")
}

/// Calls another tool with the given arguments (a nested call), and returns its result.
#[tool]
async fn relay(tool: String, arguments: Value, ctx: pi_tool::ToolContext) -> ToolResult {
    ctx.call_tool(tool, arguments).await
}

/// Only code may call it.
#[tool(callers = "code")]
async fn internal() -> &'static str {
    "internal"
}

const MAX_ARGUMENT_BYTES: usize = 4096;
const MAX_RESULT_BYTES: usize = 200;
const ABORT_GRACE: Duration = Duration::from_millis(50);

/// A fresh tool set (fresh state) with the matrix's limits.
fn tools() -> ToolRegistry {
    ToolRegistry::new()
        .with(SlowTool)
        .with(WaitForReleaseTool)
        .with(ReleaseTool)
        .with(AloneTool)
        .with(TogetherTool)
        .with(EchoTool)
        .with(BigTool)
        .with(BoomTool)
        .with(RelayTool)
        .with(InternalTool)
        .with_state(Release::default())
        .with_state(Probes::default())
        .with_call_limits(limits())
}

fn limits() -> CallLimits {
    CallLimits::DEFAULT
        .arguments(ArgumentLimits::DEFAULT.max_bytes(MAX_ARGUMENT_BYTES))
        .max_result_bytes(MAX_RESULT_BYTES)
        .abort_grace(ABORT_GRACE)
}

/// The calls, in rounds: a host runs each round's calls at once (the loop: as one message).
fn rounds() -> Vec<Vec<ToolCall>> {
    let call = |id: &str, name: &str, arguments: Value| ToolCall::new(id, name, arguments);
    vec![
        vec![
            call("timeout", "slow", json!({})),
            call(
                "oversized",
                "echo",
                json!({"text": "x".repeat(MAX_ARGUMENT_BYTES)}),
            ),
            call("invalid", "echo", json!({"txt": "hi"})),
            call("valid", "echo", json!({"text": "hi"})),
            call("big_result", "big", json!({})),
            call("panic", "boom", json!({})),
        ],
        vec![
            call("blocking", "wait_for_release", json!({})),
            call("releasing", "release", json!({})),
        ],
        vec![
            call("parallel_1", "together", json!({})),
            call("sequential", "alone", json!({})),
            call("parallel_2", "together", json!({})),
        ],
        vec![
            relayed("nested_valid", "echo", json!({"text": "hi"})),
            relayed("nested_invalid", "echo", json!({"txt": "hi"})),
            relayed("nested_timeout", "slow", json!({})),
            relayed("nested_panic", "boom", json!({})),
            relayed("nested_internal", "internal", json!({})),
            call("direct_internal", "internal", json!({})),
        ],
    ]
}

/// A call of `relay`, which calls `tool` with `arguments`.
fn relayed(id: &str, tool: &str, arguments: Value) -> ToolCall {
    ToolCall::new(id, "relay", json!({"tool": tool, "arguments": arguments}))
}

/// Per call id: whether the result is an error, and its text blocks.
type Outcomes = BTreeMap<String, (bool, Vec<String>)>;

fn texts(result: &ToolResult) -> (bool, Vec<String>) {
    let texts = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(str::to_owned))
        .collect();
    (result.is_error, texts)
}

fn expected() -> Outcomes {
    let one = |is_error: bool, text: &str| (is_error, vec![text.to_owned()]);
    let mut expected = BTreeMap::new();
    for (id, outcome) in [
        ("timeout", one(true, "Tool slow timed out after 100ms")),
        (
            "oversized",
            one(
                true,
                "Arguments for tool \"echo\" are larger than the limit of 4096 bytes. Send smaller arguments (split the work into several calls)",
            ),
        ),
        (
            "invalid",
            one(
                true,
                "Validation failed for tool \"echo\":\n  - text: missing required property (got \"txt\"; is it misspelled?)\n\nReceived arguments:\n{\n  \"txt\": \"hi\"\n}",
            ),
        ),
        ("valid", one(false, "hi")),
        (
            "big_result",
            (
                false,
                vec![
                    "0123456789abcdef\n".repeat(11),
                    "[Tool output truncated: 187 of 1700 bytes shown. The rest exceeded the limit of 200 bytes for one tool result. Ask for less at a time: a narrower query, a smaller range, or an offset and limit.]".to_owned(),
                ],
            ),
        ),
        ("panic", one(true, "Tool boom panicked: boom")),
        ("blocking", one(false, "released")),
        ("releasing", one(false, "let go")),
        ("parallel_1", one(false, "together")),
        ("sequential", one(false, "ran alone")),
        ("parallel_2", one(false, "together")),
        ("nested_valid", one(false, "hi")),
        (
            "nested_invalid",
            one(
                true,
                "Validation failed for tool \"echo\":\n  - text: missing required property (got \"txt\"; is it misspelled?)\n\nReceived arguments:\n{\n  \"txt\": \"hi\"\n}",
            ),
        ),
        ("nested_timeout", one(true, "Tool slow timed out after 100ms")),
        ("nested_panic", one(true, "Tool boom panicked: boom")),
        ("nested_internal", one(false, "internal")),
        (
            "direct_internal",
            one(
                true,
                "Tool internal can be called only from code (a script of the `code` tool), not directly",
            ),
        ),
    ] {
        expected.insert(id.to_owned(), outcome);
    }
    expected
}

#[tokio::test]
async fn tool_registry_run() {
    let tools = tools();
    let mut outcomes = Outcomes::new();
    for round in rounds() {
        let results = futures_util::future::join_all(round.iter().map(|c| tools.run(c))).await;
        for (call, result) in round.iter().zip(&results) {
            outcomes.insert(call.id.clone(), texts(result));
        }
    }
    assert_eq!(outcomes, expected());
}

#[tokio::test]
async fn agent_loop_on_a_scripted_model() {
    let mut script: Vec<AssistantMessage> = rounds()
        .into_iter()
        .map(|round| {
            let content = round
                .into_iter()
                .map(|call| AssistantContent::tool_call(call.id, call.name, call.arguments))
                .collect();
            AssistantMessage::new(content, StopReason::ToolUse)
        })
        .collect();
    script.push(AssistantMessage::new(
        vec![AssistantContent::text("done")],
        StopReason::Stop,
    ));
    let config = AgentLoopConfig::new()
        .argument_limits(ArgumentLimits::DEFAULT.max_bytes(MAX_ARGUMENT_BYTES))
        .max_result_bytes(MAX_RESULT_BYTES)
        .abort_grace(ABORT_GRACE);
    let agent = Agent::new(Arc::new(ScriptedModel::new(script)))
        .with_tools(tools())
        .with_config(config);
    agent.prompt("run the matrix").await.expect("an idle agent");
    let outcomes: Outcomes = agent
        .messages()
        .iter()
        .filter_map(|message| message.as_tool_result())
        .map(|result| {
            let texts = result
                .content
                .iter()
                .filter_map(|block| block.as_text().map(str::to_owned))
                .collect();
            (result.tool_call_id.clone(), (result.is_error, texts))
        })
        .collect();
    assert_eq!(outcomes, expected());
}

#[tokio::test]
async fn mcp_server_to_rmcps_client() {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    let server = tokio::spawn(McpServer::new(tools()).serve_io(server_read, server_write));
    let client = ().serve(client_end).await.expect("the client connects");
    let mut outcomes = Outcomes::new();
    for round in rounds() {
        let calls = round.iter().map(|call| {
            let Value::Object(arguments) = call.arguments.clone() else {
                unreachable!("the matrix's arguments are objects")
            };
            client
                .call_tool(CallToolRequestParams::new(call.name.clone()).with_arguments(arguments))
        });
        let results = futures_util::future::join_all(calls).await;
        for (call, result) in round.iter().zip(results) {
            outcomes.insert(call.id.clone(), mcp_texts(&result.expect("a result")));
        }
    }
    assert_eq!(outcomes, expected());
    client.cancel().await.expect("the client closes");
    server
        .await
        .expect("the server task ends")
        .expect("the server ends cleanly");
}

fn mcp_texts(result: &CallToolResult) -> (bool, Vec<String>) {
    let texts = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect();
    (result.is_error.unwrap_or(false), texts)
}

#[tokio::test]
async fn restate_tool_service_handler() {
    let service = PiTools::new(tools());
    let mut outcomes = Outcomes::new();
    for round in rounds() {
        let calls = round.iter().map(|call| {
            service.run_call(RemoteCall {
                tool: call.name.clone(),
                tool_call_id: call.id.clone(),
                arguments: call.arguments.clone(),
                idempotency_key: format!("matrix/{}", call.id),
            })
        });
        let results = futures_util::future::join_all(calls).await;
        for (call, result) in round.iter().zip(&results) {
            outcomes.insert(call.id.clone(), texts(result));
        }
    }
    assert_eq!(outcomes, expected());
}

#[test]
fn pi_tools_on_a_restate_server() {
    use pi_restate::restate_sdk::prelude::{Endpoint, HttpServer};
    let Some(restate) = support::restate() else {
        return;
    };
    // The service on a current-thread runtime of its own, as the other hosts run.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let address = listener.local_addr().expect("a bound address");
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            let endpoint = Endpoint::builder().bind(PiTools::new(tools())).build();
            HttpServer::new(endpoint).serve(listener).await;
        });
    });
    restate
        .register(&format!("http://{address}"))
        .expect("the tool service registered");
    let ingress = restate.ingress;
    let mut outcomes = Outcomes::new();
    for round in rounds() {
        // A round's calls at once: one thread per ingress request.
        let results: Vec<ToolResult> = std::thread::scope(|scope| {
            let calls: Vec<_> = round
                .iter()
                .map(|call| {
                    scope.spawn(move || {
                        let body = serde_json::to_vec(&RemoteCall {
                            tool: call.name.clone(),
                            tool_call_id: call.id.clone(),
                            arguments: call.arguments.clone(),
                            idempotency_key: format!("matrix/{}", call.id),
                        })
                        .expect("serializes");
                        let (status, answer) = pi_restate::loopback_http::request(
                            ingress,
                            "POST",
                            "/PiTools/call",
                            &[("content-type", "application/json")],
                            &body,
                        )
                        .expect("the ingress answers");
                        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
                        serde_json::from_slice::<ToolResult>(&answer).expect("a tool result")
                    })
                })
                .collect();
            calls
                .into_iter()
                .map(|call| call.join().expect("the request thread"))
                .collect()
        });
        for (call, result) in round.iter().zip(&results) {
            outcomes.insert(call.id.clone(), texts(result));
        }
    }
    assert_eq!(outcomes, expected());
}
