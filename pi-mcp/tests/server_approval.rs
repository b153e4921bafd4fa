//! A served tool that needs approval asks the client through MCP elicitation: rmcp's client with
//! an elicitation handler, in both protocol revisions (2025-11-25: the server sends
//! `elicitation/create`; 2026-07-28: the call answers `input_required` and the client's retry
//! carries the answer). Accepted, the call runs once; declined or cancelled, it is an error
//! result saying so; a client without the capability gets an error result saying it cannot
//! approve; an external tool's call is an error result. The Python SDK's client too, over HTTP
//! (skipped when `.ci/install-test-deps` has not run).

mod client_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pi_mcp::McpServer;
use pi_tool::{FnTool, ToolRegistry, tool};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorData, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};

static REFUNDS: AtomicUsize = AtomicUsize::new(0);

/// Refund an order.
#[tool(approval)]
async fn refund(order: String, cents: u32) -> String {
    REFUNDS.fetch_add(1, Ordering::SeqCst);
    format!("refunded {cents} on {order}")
}

/// Say hello.
#[tool]
async fn hello(name: String) -> String {
    format!("hello {name}")
}

fn tools() -> ToolRegistry {
    let pick = FnTool::external(
        "pick_color",
        "Ask the user to pick a color.",
        json!({"type": "object", "properties": {}}),
    )
    .expect("a valid tool");
    ToolRegistry::new()
        .with(RefundTool)
        .with(HelloTool)
        .with(pick)
}

/// How the test client's user answers.
#[derive(Clone, Copy)]
enum Answer {
    Yes,
    No,
    Decline,
    Cancel,
}

/// rmcp's client with an elicitation handler that records each form and answers it.
#[derive(Clone)]
struct Approver {
    answer: Answer,
    declares_elicitation: bool,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
}

impl ClientHandler for Approver {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Err(ErrorData::invalid_params("expected a form", None));
        };
        let schema = serde_json::to_value(&requested_schema).expect("a schema");
        self.asked.lock().unwrap().push((message, schema));
        Ok(match self.answer {
            Answer::Yes => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true}))
            }
            Answer::No => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": false}))
            }
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.declares_elicitation {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("approval-test", "0.0.0"))
    }
}

type Client = RunningService<RoleClient, Approver>;

