//! Calls tools make of each other inside an agent run (`ToolContext::call_tool`): they run
//! through the run's pipeline with its hooks (which see the parent call), its limits and its
//! abort, emit no events of their own, and a tool only code may call is never offered to the
//! model and refused when the model calls it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use pi_runtime::{
    Agent, AgentContext, AgentEvent, AgentLoopConfig, AssistantContent, AssistantMessage,
    BeforeToolCall, Message, ScriptedModel, StopReason, agent_loop,
};
use pi_tool::{CancellationToken, ToolCall, ToolContext, ToolRegistry, ToolResult, tool};
use serde_json::{Value, json};

/// Add two numbers.
#[tool]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// Call a tool by name with the given arguments, and return what it returned. (Its own timeout
/// is long, so the run's default timeout bounds only the tools it calls.)
#[tool(timeout = "10s")]
async fn relay(tool: String, arguments: Value, ctx: ToolContext) -> ToolResult {
    ctx.call_tool(tool, arguments).await
}

/// Wait until the run is aborted.
#[tool]
async fn wait_for_abort(ctx: ToolContext) -> String {
    ctx.signal().cancelled().await;
    "stopped: the run was aborted".to_owned()
}

/// Never finish.
#[tool]
async fn forever() -> String {
    std::future::pending::<()>().await;
    String::new()
}

/// Look a word up: only from code.
#[tool(callers = "code")]
async fn lookup(word: String) -> String {
    format!("{word}: found")
}

fn registry() -> ToolRegistry {
    ToolRegistry::new()
        .with(AddTool)
        .with(RelayTool)
        .with(WaitForAbortTool)
        .with(ForeverTool)
        .with(LookupTool)
}

fn relay_call(id: &str, tool: &str, arguments: Value) -> AssistantMessage {
    AssistantMessage::new(
        vec![AssistantContent::tool_call(
            id,
            "relay",
            json!({"tool": tool, "arguments": arguments}),
        )],
        StopReason::ToolUse,
    )
}

fn done() -> AssistantMessage {
    AssistantMessage::new(vec![AssistantContent::text("done")], StopReason::Stop)
}

fn results(messages: &[Arc<Message>]) -> Vec<(String, bool, String)> {
    messages
        .iter()
        .filter_map(|m| match &**m {
            Message::ToolResult(r) => Some((r.tool_name.clone(), r.is_error, r.text())),
            _ => None,
        })
        .collect()
}

/// What a hook saw: the call's name and id, and its parent's name and id.
type Seen = Arc<Mutex<Vec<(String, String, Option<(String, String)>)>>>;

fn name_and_parent(
    call: &ToolCall,
    parent: Option<&ToolCall>,
) -> (String, String, Option<(String, String)>) {
    (
        call.name.clone(),
        call.id.clone(),
        parent.map(|p| (p.name.clone(), p.id.clone())),
    )
}

