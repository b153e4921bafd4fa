//! An agent whose model makes one `code` call that fans out to ten tools.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pi_codemode::CodeTool;
use pi_runtime::{
    Agent, AgentLoopConfig, AssistantContent, AssistantMessage, BeforeToolCall, ScriptedModel,
    StopReason,
};
use pi_tool::{FnTool, ToolCall, ToolRegistry};
use serde_json::{Value, json};
use tokio::sync::Barrier;

/// Ten `city_<i>` tools, each answering its temperature; each counts its calls.
fn cities(calls: &Arc<AtomicUsize>) -> ToolRegistry {
    (0..10)
        .map(|i| {
            let calls = Arc::clone(calls);
            Arc::new(
                FnTool::builder(
                    format!("city_{i}"),
                    format!("The temperature in city {i}."),
                    json!({"type": "object", "properties": {"unit": {"enum": ["c", "f"]}}}),
                )
                .output_schema(json!({"type": "object", "properties": {"temp": {"type": "number"}}, "required": ["temp"]}))
                .build(move |_: Value, _| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    async move { pi_tool::ToolResult::new(vec![], json!({"temp": 10 + i})) }
                })
                .unwrap(),
            ) as Arc<dyn pi_tool::AgentTool>
        })
        .collect()
}

/// A model that makes one `code` call with `script`, then answers `answer`.
fn code_then(script: &str, answer: &str) -> Vec<AssistantMessage> {
    vec![
        AssistantMessage::new(
            vec![AssistantContent::tool_call(
                "k1",
                "code",
                json!({ "script": script }),
            )],
            StopReason::ToolUse,
        ),
        AssistantMessage::new(vec![AssistantContent::text(answer)], StopReason::Stop),
    ]
}

#[tokio::test]
async fn one_code_call_fans_out_to_ten_tools() {
    let calls = Arc::new(AtomicUsize::new(0));
    let tools = cities(&calls);
    let code = CodeTool::new(&tools);
    assert!(!pi_tool::AgentTool::may_need_approval(&code));
    let tools = tools.clone().with(code);
    let script = "const names = Object.keys(tools);
const temps = await Promise.all(names.map(name => tools[name]({unit: 'c'})));
return { cities: names.length, max: Math.max(...temps.map(t => t.temp)) };";
    let model = Arc::new(ScriptedModel::recording(code_then(
        script,
        "The warmest is 19.",
    )));
    let agent = Agent::new(model.clone()).with_tools(tools);
    agent.prompt("Which city is warmest?").await.unwrap();

    assert_eq!(calls.load(Ordering::SeqCst), 10);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].tool_names().contains(&"code"));
    let code = requests[0].tools.iter().find(|t| t.name == "code").unwrap();
    assert!(
        code.description.contains(
            "city_9(args: {\n    unit?: \"c\" | \"f\";\n  }): Promise<{\n    temp: number;\n  }>;"
        ),
        "{}",
        code.description
    );
    let result = requests[1]
        .messages
        .last()
        .unwrap()
        .as_tool_result()
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.text(), "{\"cities\":10,\"max\":19}");
}

#[tokio::test]
async fn promise_all_runs_calls_in_parallel() {
    // Three calls that each wait for all three: they finish only if they run at once.
    let barrier = Arc::new(Barrier::new(3));
    let tools = ToolRegistry::new().with(
        FnTool::builder("meet", "Wait for the others.", json!({"type": "object"}))
            .build(move |_: Value, _| {
                let barrier = Arc::clone(&barrier);
                async move {
                    barrier.wait().await;
                    "met"
                }
            })
            .unwrap(),
    );
    let tools = tools.clone().with(CodeTool::new(&tools));
    let script = "return await Promise.all([tools.meet(), tools.meet(), tools.meet()]);";
    let result = tools
        .run(&ToolCall::new("c1", "code", json!({ "script": script })))
        .await;
    assert_eq!(
        result.text_content(),
        "[\"met\",\"met\",\"met\"]",
        "{result:?}"
    );
}

