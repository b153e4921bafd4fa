//! Resuming a paused run with decisions: approve, approve_with (validated again), deny (an
//! error result with the reason) and answer (an external call), taken in every order; the
//! decided calls run through the loop's own pipeline (hooks, events), then the model is asked
//! again. Refused resumes change nothing: unknown call, second decision, undecided calls, a
//! tool gone, arguments that no longer validate, a newer format.

mod common;

use std::sync::{Arc, Mutex};

use common::{call, calls, text};
use pi_runtime::{
    Agent, AgentContext, AgentEvent, AgentLoopConfig, BeforeToolCall, Message, Resume, ResumeError,
    RunState, ScriptedModel, agent_loop, agent_loop_resume,
};
use pi_tool::{AgentTool, CancellationToken, FnTool, ToolResult, tool};
use serde_json::{Value, json};

/// Refund an order.
#[tool(approval)]
async fn refund(cents: u64) -> String {
    format!("refunded {cents}")
}

/// Delete a file.
#[tool(approval)]
async fn delete(path: String) -> String {
    format!("deleted {path}")
}

fn pick_file() -> Arc<dyn AgentTool> {
    Arc::new(
        FnTool::external(
            "pick_file",
            "Ask the user to pick a file.",
            json!({"type": "object", "properties": {"accept": {"type": "string"}}}),
        )
        .unwrap(),
    )
}

fn context() -> AgentContext {
    AgentContext::new("test")
        .with_tool(RefundTool)
        .with_tool(DeleteTool)
        .with_tools([pick_file()])
}

/// The model's first answer: three calls that wait.
fn first() -> pi_runtime::AssistantMessage {
    calls(vec![
        call("c1", "refund", json!({"cents": 500})),
        call("c2", "delete", json!({"path": "/tmp/a"})),
        call("c3", "pick_file", json!({"accept": ".txt"})),
    ])
}

async fn paused_with(model: Arc<ScriptedModel>, config: AgentLoopConfig) -> RunState {
    let stream = agent_loop(
        vec![Message::user("go")],
        context(),
        config,
        model,
        CancellationToken::new(),
    );
    let (_, paused) = stream.outcome().await;
    paused.expect("the run paused")
}

async fn paused() -> (RunState, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::recording([first(), text("all done")]));
    let state = paused_with(Arc::clone(&model), AgentLoopConfig::new()).await;
    (state, model)
}

/// Resumes and collects the events and the outcome.
async fn resume(
    resume: Resume,
    config: AgentLoopConfig,
    model: Arc<ScriptedModel>,
) -> (Vec<AgentEvent>, Option<RunState>) {
    let mut stream = agent_loop_resume(resume, context(), config, model, CancellationToken::new())
        .map_err(|refused| refused.error)
        .expect("the resume starts");
    let mut events = Vec::new();
    while let Some(event) = stream.next_event().await {
        events.push(event);
    }
    (events, stream.take_paused())
}

fn results(messages: &[Arc<Message>]) -> Vec<(String, bool, String)> {
    messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| {
            let text = r
                .content
                .iter()
                .map(|c| match c {
                    pi_tool::Content::Text { text } => text.clone(),
                    _ => String::new(),
                })
                .collect();
            (r.tool_call_id.clone(), r.is_error, text)
        })
        .collect()
}

type Decide = fn(&mut RunState);

fn approve_c1(state: &mut RunState) {
    state.approve("c1").unwrap();
}
fn deny_c2(state: &mut RunState) {
    state.deny("c2", "not that file").unwrap();
}
fn answer_c3(state: &mut RunState) {
    state.answer("c3", ToolResult::text("notes.txt")).unwrap();
}

