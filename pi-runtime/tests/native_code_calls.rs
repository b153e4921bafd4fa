//! The API's own code runner (OpenAI Responses' programmatic tool calling, issue 21): with
//! `StreamOptions::native_code_calls` the request offers `programmatic_tool_calling` and marks
//! who may call each tool (`allowed_callers` from `ToolCallers`), code-only tools are sent for
//! the program, a call the program made (it carries a `caller`) runs a code-only tool while a
//! direct call of it is still refused, and each result goes back with the call's `caller`.
//!
//! The model's side comes from vercel/ai's recording
//! `packages/openai/src/responses/__fixtures__/programmatic-tool-calling.1.chunks.txt` (read from
//! `shared/recordings` beside the repository, or `$PI_RECORDINGS`); the request side follows
//! the shapes the API echoes in that recording (`{"type": "programmatic_tool_calling"}`,
//! `allowed_callers: ["programmatic"]`).

mod recorded;

use std::sync::Arc;

use pi_runtime::providers::OpenAiResponses;
use pi_runtime::{
    Agent, AgentLoopConfig, AssistantContent, AssistantMessage, Context, Message, RequestTools,
    ScriptedModel, StopReason, StreamOptions, ToolResultMessage,
};
use pi_tool::{AgentTool, Content, FnTool, ToolCallers, ToolRegistry};
use recorded::{Recording, final_message};
use serde_json::{Value, json};

const FIRST: &str = "providers/vercel-ai/openai-responses/programmatic-tool-calling.1.chunks.txt";

fn sku_tool(name: &str, callers: ToolCallers, answer: &'static str) -> Arc<dyn AgentTool> {
    Arc::new(
        FnTool::builder(
            name,
            format!("{name} for a SKU."),
            json!({"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}),
        )
        .callers(callers)
        .build(move |_args: Value, _ctx| async move { answer })
        .unwrap(),
    )
}

/// `getInventory` only for code, `getDemand` for both, `echo` only for the model.
fn tools() -> Vec<Arc<dyn AgentTool>> {
    vec![
        sku_tool("getInventory", ToolCallers::Code, "{\"availableUnits\":42}"),
        sku_tool("getDemand", ToolCallers::Both, "{\"requestedUnits\":31}"),
        sku_tool("echo", ToolCallers::Model, "echo"),
    ]
}

fn options(tools: &[Arc<dyn AgentTool>], native: bool) -> StreamOptions {
    let mut options = StreamOptions::default();
    options.native_code_calls = native;
    options.tools = RequestTools::of(tools);
    options
}

fn allowed_callers<'a>(body: &'a Value, name: &str) -> Option<&'a Value> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not sent: {body}"))
        .get("allowed_callers")
}

#[test]
fn the_request_offers_the_code_runner_and_says_who_may_call_each_tool() {
    let tools = tools();
    let specs: Vec<pi_tool::ToolSpec> = tools.iter().map(|t| t.spec().clone()).collect();
    let messages = vec![Arc::new(Message::user("Check sku_123"))];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &specs,
    };
    let model = OpenAiResponses::new("gpt-5.6");

    let body = model.request_body(context, &options(&tools, true));
    assert_eq!(
        body["tools"][0],
        json!({"type": "programmatic_tool_calling"})
    );
    assert_eq!(
        allowed_callers(&body, "getInventory"),
        Some(&json!(["programmatic"]))
    );
    assert_eq!(
        allowed_callers(&body, "getDemand"),
        Some(&json!(["direct", "programmatic"]))
    );
    assert_eq!(allowed_callers(&body, "echo"), None);

    // Off (the default): nothing of it.
    let body = model.request_body(context, &options(&tools, false));
    let sent = body["tools"].as_array().unwrap();
    assert!(sent.iter().all(|t| t["type"] == "function"), "{body}");
    assert!(sent.iter().all(|t| t.get("allowed_callers").is_none()));
}

