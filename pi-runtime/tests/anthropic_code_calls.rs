//! Anthropic's programmatic tool calling (issue 21): with `StreamOptions::native_code_calls`
//! the request offers the code execution tool (`code_execution_20260120`) and marks who may
//! call each tool (`allowed_callers`); a response keeps the container its code ran in, and the
//! next request names it (`container`: a program paused on tool calls goes on only in it); the
//! calls the program makes (each with its `caller`) run through the loop, where a code-only
//! tool is theirs, and go back with their `caller`.
//!
//! The model's side is vercel/ai's recording of one such run against the live API
//! (`packages/anthropic/src/__fixtures__/anthropic-programmatic-tool-calling.1.chunks.txt`,
//! `claude-sonnet-4-5-20250929`): 15 responses, one after the other in one file. The first
//! starts a program that calls `rollDie`; each of the next 13 carries one more call of the
//! paused program, whole in its `message_start`; the last has the program's output and the
//! answer. It is shipped in the npm package `@ai-sdk/anthropic` 3.0.20, from which
//! `.ci/install-test-deps` takes it into `recordings/ai-sdk-anthropic-3.0.20/` of the test
//! dependencies' folder; without it the tests are skipped, or fail when env `CI` is set.

mod common;
mod recorded;
mod sdk_types;

use std::sync::Arc;

use pi_runtime::providers::AnthropicMessages;
use pi_runtime::{
    Agent, AssistantContent, AssistantMessage, Context, Message, ModelRequest, RequestTools,
    ScriptedModel, StopReason, StreamOptions, ToolSearchMode,
};
use pi_tool::{AgentTool, FnTool, ToolCallers};
use recorded::{Api, check_event_grammar, final_message, kinds};
use sdk_types::{ANTHROPIC_MESSAGES, type_check};
use serde_json::{Value, json};

const RECORDING: &str =
    "recordings/ai-sdk-anthropic-3.0.20/anthropic-programmatic-tool-calling.1.chunks.txt";
const MODEL: &str = "claude-sonnet-4-5-20250929";
const CONTAINER: &str = "container_011CWHPPTDTn1XufeRB9uHeH";
const PROGRAM: &str = "srvtoolu_01MzSrFWsmzBdcoQkGWLyRjK";

/// The recorded responses, each framed as the server-sent events the API streams (one
/// response ends at its `message_stop`); `None` when the recording is missing outside CI.
fn responses() -> Option<Vec<Vec<u8>>> {
    let path = sdk_types::file(RECORDING)?;
    let text = std::fs::read_to_string(path).unwrap();
    let mut responses = Vec::new();
    let mut body = String::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        body.push_str(&format!("data: {line}\n\n"));
        let chunk: Value = serde_json::from_str(line).unwrap();
        if chunk["type"] == "message_stop" {
            responses.push(std::mem::take(&mut body).into_bytes());
        }
    }
    assert!(body.is_empty(), "the recording ends with a message_stop");
    Some(responses)
}

/// Each response decoded (fed in pieces of `piece` bytes): the message it ended with.
fn decoded(responses: &[Vec<u8>], piece: usize) -> Vec<AssistantMessage> {
    responses
        .iter()
        .enumerate()
        .map(|(i, body)| {
            let events = recorded::decode(Api::Anthropic, body, piece);
            check_event_grammar(&format!("response {i} in pieces of {piece}"), &events);
            final_message(&events).clone()
        })
        .collect()
}

fn program_caller() -> Value {
    json!({"type": "code_execution_20250825", "tool_id": PROGRAM})
}

#[test]
fn each_recorded_response_keeps_its_calls_their_callers_and_the_container() {
    let Some(responses) = responses() else {
        return;
    };
    assert_eq!(responses.len(), 15);
    for piece in [1, 7, usize::MAX] {
        let messages = decoded(&responses, piece);
        let first = &messages[0];
        assert_eq!(
            kinds(first),
            ["text", "server_tool_use", "toolCall"],
            "{first:?}"
        );
        assert_eq!(first.stop_reason, StopReason::ToolUse);
        // The program the call came from: its code streamed into the block.
        let AssistantContent::Provider(program) = &first.content[1] else {
            unreachable!()
        };
        assert_eq!(program.block["id"], PROGRAM);
        assert!(
            program.block["input"]["code"]
                .as_str()
                .is_some_and(|code| code.contains("await rollDie(")),
            "{program:?}"
        );
        // The paused program's calls, one per response, each whole in its `message_start`.
        for (i, message) in messages[..14].iter().enumerate() {
            let calls: Vec<_> = message.tool_calls().collect();
            assert_eq!(calls.len(), 1, "response {i}: {message:?}");
            assert_eq!(calls[0].call.name, "rollDie", "response {i}");
            let player = if i % 2 == 0 { "player1" } else { "player2" };
            assert_eq!(calls[0].call.arguments, json!({"player": player}));
            assert_eq!(calls[0].provider_fields["caller"], program_caller());
            assert_eq!(message.stop_reason, StopReason::ToolUse, "response {i}");
            assert_eq!(
                message.provider_fields["container"]["id"], CONTAINER,
                "response {i}"
            );
        }
        let last = &messages[14];
        assert_eq!(kinds(last), ["code_execution_tool_result", "text"]);
        assert_eq!(last.stop_reason, StopReason::Stop);
        assert!(last.text().contains("wins"), "{}", last.text());
        assert!(last.provider_fields.is_empty(), "no container reported");
    }
}