#[tokio::test]
async fn decisions_in_every_order_settle_the_calls_then_the_model_is_asked_again() {
    let orders: [[Decide; 3]; 6] = [
        [approve_c1, deny_c2, answer_c3],
        [approve_c1, answer_c3, deny_c2],
        [deny_c2, approve_c1, answer_c3],
        [deny_c2, answer_c3, approve_c1],
        [answer_c3, approve_c1, deny_c2],
        [answer_c3, deny_c2, approve_c1],
    ];
    for order in orders {
        let (mut state, model) = paused().await;
        for decide in order {
            decide(&mut state);
        }
        let (events, paused) = resume(
            Resume::new(state),
            AgentLoopConfig::new(),
            Arc::clone(&model),
        )
        .await;
        assert!(paused.is_none());
        let messages = match events.last() {
            Some(AgentEvent::AgentEnd { messages }) => messages.clone(),
            other => panic!("the run ends with agent_end, not {other:?}"),
        };
        // In call order, whatever the order of the decisions.
        assert_eq!(
            results(&messages),
            [
                ("c1".to_owned(), false, "refunded 500".to_owned()),
                (
                    "c2".to_owned(),
                    true,
                    "Tool delete was not run: the call was denied: not that file".to_owned()
                ),
                ("c3".to_owned(), false, "notes.txt".to_owned()),
            ]
        );
        // The model's second request saw the assistant message and all three results.
        assert_eq!(model.calls(), 2);
        let request = &model.requests()[1];
        assert_eq!(
            request.roles(),
            [
                "user",
                "assistant",
                "toolResult",
                "toolResult",
                "toolResult"
            ]
        );
        // The approved call went through the pipeline's events.
        // (Refused calls end at preparation, before the approved one ends: the loop's usual
        // order.)
        let mut ran: Vec<&str> = events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::ToolExecutionEnd { call, .. } => Some(call.id()),
                _ => None,
            })
            .collect();
        ran.sort_unstable();
        assert_eq!(ran, ["c1", "c2", "c3"]);
    }
}

#[tokio::test]
async fn bad_decisions_are_refused_and_change_nothing() {
    let (mut state, _) = paused().await;
    let before = state.clone();
    assert_eq!(
        state.approve("c9"),
        Err(ResumeError::UnknownCall("c9".into()))
    );
    assert!(matches!(
        state.approve("c3"),
        Err(ResumeError::WrongDecision { .. })
    ));
    assert_eq!(state, before);
    state.approve("c1").unwrap();
    let once = state.clone();
    assert_eq!(
        state.deny("c1", "changed my mind"),
        Err(ResumeError::AlreadyDecided("c1".into()))
    );
    assert_eq!(state, once);
}

/// Resumes expecting a refusal; returns the error and checks the state came back unchanged.
fn refused(state: RunState, context: AgentContext) -> ResumeError {
    let model = Arc::new(ScriptedModel::recording([text("unused")]));
    let original = state.clone();
    let refused = agent_loop_resume(
        Resume::new(state),
        context,
        AgentLoopConfig::new(),
        Arc::clone(&model) as Arc<dyn pi_runtime::Model>,
        CancellationToken::new(),
    )
    .expect_err("refused");
    assert_eq!(refused.resume.state(), &original);
    assert_eq!(model.calls(), 0);
    refused.error
}

