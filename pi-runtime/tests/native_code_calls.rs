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

mod common;
mod recorded;
mod sdk_types;

use std::sync::Arc;

use pi_runtime::providers::{AnthropicMessages, OpenAiResponses};
use pi_runtime::{
    Agent, AssistantContent, AssistantMessage, Context, Message, RequestTools, ScriptedModel,
    StopReason, StreamOptions, ToolResultMessage,
};
use pi_tool::{AgentTool, Content, FnTool, ToolCallers};
use recorded::{Recording, final_message};
use sdk_types::{OPENAI_RESPONSES, type_check};
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

/// With the API's own search, a tool only code may call can be deferred: the runner comes with
/// it all the same (its `allowed_callers` names the runner), on both APIs that have one.
#[test]
fn a_deferred_code_only_tool_brings_the_code_runner() {
    let tools: Vec<Arc<dyn AgentTool>> = vec![
        sku_tool("echo", ToolCallers::Model, "echo"),
        Arc::new(
            FnTool::builder("getPrice", "Price of a SKU.", json!({"type": "object"}))
                .deferred()
                .callers(ToolCallers::Code)
                .build(|_args: Value, _ctx| async { "9.99" })
                .unwrap(),
        ),
    ];
    let specs: Vec<pi_tool::ToolSpec> = tools.iter().map(|t| t.spec().clone()).collect();
    let messages = vec![Arc::new(Message::user("Price of sku_123"))];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &specs,
    };
    let mut options = options(&tools, true);
    options.tool_search = pi_runtime::ToolSearchMode::Native;

    let body = OpenAiResponses::new("gpt-5.6").request_body(context, &options);
    assert_eq!(
        body["tools"][0],
        json!({"type": "programmatic_tool_calling"})
    );
    let price = allowed_callers(&body, "getPrice");
    assert_eq!(price, Some(&json!(["programmatic"])), "{body}");
    let body = AnthropicMessages::new("claude-opus-4-6").request_body(context, &options);
    assert_eq!(
        body["tools"][0],
        json!({"type": "code_execution_20260120", "name": "code_execution"})
    );
    let price = allowed_callers(&body, "getPrice");
    assert_eq!(price, Some(&json!(["code_execution_20260120"])), "{body}");
}

/// The next request after the recorded program call, with the call's result and the tools
/// (the recording's own model, so its ids and reasoning are replayed).
fn body_after_the_programs_call(recording: &Recording) -> Value {
    let message = final_message(&recording.decode(usize::MAX)).clone();
    let call = message.tool_calls().next().unwrap().clone();
    let messages = vec![
        Arc::new(Message::user("Check sku_123")),
        Arc::new(Message::Assistant(message.with_model("recorded"))),
        Arc::new(Message::ToolResult(
            ToolResultMessage::new(
                call.call.id.clone(),
                call.call.name.clone(),
                vec![Content::text("{\"availableUnits\":42}")],
            )
            .with_timestamp(0),
        )),
    ];
    let tools = tools();
    let specs: Vec<pi_tool::ToolSpec> = tools.iter().map(|t| t.spec().clone()).collect();
    OpenAiResponses::new("recorded").request_body(
        Context {
            system_prompt: "Be brief.",
            messages: &messages,
            tools: &specs,
        },
        &options(&tools, true),
    )
}

#[test]
fn a_result_of_a_programs_call_goes_back_with_its_caller() {
    if !recorded::present() {
        return;
    }
    let recording = Recording::open(FIRST);
    let body = body_after_the_programs_call(&recording);
    let input = body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().filter_map(|i| i["type"].as_str()).collect();
    assert!(
        kinds.ends_with(&["program", "function_call", "function_call_output"]),
        "{body}"
    );
    let caller = json!({"type": "program", "caller_id": "call_voPdoCqf8APY4DMpam3bdmxq"});
    assert_eq!(input[input.len() - 2]["caller"], caller);
    let output = input.last().unwrap();
    assert_eq!(output["call_id"], "call_VgDSZztLociNcutQZWkC2fmL");
    assert_eq!(output["caller"], caller);
    assert_eq!(output["output"], "{\"availableUnits\":42}");
}

