//! Tool search across modes and names (issue 33 items 4 and 5), checked on each API's request
//! body:
//!
//! - a user's own tool named `tool_search` never switches the built-in search off (it is then
//!   offered as `pi_tool_search`) and is never dropped, in the local mode or the API's own;
//! - a conversation that searched in one mode (the local search, Anthropic's BM25 or regex
//!   search, OpenAI's hosted search) and goes on in another defines every tool its replayed
//!   blocks refer to.
//!
//! Messages are built from their JSON form (what a session file holds).

use std::sync::Arc;

use pi_runtime::providers::{
    AnthropicMessages, GoogleGenerativeAi, OpenAiCompletions, OpenAiResponses,
};
use pi_runtime::{
    Agent, AgentLoopConfig, AssistantMessage, Context, Message, ModelRequest, RequestTools,
    ScriptedModel, StreamOptions, ToolSearchMode,
};
use pi_tool::{AgentTool, Content, FnTool, TOOL_SEARCH_NAME, ToolRegistry, ToolResult};
use serde_json::{Value, json};

const MODEL: &str = "claude-sonnet-4-5";

fn tool(name: &str, description: &str, deferred: bool) -> Arc<dyn AgentTool> {
    let builder = FnTool::builder(
        name,
        description,
        json!({"type": "object", "properties": {"query": {"type": "string"}}}),
    );
    let builder = if deferred {
        builder.deferred()
    } else {
        builder
    };
    Arc::new(builder.build(|_, _| async { "done" }).unwrap())
}

/// A real catalog's own `tool_search` ("search for hacking tools on GitHub"), deferred like the
/// rest of its tools. Its result has the shape of the built-in search's details, which must
/// not load anything.
fn users_tool_search(deferred: bool) -> Arc<dyn AgentTool> {
    let builder = FnTool::builder(
        TOOL_SEARCH_NAME,
        "Search GitHub for hacking tools by keyword.",
        json!({"type": "object", "properties": {"keyword": {"type": "string"}}}),
    );
    let builder = if deferred {
        builder.deferred()
    } else {
        builder
    };
    Arc::new(
        builder
            .build(|_, _| async {
                ToolResult::new(
                    vec![Content::text("3 repositories")],
                    json!({"tools": ["get_forecast"]}),
                )
            })
            .unwrap(),
    )
}

fn catalog(users_search: Option<Arc<dyn AgentTool>>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.register_arc(tool("echo", "Echo the text back.", false));
    registry.register_arc(tool("get_weather", "Current weather of a city.", true));
    registry.register_arc(tool("get_forecast", "Weather forecast of a city.", true));
    if let Some(search) = users_search {
        registry.register_arc(search);
    }
    registry
}

fn config(mode: ToolSearchMode) -> AgentLoopConfig {
    let mut options = StreamOptions::default();
    options.tool_search = mode;
    AgentLoopConfig::default().stream_options(options)
}

fn message(value: Value) -> Arc<Message> {
    Arc::new(serde_json::from_value(value).unwrap())
}

fn assistant(api: &str, content: Value) -> Arc<Message> {
    let mut value = serde_json::to_value(Message::Assistant(AssistantMessage::new(
        Vec::new(),
        pi_runtime::StopReason::ToolUse,
    )))
    .unwrap();
    value["content"] = content;
    value["api"] = json!(api);
    value["provider"] = json!(if api == AnthropicMessages::API {
        "anthropic"
    } else {
        "openai"
    });
    value["model"] = json!(MODEL);
    message(value)
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments})
}

fn provider(api: &str, block: Value) -> Value {
    json!({"type": "provider", "api": api, "block": block})
}

fn result(id: &str, name: &str, details: Value) -> Arc<Message> {
    message(
        json!({"role": "toolResult", "toolCallId": id, "toolName": name,
        "content": [{"type": "text", "text": "ok"}], "details": details, "isError": false, "timestamp": 0}),
    )
}

/// What a model is sent with each scripted answer: the model's identity decides whether the
/// API's own search is used.
fn scripted(api: &'static str, provider: &'static str) -> Arc<ScriptedModel> {
    Arc::new(
        ScriptedModel::recording([AssistantMessage::new(
            vec![pi_runtime::AssistantContent::text("ok")],
            pi_runtime::StopReason::Stop,
        )])
        .with_identity(api, provider, MODEL),
    )
}