fn dice_tool(name: &str, callers: ToolCallers) -> Arc<dyn AgentTool> {
    Arc::new(
        FnTool::builder(
            name,
            "Roll a die for a player: 1 to 6.",
            json!({"type": "object", "properties": {"player": {"type": "string"}}, "required": ["player"]}),
        )
        .callers(callers)
        .build(|args: Value, _ctx| async move {
            if args["player"] == "player1" { "6" } else { "3" }
        })
        .unwrap(),
    )
}

/// `rollDie` only for code, `rollTwice` for both, `echo` only for the model.
fn tools() -> Vec<Arc<dyn AgentTool>> {
    vec![
        dice_tool("rollDie", ToolCallers::Code),
        dice_tool("rollTwice", ToolCallers::Both),
        dice_tool("echo", ToolCallers::Model),
    ]
}

fn options(tools: &[Arc<dyn AgentTool>], native: bool) -> StreamOptions {
    let mut options = StreamOptions::default();
    options.native_code_calls = native;
    options.tools = RequestTools::of(tools);
    options
}

fn sent<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not sent: {body}"))
}

fn first_body(tools: &[Arc<dyn AgentTool>], options: &StreamOptions) -> Value {
    let specs: Vec<pi_tool::ToolSpec> = tools.iter().map(|t| t.spec().clone()).collect();
    let messages = vec![Arc::new(Message::user("Play first to 3 wins"))];
    AnthropicMessages::new(MODEL).request_body(
        Context {
            system_prompt: "",
            messages: &messages,
            tools: &specs,
        },
        options,
    )
}

#[test]
fn the_request_offers_the_code_runner_and_says_who_may_call_each_tool() {
    let tools = tools();
    let body = first_body(&tools, &options(&tools, true));
    assert_eq!(
        body["tools"][0],
        json!({"type": "code_execution_20260120", "name": "code_execution"})
    );
    assert_eq!(
        sent(&body, "rollDie")["allowed_callers"],
        json!(["code_execution_20260120"])
    );
    assert_eq!(
        sent(&body, "rollTwice")["allowed_callers"],
        json!(["direct", "code_execution_20260120"])
    );
    assert_eq!(sent(&body, "echo").get("allowed_callers"), None);
    // The cache breakpoint stays on the last tool.
    assert!(body["tools"].as_array().unwrap().last().unwrap()["cache_control"].is_object());
    assert_eq!(body.get("container"), None, "no container before code ran");

    // Off (the default): nothing of it.
    let body = first_body(&tools, &options(&tools, false));
    let tools = body["tools"].as_array().unwrap();
    assert!(tools.iter().all(|t| t.get("type").is_none()), "{body}");
    assert!(tools.iter().all(|t| t.get("allowed_callers").is_none()));
}

/// The body a request of the agent's run would send to the API.
fn body_of(request: &ModelRequest, tools: &[Arc<dyn AgentTool>]) -> Value {
    AnthropicMessages::new(MODEL).request_body(
        Context {
            system_prompt: &request.system_prompt,
            messages: &request.messages,
            tools: &request.tools,
        },
        &options(tools, true),
    )
}

/// An `Agent` on a model that answers with the 15 recorded responses, and what it asked.
async fn recorded_run(responses: &[Vec<u8>]) -> (Agent, Vec<ModelRequest>) {
    let model = Arc::new(
        ScriptedModel::recording(decoded(responses, usize::MAX)).with_identity(
            AnthropicMessages::API,
            "anthropic",
            MODEL,
        ),
    );
    let agent = common::native_code_agent(model.clone(), tools());
    agent.prompt("Play first to 3 wins").await.unwrap();
    (agent, model.requests())
}

