//! Calls made from code wait too (issue 32 part 4): a tool's nested call
//! ([`ToolContext::call_tool`]) that needs approval waits for the in-process approver, or pauses
//! the run with the outer call waiting; on resume the outer call runs again, its completed nested
//! calls answered from the journal (not run twice), the approved one run once. A denial is the
//! nested call's error; a journal that does not match the replay is a clear error.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{call, calls, text};
use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, ApprovalTimeout, Decision, JsonFileStore, Message,
    RUN_STATE_FORMAT, Resume, RunState, RunStore, ScriptedModel, WaitKind, agent_loop,
    agent_loop_resume,
};
use pi_tool::{AgentTool, CancellationToken, FnTool, ToolContext};
use serde_json::{Value, json};

/// How often each tool ran.
#[derive(Default)]
struct Counts {
    lookup: AtomicUsize,
    note: AtomicUsize,
    refund: AtomicUsize,
}

/// `lookup` and `note` run freely; `refund` needs approval; `settle` calls `lookup`, `note`,
/// then `refund`, and returns what they said (a refund's error too).
fn context(counts: &Arc<Counts>) -> AgentContext {
    context_with(counts, None)
}

/// [`context`], with another `refund` when one is given.
fn context_with(counts: &Arc<Counts>, refund: Option<Arc<dyn AgentTool>>) -> AgentContext {
    let counted = |name: &str, count: fn(&Counts) -> &AtomicUsize, approval: bool| {
        let counts = Arc::clone(counts);
        let mut builder = FnTool::builder(name, "A counted tool.", json!({"type": "object"}));
        if approval {
            builder = builder.approval();
        }
        let name = name.to_owned();
        Arc::new(
            builder
                .build(move |args: Value, _ctx: ToolContext| {
                    let n = count(&counts).fetch_add(1, Ordering::SeqCst) + 1;
                    let name = name.clone();
                    async move { format!("{name} #{n} with {args}") }
                })
                .unwrap(),
        ) as Arc<dyn AgentTool>
    };
    let settle = FnTool::builder(
        "settle",
        "Settle an order.",
        json!({"type": "object", "properties": {"order": {"type": "integer"}}}),
    )
    .build(|args: Value, ctx: ToolContext| async move {
        let order = args["order"].clone();
        let mut said = Vec::new();
        for (tool, arguments) in [
            ("lookup", json!({"order": order})),
            ("note", json!({"text": "refunding"})),
            ("refund", json!({"order": order, "cents": 500})),
        ] {
            let result = ctx.call_tool(tool, arguments).await;
            said.push(format!(
                "{}{}",
                if result.is_error { "error: " } else { "" },
                result.text_content()
            ));
        }
        said.join(" | ")
    })
    .unwrap();
    AgentContext::new("test").with_tools([
        counted("lookup", |c| &c.lookup, false),
        counted("note", |c| &c.note, false),
        refund.unwrap_or_else(|| counted("refund", |c| &c.refund, true)),
        Arc::new(settle) as Arc<dyn AgentTool>,
    ])
}

fn model() -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new([
        calls(vec![call("c1", "settle", json!({"order": 7}))]),
        text("done"),
    ]))
}

async fn paused_state(counts: &Arc<Counts>) -> RunState {
    let stream = agent_loop(
        vec![Message::user("go")],
        context(counts),
        AgentLoopConfig::new(),
        model(),
        CancellationToken::new(),
    );
    let (_, paused) = stream.outcome().await;
    paused.expect("the run paused")
}

/// Resumes `state` (decided) with the model's last answer; the events and the outcome.
async fn resume(
    state: RunState,
    counts: &Arc<Counts>,
) -> (Vec<AgentEvent>, Vec<Arc<Message>>, Option<RunState>) {
    let model = Arc::new(ScriptedModel::new([text("done")]));
    let mut stream = agent_loop_resume(
        Resume::new(state),
        context(counts),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    )
    .map_err(|refused| refused.error)
    .expect("the resume starts");
    let mut events = Vec::new();
    while let Some(event) = stream.next_event().await {
        events.push(event);
    }
    let messages = events
        .iter()
        .find_map(|event| match event {
            AgentEvent::AgentEnd { messages } => Some(messages.clone()),
            _ => None,
        })
        .expect("AgentEnd");
    (events, messages, stream.take_paused())
}