/// The bodies checked by the OpenAI Node SDK's own request type (`openai` 7.59.0, whose types
/// know programmatic tool calling): TypeScript (`tsc --strict`) must accept each as a
/// `ResponseCreateParamsStreaming` literal, so every field we send, and every value of
/// `allowed_callers`, `caller` and the `program` item, is one the SDK declares. A body with a
/// made-up caller value must be refused, or the check checks nothing.
///
/// Needs Node, `openai` and `typescript` from `.ci/install-test-deps` (folder: env
/// `PI_TEST_DEPS`); without them the test is skipped, or fails when env `CI` is set.
#[test]
fn the_bodies_type_check_against_the_openai_sdks_request_type() {
    if !recorded::present() {
        return;
    }
    let Some(deps) = sdk_types::with_sdk(&OPENAI_RESPONSES) else {
        return;
    };
    let tools = tools();
    let specs: Vec<pi_tool::ToolSpec> = tools.iter().map(|t| t.spec().clone()).collect();
    let messages = vec![Arc::new(Message::user("Check sku_123"))];
    let first = OpenAiResponses::new("gpt-5.6").request_body(
        Context {
            system_prompt: "",
            messages: &messages,
            tools: &specs,
        },
        &options(&tools, true),
    );
    let after = body_after_the_programs_call(&Recording::open(FIRST));
    // The API's own tool search too: `tool_search` and a deferred tool with `defer_loading`.
    let mut searched = tools.clone();
    searched.push(Arc::new(
        FnTool::builder("getPrice", "Price of a SKU.", json!({"type": "object"}))
            .deferred()
            .build(|_args: Value, _ctx| async { "9.99" })
            .unwrap(),
    ));
    let searched_specs: Vec<pi_tool::ToolSpec> =
        searched.iter().map(|t| t.spec().clone()).collect();
    let mut search_options = options(&searched, true);
    search_options.tool_search = pi_runtime::ToolSearchMode::Native;
    let with_search = OpenAiResponses::new("gpt-5.6").request_body(
        Context {
            system_prompt: "",
            messages: &messages,
            tools: &searched_specs,
        },
        &search_options,
    );
    assert!(
        with_search.to_string().contains("defer_loading"),
        "{with_search}"
    );
    let mut wrong = first.clone();
    wrong["tools"][1]["allowed_callers"] = json!(["program"]);

    assert_eq!(
        type_check(&deps, &OPENAI_RESPONSES, &[&first, &after, &with_search]),
        Ok(())
    );
    let refused = type_check(&deps, &OPENAI_RESPONSES, &[&wrong])
        .expect_err("a made-up caller value is refused");
    assert!(refused.contains("\"program\""), "{refused}");
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
        ScriptedModel::recording([program_call, direct, done]).with_identity(
            "openai-responses",
            "openai",
            "gpt-5.6",
        ),
    );
    let agent = common::native_code_agent(model.clone(), tools());
    agent.prompt("Check sku_123").await.unwrap();

    // The code-only tool is sent (for the program).
    let requests = model.requests();
    assert!(
        requests[0].tool_names().contains(&"getInventory"),
        "{:?}",
        requests[0].tool_names()
    );
    let results = common::tool_results(&agent.messages());
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
        ScriptedModel::recording([AssistantMessage::new(
            vec![AssistantContent::text("hi")],
            StopReason::Stop,
        )])
        .with_identity("openai-responses", "openai", "gpt-5.6"),
    );
    let agent = Agent::new(model.clone()).with_tools(tools().into_iter().collect());
    agent.prompt("hi").await.unwrap();
    assert_eq!(model.requests()[0].tool_names(), ["echo", "getDemand"]);
}