/// The two protocol revisions, each with its own way to ask.
fn lifecycles() -> [(&'static str, ClientLifecycleMode); 2] {
    [
        ("2025-11-25", ClientLifecycleMode::Initialize),
        (
            "2026-07-28",
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    ]
}

/// A client connected to a fresh server over an in-process pipe.
async fn connect(approver: Approver, lifecycle: ClientLifecycleMode) -> Client {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    tokio::spawn(McpServer::new(tools()).serve_io(server_read, server_write));
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        approver.serve_with_lifecycle(client_end, lifecycle),
    )
    .await
    .expect("connects in time")
    .expect("the client connects")
}

fn approver(answer: Answer, declares_elicitation: bool) -> Approver {
    Approver {
        answer,
        declares_elicitation,
        asked: Arc::default(),
    }
}

async fn call(client: &Client, name: &'static str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("object arguments")
    };
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        client.call_tool(CallToolRequestParams::new(name).with_arguments(arguments)),
    )
    .await
    .expect("answered in time")
    .expect("a result")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One test at a time touches `REFUNDS` (the tests of this file run in parallel).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_form_runs_the_call_once_in_both_revisions() {
    let _serial = SERIAL.lock().await;
    for (revision, lifecycle) in lifecycles() {
        let approver = approver(Answer::Yes, true);
        let asked = Arc::clone(&approver.asked);
        let client = connect(approver, lifecycle).await;
        let before = REFUNDS.load(Ordering::SeqCst);
        // "cents" as a string: the form shows the arguments as they will run.
        let result = call(&client, "refund", json!({"order": "A-7", "cents": "250"})).await;
        assert_ne!(result.is_error, Some(true), "{revision}: {}", text(&result));
        assert_eq!(text(&result), "refunded 250 on A-7", "{revision}");
        assert_eq!(
            REFUNDS.load(Ordering::SeqCst),
            before + 1,
            "{revision}: ran once"
        );
        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{revision}: asked once");
        let (message, schema) = &asked[0];
        assert!(
            message.contains("Approve the call of tool refund?"),
            "{message}"
        );
        assert!(message.contains("\"cents\": 250"), "{message}");
        assert_eq!(
            schema,
            &json!({
                "type": "object",
                "properties": {"approve": {"type": "boolean", "title": "Approve",
                                           "description": "Run refund with these arguments"}},
                "required": ["approve"],
            }),
            "{revision}"
        );
        // A call that needs no approval asks nothing.
        let hello = call(&client, "hello", json!({"name": "ann"})).await;
        assert_eq!(text(&hello), "hello ann");
        assert_eq!(asked.len(), 1);
        client.cancel().await.ok();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_an_error_result_and_nothing_runs() {
    let _serial = SERIAL.lock().await;
    let cases = [
        (Answer::No, "the client's user declined it"),
        (Answer::Decline, "the client's user declined it"),
        (
            Answer::Cancel,
            "the client's user cancelled the approval request",
        ),
    ];
    for (revision, lifecycle) in lifecycles() {
        for (answer, why) in cases {
            let client = connect(approver(answer, true), lifecycle.clone()).await;
            let before = REFUNDS.load(Ordering::SeqCst);
            let result = call(&client, "refund", json!({"order": "B", "cents": 1})).await;
            assert_eq!(result.is_error, Some(true), "{revision}");
            assert_eq!(
                text(&result),
                format!("Tool refund was not run: the call was denied: {why}"),
                "{revision}"
            );
            assert_eq!(
                REFUNDS.load(Ordering::SeqCst),
                before,
                "{revision}: nothing ran"
            );
            client.cancel().await.ok();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_is_told_it_cannot_approve() {
    let _serial = SERIAL.lock().await;
    for (revision, lifecycle) in lifecycles() {
        let approver = approver(Answer::Yes, false);
        let asked = Arc::clone(&approver.asked);
        let client = connect(approver, lifecycle).await;
        let before = REFUNDS.load(Ordering::SeqCst);
        let result = call(&client, "refund", json!({"order": "C", "cents": 1})).await;
        assert_eq!(result.is_error, Some(true), "{revision}");
        assert_eq!(
            text(&result),
            "Tool refund was not run: it needs approval before it runs, and this MCP client \
             cannot give it (it did not declare the elicitation capability in form mode)",
            "{revision}"
        );
        assert_eq!(REFUNDS.load(Ordering::SeqCst), before, "{revision}");
        assert!(asked.lock().unwrap().is_empty(), "{revision}: never asked");
        client.cancel().await.ok();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_tools_call_is_an_error_result() {
    for (revision, lifecycle) in lifecycles() {
        let approver = approver(Answer::Yes, true);
        let asked = Arc::clone(&approver.asked);
        let client = connect(approver, lifecycle).await;
        let result = call(&client, "pick_color", json!({})).await;
        assert_eq!(result.is_error, Some(true), "{revision}");
        assert_eq!(
            text(&result),
            "Tool pick_color is external: its calls are answered from outside this process, \
             and this host cannot wait for an answer",
            "{revision}"
        );
        assert!(
            asked.lock().unwrap().is_empty(),
            "{revision}: an approval cannot answer it"
        );
        client.cancel().await.ok();
    }
}

/// The Python SDK's client (`tests/clients/python_approval.py`) against the server over HTTP:
/// its elicitation callback answers the form, in both revisions; without a callback it does
/// not declare the capability and is told it cannot approve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdks_client_approves_declines_or_cannot_approve() {
    let Some(deps) = client_support::test_deps("venv/bin/python") else {
        return;
    };
    let _serial = SERIAL.lock().await;
    let token = pi_mcp::generate_token();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(
        McpServer::new(tools())
            .with_bearer_token(token.clone())
            .serve_http_on(listener),
    );
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/python_approval.py");
    let run = |mode: &str, answer: &str| {
        let mut command = tokio::process::Command::new(deps.join("venv/bin/python"));
        command
            .arg(&script)
            .args([url.as_str(), mode, answer])
            .env("PI_MCP_TOKEN", &token)
            .kill_on_drop(true);
        async move {
            let output = tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
                .await
                .expect("the client finishes in time")
                .expect("python runs");
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            serde_json::from_str::<Value>(stdout.trim()).expect("one JSON line")
        }
    };
    for (mode, protocol) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let before = REFUNDS.load(Ordering::SeqCst);
        let approved = run(mode, "yes").await;
        assert_eq!(approved["protocol"], protocol);
        assert_eq!(approved["is_error"], false, "{mode}: {approved}");
        assert_eq!(approved["text"], "refunded 250 on A-7");
        assert_eq!(
            approved["asked"].as_array().map(Vec::len),
            Some(1),
            "{approved}"
        );
        assert_eq!(
            approved["asked"][0]["schema"]["required"],
            json!(["approve"])
        );
        assert_eq!(
            REFUNDS.load(Ordering::SeqCst),
            before + 1,
            "{mode}: ran once"
        );

        for answer in ["no", "decline"] {
            let refused = run(mode, answer).await;
            assert_eq!(refused["is_error"], true, "{mode} {answer}: {refused}");
            assert_eq!(
                refused["text"],
                "Tool refund was not run: the call was denied: the client's user declined it"
            );
        }
        let unable = run(mode, "none").await;
        assert_eq!(unable["is_error"], true);
        assert!(
            unable["text"]
                .as_str()
                .is_some_and(|text| text.contains("this MCP client cannot give it")),
            "{unable}"
        );
        assert_eq!(
            REFUNDS.load(Ordering::SeqCst),
            before + 1,
            "{mode}: nothing else ran"
        );
    }
}
