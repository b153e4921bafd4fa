//! Deferred tools in the agent loop: schemas held back until loaded, `tool_search` offered,
//! loads kept as transcript state (a resumed session keeps them), a deferred tool called by
//! name without a search still runs, and the request's tool list only grows at its end.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::request_tool_names as names;
use pi_runtime::{
    Agent, AssistantContent, AssistantMessage, Message, ModelRequest, ScriptedModel, StopReason,
};
use pi_tool::{FnTool, TOOL_SEARCH_NAME, ToolRegistry};
use serde_json::{Value, json};

fn tool(name: &str, description: &str, field: &str, ran: &Arc<AtomicUsize>) -> FnTool {
    let ran = Arc::clone(ran);
    FnTool::builder(
        name,
        description,
        json!({"type": "object", "properties": {field: {"type": "string", "description": format!("The {field}")}}, "required": [field]}),
    )
    .build(move |args: Value, _ctx| {
        ran.fetch_add(1, Ordering::SeqCst);
        async move { format!("done: {args}") }
    })
    .unwrap()
}

/// One eager tool (`echo`) and three deferred ones (`defer_all` on a "server" registry).
fn registry(ran: &Arc<AtomicUsize>) -> ToolRegistry {
    let server = ToolRegistry::new()
        .with(tool(
            "github_create_issue",
            "Create a new issue in a GitHub repository.",
            "title",
            ran,
        ))
        .with(tool(
            "slack_post_message",
            "Post a message to a Slack channel.",
            "text",
            ran,
        ))
        .with(tool(
            "stripe_refund_charge",
            "Refund a Stripe card charge to the customer.",
            "charge",
            ran,
        ))
        .defer_all();
    let mut all = ToolRegistry::new().with(tool("echo", "Echo a value back.", "value", ran));
    all.extend(server.tools().cloned());
    all
}

fn calls(id: &str, name: &str, args: Value) -> AssistantMessage {
    AssistantMessage::new(
        vec![AssistantContent::tool_call(id, name, args)],
        StopReason::ToolUse,
    )
}

fn text(text: &str) -> AssistantMessage {
    AssistantMessage::new(vec![AssistantContent::text(text)], StopReason::Stop)
}

fn results(agent: &Agent) -> Vec<(String, bool, String)> {
    agent
        .messages()
        .iter()
        .filter_map(|m| match &**m {
            Message::ToolResult(r) => Some((r.tool_name.clone(), r.is_error, r.text())),
            _ => None,
        })
        .collect()
}

/// Each request's tool list starts with the previous one's (the provider's cache prefix).
fn assert_grows_at_the_end(requests: &[ModelRequest]) {
    for pair in requests.windows(2) {
        let (before, after) = (names(&pair[0]), names(&pair[1]));
        assert_eq!(after[..before.len()], before[..], "{before:?} -> {after:?}");
        for (a, b) in pair[0].tools.iter().zip(pair[1].tools.iter()) {
            assert_eq!(a, b, "a spec changed between requests");
        }
    }
}