/// The request an agent over `tools` in `mode` sends after `transcript` and one more prompt.
async fn next_request(
    model: Arc<ScriptedModel>,
    tools: ToolRegistry,
    mode: ToolSearchMode,
    transcript: Vec<Arc<Message>>,
) -> ModelRequest {
    let agent = Agent::new(model.clone())
        .with_tools(tools)
        .with_config(config(mode));
    agent.replace_messages(transcript);
    agent.prompt("And tomorrow?").await.unwrap();
    model.requests().pop().unwrap()
}

/// The request body each API would be sent for `request` (with `mode` and the catalog's tool
/// information, as the loop passes them).
fn bodies(
    request: &ModelRequest,
    tools: &ToolRegistry,
    mode: ToolSearchMode,
) -> Vec<(&'static str, Value)> {
    let all: Vec<Arc<dyn AgentTool>> = tools.tools().cloned().collect();
    let mut options = StreamOptions::default();
    options.tool_search = mode;
    options.tools = RequestTools::of(&all);
    let context = Context {
        system_prompt: "",
        messages: &request.messages,
        tools: &request.tools,
    };
    vec![
        (
            "anthropic",
            AnthropicMessages::new(MODEL).request_body(context, &options),
        ),
        (
            "openai-responses",
            OpenAiResponses::new(MODEL).request_body(context, &options),
        ),
        (
            "openai-completions",
            OpenAiCompletions::new(MODEL).request_body(context, &options),
        ),
        (
            "google",
            GoogleGenerativeAi::new(MODEL).request_body(context, &options),
        ),
    ]
}

/// The names a body defines (functions and the APIs' own tools), whatever the API's shape.
fn defined(body: &Value) -> Vec<String> {
    let mut names = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        if let Some(name) = tool["name"]
            .as_str()
            .or(tool.pointer("/function/name").and_then(Value::as_str))
        {
            names.push(name.to_owned());
        }
        if tool["type"] == "tool_search" {
            names.push("(hosted tool_search)".to_owned());
        }
        for declaration in tool["functionDeclarations"]
            .as_array()
            .into_iter()
            .flatten()
        {
            names.push(declaration["name"].as_str().unwrap().to_owned());
        }
    }
    names
}

// Item 4: a user's tool named `tool_search`.

#[tokio::test]
async fn a_users_tool_search_leaves_the_built_in_search_reachable_in_the_local_mode() {
    let tools = catalog(Some(users_tool_search(true)));
    let model = Arc::new(ScriptedModel::recording([
        // The built-in search under its other name finds the user's tool...
        AssistantMessage::new(
            vec![pi_runtime::AssistantContent::tool_call(
                "c1",
                "pi_tool_search",
                json!({"query": "search github for hacking tools"}),
            )],
            pi_runtime::StopReason::ToolUse,
        ),
        // ... which the model then calls by its own name; its result loads nothing.
        AssistantMessage::new(
            vec![pi_runtime::AssistantContent::tool_call(
                "c2",
                TOOL_SEARCH_NAME,
                json!({"keyword": "nmap"}),
            )],
            pi_runtime::StopReason::ToolUse,
        ),
        AssistantMessage::new(
            vec![pi_runtime::AssistantContent::text("Found 3.")],
            pi_runtime::StopReason::Stop,
        ),
    ]));
    let agent = Agent::new(model.clone())
        .with_tools(catalog(Some(users_tool_search(true))))
        .with_config(config(ToolSearchMode::Local));
    agent.prompt("Find hacking tools on GitHub").await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].tool_names(), ["echo", "pi_tool_search"]);
    let found = agent.messages()[2]
        .as_tool_result()
        .unwrap()
        .details
        .clone();
    assert_eq!(found["tools"][0], json!(TOOL_SEARCH_NAME), "{found}");
    assert!(requests[1].tool_names().contains(&TOOL_SEARCH_NAME));
    // The user's tool ran (it is not the built-in search) and what it answered loaded nothing.
    let ran = agent.messages()[4].as_tool_result().unwrap().text();
    assert_eq!(ran, "3 repositories");
    assert!(!requests[2].tool_names().contains(&"get_forecast"));
    for (api, body) in bodies(&requests[1], &tools, ToolSearchMode::Local) {
        let names = defined(&body);
        assert!(
            names.contains(&"pi_tool_search".to_owned()),
            "{api}: {names:?}"
        );
        assert!(
            names.contains(&TOOL_SEARCH_NAME.to_owned()),
            "{api}: {names:?}"
        );
    }
}

