//! The APIs' own tool search (issue 20 item 2) and their programmatic calls (issue 21 item 3):
//! the blocks a search produces decoded from real recorded streams, kept in the transcript byte
//! for byte, and replayed on the next request; request bodies with deferred tools checked
//! against each API's published rules; an `Agent` run with the native search, resumed from its
//! saved transcript.
//!
//! The recordings are read from `shared/recordings` beside the repository (or
//! `$PI_RECORDINGS`); each test names its recording's origin.

mod recorded;

use std::sync::Arc;

use pi_runtime::providers::{AnthropicMessages, OpenAiCompletions, OpenAiResponses};
use pi_runtime::{
    Agent, AgentLoopConfig, AssistantContent, AssistantEvent, AssistantMessage, Context, Message,
    ProviderBlock, RequestTools, ScriptedModel, StopReason, StreamOptions, ToolResultMessage,
    ToolSearchMode,
};
use pi_tool::{AgentTool, Content, FnTool, TOOL_SEARCH_NAME, ToolRegistry};
use recorded::{Recording, check_event_grammar, final_message, kinds};
use serde_json::{Value, json};

fn provider_blocks(message: &AssistantMessage) -> Vec<&ProviderBlock> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Provider(block) => Some(block),
            _ => None,
        })
        .collect()
}

/// Asserts that `value`, serialized, is a run of bytes of the recording: what was kept is what
/// the API sent.
fn assert_verbatim(recording: &Recording, value: &Value) {
    let bytes = serde_json::to_string(value).unwrap();
    let body = String::from_utf8_lossy(&recording.body);
    assert!(
        body.contains(&bytes),
        "{}: not byte for byte as received: {bytes}",
        recording.name
    );
}

/// The message decoded from a recording (whole and in 7-byte pieces, the same), with its
/// events checked.
fn decoded(recording: &Recording) -> AssistantMessage {
    let events = recording.decode(usize::MAX);
    check_event_grammar(&recording.name, &events);
    let mut message = final_message(&events).clone();
    let mut pieces = final_message(&recording.decode(7)).clone();
    message.timestamp = 0;
    pieces.timestamp = 0;
    assert_eq!(message, pieces, "{}: split anywhere", recording.name);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AssistantEvent::ProviderBlock { .. })),
        "{}: provider blocks are announced",
        recording.name
    );
    message
}

/// The message survives a session file: serialized and read back, the same.
fn assert_session_round_trip(message: &AssistantMessage) {
    let saved = serde_json::to_string(&Message::Assistant(message.clone())).unwrap();
    let restored: Message = serde_json::from_str(&saved).unwrap();
    assert_eq!(restored, Message::Assistant(message.clone()));
}

fn result(id: &str, name: &str, text: &str) -> Arc<Message> {
    Arc::new(Message::ToolResult(
        ToolResultMessage::new(id, name, vec![Content::text(text)]).with_timestamp(0),
    ))
}

fn weather_tool(deferred: bool) -> Arc<dyn AgentTool> {
    let builder = FnTool::builder(
        "get_weather",
        "Get the current weather at a location.",
        json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
    );
    let builder = if deferred {
        builder.deferred()
    } else {
        builder
    };
    Arc::new(builder.build(|_, _| async { "sunny" }).unwrap())
}

fn plain_tool(name: &str) -> Arc<dyn AgentTool> {
    Arc::new(
        FnTool::builder(name, "A tool.", json!({"type": "object", "properties": {}}))
            .build(|_, _| async { "ok" })
            .unwrap(),
    )
}

fn native_options(tools: &[Arc<dyn AgentTool>], mode: ToolSearchMode) -> StreamOptions {
    let mut options = StreamOptions::default();
    options.tool_search = mode;
    options.tools = RequestTools::of(tools);
    options
}

fn specs(tools: &[Arc<dyn AgentTool>]) -> Vec<pi_tool::ToolSpec> {
    tools.iter().map(|t| t.spec().clone()).collect()
}