#[tokio::test]
async fn the_loop_answers_the_programs_calls_in_its_container() {
    let Some(responses) = responses() else {
        return;
    };
    let (agent, requests) = recorded_run(&responses).await;
    assert_eq!(agent.error(), None);
    assert_eq!(requests.len(), 15);
    // Every call was the program's, of a code-only tool: each ran.
    let results = common::tool_results(&agent.messages());
    assert_eq!(results.len(), 14);
    assert!(results.iter().all(|(_, error)| !error), "{results:?}");
    assert_eq!(results[0].0, "6");
    assert_eq!(results[1].0, "3");

    let tools = tools();
    let first = body_of(&requests[0], &tools);
    assert_eq!(first.get("container"), None);
    assert!(sent(&first, "rollDie").get("allowed_callers").is_some());
    for (i, request) in requests.iter().enumerate().skip(1) {
        let body = body_of(request, &tools);
        assert_eq!(body["container"], CONTAINER, "request {i}");
        let messages = body["messages"].as_array().unwrap();
        // The paused program's call goes back with its caller, its result alone after it.
        let call = messages[messages.len() - 2]["content"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["type"] == "tool_use")
            .unwrap();
        assert_eq!(call["caller"], program_caller(), "request {i}");
        let answer = messages.last().unwrap();
        assert_eq!(answer["role"], "user");
        let blocks = answer["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 1, "request {i}: {answer}");
        assert_eq!(blocks[0]["type"], "tool_result");
        assert_eq!(blocks[0]["tool_use_id"], call["id"]);
    }
    // The program block is sent back once, in the first answer's place.
    let last = body_of(&requests[14], &tools).to_string();
    assert_eq!(last.matches(&format!("\"id\":\"{PROGRAM}\"")).count(), 1);
    // The final answer reports no container; a next prompt stays in the one the code ran in.
    let mut next = agent.messages();
    next.push(Arc::new(Message::user("Play again")));
    let specs: Vec<pi_tool::ToolSpec> = tools.iter().map(|t| t.spec().clone()).collect();
    let follow_up = AnthropicMessages::new(MODEL).request_body(
        Context {
            system_prompt: "",
            messages: &next,
            tools: &specs,
        },
        &options(&tools, true),
    );
    assert_eq!(follow_up["container"], CONTAINER);
    assert!(
        agent
            .messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .text()
            .contains("wins")
    );
}

#[tokio::test]
async fn a_direct_call_of_a_code_only_tool_is_still_refused() {
    let Some(responses) = responses() else {
        return;
    };
    // The first recorded call, made by the model itself (no caller).
    let mut direct = decoded(&responses[..1], usize::MAX).remove(0);
    for block in &mut direct.content {
        if let AssistantContent::ToolCall(call) = block {
            call.provider_fields.clear();
        }
    }
    let done = AssistantMessage::new(vec![AssistantContent::text("done")], StopReason::Stop);
    let model = Arc::new(ScriptedModel::recording([direct, done]).with_identity(
        AnthropicMessages::API,
        "anthropic",
        MODEL,
    ));
    let agent = common::native_code_agent(model, tools());
    agent.prompt("Play").await.unwrap();
    let messages = agent.messages();
    let result = messages.iter().find_map(|m| m.as_tool_result()).unwrap();
    assert!(result.is_error);
    assert_eq!(result.text(), pi_tool::code_only_message("rollDie"));
}

/// The bodies checked by the Anthropic TypeScript SDK's own request type
/// (`@anthropic-ai/sdk` 1.10.0, which knows programmatic tool calling): `tsc --strict` must
/// accept each as a `MessageCreateParamsStreaming` literal (the first request; one that
/// continues the paused program, with its `container`, the call's `caller`, the program block;
/// the last; a first request with the API's own tool search), and refuse a made-up
/// `allowed_callers` value, or the check checks nothing.
#[tokio::test]
async fn the_bodies_type_check_against_the_anthropic_sdks_request_type() {
    let Some(responses) = responses() else {
        return;
    };
    let Some(deps) = sdk_types::with_sdk(&ANTHROPIC_MESSAGES) else {
        return;
    };
    let (_, requests) = recorded_run(&responses).await;
    let tools = tools();
    let first = body_of(&requests[0], &tools);
    let paused = body_of(&requests[1], &tools);
    let last = body_of(&requests[14], &tools);
    let mut searched = tools.clone();
    searched.push(Arc::new(
        FnTool::builder("rollMany", "Roll many dice.", json!({"type": "object"}))
            .deferred()
            .callers(ToolCallers::Both)
            .build(|_args: Value, _ctx| async { "[6, 3]" })
            .unwrap(),
    ));
    let mut search_options = options(&searched, true);
    search_options.tool_search = ToolSearchMode::Native;
    let with_search = first_body(&searched, &search_options);
    assert!(
        with_search.to_string().contains("defer_loading"),
        "{with_search}"
    );
    let mut wrong = first.clone();
    wrong["tools"][1]["allowed_callers"] = json!(["programmatic"]);

    assert_eq!(
        type_check(
            &deps,
            &ANTHROPIC_MESSAGES,
            &[&first, &paused, &last, &with_search]
        ),
        Ok(())
    );
    let refused = type_check(&deps, &ANTHROPIC_MESSAGES, &[&wrong])
        .expect_err("a made-up caller value is refused");
    assert!(refused.contains("\"programmatic\""), "{refused}");
}
