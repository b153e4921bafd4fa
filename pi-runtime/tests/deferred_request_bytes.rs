//! Request body bytes with 1,000 tools (ten generated MCP-like servers of 100): every schema
//! sent, against deferred tools with `tool_search`, before and after a search loaded five. The
//! bodies are the providers' own (`request_body`), the tool lists those the loop really sent.
//! Goal (issue 20): the deferred request is at most 5% of the full one.
//!
//! Figures: `cargo test -p pi-runtime --test deferred_request_bytes -- --nocapture`.

#[path = "../../pi-tool/tests/support/catalog.rs"]
mod catalog;

use std::sync::Arc;

use pi_runtime::providers::{
    AnthropicMessages, GoogleGenerativeAi, OpenAiCompletions, OpenAiResponses,
};
use pi_runtime::{
    Agent, AssistantContent, AssistantMessage, Context, Message, ScriptedModel, StopReason,
    StreamOptions,
};
use pi_tool::{FnTool, TOOL_SEARCH_NAME, ToolRegistry, ToolSpec};
use serde_json::{Value, json};

fn registry() -> ToolRegistry {
    catalog::catalog(10)
        .into_iter()
        .map(|t| {
            Arc::new(
                FnTool::builder(t.name, t.description, t.parameters)
                    .build(|_: Value, _| async { "ok" })
                    .unwrap(),
            ) as Arc<dyn pi_tool::AgentTool>
        })
        .collect()
}

fn bodies(tools: &[ToolSpec], messages: &[Arc<Message>]) -> Vec<(&'static str, usize)> {
    let context = Context {
        system_prompt: "You are a helpful assistant.",
        messages,
        tools,
    };
    let options = StreamOptions::default();
    let size = |body: Value| serde_json::to_vec(&body).unwrap().len();
    vec![
        (
            "anthropic-messages",
            size(AnthropicMessages::new("claude-sonnet-4-5").request_body(context, &options)),
        ),
        (
            "openai-responses",
            size(OpenAiResponses::new("gpt-5").request_body(context, &options)),
        ),
        (
            "openai-completions",
            size(OpenAiCompletions::new("gpt-5").request_body(context, &options)),
        ),
        (
            "google-generative-ai",
            size(GoogleGenerativeAi::new("gemini-2.5-pro").request_body(context, &options)),
        ),
    ]
}

#[tokio::test]
async fn deferred_requests_are_at_most_five_percent_of_full_ones() {
    let model = Arc::new(ScriptedModel::recording([
        AssistantMessage::new(
            vec![AssistantContent::tool_call(
                "s1",
                TOOL_SEARCH_NAME,
                json!({"query": "refund a stripe charge", "limit": 5}),
            )],
            StopReason::ToolUse,
        ),
        AssistantMessage::new(vec![AssistantContent::text("done")], StopReason::Stop),
    ]));
    let agent = Agent::new(model.clone()).with_tools(registry().defer_all());
    agent.prompt("refund ch_1").await.unwrap();
    let requests = model.requests();
    assert_eq!(requests[0].tools.len(), 1);
    assert_eq!(requests[1].tools.len(), 6);

    let all: Vec<ToolSpec> = registry().specs().cloned().collect();
    let prompt = vec![Arc::new(Message::user("refund ch_1"))];
    let full = bodies(&all, &prompt);
    let first = bodies(&requests[0].tools, &prompt);
    let loaded = bodies(&requests[1].tools, &prompt);
    println!(
        "request body bytes, 1,000 tools: all sent | deferred, first turn | deferred, 5 loaded"
    );
    for ((api, full), ((_, first), (_, loaded))) in full.iter().zip(first.iter().zip(&loaded)) {
        let share = *loaded as f64 / *full as f64 * 100.0;
        println!("{api}: {full} | {first} | {loaded} ({share:.2}%)");
        assert!(loaded * 20 <= *full, "{api}: {loaded} of {full} bytes");
        assert!(first < loaded);
    }
}