// Anthropic: `server_tool_use`, `tool_search_tool_result` with `tool_reference`s, and a
// `tool_use` carrying its `caller`.

/// vercel/ai `packages/anthropic/src/__fixtures__/anthropic-tool-search-regex.1.chunks.txt`
/// (response 1; claude-sonnet-4-5 searching with the regex tool, then calling what it found),
/// as `providers-more/anthropic/vercel_tool_search_then_tool_1.sse`.
const ANTHROPIC_SEARCH: &str = "providers-more/anthropic/vercel_tool_search_then_tool_1.sse";

#[test]
fn anthropic_search_blocks_are_kept_verbatim_and_replayed() {
    if !recorded::present() {
        return;
    }
    let recording = Recording::open(ANTHROPIC_SEARCH);
    let message = decoded(&recording);
    assert_eq!(
        kinds(&message),
        [
            "server_tool_use",
            "tool_search_tool_result",
            "text",
            "toolCall"
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let blocks = provider_blocks(&message);
    assert!(blocks.iter().all(|b| b.api == AnthropicMessages::API));
    // The search's input streamed in pieces; the block holds it whole.
    assert_eq!(
        blocks[0].block["input"],
        json!({"pattern": "weather|SF|San Francisco|forecast|temperature|climate", "limit": 10})
    );
    assert_eq!(
        blocks[1].block.pointer("/content/tool_references/0"),
        Some(&json!({"type": "tool_reference", "tool_name": "get_temp_data"}))
    );
    assert_verbatim(&recording, &blocks[1].block);
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.call.name, "get_temp_data");
    assert_eq!(call.provider_fields["caller"], json!({"type": "direct"}));
    assert_session_round_trip(&message);

    // The next request replays the assistant turn as the API sent it.
    let id = call.call.id.clone();
    let messages = vec![
        Arc::new(Message::user("What is the weather in San Francisco?")),
        Arc::new(Message::Assistant(message.clone().with_model("recorded"))),
        result(&id, "get_temp_data", "64F"),
    ];
    let tools = vec![weather_tool(true), plain_tool("get_temp_data")];
    let tool_specs = specs(&tools);
    let body = AnthropicMessages::new("recorded").request_body(
        Context {
            system_prompt: "",
            messages: &messages,
            tools: &tool_specs,
        },
        &native_options(&tools, ToolSearchMode::NativeRegex),
    );
    let replayed = body["messages"][1]["content"].as_array().unwrap();
    let types: Vec<&str> = replayed
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "server_tool_use",
            "tool_search_tool_result",
            "text",
            "tool_use"
        ]
    );
    assert_eq!(replayed[0], blocks[0].block);
    assert_verbatim(&recording, &replayed[1]);
    assert_eq!(replayed[3]["caller"], json!({"type": "direct"}));
    assert_eq!(replayed[3]["id"], json!(id));

    // Another API sees none of it: the blocks and the caller are Anthropic's.
    let body = OpenAiResponses::new("gpt-5").request_body(
        Context {
            system_prompt: "",
            messages: &messages,
            tools: &tool_specs,
        },
        &StreamOptions::default(),
    );
    let text = body.to_string();
    assert!(!text.contains("tool_search_tool_result") && !text.contains("\"caller\""));
}

// OpenAI Responses: `tool_search_call` / `tool_search_output`, and a call of a loaded tool
// with its `namespace`.

/// vercel/ai `packages/openai/src/responses/__fixtures__/openai-tool-search.1.chunks.txt`
/// (gpt-5.4 with the hosted `tool_search`).
const OPENAI_SEARCH: &str = "providers/vercel-ai/openai-responses/openai-tool-search.1.chunks.txt";