#[tokio::test]
async fn a_users_tool_search_is_sent_in_the_native_modes_and_the_apis_search_too() {
    for (api, provider) in [
        (AnthropicMessages::API, "anthropic"),
        (OpenAiResponses::API, "openai"),
    ] {
        for mode in [ToolSearchMode::Native, ToolSearchMode::NativeRegex] {
            let tools = catalog(Some(users_tool_search(true)));
            let request = next_request(
                scripted(api, provider),
                catalog(Some(users_tool_search(true))),
                mode,
                Vec::new(),
            )
            .await;
            assert_eq!(
                request.tool_names(),
                ["echo", "get_forecast", "get_weather", TOOL_SEARCH_NAME],
                "{api} {mode:?}"
            );
            let (_, body) = bodies(&request, &tools, mode)
                .into_iter()
                .find(|(name, _)| {
                    *name
                        == if api == AnthropicMessages::API {
                            "anthropic"
                        } else {
                            "openai-responses"
                        }
                })
                .unwrap();
            let sent = body["tools"].as_array().unwrap();
            let users = sent.iter().find(|t| t["name"] == TOOL_SEARCH_NAME).unwrap();
            assert_eq!(users["defer_loading"], json!(true), "{api} {mode:?}");
            let apis_search = sent.iter().any(|t| {
                t["type"] == "tool_search"
                    || t["type"]
                        .as_str()
                        .is_some_and(|k| k.starts_with("tool_search_tool_"))
            });
            assert!(apis_search, "{api} {mode:?}: {body}");
            assert!(!defined(&body).contains(&"pi_tool_search".to_owned()));
        }
    }
}

// Item 5: every tool a replayed search block refers to is defined, in every change of mode.

/// The transcript of a turn that searched in `mode` (on `api` for the native modes), loaded
/// `get_weather` and `get_forecast`, and called `get_weather`.
fn searched(mode: ToolSearchMode, api: &str) -> Vec<Arc<Message>> {
    let user = message(
        json!({"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}], "timestamp": 0}),
    );
    let weather = call("w1", "get_weather", json!({"query": "Paris"}));
    match (mode, api) {
        (ToolSearchMode::Local, _) => vec![
            user,
            assistant(
                api,
                json!([call("s1", TOOL_SEARCH_NAME, json!({"query": "weather"}))]),
            ),
            result(
                "s1",
                TOOL_SEARCH_NAME,
                json!({"query": "weather", "tools": ["get_forecast", "get_weather"]}),
            ),
            assistant(api, json!([weather])),
            result("w1", "get_weather", Value::Null),
        ],
        (_, AnthropicMessages::API) => {
            let name = if mode == ToolSearchMode::NativeRegex {
                "tool_search_tool_regex"
            } else {
                "tool_search_tool_bm25"
            };
            vec![
                user,
                assistant(
                    api,
                    json!([
                        provider(
                            api,
                            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": name, "input": {"query": "weather"}})
                        ),
                        provider(
                            api,
                            json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {
                        "type": "tool_search_tool_search_result", "tool_references": [
                            {"type": "tool_reference", "tool_name": "get_weather"},
                            {"type": "tool_reference", "tool_name": "get_forecast"}]}})
                        ),
                        weather,
                    ]),
                ),
                result("w1", "get_weather", Value::Null),
            ]
        }
        _ => vec![
            user,
            assistant(
                api,
                json!([
                    provider(
                        api,
                        json!({"type": "tool_search_call", "id": "tsc_1", "execution": "server", "status": "completed", "call_id": null, "arguments": {"paths": ["get_weather"]}})
                    ),
                    provider(
                        api,
                        json!({"type": "tool_search_output", "id": "tso_1", "execution": "server", "status": "completed", "call_id": null, "tools": [
                    {"type": "function", "name": "get_weather", "defer_loading": true, "parameters": {"type": "object"}},
                    {"type": "function", "name": "get_forecast", "defer_loading": true, "parameters": {"type": "object"}}]})
                    ),
                    weather,
                ]),
            ),
            result("w1", "get_weather", Value::Null),
        ],
    }
}