#[tokio::test]
async fn bad_states_are_refused_with_clear_errors() {
    let (mut state, _) = paused().await;
    state.approve("c1").unwrap();
    state.deny("c2", "no").unwrap();
    // c3 undecided.
    assert_eq!(
        refused(state.clone(), context()),
        ResumeError::Undecided(vec!["c3".into()])
    );
    state.answer("c3", ToolResult::text("a.txt")).unwrap();

    // The tool of an approved call is gone from the resuming context.
    let without_refund = AgentContext::new("test")
        .with_tool(DeleteTool)
        .with_tools([pick_file()]);
    assert_eq!(
        refused(state.clone(), without_refund),
        ResumeError::ToolGone {
            id: "c1".into(),
            tool: "refund".into()
        }
    );

    // The tool changed: its arguments no longer validate.
    let stricter = FnTool::builder(
        "refund",
        "Refund.",
        json!({"type": "object", "properties": {"cents": {"type": "integer", "maximum": 100}}}),
    )
    .approval()
    .build(|_args: Value, _ctx| async { "x" })
    .unwrap();
    let changed = AgentContext::new("test")
        .with_tool(stricter)
        .with_tool(DeleteTool)
        .with_tools([pick_file()]);
    assert!(matches!(
        refused(state.clone(), changed),
        ResumeError::InvalidArguments { id, .. } if id == "c1"
    ));

    // A newer format.
    let mut newer = state.clone();
    newer.format = 99;
    assert_eq!(
        refused(newer, context()),
        ResumeError::UnsupportedFormat { found: 99 }
    );

    // A decision for a call that does not wait (a state edited by hand).
    let mut edited = state.clone();
    edited
        .decisions
        .insert("c7".into(), pi_runtime::Decision::Approve);
    assert_eq!(
        refused(edited, context()),
        ResumeError::UnknownCall("c7".into())
    );

    // Nothing waits.
    let mut done = state.clone();
    done.waiting.clear();
    done.decisions.clear();
    assert_eq!(refused(done, context()), ResumeError::NotPaused);
}

#[tokio::test]
async fn approve_with_runs_the_new_arguments_after_validating_them() {
    let (mut state, model) = paused().await;
    state
        .approve_with("c1", json!({"cents": "not a number"}))
        .unwrap();
    state.deny("c2", "no").unwrap();
    state.deny("c3", "no").unwrap();
    let error = refused(state.clone(), context());
    assert!(
        matches!(error, ResumeError::InvalidArguments { ref id, .. } if id == "c1"),
        "{error}"
    );

    let (mut state, _) = paused().await;
    state.approve_with("c1", json!({"cents": 250})).unwrap();
    state.deny("c2", "no").unwrap();
    state.deny("c3", "no").unwrap();
    let (events, _) = resume(Resume::new(state), AgentLoopConfig::new(), model).await;
    let Some(AgentEvent::AgentEnd { messages }) = events.last() else {
        panic!("agent_end last")
    };
    assert_eq!(results(messages)[0].2, "refunded 250");
}

#[tokio::test]
async fn undecided_calls_can_be_left_waiting() {
    let (mut state, model) = paused().await;
    state.approve("c1").unwrap();
    let (events, paused) = resume(
        Resume::new(state).leave_undecided_waiting(),
        AgentLoopConfig::new(),
        Arc::clone(&model),
    )
    .await;
    let paused = paused.expect("paused again");
    let ids: Vec<&str> = paused.waiting().iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, ["c2", "c3"]);
    assert_eq!(
        results(&paused.messages),
        [("c1".to_owned(), false, "refunded 500".to_owned())]
    );
    assert_eq!(model.calls(), 1, "no request while calls wait");
    assert!(events.iter().any(|e| e.kind() == "run_paused"));

    // The rest decided later: c1 does not run again.
    let mut state = paused;
    state.deny("c2", "no").unwrap();
    state.answer("c3", ToolResult::text("b.txt")).unwrap();
    let (events, paused) = resume(
        Resume::new(state),
        AgentLoopConfig::new(),
        Arc::clone(&model),
    )
    .await;
    assert!(paused.is_none());
    let Some(AgentEvent::AgentEnd { messages }) = events.last() else {
        panic!("agent_end last")
    };
    let ids: Vec<String> = results(messages).into_iter().map(|r| r.0).collect();
    assert_eq!(ids, ["c2", "c3"]);
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn resumed_calls_go_through_the_hooks_and_a_suspending_hook_does_not_stop_an_approved_call() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let before_seen = Arc::clone(&seen);
    let config = AgentLoopConfig::new()
        .before_tool_call(move |ctx| {
            let seen = Arc::clone(&before_seen);
            async move {
                seen.lock()
                    .unwrap()
                    .push(format!("before {}", ctx.tool_call.id));
                if ctx.tool_call.name == "refund" {
                    Ok(BeforeToolCall::suspend("a person checks refunds"))
                } else {
                    Ok(BeforeToolCall::allow())
                }
            }
        })
        .after_tool_call(|ctx| async move {
            Ok(pi_runtime::AfterToolCall::keep().details(json!({"after": ctx.tool_call.id})))
        });
    let model = Arc::new(ScriptedModel::recording([first(), text("done")]));
    let mut state = paused_with(Arc::clone(&model), config.clone()).await;
    assert_eq!(state.waiting()[0].reason, "a person checks refunds");
    state.approve("c1").unwrap();
    state.deny("c2", "no").unwrap();
    state.deny("c3", "no").unwrap();
    seen.lock().unwrap().clear();
    let (_, paused) = resume(Resume::new(state), config, model).await;
    assert!(paused.is_none());
    // Only the approved call is prepared (the denied ones never reach the hook).
    assert_eq!(*seen.lock().unwrap(), ["before c1"]);
}