#[test]
fn openai_hosted_search_items_are_kept_verbatim_and_replayed() {
    if !recorded::present() {
        return;
    }
    let recording = Recording::open(OPENAI_SEARCH);
    let message = decoded(&recording);
    assert_eq!(
        kinds(&message),
        ["tool_search_call", "tool_search_output", "toolCall"]
    );
    let blocks = provider_blocks(&message);
    // The finished items (`output_item.done`), not the announced ones.
    assert_eq!(blocks[0].block["status"], json!("completed"));
    assert_eq!(
        blocks[0].block["arguments"],
        json!({"paths": ["get_weather"]})
    );
    assert_eq!(
        blocks[1].block.pointer("/tools/0/name"),
        Some(&json!("get_weather"))
    );
    for block in &blocks {
        assert_eq!(block.api, OpenAiResponses::API);
        assert_verbatim(&recording, &block.block);
    }
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.call.name, "get_weather");
    assert_eq!(call.provider_fields["namespace"], json!("get_weather"));
    assert_session_round_trip(&message);

    let call_id = call.call.id.split('|').next().unwrap().to_owned();
    let messages = vec![
        Arc::new(Message::user("What is the weather in San Francisco?")),
        Arc::new(Message::Assistant(message.clone().with_model("recorded"))),
        result(&call.call.id, "get_weather", "64F"),
    ];
    let tools = vec![weather_tool(true), plain_tool("echo")];
    let tool_specs = specs(&tools);
    let body = OpenAiResponses::new("recorded").request_body(
        Context {
            system_prompt: "",
            messages: &messages,
            tools: &tool_specs,
        },
        &native_options(&tools, ToolSearchMode::Native),
    );
    let input = body["input"].as_array().unwrap();
    let types: Vec<&str> = input
        .iter()
        .map(|i| i["type"].as_str().unwrap_or("message"))
        .collect();
    assert_eq!(
        types,
        [
            "message",
            "tool_search_call",
            "tool_search_output",
            "function_call",
            "function_call_output"
        ]
    );
    assert_verbatim(&recording, &input[1]);
    assert_verbatim(&recording, &input[2]);
    assert_eq!(input[3]["namespace"], json!("get_weather"));
    assert_eq!(input[3]["call_id"], json!(call_id));
    assert_eq!(input[4]["call_id"], json!(call_id));
}

/// vercel/ai `openai-client-tool-search.1.chunks.txt` and `.2` (gpt-5.4 with a
/// client-executed `tool_search`: the search call, then the call of the tool it loaded); `.2` is
/// also `providers-more/openai-responses/vercel_function_call_after_tool_search.sse`.
#[test]
fn openai_client_search_call_is_kept_and_the_call_after_it_decodes() {
    if !recorded::present() {
        return;
    }
    let recording = Recording::open(
        "providers/vercel-ai/openai-responses/openai-client-tool-search.1.chunks.txt",
    );
    let message = decoded(&recording);
    assert_eq!(kinds(&message), ["tool_search_call"]);
    let block = &provider_blocks(&message)[0].block;
    assert_eq!(block["execution"], json!("client"));
    assert_eq!(
        block["arguments"]["goal"],
        json!("Find a tool that can provide current weather information for San Francisco.")
    );
    assert_verbatim(&recording, block);

    for path in [
        "providers/vercel-ai/openai-responses/openai-client-tool-search.2.chunks.txt",
        "providers-more/openai-responses/vercel_function_call_after_tool_search.sse",
    ] {
        let recording = Recording::open(path);
        let events = recording.decode(usize::MAX);
        check_event_grammar(path, &events);
        let message = final_message(&events);
        assert_eq!(kinds(message), ["toolCall"], "{path}");
        let call = message.tool_calls().next().unwrap();
        assert_eq!(call.call.name, "get_weather");
        assert_eq!(
            call.call.arguments,
            json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
        );
        // Nothing besides the call's own fields came with it.
        assert!(call.provider_fields.is_empty(), "{path}");
    }
}

// OpenAI programmatic tool calling (issue 21 item 3).