const MODES: [ToolSearchMode; 3] = [
    ToolSearchMode::Local,
    ToolSearchMode::Native,
    ToolSearchMode::NativeRegex,
];

#[tokio::test]
async fn anthropic_replayed_search_blocks_refer_only_to_defined_tools_in_every_change_of_mode() {
    for from in MODES {
        for to in MODES {
            if from == to {
                continue;
            }
            let api = AnthropicMessages::API;
            let tools = catalog(None);
            let request = next_request(
                scripted(api, "anthropic"),
                catalog(None),
                to,
                searched(from, api),
            )
            .await;
            // Both loaded tools are in the request (the uncalled one too).
            for name in ["get_weather", "get_forecast"] {
                assert!(
                    request.tool_names().contains(&name),
                    "{from:?} -> {to:?}: {:?}",
                    request.tool_names()
                );
            }
            let body = AnthropicMessages::new(MODEL).request_body(
                Context {
                    system_prompt: "",
                    messages: &request.messages,
                    tools: &request.tools,
                },
                &{
                    let mut options = StreamOptions::default();
                    options.tool_search = to;
                    options.tools = RequestTools::of(&tools.tools().cloned().collect::<Vec<_>>());
                    options
                },
            );
            let names = defined(&body);
            let mut references = 0;
            for message in body["messages"].as_array().unwrap() {
                for block in message["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("server_tool_use") => {
                            let name = block["name"].as_str().unwrap().to_owned();
                            assert!(
                                names.contains(&name),
                                "{from:?} -> {to:?}: {name} not in {names:?}"
                            );
                        }
                        Some("tool_search_tool_result") => {
                            for reference in block["content"]["tool_references"].as_array().unwrap()
                            {
                                let name = reference["tool_name"].as_str().unwrap().to_owned();
                                assert!(
                                    names.contains(&name),
                                    "{from:?} -> {to:?}: {name} not in {names:?}"
                                );
                                references += 1;
                            }
                        }
                        Some("tool_use") => {
                            let name = block["name"].as_str().unwrap().to_owned();
                            assert!(
                                names.contains(&name) || name == TOOL_SEARCH_NAME,
                                "{from:?} -> {to:?}: {name}"
                            );
                        }
                        _ => {}
                    }
                }
            }
            // Nothing was dropped from the replayed blocks: both references kept.
            let expected = if from == ToolSearchMode::Local { 0 } else { 2 };
            assert_eq!(references, expected, "{from:?} -> {to:?}");
        }
    }
}

#[tokio::test]
async fn openai_replayed_search_items_refer_only_to_defined_tools_after_a_change_of_mode() {
    let api = OpenAiResponses::API;
    // OpenAI has one search (Native and NativeRegex alike): the changes are to and from Local.
    for (from, to) in [
        (ToolSearchMode::Native, ToolSearchMode::Local),
        (ToolSearchMode::Local, ToolSearchMode::Native),
    ] {
        let tools = catalog(None);
        let request = next_request(
            scripted(api, "openai"),
            catalog(None),
            to,
            searched(from, api),
        )
        .await;
        for name in ["get_weather", "get_forecast"] {
            assert!(request.tool_names().contains(&name), "{from:?} -> {to:?}");
        }
        let (_, body) = bodies(&request, &tools, to)
            .into_iter()
            .find(|(name, _)| *name == "openai-responses")
            .unwrap();
        let names = defined(&body);
        for item in body["input"].as_array().unwrap() {
            match item["type"].as_str() {
                Some("tool_search_call") => {
                    assert!(
                        names.contains(&"(hosted tool_search)".to_owned()),
                        "{from:?} -> {to:?}: {names:?}"
                    );
                }
                Some("tool_search_output") => {
                    for tool in item["tools"].as_array().unwrap() {
                        let name = tool["name"].as_str().unwrap().to_owned();
                        assert!(
                            names.contains(&name),
                            "{from:?} -> {to:?}: {name} not in {names:?}"
                        );
                    }
                }
                Some("function_call") => {
                    let name = item["name"].as_str().unwrap().to_owned();
                    assert!(
                        names.contains(&name) || name == TOOL_SEARCH_NAME,
                        "{from:?} -> {to:?}: {name}"
                    );
                }
                _ => {}
            }
        }
    }
}
