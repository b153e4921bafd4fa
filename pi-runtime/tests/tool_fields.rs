//! Per-tool API fields (issue 20 item 4), each sent only to the APIs that take it: Anthropic's
//! `input_examples`, `eager_input_streaming`, `strict` and the cache breakpoint on the last tool;
//! OpenAI's `allowed_tools` tool choice.

use std::sync::Arc;

use pi_runtime::providers::{
    AnthropicMessages, GoogleGenerativeAi, OpenAiCompletions, OpenAiResponses,
};
use pi_runtime::{Context, Message, RequestTools, StreamOptions, ToolChoice};
use pi_tool::{AgentTool, BoxFuture, FnTool, ToolContext, ToolError, ToolResult, ToolSpec};
use serde_json::{Value, json};

fn weather() -> Arc<dyn AgentTool> {
    Arc::new(
        FnTool::builder(
            "get_weather",
            "Weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}),
        )
        .example(json!({"city": "Paris"}))
        .example(json!({"city": "Oslo", "days": 3}))
        .eager_input_streaming()
        .build(|_, _| async { "sunny" })
        .unwrap(),
    )
}

fn tagger() -> Arc<dyn AgentTool> {
    // An open map: not strict-mode material.
    Arc::new(
        FnTool::builder(
            "tag",
            "Tags things.",
            json!({"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}}),
        )
        .build(|_, _| async { "ok" })
        .unwrap(),
    )
}

/// A hand-written tool whose example does not match its schema (what `FnTool` would refuse).
struct BadExample {
    spec: ToolSpec,
    examples: Vec<Value>,
}

impl AgentTool for BadExample {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn label(&self) -> &str {
        "bad"
    }
    fn input_examples(&self) -> &[Value] {
        &self.examples
    }
    fn execute(
        &self,
        _args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        Box::pin(async { Ok(ToolResult::text("ok")) })
    }
}

fn bad_example() -> Arc<dyn AgentTool> {
    Arc::new(BadExample {
        spec: ToolSpec {
            name: "bad".into(),
            description: "Has a wrong example.".into(),
            parameters: json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        },
        examples: vec![json!({"n": "not a number"}), json!({"n": 2})],
    })
}

struct Request {
    specs: Vec<ToolSpec>,
    messages: Vec<Arc<Message>>,
    options: StreamOptions,
}

impl Request {
    fn new(tools: &[Arc<dyn AgentTool>]) -> Self {
        let mut options = StreamOptions::default();
        options.tools = RequestTools::of(tools);
        Request {
            specs: tools.iter().map(|t| t.spec().clone()).collect(),
            messages: vec![Arc::new(Message::user("hi"))],
            options,
        }
    }

    fn context(&self) -> Context<'_> {
        Context {
            system_prompt: "",
            messages: &self.messages,
            tools: &self.specs,
        }
    }

    /// The tools of every API's body, by API.
    fn bodies(&self) -> Vec<(&'static str, Value)> {
        let context = self.context();
        vec![
            (
                "anthropic",
                AnthropicMessages::new("claude-sonnet-4-5").request_body(context, &self.options),
            ),
            (
                "responses",
                OpenAiResponses::new("gpt-5").request_body(context, &self.options),
            ),
            (
                "completions",
                OpenAiCompletions::new("gpt-5").request_body(context, &self.options),
            ),
            (
                "google",
                GoogleGenerativeAi::new("gemini-2.5-pro").request_body(context, &self.options),
            ),
        ]
    }
}

#[test]
fn examples_and_eager_streaming_go_to_anthropic_only() {
    let request = Request::new(&[weather(), tagger(), bad_example()]);
    for (api, body) in request.bodies() {
        let text = body["tools"].to_string();
        let anthropic = api == "anthropic";
        assert_eq!(text.contains("input_examples"), anthropic, "{api}: {text}");
        assert_eq!(text.contains("eager_input_streaming"), anthropic, "{api}");
    }
    let body = AnthropicMessages::new("claude-sonnet-4-5")
        .request_body(request.context(), &request.options);
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(
        tools[0]["input_examples"],
        json!([{"city": "Paris"}, {"city": "Oslo", "days": 3}])
    );
    assert_eq!(tools[0]["eager_input_streaming"], json!(true));
    assert!(tools[1].get("input_examples").is_none());
    assert!(tools[1].get("eager_input_streaming").is_none());
    // The example that fails the tool's own validation is not sent; the valid one is.
    assert_eq!(tools[2]["input_examples"], json!([{"n": 2}]));
}

#[test]
fn an_example_that_fails_the_schema_is_an_error_when_the_tool_is_built() {
    let err = FnTool::builder(
        "get_weather",
        "Weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
    .example(json!({"city": "Paris"}))
    .example(json!({"city": 7}))
    .build(|_, _| async { "sunny" })
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("get_weather") && text.contains("example 2"),
        "{text}"
    );
}

#[test]
fn anthropic_strict_only_where_the_schema_qualifies_and_only_when_asked() {
    let request = Request::new(&[weather(), tagger()]);
    let context = request.context();
    let loose = AnthropicMessages::new("claude-sonnet-4-5").request_body(context, &request.options);
    assert!(
        loose["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("strict").is_none())
    );
    let strict = AnthropicMessages::new("claude-sonnet-4-5")
        .strict(true)
        .request_body(context, &request.options);
    let tools = strict["tools"].as_array().unwrap();
    assert_eq!(tools[0]["strict"], json!(true));
    // The strict form of the schema: closed, every property listed, the optional one nullable.
    assert_eq!(
        tools[0]["input_schema"]["additionalProperties"],
        json!(false)
    );
    assert_eq!(
        tools[0]["input_schema"]["required"],
        json!(["city", "days"])
    );
    assert!(
        tools[1].get("strict").is_none(),
        "an open map does not qualify"
    );
}

#[test]
fn the_cache_breakpoint_is_on_the_last_tool_for_anthropic_only() {
    let request = Request::new(&[weather(), tagger()]);
    let context = request.context();
    for (api, body) in request.bodies() {
        let marked = body["tools"].to_string().contains("cache_control");
        assert_eq!(marked, api == "anthropic", "{api}");
    }
    let body = AnthropicMessages::new("claude-sonnet-4-5").request_body(context, &request.options);
    let tools = body["tools"].as_array().unwrap();
    assert!(tools[0].get("cache_control").is_none());
    assert_eq!(tools[1]["cache_control"], json!({"type": "ephemeral"}));
    let uncached = AnthropicMessages::new("claude-sonnet-4-5")
        .prompt_caching(false)
        .request_body(context, &request.options);
    assert!(!uncached["tools"].to_string().contains("cache_control"));
}

#[test]
fn allowed_tools_narrow_the_choice_where_the_api_can_and_keep_the_tool_list() {
    let mut request = Request::new(&[weather(), tagger()]);
    let every_tool = |body: &Value, api: &str| -> usize {
        let tools = &body["tools"];
        match api {
            "google" => tools[0]["functionDeclarations"].as_array().unwrap().len(),
            _ => tools.as_array().unwrap().len(),
        }
    };
    for required in [false, true] {
        request.options.tool_choice = Some(ToolChoice::AllowedTools {
            names: vec!["get_weather".into()],
            required,
        });
        for (api, body) in request.bodies() {
            assert_eq!(every_tool(&body, api), 2, "{api}: the tools stay");
            let choice = match api {
                "google" => body["toolConfig"]["functionCallingConfig"].clone(),
                _ => body["tool_choice"].clone(),
            };
            let expected = match (api, required) {
                ("responses", _) => json!({"type": "allowed_tools",
                    "mode": if required { "required" } else { "auto" },
                    "tools": [{"type": "function", "name": "get_weather"}]}),
                ("anthropic", false) => json!({"type": "auto"}),
                ("anthropic", true) => json!({"type": "any"}),
                ("completions", false) => json!("auto"),
                ("completions", true) => json!("required"),
                ("google", false) => json!({"mode": "AUTO"}),
                ("google", true) => json!({"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
                _ => unreachable!(),
            };
            assert_eq!(choice, expected, "{api} required={required}");
        }
    }
}