fn settle_result(messages: &[Arc<Message>]) -> (bool, String) {
    let result = messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .find(|r| r.tool_call_id == "c1")
        .expect("settle's result");
    let text = result
        .content
        .iter()
        .filter_map(pi_tool::Content::as_text)
        .collect::<String>();
    (result.is_error, text)
}

#[tokio::test]
async fn a_nested_call_that_needs_approval_pauses_the_run_with_its_journal() {
    let counts = Arc::new(Counts::default());
    let state = paused_state(&counts).await;
    assert_eq!(state.format, RUN_STATE_FORMAT);
    // The outer call waits, for the nested call's reason and kind.
    let [waiting] = state.waiting() else {
        panic!("one waiting call: {:?}", state.waiting());
    };
    assert_eq!(
        (waiting.id.as_str(), waiting.tool.as_str()),
        ("c1", "settle")
    );
    assert_eq!(waiting.kind, WaitKind::Approval);
    assert!(waiting.reason.contains("refund"), "{}", waiting.reason);
    let nested = &state.nested["c1"];
    assert_eq!(nested.call.id, "c1/3");
    assert_eq!(nested.call.tool, "refund");
    assert_eq!(nested.call.arguments, json!({"order": 7, "cents": 500}));
    let journal: Vec<(&str, &str)> = nested
        .journal
        .iter()
        .map(|entry| (entry.id.as_str(), entry.tool.as_str()))
        .collect();
    assert_eq!(journal, [("c1/1", "lookup"), ("c1/2", "note")]);
    assert_eq!(
        nested.journal[0].result.text_content(),
        r#"lookup #1 with {"order":7}"#
    );
    // The refund did not run; nothing is in the transcript for the waiting call.
    assert_eq!(counts.refund.load(Ordering::SeqCst), 0);
    assert!(state.messages.iter().all(|m| m.as_tool_result().is_none()));
    // The journal round-trips through JSON.
    assert_eq!(RunState::from_json(&state.to_json()).unwrap(), state);
}

#[tokio::test]
async fn an_approved_nested_call_runs_once_and_the_completed_ones_are_not_run_again() {
    let counts = Arc::new(Counts::default());
    let mut state = paused_state(&counts).await;
    state.approve("c1").unwrap();
    let (events, messages, paused) = resume(state, &counts).await;
    assert!(paused.is_none());
    let (is_error, said) = settle_result(&messages);
    assert!(!is_error, "{said}");
    assert_eq!(
        said,
        r#"lookup #1 with {"order":7} | note #1 with {"text":"refunding"} | refund #1 with {"order":7,"cents":500}"#
    );
    assert_eq!(counts.lookup.load(Ordering::SeqCst), 1, "replayed, not run");
    assert_eq!(counts.note.load(Ordering::SeqCst), 1, "replayed, not run");
    assert_eq!(counts.refund.load(Ordering::SeqCst), 1);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolExecutionEnd { call, .. } if call.id() == "c1"))
    );
}