/// vercel/ai `programmatic-tool-calling.{1,2,3}.chunks.txt` (a model's `program` calling
/// `getInventory` and `getDemand` from code, then the program's output and the answer).
#[test]
fn openai_program_items_and_callers_are_kept_and_replayed() {
    if !recorded::present() {
        return;
    }
    let folder = "providers/vercel-ai/openai-responses";
    let first = Recording::open(&format!("{folder}/programmatic-tool-calling.1.chunks.txt"));
    let message = decoded(&first);
    assert_eq!(kinds(&message), ["thinking", "program", "toolCall"]);
    let program = &provider_blocks(&message)[0].block;
    assert!(
        program["code"]
            .as_str()
            .unwrap()
            .contains("tools.getInventory")
    );
    assert_verbatim(&first, program);
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.call.name, "getInventory");
    let caller = json!({"type": "program", "caller_id": "call_voPdoCqf8APY4DMpam3bdmxq"});
    assert_eq!(call.provider_fields["caller"], caller);
    assert_session_round_trip(&message);

    let second = Recording::open(&format!("{folder}/programmatic-tool-calling.2.chunks.txt"));
    let events = second.decode(usize::MAX);
    check_event_grammar(&second.name, &events);
    let demand = final_message(&events).tool_calls().next().unwrap().clone();
    assert_eq!(demand.call.name, "getDemand");
    assert_eq!(demand.provider_fields["caller"], caller);

    let third = Recording::open(&format!("{folder}/programmatic-tool-calling.3.chunks.txt"));
    let last = decoded(&third);
    assert_eq!(kinds(&last), ["program_output", "text"]);
    assert_verbatim(&third, &provider_blocks(&last)[0].block);

    // Replayed: the program item as it came, then the call with its caller.
    let messages = vec![
        Arc::new(Message::user("Check sku_123")),
        Arc::new(Message::Assistant(message.clone().with_model("recorded"))),
        result(&call.call.id, "getInventory", "{\"availableUnits\":42}"),
    ];
    let body = OpenAiResponses::new("recorded").request_body(
        Context {
            system_prompt: "",
            messages: &messages,
            tools: &[],
        },
        &StreamOptions::default(),
    );
    let input = body["input"].as_array().unwrap();
    let program_item = input.iter().find(|i| i["type"] == "program").unwrap();
    assert_verbatim(&first, program_item);
    let call_item = input.iter().find(|i| i["type"] == "function_call").unwrap();
    assert_eq!(call_item["caller"], caller);
}

// Request bodies against the APIs' published rules.

fn tools_of(body: &Value) -> &Vec<Value> {
    body["tools"].as_array().expect("tools")
}

#[test]
fn anthropic_native_search_follows_the_rules_for_deferred_tools() {
    let tools = vec![
        plain_tool("echo"),
        weather_tool(true),
        plain_tool("zeta"),
        Arc::new(
            FnTool::builder("stock", "Stock levels.", json!({"type": "object"}))
                .deferred()
                .build(|_, _| async { "42" })
                .unwrap(),
        ) as Arc<dyn AgentTool>,
    ];
    let tool_specs = specs(&tools);
    let messages = vec![Arc::new(Message::user("hi"))];
    let context = Context {
        system_prompt: "Be brief.",
        messages: &messages,
        tools: &tool_specs,
    };
    let model = AnthropicMessages::new("claude-sonnet-4-5");
    for (mode, search) in [
        (ToolSearchMode::Native, "tool_search_tool_bm25_20251119"),
        (
            ToolSearchMode::NativeRegex,
            "tool_search_tool_regex_20251119",
        ),
    ] {
        let body = model.request_body(context, &native_options(&tools, mode));
        let sent = tools_of(&body);
        let names: Vec<&str> = sent.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "echo",
                "zeta",
                search.trim_end_matches("_20251119"),
                "get_weather",
                "stock"
            ]
        );
        assert_eq!(sent[2]["type"], json!(search));
        for tool in sent {
            let deferred = tool.get("defer_loading") == Some(&json!(true));
            assert_eq!(
                deferred,
                ["get_weather", "stock"].contains(&tool["name"].as_str().unwrap())
            );
            // Rule: a deferred tool must not carry `cache_control`.
            assert!(!(deferred && tool.get("cache_control").is_some()), "{tool}");
        }
        // The cache breakpoint is on the last tool that is not deferred.
        assert_eq!(sent[1]["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(
            sent.iter()
                .filter(|t| t.get("cache_control").is_some())
                .count(),
            1
        );
        // Rule: at least one tool is not deferred (here the search tool among them).
        assert!(sent.iter().any(|t| t.get("defer_loading").is_none()));
    }

    // Every tool deferred: the search tool is the one sent whole, and no tool is cached.
    let all_deferred = vec![weather_tool(true)];
    let only = specs(&all_deferred);
    let body = model.request_body(
        Context {
            tools: &only,
            ..context
        },
        &native_options(&all_deferred, ToolSearchMode::Native),
    );
    let sent = tools_of(&body);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["type"], json!("tool_search_tool_bm25_20251119"));
    assert!(sent[0].get("defer_loading").is_none());
    assert!(sent.iter().all(|t| t.get("cache_control").is_none()));

    // The local search (the default): no `defer_loading`, no search tool of the API's.
    let body = model.request_body(context, &native_options(&tools, ToolSearchMode::Local));
    assert!(
        tools_of(&body)
            .iter()
            .all(|t| t.get("defer_loading").is_none() && t.get("type").is_none())
    );
}