#[tokio::test]
async fn search_load_call_then_resume_and_call_again_without_searching() {
    let ran = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(ScriptedModel::recording([
        calls(
            "s1",
            TOOL_SEARCH_NAME,
            json!({"query": "create github issue", "limit": 1}),
        ),
        calls(
            "c1",
            "github_create_issue",
            json!({"title": "crash on start"}),
        ),
        text("Filed."),
    ]));
    let agent = Agent::new(model.clone()).with_tools(registry(&ran));
    agent.prompt("file a bug").await.unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    // Turn 1: the eager tool and the search tool; no deferred schema.
    assert_eq!(names(&requests[0]), ["echo", TOOL_SEARCH_NAME]);
    // Turns 2 and 3: the found tool, loaded at the end.
    assert_eq!(
        names(&requests[1]),
        ["echo", TOOL_SEARCH_NAME, "github_create_issue"]
    );
    assert_eq!(names(&requests[2]), names(&requests[1]));
    assert_grows_at_the_end(&requests);
    let loaded_spec = &requests[1].tools[2];
    assert_eq!(loaded_spec.parameters["required"], json!(["title"]));

    let found = results(&agent);
    assert_eq!(found[0].0, TOOL_SEARCH_NAME);
    assert!(!found[0].1, "{}", found[0].2);
    assert!(
        found[0]
            .2
            .contains("github_create_issue: Create a new issue"),
        "{}",
        found[0].2
    );
    assert_eq!(
        found[1],
        (
            "github_create_issue".into(),
            false,
            r#"done: {"title":"crash on start"}"#.into()
        )
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);

    // The session, saved and read back as a session file would be.
    let saved = serde_json::to_string(
        &agent
            .messages()
            .iter()
            .map(|m| (**m).clone())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let restored: Vec<Message> = serde_json::from_str(&saved).unwrap();

    let model = Arc::new(ScriptedModel::recording([
        calls("c2", "github_create_issue", json!({"title": "second bug"})),
        text("Filed again."),
    ]));
    let resumed = Agent::new(model.clone()).with_tools(registry(&ran));
    resumed.replace_messages(restored.into_iter().map(Arc::new).collect());
    resumed.prompt("another one").await.unwrap();
    let resumed_requests = model.requests();
    // Loaded from the transcript: sent from the first request on, in the same order as before.
    assert_eq!(names(&resumed_requests[0]), names(&requests[2]));
    assert_eq!(resumed_requests[0].tools, requests[2].tools);
    assert_grows_at_the_end(&resumed_requests);
    let last = results(&resumed).pop().unwrap();
    assert_eq!(
        last,
        (
            "github_create_issue".into(),
            false,
            r#"done: {"title":"second bug"}"#.into()
        )
    );
    assert_eq!(ran.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_deferred_tool_called_by_name_runs_validated_and_is_loaded() {
    let ran = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(ScriptedModel::recording([
        // Not loaded, never searched: its arguments are still validated ...
        calls("c1", "stripe_refund_charge", json!({})),
        // ... and a valid call runs.
        calls("c2", "stripe_refund_charge", json!({"charge": "ch_1"})),
        text("Refunded."),
    ]));
    let agent = Agent::new(model.clone()).with_tools(registry(&ran));
    agent.prompt("refund ch_1").await.unwrap();
    let found = results(&agent);
    assert!(found[0].1);
    assert!(
        found[0].2.contains("charge: missing required property"),
        "{}",
        found[0].2
    );
    assert!(!found[0].2.contains("not found"));
    assert_eq!(
        found[1],
        (
            "stripe_refund_charge".into(),
            false,
            r#"done: {"charge":"ch_1"}"#.into()
        )
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let requests = model.requests();
    assert_eq!(names(&requests[0]), ["echo", TOOL_SEARCH_NAME]);
    // Named by the model: sent from the next request on.
    assert_eq!(
        names(&requests[1]),
        ["echo", TOOL_SEARCH_NAME, "stripe_refund_charge"]
    );
    assert_grows_at_the_end(&requests);
}

#[tokio::test]
async fn searches_add_at_the_end_in_load_order_and_bad_queries_are_error_results() {
    let ran = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(ScriptedModel::recording([
        calls("s1", TOOL_SEARCH_NAME, json!({"query": ""})),
        calls("s2", TOOL_SEARCH_NAME, json!({"query": {"nested": true}})),
        calls(
            "s3",
            TOOL_SEARCH_NAME,
            json!({"query": "slack channel message", "limit": 1}),
        ),
        calls(
            "s4",
            TOOL_SEARCH_NAME,
            json!({"query": "refund charge", "limit": 1}),
        ),
        // A second search for a loaded tool changes nothing.
        calls(
            "s5",
            TOOL_SEARCH_NAME,
            json!({"query": "slack message", "limit": 1}),
        ),
        text("ok"),
    ]));
    let agent = Agent::new(model.clone()).with_tools(registry(&ran));
    agent.prompt("go").await.unwrap();
    let found = results(&agent);
    assert!(
        found[0].1 && found[0].2.contains("the query is empty"),
        "{found:?}"
    );
    assert!(found[1].1 && found[1].2.contains("query"), "{found:?}");
    assert!(!found[2].1 && !found[3].1 && !found[4].1, "{found:?}");
    let requests = model.requests();
    assert_eq!(names(&requests[2]), ["echo", TOOL_SEARCH_NAME]);
    assert_eq!(
        names(&requests[3]),
        ["echo", TOOL_SEARCH_NAME, "slack_post_message"]
    );
    let loaded = [
        "echo",
        TOOL_SEARCH_NAME,
        "slack_post_message",
        "stripe_refund_charge",
    ];
    assert_eq!(names(&requests[4]), loaded);
    assert_eq!(names(&requests[5]), loaded);
    assert_grows_at_the_end(&requests);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn without_deferred_tools_nothing_changes() {
    let ran = Arc::new(AtomicUsize::new(0));
    let tools = ToolRegistry::new()
        .with(tool("echo", "Echo a value back.", "value", &ran))
        .with(tool(
            "github_create_issue",
            "Create an issue.",
            "title",
            &ran,
        ));
    let model = Arc::new(ScriptedModel::recording([text("hi")]));
    let agent = Agent::new(model.clone()).with_tools(tools);
    agent.prompt("hello").await.unwrap();
    assert_eq!(names(&model.requests()[0]), ["echo", "github_create_issue"]);
}

/// A tool of the host's own named `tool_search` is kept and runs when called, and the built-in
/// search stays reachable beside it as `pi_tool_search` (issue 33 item 4).
#[tokio::test]
async fn a_tool_of_its_own_named_tool_search_is_kept_beside_the_built_in_search() {
    let ran = Arc::new(AtomicUsize::new(0));
    let mut tools = registry(&ran);
    tools.register(tool(TOOL_SEARCH_NAME, "The host's own search.", "q", &ran));
    let model = Arc::new(ScriptedModel::recording([
        calls("s1", TOOL_SEARCH_NAME, json!({"q": "x"})),
        text("ok"),
    ]));
    let agent = Agent::new(model.clone()).with_tools(tools);
    agent.prompt("go").await.unwrap();
    let requests = model.requests();
    assert_eq!(
        names(&requests[0]),
        ["echo", TOOL_SEARCH_NAME, "pi_tool_search"]
    );
    assert_eq!(requests[0].tools[1].description, "The host's own search.");
    assert_eq!(results(&agent)[0].2, r#"done: {"q":"x"}"#);
}

#[tokio::test]
async fn a_transcript_naming_unknown_or_eager_tools_or_garbage_loads_only_what_it_can() {
    let ran = Arc::new(AtomicUsize::new(0));
    let search_result = |id: &str, details: Value| {
        Message::ToolResult(
            pi_runtime::ToolResultMessage::new(id, TOOL_SEARCH_NAME, Vec::new())
                .with_details(details)
                .with_timestamp(0),
        )
    };
    let transcript = vec![
        Message::user("earlier"),
        Message::Assistant(calls("s1", TOOL_SEARCH_NAME, json!({"query": "x"}))),
        // A tool the registry no longer has, an eager tool, and a deferred one.
        search_result(
            "s1",
            json!({"tools": ["gone_tool", "echo", "slack_post_message"]}),
        ),
        Message::Assistant(calls("s2", TOOL_SEARCH_NAME, json!({"query": "y"}))),
        search_result("s2", json!({"tools": 5})),
        Message::Assistant(calls("s3", TOOL_SEARCH_NAME, json!({"query": "z"}))),
        search_result("s3", json!("not an object")),
        Message::Assistant(text("ok")),
    ];
    let model = Arc::new(ScriptedModel::recording([text("hi")]));
    let agent = Agent::new(model.clone()).with_tools(registry(&ran));
    agent.replace_messages(transcript.into_iter().map(Arc::new).collect());
    agent.prompt("again").await.unwrap();
    assert_eq!(
        names(&model.requests()[0]),
        ["echo", TOOL_SEARCH_NAME, "slack_post_message"]
    );
}
