//! The loop at its borders (issue 8, items 1 and 2): a call the loop answers itself closes its
//! update channel, nothing follows `AgentEnd`, and a tool's signal is its own.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;
use pi_runtime::{
    Agent, AgentContext, AgentEvent, AgentLoopConfig, AgentStream, Message, ScriptedModel,
    StopReason, ToolExecution, agent_loop,
};
use pi_tool::{CancellationToken, ToolContext, ToolResult};
use serde_json::json;

/// Turns a hang into a failure with a message (the assertion is on termination, not on time).
const HANG: Duration = Duration::from_secs(30);

/// Stops the reporter threads a test started, so none outlives its test.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A tool that starts a thread reporting progress through a clone of its context until the
/// test ends, and itself ignores the abort forever.
fn leaky(stop: Arc<AtomicBool>) -> FnTool {
    FnTool::value("leaky", move |_, ctx: ToolContext| {
        let stop = Arc::clone(&stop);
        async move {
            let reporter = ctx.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    reporter.update(ToolResult::text("still here"));
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
            std::future::pending::<()>().await;
            Ok(ToolResult::text("never"))
        }
    })
}

/// Collects the events in lockstep, pausing after each one, so that a leftover reporter has
/// every chance to slip an update in between (a consumer that awaits work per event). With
/// `abort`, aborts the run once the first update of a call has arrived (so the run is aborted
/// while the reporter is known to be running, however slow the machine).
async fn collect_slowly(stream: AgentStream, abort: Option<CancellationToken>) -> Vec<AgentEvent> {
    let mut stream = stream.lockstep();
    let mut events = Vec::new();
    while let Some(event) = stream.next_event().await {
        if matches!(event, AgentEvent::ToolExecutionUpdate { .. })
            && let Some(abort) = &abort
        {
            abort.cancel();
        }
        events.push(event);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    events
}

/// The position of the first event matching `pred`.
fn position(events: &[AgentEvent], pred: impl Fn(&AgentEvent) -> bool) -> Option<usize> {
    events.iter().position(pred)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_answered_after_the_abort_grace_sends_no_more_updates() {
    for mode in [ToolExecution::Parallel, ToolExecution::Sequential] {
        let stop = Arc::new(AtomicBool::new(false));
        let _stop = StopOnDrop(Arc::clone(&stop));
        let signal = CancellationToken::new();
        let context = AgentContext::new("")
            .with_tool(leaky(stop))
            .with_tool(EchoTool);
        let model = Arc::new(ScriptedModel::recording([
            calls(vec![
                call("t1", "leaky", json!({"value": "a"})),
                call("t2", "echo", json!({"value": "b"})),
            ]),
            text("never"),
        ]));
        let config = AgentLoopConfig::new()
            .tool_execution(mode)
            .abort_grace(Duration::from_millis(10));
        let stream = agent_loop(
            vec![Message::user("go")],
            context,
            config,
            model,
            signal.clone(),
        );
        let events = tokio::time::timeout(HANG, collect_slowly(stream, Some(signal)))
            .await
            .unwrap_or_else(|_| panic!("{mode:?}: the stream did not end"));

        assert!(
            matches!(events.last(), Some(AgentEvent::AgentEnd { .. })),
            "{mode:?}: the last event is not agent_end"
        );
        let end_of_t1 = position(
            &events,
            |e| matches!(e, AgentEvent::ToolExecutionEnd { call, .. } if call.id() == "t1"),
        )
        .expect("t1 ends");
        let updates: Vec<usize> = events
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e, AgentEvent::ToolExecutionUpdate { call, .. } if call.id() == "t1"))
            .map(|(i, _)| i)
            .collect();
        assert!(!updates.is_empty(), "{mode:?}: the reporter sent nothing");
        assert!(
            updates.iter().all(|&i| i < end_of_t1),
            "{mode:?}: an update of t1 came after its tool_execution_end"
        );
        assert!(
            ends(&events).contains(&("t1".into(), true, "Operation aborted".into())),
            "{mode:?}"
        );
    }
}

/// A tool that hands its context to the test (which then sends an update each time it takes
/// an event, as a tool whose updates come faster than the consumer takes them), sends one
/// update itself, and answers once the run is aborted.
fn chatty(handed: Arc<std::sync::Mutex<Option<ToolContext>>>) -> FnTool {
    FnTool::value("chatty", move |_, ctx: ToolContext| {
        let handed = Arc::clone(&handed);
        async move {
            *handed.lock().unwrap() = Some(ctx.clone());
            ctx.update(ToolResult::text("started"));
            ctx.signal().cancelled().await;
            Ok(ToolResult::text("stopped"))
        }
    })
}