#[test]
fn openai_sends_defer_loading_only_with_a_tool_search_tool() {
    let tools = vec![plain_tool("echo"), weather_tool(true)];
    let tool_specs = specs(&tools);
    let messages = vec![Arc::new(Message::user("hi"))];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &tool_specs,
    };
    let model = OpenAiResponses::new("gpt-5.4");
    let rule = |body: &Value| {
        let sent = tools_of(body);
        let defers = sent.iter().any(|t| t.get("defer_loading").is_some());
        let searches = sent.iter().any(|t| t["type"] == "tool_search");
        // Rule: `defer_loading` only together with a `tool_search` tool.
        assert!(!defers || searches, "{body}");
        (defers, searches)
    };
    let native = model.request_body(context, &native_options(&tools, ToolSearchMode::Native));
    assert_eq!(rule(&native), (true, true));
    let sent = tools_of(&native);
    assert_eq!(sent[0]["name"], json!("echo"));
    assert_eq!(sent[1], json!({"type": "tool_search"}));
    assert_eq!(sent[2]["name"], json!("get_weather"));
    assert_eq!(sent[2]["defer_loading"], json!(true));
    assert_eq!(sent[2]["strict"], json!(true));

    let local = model.request_body(context, &native_options(&tools, ToolSearchMode::Local));
    assert_eq!(rule(&local), (false, false));
    // Native asked for, nothing deferred: no search tool either.
    let eager = vec![plain_tool("echo")];
    let eager_specs = specs(&eager);
    let body = model.request_body(
        Context {
            tools: &eager_specs,
            ..context
        },
        &native_options(&eager, ToolSearchMode::Native),
    );
    assert_eq!(rule(&body), (false, false));
}

// The loop with the native search.

fn registry() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.register_arc(plain_tool("echo"));
    registry.register_arc(weather_tool(true));
    registry
}

fn native_config() -> AgentLoopConfig {
    let mut options = StreamOptions::default();
    options.tool_search = ToolSearchMode::Native;
    AgentLoopConfig::default().stream_options(options)
}