#[test]
fn a_result_of_a_programs_call_goes_back_with_its_caller() {
    if !recorded::present() {
        return;
    }
    let recording = Recording::open(FIRST);
    let message = final_message(&recording.decode(usize::MAX)).clone();
    let call = message.tool_calls().next().unwrap().clone();
    let caller = call.provider_fields["caller"].clone();
    assert_eq!(caller["type"], "program");
    let messages = vec![
        Arc::new(Message::user("Check sku_123")),
        // As the model that sent it (ids and reasoning are replayed only to their own model).
        Arc::new(Message::Assistant(AssistantMessage {
            model: "recorded".into(),
            ..message
        })),
        Arc::new(Message::ToolResult(ToolResultMessage {
            tool_call_id: call.call.id.clone(),
            tool_name: call.call.name.clone(),
            content: vec![Content::text("{\"availableUnits\":42}")],
            details: Value::Null,
            is_error: false,
            duration_ms: None,
            timestamp: 0,
        })),
    ];
    let tools = tools();
    let body = OpenAiResponses::new("recorded").request_body(
        Context {
            system_prompt: "",
            messages: &messages,
            tools: &[],
        },
        &options(&tools, true),
    );
    let input = body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().filter_map(|i| i["type"].as_str()).collect();
    assert!(
        kinds.ends_with(&["program", "function_call", "function_call_output"]),
        "{body}"
    );
    let output = input.last().unwrap();
    assert_eq!(output["call_id"], "call_VgDSZztLociNcutQZWkC2fmL");
    assert_eq!(output["caller"], caller);
    assert_eq!(output["output"], "{\"availableUnits\":42}");
}

/// An `Agent` on a model that answers with the recorded program call: the code-only tool runs
/// for the program and is refused to the model's own direct call.
#[tokio::test]
async fn the_loop_runs_a_programs_call_of_a_code_only_tool_and_refuses_a_direct_one() {
    if !recorded::present() {
        return;
    }
    let recording = Recording::open(FIRST);
    let program_call = final_message(&recording.decode(usize::MAX)).clone();
    let direct = AssistantMessage::new(
        vec![AssistantContent::tool_call(
            "call_direct",
            "getInventory",
            json!({"sku": "sku_123"}),
        )],
        StopReason::ToolUse,
    );
    let done = AssistantMessage::new(vec![AssistantContent::text("done")], StopReason::Stop);
    let model = Arc::new(
        ScriptedModel::new([program_call, direct, done]).with_identity(
            "openai-responses",
            "openai",
            "gpt-5.6",
        ),
    );
    let mut registry = ToolRegistry::new();
    for tool in tools() {
        registry.register_arc(tool);
    }
    let mut stream = StreamOptions::default();
    stream.native_code_calls = true;
    let agent = Agent::new(model.clone())
        .with_tools(registry)
        .with_config(AgentLoopConfig::new().stream_options(stream));
    agent.prompt("Check sku_123").await.unwrap();

    // The code-only tool is sent (for the program).
    let requests = model.requests();
    assert!(
        requests[0].tool_names().contains(&"getInventory"),
        "{:?}",
        requests[0].tool_names()
    );
    let results: Vec<(String, bool)> = agent
        .messages()
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| (r.text(), r.is_error))
        .collect();
    assert_eq!(results[0], ("{\"availableUnits\":42}".to_owned(), false));
    assert!(results[1].1, "{results:?}");
    assert_eq!(
        results[1].0,
        pi_tool::code_only_message("getInventory"),
        "{results:?}"
    );
}

#[tokio::test]
async fn without_the_option_code_only_tools_stay_unsent() {
    let model = Arc::new(
        ScriptedModel::new([AssistantMessage::new(
            vec![AssistantContent::text("hi")],
            StopReason::Stop,
        )])
        .with_identity("openai-responses", "openai", "gpt-5.6"),
    );
    let agent = Agent::new(model.clone()).with_tools({
        let mut registry = ToolRegistry::new();
        for tool in tools() {
            registry.register_arc(tool);
        }
        registry
    });
    agent.prompt("hi").await.unwrap();
    assert_eq!(model.requests()[0].tool_names(), ["echo", "getDemand"]);
}