#[tokio::test]
async fn updates_queued_before_every_resume_do_not_starve_the_loop() {
    // In lockstep the loop waits for the consumer after each event, and a tool's update is
    // queued whenever the consumer takes one; the loop must still get its own events out
    // (here the end of `t2`, which finished at once). It used to wait for an empty queue.
    let handed = Arc::new(std::sync::Mutex::new(None::<ToolContext>));
    let signal = CancellationToken::new();
    let context = AgentContext::new("")
        .with_tool(chatty(Arc::clone(&handed)))
        .with_tool(EchoTool);
    let model = Arc::new(ScriptedModel::recording([
        calls(vec![
            call("t1", "chatty", json!({"value": "a"})),
            call("t2", "echo", json!({"value": "b"})),
        ]),
        text("never"),
    ]));
    let config = AgentLoopConfig::new().tool_execution(ToolExecution::Parallel);
    let mut stream = agent_loop(
        vec![Message::user("go")],
        context,
        config,
        model,
        signal.clone(),
    )
    .lockstep();
    let mut events = Vec::new();
    while let Some(event) = stream.next_event().await {
        if matches!(&event, AgentEvent::ToolExecutionEnd { call, .. } if call.id() == "t2") {
            signal.cancel();
        }
        events.push(event);
        let kinds: Vec<&str> = events.iter().take(12).map(AgentEvent::kind).collect();
        assert!(
            events.len() < 500,
            "the loop's own events never came: {kinds:?}"
        );
        if let Some(ctx) = handed.lock().unwrap().as_ref() {
            ctx.update(ToolResult::text("more"));
        }
    }
    assert!(matches!(events.last(), Some(AgentEvent::AgentEnd { .. })));
    let ended: Vec<String> = ends(&events).into_iter().map(|(id, ..)| id).collect();
    assert_eq!(ended, ["t2", "t1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_returns_while_a_leftover_task_keeps_reporting() {
    let stop = Arc::new(AtomicBool::new(false));
    let _stop = StopOnDrop(Arc::clone(&stop));
    let model = Arc::new(ScriptedModel::recording([
        calls(vec![call("t1", "leaky", json!({"value": "a"}))]),
        text("never"),
    ]));
    let agent = Agent::new(model)
        .with_config(AgentLoopConfig::new().abort_grace(Duration::from_millis(10)));
    agent.set_tool_list(vec![leaky(stop).arc()]);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let aborter = agent.clone();
    agent.subscribe(move |event, _| {
        let aborter = aborter.clone();
        let record = Arc::clone(&record);
        async move {
            // The first update proves the reporter runs: abort the run then.
            if matches!(event, AgentEvent::ToolExecutionUpdate { .. })
                && !record.lock().unwrap().contains(&"tool_execution_update")
            {
                aborter.abort();
            }
            record.lock().unwrap().push(event.kind());
            // A listener that takes a moment per event, as one that persists it would.
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    tokio::time::timeout(HANG, agent.prompt("go"))
        .await
        .expect("prompt() returned")
        .unwrap();
    let kinds = seen.lock().unwrap().clone();
    assert_eq!(kinds.last(), Some(&"agent_end"));
    let end = kinds
        .iter()
        .position(|k| *k == "tool_execution_end")
        .expect("the call ends");
    assert!(
        !kinds[end..].contains(&"tool_execution_update"),
        "{kinds:?}"
    );
    let last = agent.last_message().unwrap();
    assert_eq!(
        last.as_assistant().unwrap().stop_reason,
        StopReason::Aborted
    );
}

#[tokio::test]
async fn a_tool_cancelling_its_own_signal_stops_only_itself() {
    for mode in [ToolExecution::Parallel, ToolExecution::Sequential] {
        // Cancels its own signal, as a tool might to stop its helpers, and returns.
        let quitter = FnTool::value("quitter", |_, ctx| async move {
            ctx.signal().cancel();
            assert!(ctx.is_aborted());
            Ok(ToolResult::text("stopped my helpers"))
        });
        // Runs after (or alongside) it and reports whether it sees an abort.
        let witness = FnTool::value("witness", |_, ctx| async move {
            tokio::task::yield_now().await;
            let seen = format!(
                "aborted: {}, {}",
                ctx.is_aborted(),
                ctx.signal().is_cancelled()
            );
            Ok(ToolResult::text(seen))
        });
        let context = AgentContext::new("").with_tools([quitter.arc(), witness.arc()]);
        let model = Arc::new(ScriptedModel::recording([
            calls(vec![
                call("t1", "quitter", json!({"value": "a"})),
                call("t2", "witness", json!({"value": "b"})),
            ]),
            text("done"),
        ]));
        let config = AgentLoopConfig::new().tool_execution(mode);
        let signal = CancellationToken::new();
        let stream = agent_loop(
            vec![Message::user("go")],
            context,
            config,
            model.clone(),
            signal.clone(),
        );
        let events = collect(stream).await;
        let mut results = ends(&events);
        results.sort();
        assert_eq!(
            results,
            vec![
                ("t1".into(), false, "stopped my helpers".into()),
                ("t2".into(), false, "aborted: false, false".into()),
            ],
            "{mode:?}"
        );
        assert!(!signal.is_cancelled(), "{mode:?}: the run's signal");
        let last = new_messages(&events).last().cloned().unwrap();
        assert_eq!(
            last.as_assistant().unwrap().stop_reason,
            StopReason::Stop,
            "{mode:?}: the run went on to the next turn"
        );
        assert_eq!(model.calls(), 2, "{mode:?}");
    }
}

#[tokio::test]
async fn aborting_the_run_still_reaches_each_calls_own_signal() {
    let signal = CancellationToken::new();
    let aborter = signal.clone();
    let waiter = FnTool::value("waiter", move |_, ctx| {
        let aborter = aborter.clone();
        async move {
            aborter.cancel();
            ctx.signal().cancelled().await;
            Ok(ToolResult::text(format!(
                "saw the abort: {}",
                ctx.is_aborted()
            )))
        }
    });
    let context = AgentContext::new("").with_tool(waiter);
    let model = Arc::new(ScriptedModel::recording([
        calls(vec![call("t1", "waiter", json!({"value": "a"}))]),
        text("never"),
    ]));
    let stream = agent_loop(
        vec![Message::user("go")],
        context,
        AgentLoopConfig::new(),
        model,
        signal,
    );
    let events = tokio::time::timeout(HANG, collect(stream))
        .await
        .expect("the run ends");
    assert_eq!(
        ends(&events),
        vec![("t1".into(), false, "saw the abort: true".into())]
    );
}

/// Settings a tool reads as shared state.
struct Settings {
    unit: String,
}

/// Give the temperature.
#[pi_tool::tool]
async fn temperature(settings: pi_tool::State<Settings>) -> String {
    format!("21 {}", settings.unit)
}

#[tokio::test]
async fn a_run_whose_tool_lacks_its_state_stops_before_asking_the_model() {
    let model = Arc::new(ScriptedModel::recording([text("never")]));
    let context = AgentContext::new("").with_tool(TemperatureTool);
    let run = agent_loop(
        vec![Message::user("go")],
        context.clone(),
        AgentLoopConfig::new(),
        model.clone(),
        CancellationToken::new(),
    );
    let messages = tokio::time::timeout(HANG, run.messages()).await.unwrap();
    assert!(model.requests().is_empty(), "the model was asked");
    let answer = messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(answer.stop_reason, StopReason::Error);
    let error = answer.error_message.as_deref().unwrap();
    assert!(
        error.contains("`temperature`") && error.contains("loop_borders::Settings"),
        "{error}"
    );

    // With the state given, the same run asks the model.
    let context = context.with_state(Settings { unit: "C".into() });
    let run = agent_loop(
        vec![Message::user("go")],
        context,
        AgentLoopConfig::new(),
        model.clone(),
        CancellationToken::new(),
    );
    tokio::time::timeout(HANG, run.messages()).await.unwrap();
    assert_eq!(model.requests().len(), 1);
}

/// A tool that lacks its state and arrives mid-run (activated from the registry by a result's
/// `added_tool_names`) stops the run before the next request: the loop checks each tool added
/// to the set, not only those it started with (and not the whole set again every turn).
#[tokio::test]
async fn a_tool_activated_mid_run_that_lacks_its_state_stops_the_next_request() {
    let unlock = pi_tool::FnTool::builder(
        "unlock",
        "Unlock the thermometer.",
        json!({"type": "object"}),
    )
    .build(|_, _| async { ToolResult::text("unlocked").with_added_tools(["temperature"]) })
    .unwrap();
    let available = pi_tool::ToolRegistry::new()
        .with(unlock.clone())
        .with(TemperatureTool);
    let context = AgentContext::new("")
        .with_available(available)
        .with_tool(unlock);
    let model = Arc::new(ScriptedModel::recording([
        calls(vec![call("t1", "unlock", json!({}))]),
        text("never"),
    ]));
    let run = agent_loop(
        vec![Message::user("go")],
        context,
        AgentLoopConfig::new(),
        model.clone(),
        CancellationToken::new(),
    );
    let messages = tokio::time::timeout(HANG, run.messages()).await.unwrap();
    assert_eq!(model.requests().len(), 1, "the second request was made");
    let answer = messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(answer.stop_reason, StopReason::Error);
    let error = answer.error_message.as_deref().unwrap();
    assert!(
        error.contains("`temperature`") && error.contains("loop_borders::Settings"),
        "{error}"
    );
}