/// The turn an Anthropic model with its own search answers with: the search's blocks, then the
/// call of the tool it loaded.
fn searched_and_called(id: &str) -> AssistantMessage {
    let block = |block: Value| {
        AssistantContent::Provider(ProviderBlock::new(AnthropicMessages::API, block))
    };
    let mut message = AssistantMessage::new(
        vec![
            block(
                json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": {"query": "weather"}}),
            ),
            block(
                json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {"type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}]}}),
            ),
            AssistantContent::tool_call(id, "get_weather", json!({"location": "Paris"})),
        ],
        StopReason::ToolUse,
    );
    message.api = AnthropicMessages::API.into();
    message
}

#[tokio::test]
async fn an_agent_with_the_native_search_sends_every_tool_and_resumes_from_its_file() {
    let scripted = || {
        ScriptedModel::recording([
            searched_and_called("toolu_1"),
            AssistantMessage::new(vec![AssistantContent::text("Sunny.")], StopReason::Stop),
        ])
        .with_identity(AnthropicMessages::API, "anthropic", "claude-sonnet-4-5")
    };
    let model = Arc::new(scripted());
    let agent = Agent::new(model.clone())
        .with_tools(registry())
        .with_config(native_config());
    agent.prompt("Weather in Paris?").await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        // Every schema, the deferred one marked; no local `tool_search`.
        assert_eq!(request.tool_names(), ["echo", "get_weather"]);
        assert_eq!(request.deferred, ["get_weather"]);
    }
    let ran = agent
        .messages()
        .iter()
        .filter_map(|m| m.as_tool_result().map(|r| (r.tool_name.clone(), r.text())))
        .collect::<Vec<_>>();
    assert_eq!(ran, [("get_weather".to_owned(), "sunny".to_owned())]);

    // Saved and resumed: the search's blocks are in the transcript and replayed as sent.
    let saved = serde_json::to_string(
        &agent
            .messages()
            .iter()
            .map(|m| (**m).clone())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let restored: Vec<Message> = serde_json::from_str(&saved).unwrap();
    let restored: Vec<Arc<Message>> = restored.into_iter().map(Arc::new).collect();
    assert_eq!(restored, agent.messages());
    let tools: Vec<Arc<dyn AgentTool>> = registry().tools().cloned().collect();
    let tool_specs = specs(&tools);
    let mut options = native_options(&tools, ToolSearchMode::Native);
    options.max_tokens = Some(1024);
    let body = AnthropicMessages::new("claude-sonnet-4-5").request_body(
        Context {
            system_prompt: "",
            messages: &restored,
            tools: &tool_specs,
        },
        &options,
    );
    let assistant = &body["messages"][1]["content"];
    assert_eq!(assistant[0]["type"], json!("server_tool_use"));
    assert_eq!(
        assistant[1]["content"]["tool_references"][0]["tool_name"],
        json!("get_weather")
    );
    assert_eq!(assistant[2]["type"], json!("tool_use"));

    // A model without a search of its own keeps the local one, with the same setting.
    let local = Arc::new(ScriptedModel::recording([AssistantMessage::new(
        vec![AssistantContent::text("ok")],
        StopReason::Stop,
    )]));
    let agent = Agent::new(local.clone())
        .with_tools(registry())
        .with_config(native_config());
    agent.prompt("hi").await.unwrap();
    let request = &local.requests()[0];
    assert_eq!(request.tool_names(), ["echo", TOOL_SEARCH_NAME]);
    assert!(request.deferred.is_empty());
    // (Chat Completions has no search of its own either.)
    use pi_runtime::Model;
    assert!(!OpenAiCompletions::new("gpt-5").native_tool_search());
}

#[tokio::test]
async fn the_native_search_never_sends_a_tool_only_code_may_call() {
    let code_only: Arc<dyn AgentTool> = Arc::new(
        FnTool::builder("inventory", "Stock levels.", json!({"type": "object"}))
            .deferred()
            .callers(pi_tool::ToolCallers::Code)
            .build(|_, _| async { "42" })
            .unwrap(),
    );
    let mut tools = registry();
    tools.register_arc(code_only);
    let model = Arc::new(
        ScriptedModel::recording([AssistantMessage::new(
            vec![AssistantContent::text("ok")],
            StopReason::Stop,
        )])
        .with_identity(OpenAiResponses::API, "openai", "gpt-5.4"),
    );
    let agent = Agent::new(model.clone())
        .with_tools(tools)
        .with_config(native_config());
    agent.prompt("hi").await.unwrap();
    let request = &model.requests()[0];
    assert_eq!(request.tool_names(), ["echo", "get_weather"]);
    assert_eq!(request.deferred, ["get_weather"]);
}