#[tokio::test]
async fn sequential_tools_keep_their_rule() {
    // A sequential tool's calls never overlap, even from `Promise.all`.
    let running = Arc::new(AtomicUsize::new(0));
    let overlapped = Arc::new(AtomicUsize::new(0));
    let (r, o) = (Arc::clone(&running), Arc::clone(&overlapped));
    let tools = ToolRegistry::new().with(
        FnTool::builder(
            "one_at_a_time",
            "Never runs twice at once.",
            json!({"type": "object"}),
        )
        .sequential()
        .build(move |_: Value, _| {
            let (running, overlapped) = (Arc::clone(&r), Arc::clone(&o));
            async move {
                if running.fetch_add(1, Ordering::SeqCst) > 0 {
                    overlapped.fetch_add(1, Ordering::SeqCst);
                }
                tokio::task::yield_now().await;
                running.fetch_sub(1, Ordering::SeqCst);
                "done"
            }
        })
        .unwrap(),
    );
    let tools = tools.clone().with(CodeTool::new(&tools));
    let script =
        "return (await Promise.all([1, 2, 3, 4].map(() => tools.one_at_a_time()))).length;";
    let result = tools
        .run(&ToolCall::new("c1", "code", json!({ "script": script })))
        .await;
    assert_eq!(result.text_content(), "4", "{result:?}");
    assert_eq!(overlapped.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_loops_hooks_see_the_scripts_calls_with_the_code_call_as_parent() {
    let calls = Arc::new(AtomicUsize::new(0));
    let tools = cities(&calls);
    let tools = tools.clone().with(CodeTool::new(&tools));
    let parents = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&parents);
    let config = AgentLoopConfig::new().before_tool_call(move |ctx| {
        let parent = ctx.parent_tool_call.as_ref().map(|call| call.id.clone());
        seen.lock()
            .unwrap()
            .push((ctx.tool_call.name.clone(), parent));
        let blocked = ctx.tool_call.name == "city_3";
        async move {
            Ok(if blocked {
                BeforeToolCall::block("city 3 is off limits")
            } else {
                BeforeToolCall::allow()
            })
        }
    });
    let script = "const results = await Promise.allSettled([tools.city_2({}), tools.city_3({})]);
return results.map(r => r.status === 'fulfilled' ? r.value.temp : r.reason.message);";
    let model = Arc::new(ScriptedModel::recording(code_then(script, "done")));
    let agent = Agent::new(model.clone())
        .with_tools(tools)
        .with_config(config);
    agent.prompt("go").await.unwrap();

    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the blocked call must not run"
    );
    let mut parents = parents.lock().unwrap().clone();
    parents.sort();
    assert_eq!(
        parents,
        [
            ("city_2".to_owned(), Some("k1".to_owned())),
            ("city_3".to_owned(), Some("k1".to_owned())),
            ("code".to_owned(), None),
        ]
    );
    let result = model.requests()[1]
        .messages
        .last()
        .unwrap()
        .as_tool_result()
        .unwrap()
        .text();
    assert_eq!(result, "[12,\"city_3: city 3 is off limits\"]");
}

/// The same fan-out with a model of each API's shape, and the next request as each API's
/// client writes it: the `code` tool's schema is sent, the script (quotes, newlines, non-ASCII)
/// goes back in the call's arguments unchanged, and the script's value is the call's result.
#[tokio::test]
async fn a_code_call_round_trips_through_every_apis_request() {
    use pi_runtime::providers::{
        AnthropicMessages, GoogleGenerativeAi, OpenAiCompletions, OpenAiResponses,
    };
    use pi_runtime::{Context, RequestTools, StreamOptions};

    let script =
        "const t = await tools.city_3({unit: 'c'});\n// \"Zürich\" — 3°\nreturn `max ${t.temp}`;";
    for api in [
        "openai-completions",
        "openai-responses",
        "anthropic-messages",
        "google-generative-ai",
    ] {
        let calls = Arc::new(AtomicUsize::new(0));
        let tools = cities(&calls);
        let tools = tools.clone().with(CodeTool::new(&tools));
        let model = Arc::new(
            ScriptedModel::recording(code_then(script, "13")).with_identity(api, "test", "m1"),
        );
        let agent = Agent::new(model.clone()).with_tools(tools.clone());
        agent.prompt("How warm is city 3?").await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{api}");

        let request = &model.requests()[1];
        let result = request.messages.last().unwrap().as_tool_result().unwrap();
        assert_eq!(
            (result.text().as_str(), result.is_error),
            ("\"max 13\"", false),
            "{api}"
        );

        let all: Vec<Arc<dyn pi_tool::AgentTool>> = tools.tools().cloned().collect();
        let mut options = StreamOptions::default();
        options.tools = RequestTools::of(&all);
        let context = Context {
            system_prompt: "",
            messages: &request.messages,
            tools: &request.tools,
        };
        // The script as each API's wire carries the call's arguments.
        let body = match api {
            "openai-completions" => OpenAiCompletions::new("m1").request_body(context, &options),
            "openai-responses" => OpenAiResponses::new("m1").request_body(context, &options),
            "anthropic-messages" => AnthropicMessages::new("m1").request_body(context, &options),
            _ => GoogleGenerativeAi::new("m1").request_body(context, &options),
        };
        let text = body.to_string();
        let sent_script = find_script(&body).unwrap_or_else(|| panic!("{api}: {text}"));
        assert_eq!(sent_script, script, "{api}");
        assert!(text.contains("max 13"), "{api}: the result is sent: {text}");
        assert!(
            tool_names(&body).contains(&"code"),
            "{api}: the code tool is offered: {text}"
        );
    }
}

/// The `script` argument of the `code` call in a request body, however the API spells the
/// arguments (a JSON string, or an object).
fn find_script(value: &Value) -> Option<String> {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(script)) = map.get("script") {
                return Some(script.clone());
            }
            for key in ["arguments", "input", "args"] {
                if let Some(Value::String(text)) = map.get(key)
                    && let Ok(parsed) = serde_json::from_str::<Value>(text)
                    && let Some(script) = find_script(&parsed)
                {
                    return Some(script);
                }
            }
            map.values().find_map(find_script)
        }
        Value::Array(items) => items.iter().find_map(find_script),
        _ => None,
    }
}

/// The names of the tools a request body offers, wherever the API puts them (`tools[].name`,
/// `tools[].function.name`, `tools[].functionDeclarations[].name`).
fn tool_names(body: &Value) -> Vec<&str> {
    let mut names = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        let declarations = tool["functionDeclarations"].as_array();
        let named = declarations.map_or_else(|| vec![tool], |list| list.iter().collect());
        for tool in named {
            if let Some(name) = tool["name"].as_str().or(tool["function"]["name"].as_str()) {
                names.push(name);
            }
        }
    }
    names
}