#[tokio::test]
async fn nested_calls_go_through_the_hooks_which_see_the_parent_and_emit_no_events() {
    let model = Arc::new(ScriptedModel::recording([
        relay_call("c1", "add", json!({"a": 2, "b": 3})),
        relay_call("c2", "add", json!({"a": 40, "b": 2})),
        done(),
    ]));
    let before: Seen = Arc::default();
    let after: Seen = Arc::default();
    let (before_log, after_log) = (Arc::clone(&before), Arc::clone(&after));
    let config = AgentLoopConfig::new()
        .before_tool_call(move |ctx| {
            before_log.lock().unwrap().push(name_and_parent(
                &ctx.tool_call,
                ctx.parent_tool_call.as_ref(),
            ));
            let blocked = ctx.tool_call.name == "add" && ctx.args["a"] == 40;
            async move {
                Ok(if blocked {
                    BeforeToolCall::block("40 is not allowed")
                } else {
                    BeforeToolCall::allow()
                })
            }
        })
        .after_tool_call(move |ctx| {
            after_log.lock().unwrap().push(name_and_parent(
                &ctx.tool_call,
                ctx.parent_tool_call.as_ref(),
            ));
            async move { Ok(pi_runtime::AfterToolCall::default()) }
        });
    let context = AgentContext::new("test").with_registry(registry());
    let mut stream = agent_loop(
        vec![Message::user("go")],
        context,
        config,
        model,
        CancellationToken::new(),
    );
    let mut starts = Vec::new();
    let mut messages = Vec::new();
    while let Some(event) = stream.next().await {
        match event {
            AgentEvent::ToolExecutionStart { call, .. } => starts.push(call.id().to_owned()),
            AgentEvent::AgentEnd { messages: all } => messages = all,
            _ => {}
        }
    }
    assert_eq!(starts, ["c1", "c2"], "nested calls emit no events");
    assert_eq!(
        results(&messages),
        [
            ("relay".to_owned(), false, "5".to_owned()),
            ("relay".to_owned(), true, "40 is not allowed".to_owned()),
        ]
    );
    let relay = |id: &str| Some(("relay".to_owned(), id.to_owned()));
    assert_eq!(
        *before.lock().unwrap(),
        [
            ("relay".to_owned(), "c1".to_owned(), None),
            ("add".to_owned(), "c1/1".to_owned(), relay("c1")),
            ("relay".to_owned(), "c2".to_owned(), None),
            ("add".to_owned(), "c2/1".to_owned(), relay("c2")),
        ]
    );
    assert_eq!(
        *after.lock().unwrap(),
        [
            ("add".to_owned(), "c1/1".to_owned(), relay("c1")),
            ("relay".to_owned(), "c1".to_owned(), None),
            ("relay".to_owned(), "c2".to_owned(), None),
        ],
        "a blocked nested call never runs, so no after hook"
    );
}

#[tokio::test]
async fn the_runs_timeout_and_abort_reach_nested_calls() {
    // The run's default timeout bounds a nested call of a tool without one of its own.
    let model = Arc::new(ScriptedModel::recording([
        relay_call("c1", "forever", json!({})),
        done(),
    ]));
    let agent = Agent::new(model).with_tools(registry()).with_config(
        AgentLoopConfig::new()
            .tool_timeout(Duration::from_millis(100))
            .abort_grace(Duration::from_millis(20)),
    );
    agent.prompt("go").await.unwrap();
    assert_eq!(
        results(&agent.messages()),
        [(
            "relay".to_owned(),
            true,
            "Tool forever timed out after 100ms".to_owned()
        )],
        "the child timed out under the run's default, and its parent returned that"
    );

    // An abort of the run reaches a nested call through its parent's signal.
    let model = Arc::new(ScriptedModel::recording([
        relay_call("c1", "wait_for_abort", json!({})),
        done(),
    ]));
    let context = AgentContext::new("test").with_registry(registry());
    let signal = CancellationToken::new();
    let mut stream = agent_loop(
        vec![Message::user("go")],
        context,
        AgentLoopConfig::new().abort_grace(Duration::from_secs(5)),
        model,
        signal.clone(),
    );
    let mut messages = Vec::new();
    while let Some(event) = stream.next().await {
        match event {
            AgentEvent::ToolExecutionStart { .. } => signal.cancel(),
            AgentEvent::AgentEnd { messages: all } => messages = all,
            _ => {}
        }
    }
    assert_eq!(
        results(&messages),
        [(
            "relay".to_owned(),
            false,
            "stopped: the run was aborted".to_owned()
        )]
    );
}

#[tokio::test]
async fn a_code_only_tool_is_never_offered_and_refused_when_called_directly() {
    let model = Arc::new(ScriptedModel::recording([
        AssistantMessage::new(
            vec![AssistantContent::tool_call(
                "c1",
                "lookup",
                json!({"word": "pi"}),
            )],
            StopReason::ToolUse,
        ),
        relay_call("c2", "lookup", json!({"word": "pi"})),
        done(),
    ]));
    let agent = Agent::new(model.clone()).with_tools(registry());
    agent.prompt("go").await.unwrap();
    for request in model.requests() {
        assert!(
            !request.tool_names().contains(&"lookup"),
            "{:?}",
            request.tool_names()
        );
        assert!(request.tool_names().contains(&"relay"));
    }
    assert_eq!(
        results(&agent.messages()),
        [
            (
                "lookup".to_owned(),
                true,
                "Tool lookup can be called only from code (a script of the `code` tool), not directly"
                    .to_owned()
            ),
            ("relay".to_owned(), false, "pi: found".to_owned()),
        ]
    );
}