#[tokio::test]
async fn an_agent_pauses_and_resumes() {
    let model = Arc::new(ScriptedModel::recording([
        calls(vec![call("c1", "refund", json!({"cents": 9}))]),
        text("refunded"),
    ]));
    let agent = Agent::new(model.clone()).with_tool_list_for_test();
    agent.prompt("refund").await.unwrap();
    let mut state = agent.take_paused().expect("paused");
    assert!(agent.take_paused().is_none());
    state.approve("c1").unwrap();
    agent.resume(Resume::new(state)).await.unwrap();
    let roles: Vec<&str> = agent
        .messages()
        .iter()
        .map(|m| match m.as_ref() {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
            _ => "other",
        })
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    assert!(agent.take_paused().is_none());
}

trait ForTest {
    fn with_tool_list_for_test(self) -> Self;
}

impl ForTest for Agent {
    fn with_tool_list_for_test(self) -> Self {
        self.set_tool_list(vec![Arc::new(RefundTool)]);
        self
    }
}

#[tokio::test]
async fn a_deferred_tool_loaded_before_the_pause_is_still_loaded_after_it() {
    let registry = || {
        let deferred = pi_tool::ToolRegistry::new()
            .with(
                FnTool::builder(
                    "stripe_refund_charge",
                    "Refund a Stripe card charge.",
                    json!({"type": "object", "properties": {"charge": {"type": "string"}}}),
                )
                .build(|_args: Value, _ctx| async { "refunded the charge" })
                .unwrap(),
            )
            .defer_all();
        let mut all = pi_tool::ToolRegistry::new().with(RefundTool);
        all.extend(deferred.tools().cloned());
        all
    };
    // The deferred tool is called by name (which loads it) next to a call that waits.
    let model = Arc::new(ScriptedModel::recording([calls(vec![
        call("c1", "stripe_refund_charge", json!({"charge": "ch_1"})),
        call("c2", "refund", json!({"cents": 5})),
    ])]));
    let stream = agent_loop(
        vec![Message::user("go")],
        AgentContext::new("test").with_registry(registry()),
        AgentLoopConfig::new(),
        model.clone(),
        CancellationToken::new(),
    );
    let mut state = stream.outcome().await.1.expect("paused");
    let first = common::request_tool_names(&model.requests()[0]);
    assert!(
        !first.contains(&"stripe_refund_charge".to_owned()),
        "{first:?}"
    );
    // Through JSON, into a context built afresh, as another process would.
    let mut state_again = RunState::from_json(&state.to_json()).unwrap();
    state_again.approve("c2").unwrap();
    state = state_again;
    let model = Arc::new(ScriptedModel::recording([text("done")]));
    let resumed = agent_loop_resume(
        Resume::new(state),
        AgentContext::new("test").with_registry(registry()),
        AgentLoopConfig::new(),
        model.clone(),
        CancellationToken::new(),
    )
    .map_err(|refused| refused.error)
    .unwrap();
    let (_, paused) = resumed.outcome().await;
    assert!(paused.is_none());
    let after = common::request_tool_names(&model.requests()[0]);
    assert!(
        after.contains(&"stripe_refund_charge".to_owned()),
        "{after:?}"
    );
}