#[tokio::test]
async fn a_paused_nested_call_resumes_from_a_store_in_a_fresh_context() {
    let dir = std::env::temp_dir().join(format!("pi-nested-waits-{}", std::process::id()));
    let counts = Arc::new(Counts::default());
    let run = {
        let store = JsonFileStore::open(&dir).unwrap();
        store.create(&paused_state(&counts).await).unwrap()
    };
    // As a new process would: a new store, new tools (new counters).
    let store = JsonFileStore::open(&dir).unwrap();
    let mut state = store.load(&run).unwrap();
    assert_eq!(state.nested["c1"].journal.len(), 2);
    state.approve("c1").unwrap();
    let claim = store.claim(&run, &state).unwrap();
    let fresh = Arc::new(Counts::default());
    let model = Arc::new(ScriptedModel::new([text("done")]));
    let stream = agent_loop_resume(
        Resume::new(state).with_claim(claim),
        context(&fresh),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    )
    .map_err(|refused| refused.error)
    .unwrap();
    let (messages, paused) = stream.outcome().await;
    assert!(paused.is_none());
    let (is_error, said) = settle_result(&messages);
    assert!(!is_error, "{said}");
    assert!(
        said.ends_with(r#"refund #1 with {"order":7,"cents":500}"#),
        "{said}"
    );
    assert_eq!(fresh.lookup.load(Ordering::SeqCst), 0);
    assert_eq!(fresh.note.load(Ordering::SeqCst), 0);
    assert_eq!(fresh.refund.load(Ordering::SeqCst), 1);
    // The run ended: the store holds nothing that waits.
    assert!(store.load(&run).unwrap().nested.is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_denied_nested_call_is_an_error_the_code_sees_with_the_reason() {
    let counts = Arc::new(Counts::default());
    let mut state = paused_state(&counts).await;
    state.deny("c1", "over the limit").unwrap();
    let (_, messages, paused) = resume(state, &counts).await;
    assert!(paused.is_none());
    let (is_error, said) = settle_result(&messages);
    assert!(!is_error, "settle itself went on: {said}");
    assert!(
        said.ends_with("error: Tool refund was not run: the call was denied: over the limit"),
        "{said}"
    );
    assert_eq!(counts.refund.load(Ordering::SeqCst), 0);
    assert_eq!(counts.lookup.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_journal_that_does_not_match_the_replay_is_a_clear_error() {
    let counts = Arc::new(Counts::default());
    let mut state = paused_state(&counts).await;
    // The journal says the first call looked up another order.
    state.nested.get_mut("c1").unwrap().journal[0].arguments = json!({"order": 8});
    state.approve("c1").unwrap();
    let (_, messages, _) = resume(state, &counts).await;
    let (is_error, said) = settle_result(&messages);
    assert!(is_error, "{said}");
    assert!(said.contains("could not be replayed"), "{said}");
    assert!(said.contains("c1/1"), "{said}");
    // Nothing ran: not the mismatched call, not the approved one.
    assert_eq!(counts.lookup.load(Ordering::SeqCst), 1);
    assert_eq!(counts.refund.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_in_process_approver_decides_a_nested_call() {
    for (decision, refunds, ends_with) in [
        (
            Decision::Approve,
            1,
            r#"refund #1 with {"order":7,"cents":500}"#,
        ),
        (
            Decision::ApproveWith {
                arguments: json!({"order": 7, "cents": 100}),
            },
            1,
            r#"refund #1 with {"order":7,"cents":100}"#,
        ),
        (
            Decision::Deny {
                reason: "no".into(),
            },
            0,
            "error: Tool refund was not run: the call was denied: no",
        ),
    ] {
        let counts = Arc::new(Counts::default());
        let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&asked);
        let config = AgentLoopConfig::new().approver(
            move |waiting: pi_runtime::WaitingCall| {
                seen.lock().unwrap().push(waiting.id.clone());
                let decision = decision.clone();
                async move { decision }
            },
            ApprovalTimeout::WaitForever,
        );
        let stream = agent_loop(
            vec![Message::user("go")],
            context(&counts),
            config,
            model(),
            CancellationToken::new(),
        );
        let (messages, paused) = stream.outcome().await;
        assert!(paused.is_none());
        assert_eq!(*asked.lock().unwrap(), ["c1/3"]);
        let (_, said) = settle_result(&messages);
        assert!(said.ends_with(ends_with), "{said}");
        assert_eq!(counts.refund.load(Ordering::SeqCst), refunds);
    }
}

#[tokio::test]
async fn an_approver_that_times_out_into_a_pause_pauses_on_the_nested_call() {
    let counts = Arc::new(Counts::default());
    let config = AgentLoopConfig::new().approver(
        |_| std::future::pending::<Decision>(),
        ApprovalTimeout::PauseAfter(std::time::Duration::from_millis(20)),
    );
    let stream = agent_loop(
        vec![Message::user("go")],
        context(&counts),
        config,
        model(),
        CancellationToken::new(),
    );
    let (_, paused) = stream.outcome().await;
    let state = paused.expect("paused");
    assert_eq!(state.nested["c1"].call.id, "c1/3");
}

#[tokio::test]
async fn a_state_without_nested_waits_is_still_format_1_and_both_formats_load() {
    let counts = Arc::new(Counts::default());
    // The model calls `refund` itself: no nested wait.
    let model = Arc::new(ScriptedModel::new([calls(vec![call(
        "c1",
        "refund",
        json!({}),
    )])]));
    let stream = agent_loop(
        vec![Message::user("go")],
        context(&counts),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    );
    let (_, paused) = stream.outcome().await;
    let plain = paused.unwrap();
    assert_eq!(plain.format, 1, "earlier builds read it");
    let text = plain.to_json();
    assert!(!text.contains("\"nested\""), "{text}");
    assert_eq!(RunState::from_json(&text).unwrap(), plain);

    let nested = paused_state(&counts).await;
    assert_eq!(nested.format, 2);
    let text = nested.to_json();
    assert_eq!(RunState::from_json(&text).unwrap(), nested);
    let newer = text.replacen("\"format\":2", "\"format\":3", 1);
    assert!(matches!(
        RunState::from_json(&newer),
        Err(pi_runtime::RunStateReadError::Format(
            pi_runtime::ResumeError::UnsupportedFormat { found: 3 }
        ))
    ));
}

#[tokio::test]
async fn an_approved_nested_call_is_recorded_in_the_store_as_it_runs_and_not_run_again_once_finished()
 {
    let dir = std::env::temp_dir().join(format!("pi-nested-records-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    let counts = Arc::new(Counts::default());
    let store = JsonFileStore::open(&dir).unwrap();
    let run = store.create(&paused_state(&counts).await).unwrap();
    let mut state = store.load(&run).unwrap();
    state.approve("c1").unwrap();
    let claim = store.claim(&run, &state).unwrap();
    // A refund that looks at the store while it runs: it was recorded as started first.
    let refund = {
        let (dir, run) = (dir.clone(), run.clone());
        FnTool::builder("refund", "Refund.", json!({"type": "object"}))
            .approval()
            .build(move |_: Value, _: ToolContext| {
                let stored = JsonFileStore::open(&dir).unwrap().load(&run).unwrap();
                let started = stored.started.contains("c1/3");
                async move { format!("refunded (recorded as started: {started})") }
            })
            .unwrap()
    };
    let stream = agent_loop_resume(
        Resume::new(state).with_claim(claim),
        context_with(&counts, Some(Arc::new(refund))),
        AgentLoopConfig::new(),
        Arc::new(ScriptedModel::new([text("done")])),
        CancellationToken::new(),
    )
    .map_err(|refused| refused.error)
    .unwrap();
    let (messages, _) = stream.outcome().await;
    let (_, said) = settle_result(&messages);
    assert!(
        said.ends_with("refunded (recorded as started: true)"),
        "{said}"
    );

    // A nested call a store recorded as finished (the process died after it) is answered from
    // the record on the next resume, and not run again.
    let mut state = paused_state(&counts).await;
    state.approve("c1").unwrap();
    let recorded = pi_runtime::ToolResultMessage::new(
        "c1/3",
        "refund",
        vec![pi_tool::Content::text("refunded before the crash")],
    );
    state
        .finished
        .insert("c1/3".into(), Arc::new(Message::ToolResult(recorded)));
    state.started.insert("c1/3".into());
    let before = counts.refund.load(Ordering::SeqCst);
    let (_, messages, _) = resume(state, &counts).await;
    let (_, said) = settle_result(&messages);
    assert!(said.ends_with("refunded before the crash"), "{said}");
    assert_eq!(counts.refund.load(Ordering::SeqCst), before);
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn calls_paused_by_a_nested_call_are_listed_in_the_model_s_call_order() {
    // `c1` waits on its nested refund (known only when it returns), `c2` and `c3` on their
    // own (known when prepared): the list follows the model's order in both execution modes.
    for mode in [
        pi_runtime::ToolExecution::Parallel,
        pi_runtime::ToolExecution::Sequential,
    ] {
        let counts = Arc::new(Counts::default());
        let model = Arc::new(ScriptedModel::new([calls(vec![
            call("c1", "settle", json!({"order": 7})),
            call("c2", "refund", json!({"order": 8})),
            call("c3", "refund", json!({"order": 9})),
        ])]));
        let mut stream = agent_loop(
            vec![Message::user("go")],
            context(&counts),
            AgentLoopConfig::new().tool_execution(mode),
            model,
            CancellationToken::new(),
        );
        let mut announced = None;
        while let Some(event) = stream.next_event().await {
            if let AgentEvent::RunPaused { waiting } = event {
                announced = Some(waiting);
            }
        }
        let ids = |waiting: &[pi_runtime::WaitingCall]| {
            waiting.iter().map(|w| w.id.clone()).collect::<Vec<_>>()
        };
        let state = stream.take_paused().expect("paused");
        assert_eq!(ids(state.waiting()), ["c1", "c2", "c3"], "{mode:?}");
        assert_eq!(
            ids(&announced.expect("RunPaused")),
            ["c1", "c2", "c3"],
            "{mode:?}"
        );
    }
}
