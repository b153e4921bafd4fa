//! pi's agent-loop test cases T1-T18 (`reference/pi.md` §5.2), our §5 additions (abort
//! checks, `max_parallel`, blocked `terminate`, `duration_ms`, panicking hooks) and dynamic tools.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, AgentLoopError, AssistantContent, AssistantEvent,
    AssistantMessage, BeforeToolCall, CustomMessage, FnModel, Message, ScriptedModel,
    ScriptedStreaming, StopReason, ToolExecution, agent_loop, agent_loop_continue,
};
use pi_tool::{CancellationToken, ExecutionMode, ToolError, ToolRegistry, ToolResult};
use serde_json::{Value, json};

fn scripted(responses: Vec<AssistantMessage>) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::recording(responses))
}

fn custom(kind: &str) -> Message {
    Message::Custom(CustomMessage::new(kind, json!({"text": "hello"})).with_timestamp(0))
}

#[tokio::test]
async fn t01_events_of_a_text_reply() {
    let model = scripted(vec![text("Hi there")]);
    let events = run(
        AgentContext::new("sys"),
        AgentLoopConfig::new(),
        model.clone(),
    )
    .await;
    assert_eq!(
        trace_str(&events),
        format!("{E}\nturn_end []\nagent_end [user,assistant]")
    );
    let request = &model.requests()[0];
    assert_eq!(request.system_prompt, "sys");
    assert_eq!(request.roles(), ["user"]);
}

#[tokio::test]
async fn t02_convert_to_llm_filters_custom_messages() {
    let model = scripted(vec![text("ok")]);
    let config = AgentLoopConfig::new().convert_to_llm(|messages| async move {
        messages
            .into_iter()
            .filter(|m| !matches!(**m, Message::Custom(_)))
            .collect()
    });
    let context = AgentContext::new("").with_messages([custom("notification")]);
    run(context, config, model.clone()).await;
    assert_eq!(model.requests()[0].roles(), ["user"]);
}

#[tokio::test]
async fn t03_transform_context_runs_before_convert_to_llm() {
    let model = scripted(vec![text("ok")]);
    let converted = Arc::new(AtomicUsize::new(0));
    let seen = converted.clone();
    let config = AgentLoopConfig::new()
        .transform_context(|messages, _signal| async move {
            let keep = messages.len().saturating_sub(2);
            messages[keep..].to_vec()
        })
        .convert_to_llm(move |messages| {
            seen.store(messages.len(), Ordering::SeqCst);
            async move { messages }
        });
    let context = AgentContext::new("").with_messages([
        Message::user("1"),
        Message::Assistant(text("2")),
        Message::user("3"),
        Message::Assistant(text("4")),
    ]);
    run(context, config, model.clone()).await;
    assert_eq!(converted.load(Ordering::SeqCst), 2);
    assert_eq!(model.requests()[0].roles(), ["assistant", "user"]);
}

#[tokio::test]
async fn t04_tool_calls_and_results() {
    let model = scripted(vec![echo_call("tool-1", "hello"), text("done")]);
    let events = run(echo_tools(), AgentLoopConfig::new(), model.clone()).await;
    assert_eq!(
        ends(&events),
        vec![("tool-1".into(), false, "echoed: hello".into())]
    );
    let last = new_messages(&events).last().cloned().unwrap();
    assert_eq!(last.as_assistant().unwrap().text(), "done");
    let result = &results(&events)[0];
    assert_eq!(
        (result.tool_name.as_str(), result.tool_call_id.as_str()),
        ("echo", "tool-1")
    );
    assert!(result.duration_ms.is_some());
}

#[tokio::test]
async fn t05_replaced_arguments_are_not_revalidated() {
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = received.clone();
    let tool = FnTool::value("echo", move |args, _| {
        log.lock().unwrap().push(args["value"].clone());
        async { Ok(ToolResult::text("ok")) }
    });
    let config = AgentLoopConfig::new()
        .before_tool_call(|_| async { Ok(BeforeToolCall::replace_args(json!({"value": 123}))) });
    let model = scripted(vec![echo_call("t1", "hello"), text("done")]);
    run(AgentContext::new("").with_tool(tool), config, model).await;
    assert_eq!(*received.lock().unwrap(), vec![json!(123)]);
}

#[tokio::test]
async fn t06_prepare_arguments_folds_a_legacy_shape() {
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = received.clone();
    let schema = json!({
        "type": "object",
        "properties": {"edits": {"type": "array", "items": {
            "type": "object",
            "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
            "required": ["oldText", "newText"]
        }}},
        "required": ["edits"]
    });
    let tool = FnTool::new("edit", schema, move |args, _| {
        log.lock().unwrap().push(args["edits"].clone());
        async { Ok(ToolResult::text("edited")) }
    })
    .prepare(|mut args| {
        if let (Some(old), Some(new)) = (args.get("oldText").cloned(), args.get("newText").cloned())
        {
            args = json!({"edits": [{"oldText": old, "newText": new}]});
        }
        Ok(args)
    });
    let model = scripted(vec![
        calls(vec![call(
            "t1",
            "edit",
            json!({"oldText": "before", "newText": "after"}),
        )]),
        text("done"),
    ]);
    run(
        AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new(),
        model,
    )
    .await;
    assert_eq!(
        *received.lock().unwrap(),
        vec![json!([{"oldText": "before", "newText": "after"}])]
    );
}

#[tokio::test(start_paused = true)]
async fn t07_ends_in_completion_order_results_in_source_order() {
    let overlap = Arc::new(Overlap::default());
    let slow = sleeper("slow", 20, overlap.clone());
    let fast = sleeper("fast", 1, overlap.clone());
    let model = scripted(vec![
        calls(vec![
            call("tool-1", "slow", json!({"value": "a"})),
            call("tool-2", "fast", json!({"value": "b"})),
        ]),
        text("done"),
    ]);
    let events = run(
        AgentContext::new("").with_tools([slow.arc(), fast.arc()]),
        AgentLoopConfig::new(),
        model,
    )
    .await;
    let end_order: Vec<String> = ends(&events).into_iter().map(|(id, ..)| id).collect();
    assert_eq!(end_order, ["tool-2", "tool-1"]);
    let message_ends: Vec<String> = trace(&events)
        .into_iter()
        .filter(|line| line.starts_with("message_end toolResult"))
        .collect();
    assert_eq!(
        message_ends,
        [
            "message_end toolResult(tool-1)",
            "message_end toolResult(tool-2)"
        ]
    );
    assert!(trace(&events).contains(&"turn_end [tool-1,tool-2]".to_owned()));
    assert_eq!(overlap.max(), 2, "the calls ran in parallel");
}

#[tokio::test]
async fn t08_steering_is_injected_after_the_whole_batch() {
    let executions: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = executions.clone();
    let tool = FnTool::value("echo", move |args, _| {
        log.lock()
            .unwrap()
            .push(args["value"].as_str().unwrap_or_default().to_owned());
        async { Ok(ToolResult::text("ok")) }
    });
    let done = executions.clone();
    let delivered = Arc::new(AtomicUsize::new(0));
    let config = AgentLoopConfig::new()
        .tool_execution(ToolExecution::Sequential)
        .steering(move || {
            let ready =
                !done.lock().unwrap().is_empty() && delivered.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                if ready {
                    vec![Message::user("interrupt")]
                } else {
                    Vec::new()
                }
            }
        });
    let model = scripted(vec![
        calls(vec![
            call("t1", "echo", json!({"value": "first"})),
            call("t2", "echo", json!({"value": "second"})),
        ]),
        text("done"),
    ]);
    let events = run(AgentContext::new("").with_tool(tool), config, model.clone()).await;
    assert_eq!(*executions.lock().unwrap(), ["first", "second"]);
    assert!(ends(&events).iter().all(|(_, is_error, _)| !is_error));
    let trace = trace(&events);
    let position = |line: &str| trace.iter().position(|l| l == line).unwrap();
    assert!(position("message_start user(interrupt)") > position("message_start toolResult(t2)"));
    assert!(position("message_start toolResult(t2)") > position("message_start toolResult(t1)"));
    assert_eq!(model.requests()[1].roles().last(), Some(&"user"));
}

#[tokio::test(start_paused = true)]
async fn t09_sequential_tool_forces_a_sequential_batch() {
    let overlap = Arc::new(Overlap::default());
    let tool = sleeper("seq", 5, overlap.clone()).mode(ExecutionMode::Sequential);
    let model = scripted(vec![
        calls(vec![
            call("tool-1", "seq", json!({"value": "a"})),
            call("tool-2", "seq", json!({"value": "b"})),
        ]),
        text("done"),
    ]);
    let events = run(
        AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new(),
        model,
    )
    .await;
    assert_eq!(overlap.max(), 1);
    let ids: Vec<String> = results(&events)
        .into_iter()
        .map(|r| r.tool_call_id)
        .collect();
    assert_eq!(ids, ["tool-1", "tool-2"]);
}

#[tokio::test(start_paused = true)]
async fn t10_one_sequential_tool_makes_the_mixed_batch_sequential() {
    let overlap = Arc::new(Overlap::default());
    let slow = sleeper("slow", 20, overlap.clone()).mode(ExecutionMode::Sequential);
    let fast = sleeper("fast", 1, overlap.clone()).mode(ExecutionMode::Parallel);
    let model = scripted(vec![
        calls(vec![
            call("t1", "slow", json!({"value": "a"})),
            call("t2", "fast", json!({"value": "b"})),
        ]),
        text("done"),
    ]);
    run(
        AgentContext::new("").with_tools([slow.arc(), fast.arc()]),
        AgentLoopConfig::new(),
        model,
    )
    .await;
    assert_eq!(overlap.order().first().map(String::as_str), Some("slow:a"));
    assert_eq!(overlap.max(), 1);
}

#[tokio::test(start_paused = true)]
async fn t11_parallel_tools_overlap() {
    let overlap = Arc::new(Overlap::default());
    let tool = sleeper("par", 5, overlap.clone()).mode(ExecutionMode::Parallel);
    let model = scripted(vec![
        calls(vec![
            call("t1", "par", json!({"value": "a"})),
            call("t2", "par", json!({"value": "b"})),
        ]),
        text("done"),
    ]);
    run(
        AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new(),
        model,
    )
    .await;
    assert_eq!(overlap.max(), 2);
}

#[tokio::test]
async fn t12_should_stop_after_turn_skips_the_queues() {
    let steering_polls = Arc::new(AtomicUsize::new(0));
    let follow_polls = Arc::new(AtomicUsize::new(0));
    let (s, f) = (steering_polls.clone(), follow_polls.clone());
    let stop_seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = stop_seen.clone();
    let config = AgentLoopConfig::new()
        .steering(move || {
            s.fetch_add(1, Ordering::SeqCst);
            async { Vec::new() }
        })
        .follow_up(move || {
            f.fetch_add(1, Ordering::SeqCst);
            async { Vec::new() }
        })
        .should_stop_after_turn(move |ctx| {
            let ids = ctx
                .tool_results
                .iter()
                .filter_map(|m| m.as_tool_result())
                .map(|r| r.tool_call_id.clone());
            log.lock().unwrap().extend(ids);
            let roles: Vec<&str> = ctx.messages.iter().map(|m| m.role()).collect();
            assert_eq!(roles, ["user", "assistant", "toolResult"]);
            async { true }
        });
    let model = scripted(vec![echo_call("tool-1", "hello"), text("never")]);
    let events = run(echo_tools(), config, model.clone()).await;
    assert_eq!(model.calls(), 1);
    assert_eq!(steering_polls.load(Ordering::SeqCst), 1);
    assert_eq!(follow_polls.load(Ordering::SeqCst), 0);
    assert_eq!(*stop_seen.lock().unwrap(), ["tool-1"]);
    let kinds: Vec<&str> = events.iter().map(AgentEvent::kind).collect();
    assert_eq!(
        kinds,
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
}

#[tokio::test]
async fn t13_terminate_on_every_result_stops() {
    let tool = FnTool::value("done", |_, _| async {
        Ok(ToolResult::text("bye").with_terminate(true))
    });
    let model = scripted(vec![
        calls(vec![call("t1", "done", json!({"value": "x"}))]),
        text("never"),
    ]);
    let events = run(
        AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new(),
        model.clone(),
    )
    .await;
    assert_eq!(model.calls(), 1);
    let roles: Vec<&str> = new_messages(&events).iter().map(|m| m.role()).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult"]);
    assert_eq!(events.iter().filter(|e| e.kind() == "turn_end").count(), 1);
}

#[tokio::test]
async fn t14_partial_terminate_continues() {
    let tool = FnTool::value("maybe", |args, _| async move {
        Ok(ToolResult::text("ok").with_terminate(args["value"] == "first"))
    });
    let model = scripted(vec![
        calls(vec![
            call("t1", "maybe", json!({"value": "first"})),
            call("t2", "maybe", json!({"value": "second"})),
        ]),
        text("done"),
    ]);
    let events = run(
        AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new(),
        model.clone(),
    )
    .await;
    assert_eq!(model.calls(), 2);
    let roles: Vec<&str> = new_messages(&events).iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "toolResult", "assistant"]
    );
}

#[tokio::test]
async fn t15_after_tool_call_can_terminate() {
    let config = AgentLoopConfig::new()
        .after_tool_call(|_| async { Ok(pi_runtime::AfterToolCall::keep().terminate(true)) });
    let model = scripted(vec![echo_call("t1", "x"), text("never")]);
    run(echo_tools(), config, model.clone()).await;
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn t16_continue_needs_messages() {
    let model = scripted(vec![]);
    let err = agent_loop_continue(
        AgentContext::new(""),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    )
    .unwrap_err();
    assert_eq!(err, AgentLoopError::NoMessages);
    assert_eq!(err.to_string(), "Cannot continue: no messages in context");
}

#[tokio::test]
async fn t16_continue_refuses_an_assistant_tail() {
    let context = AgentContext::new("")
        .with_messages([Message::user("hi"), Message::Assistant(text("hello"))]);
    let err = agent_loop_continue(
        context,
        AgentLoopConfig::new(),
        scripted(vec![]),
        CancellationToken::new(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Cannot continue from message role: assistant"
    );
}

#[tokio::test]
async fn t17_continue_emits_no_prompt_events() {
    let model = scripted(vec![text("answer")]);
    let context = AgentContext::new("").with_messages([Message::user("question")]);
    let stream = agent_loop_continue(
        context,
        AgentLoopConfig::new(),
        model.clone(),
        CancellationToken::new(),
    )
    .unwrap();
    let events = collect(stream).await;
    assert_eq!(
        trace_str(&events),
        "agent_start\nturn_start\nmessage_start assistant\nmessage_end assistant\nturn_end []\nagent_end [assistant]"
    );
    assert_eq!(
        events.iter().filter(|e| e.kind() == "message_end").count(),
        1
    );
    assert_eq!(model.requests()[0].roles(), ["user"]);
}

#[tokio::test]
async fn t18_custom_last_message_is_the_callers_business() {
    let model = scripted(vec![text("answer")]);
    let config = AgentLoopConfig::new().convert_to_llm(|messages| async move {
        messages
            .into_iter()
            .map(|m| match &*m {
                Message::Custom(c) => {
                    Arc::new(Message::user(c.data["text"].as_str().unwrap_or_default()))
                }
                _ => m,
            })
            .collect()
    });
    let context = AgentContext::new("").with_messages([custom("note")]);
    let stream =
        agent_loop_continue(context, config, model.clone(), CancellationToken::new()).unwrap();
    let events = collect(stream).await;
    let roles: Vec<&str> = new_messages(&events).iter().map(|m| m.role()).collect();
    assert_eq!(roles, ["assistant"]);
    assert_eq!(model.requests()[0].roles(), ["user"]);
}

#[tokio::test]
async fn messages_returns_the_new_messages() {
    let model = scripted(vec![echo_call("t1", "x"), text("done")]);
    let stream = agent_loop(
        vec![Message::user("go")],
        echo_tools(),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    );
    let roles: Vec<&str> = stream.messages().await.iter().map(|m| m.role()).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
}

#[tokio::test]
async fn lockstep_stream_gives_the_same_events() {
    let start = |model| {
        agent_loop(
            vec![Message::user("go")],
            echo_tools(),
            AgentLoopConfig::new(),
            model,
            CancellationToken::new(),
        )
    };
    let lockstep =
        collect(start(scripted(vec![echo_call("t1", "x"), text("done")])).lockstep()).await;
    let read_ahead =
        collect(start(scripted(vec![echo_call("t1", "x"), text("done")])).read_ahead(1000)).await;
    assert_eq!(trace(&lockstep), trace(&read_ahead));
    assert_eq!(
        trace(&lockstep).last().unwrap(),
        "agent_end [user,assistant,toolResult(t1),assistant]"
    );
}

#[tokio::test]
async fn streamed_deltas_become_message_updates() {
    let message = AssistantMessage::new(
        vec![
            AssistantContent::thinking("hmm"),
            AssistantContent::text("Hello world"),
            call("t1", "echo", json!({"value": "x"})),
        ],
        StopReason::ToolUse,
    );
    let model = Arc::new(
        ScriptedModel::recording([message.clone(), text("done")])
            .streaming(ScriptedStreaming::Deltas),
    );
    let events = run(echo_tools(), AgentLoopConfig::new(), model).await;
    // Rebuild the message from the start and the updates, as a UI would.
    let mut rebuilt = AssistantMessage::empty();
    for event in &events {
        match event {
            AgentEvent::MessageStart { message } if message.as_assistant().is_some() => {
                rebuilt = message.as_assistant().unwrap().clone();
            }
            AgentEvent::MessageUpdate { event } => rebuilt.apply(event),
            AgentEvent::MessageEnd { message } if message.as_assistant().is_some() => break,
            _ => {}
        }
    }
    assert_eq!(rebuilt.content, message.content);
    let updates = events
        .iter()
        .filter(|e| e.kind() == "message_update")
        .count();
    // Start, two deltas and end per block: three blocks, then the final text's block.
    assert_eq!(updates, 3 * 4 + 4);
    assert!(events.iter().any(|e| matches!(e, AgentEvent::MessageUpdate { event } if matches!(**event, AssistantEvent::TextDelta { .. }))));
}

#[tokio::test]
async fn an_exhausted_script_ends_the_run_with_an_error() {
    let model = scripted(vec![echo_call("t1", "x")]);
    let events = run(echo_tools(), AgentLoopConfig::new(), model).await;
    let last = new_messages(&events).last().cloned().unwrap();
    let last = last.as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(
        last.error_message.as_deref(),
        Some(pi_runtime::SCRIPT_EXHAUSTED)
    );
}

#[tokio::test]
async fn abort_before_the_batch_skips_every_call() {
    let signal = CancellationToken::new();
    let executed = Arc::new(AtomicUsize::new(0));
    let counter = executed.clone();
    let tool = FnTool::value("echo", move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolResult::text("ran")) }
    });
    // The user aborts while the model answers; the model ignores the signal.
    let aborter = signal.clone();
    let model = Arc::new(FnModel::new(move |_| {
        aborter.cancel();
        async {
            calls(vec![
                call("t1", "echo", json!({"value": "a"})),
                call("t2", "echo", json!({"value": "b"})),
            ])
        }
    }));
    let stream = agent_loop(
        vec![Message::user("go")],
        AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new(),
        model.clone(),
        signal,
    );
    let events = collect(stream).await;
    assert_eq!(executed.load(Ordering::SeqCst), 0);
    assert_eq!(
        ends(&events),
        vec![
            ("t1".into(), true, "Operation aborted".into()),
            ("t2".into(), true, "Operation aborted".into())
        ]
    );
    // The loop does not ask the model again once aborted: it ends with an aborted message.
    assert_eq!(model.calls(), 1);
    let last = new_messages(&events).last().cloned().unwrap();
    assert_eq!(
        last.as_assistant().unwrap().stop_reason,
        StopReason::Aborted
    );
}

#[tokio::test]
async fn abort_in_before_tool_call_runs_no_tool() {
    let signal = CancellationToken::new();
    let executed = Arc::new(AtomicUsize::new(0));
    let counter = executed.clone();
    let tool = FnTool::value("echo", move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolResult::text("ran")) }
    });
    let config = AgentLoopConfig::new().before_tool_call(|ctx| async move {
        ctx.signal.cancel();
        Ok(BeforeToolCall::allow())
    });
    let model = scripted(vec![echo_call("t1", "x"), text("never")]);
    let stream = agent_loop(
        vec![Message::user("go")],
        AgentContext::new("").with_tool(tool),
        config,
        model,
        signal,
    );
    let events = collect(stream).await;
    assert_eq!(executed.load(Ordering::SeqCst), 0);
    assert_eq!(
        ends(&events),
        vec![("t1".into(), true, "Operation aborted".into())]
    );
}

/// One batch of calls `t1`, `t2`, ... of a tool `work` that logs its `value` and cancels the
/// run as it runs: the values that ran, the calls' ends, and how many times the model was asked.
async fn a_batch_whose_tool_aborts(
    config: AgentLoopConfig,
    values: &[&str],
) -> (Vec<String>, Vec<(String, bool, String)>, usize) {
    let signal = CancellationToken::new();
    let executed: Arc<Mutex<Vec<String>>> = Arc::default();
    let (log, aborter) = (executed.clone(), signal.clone());
    let tool = FnTool::value("work", move |args, _| {
        log.lock()
            .unwrap()
            .push(args["value"].as_str().unwrap_or_default().to_owned());
        aborter.cancel();
        async { Ok(ToolResult::text("done")) }
    });
    let batch = values
        .iter()
        .enumerate()
        .map(|(i, value)| call(&format!("t{}", i + 1), "work", json!({ "value": value })))
        .collect();
    let model = scripted(vec![calls(batch), text("never")]);
    let stream = agent_loop(
        vec![Message::user("go")],
        AgentContext::new("").with_tool(tool),
        config,
        model.clone(),
        signal,
    );
    let events = collect(stream).await;
    let executed = executed.lock().unwrap().clone();
    (executed, ends(&events), model.calls())
}

#[tokio::test]
async fn a_sequential_batch_stops_after_an_abort() {
    let config = AgentLoopConfig::new().tool_execution(ToolExecution::Sequential);
    let (executed, ends, model_calls) = a_batch_whose_tool_aborts(config, &["a", "b"]).await;
    assert_eq!(executed, ["a"]);
    assert_eq!(
        ends,
        vec![
            ("t1".into(), false, "done".into()),
            ("t2".into(), true, "Operation aborted".into())
        ]
    );
    assert_eq!(model_calls, 1);
}

#[tokio::test]
async fn a_parallel_batch_starts_no_call_after_a_tool_aborted_the_run() {
    // The first call's tool cancels the run's signal as it runs: the calls after it were
    // prepared already, and none of them starts (the loop asks the signal before each start).
    let (executed, ends, model_calls) =
        a_batch_whose_tool_aborts(AgentLoopConfig::new(), &["a", "b", "c"]).await;
    assert_eq!(executed, ["a"]);
    assert_eq!(
        ends,
        vec![
            ("t1".into(), false, "done".into()),
            ("t2".into(), true, "Operation aborted".into()),
            ("t3".into(), true, "Operation aborted".into())
        ]
    );
    assert_eq!(model_calls, 1);
}

#[tokio::test(start_paused = true)]
async fn max_parallel_caps_concurrency() {
    let overlap = Arc::new(Overlap::default());
    let tool = sleeper("work", 10, overlap.clone());
    let batch = (0..6)
        .map(|i| call(&format!("t{i}"), "work", json!({"value": i.to_string()})))
        .collect();
    let model = scripted(vec![calls(batch), text("done")]);
    let events = run(
        AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new().max_parallel(2),
        model,
    )
    .await;
    assert_eq!(overlap.max(), 2);
    let ids: Vec<String> = results(&events)
        .into_iter()
        .map(|r| r.tool_call_id)
        .collect();
    assert_eq!(ids, ["t0", "t1", "t2", "t3", "t4", "t5"]);
}

#[tokio::test]
async fn a_blocked_call_can_terminate_the_batch() {
    let config = AgentLoopConfig::new().before_tool_call(|_| async {
        Ok(BeforeToolCall::block("denied by the user").with_terminate(true))
    });
    let model = scripted(vec![echo_call("t1", "x"), text("never")]);
    let events = run(echo_tools(), config, model.clone()).await;
    assert_eq!(
        ends(&events),
        vec![("t1".into(), true, "denied by the user".into())]
    );
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn panicking_hooks_become_error_results() {
    let config = AgentLoopConfig::new().before_tool_call(|ctx| async move {
        if ctx.tool_call.id == "t1" {
            panic!("policy bug");
        }
        Ok(BeforeToolCall::allow())
    });
    let config = config.after_tool_call(|_| async { panic!("redactor bug") });
    let model = scripted(vec![
        calls(vec![
            call("t1", "echo", json!({"value": "a"})),
            call("t2", "echo", json!({"value": "b"})),
        ]),
        text("done"),
    ]);
    let events = run(echo_tools(), config, model.clone()).await;
    assert_eq!(
        ends(&events),
        vec![
            (
                "t1".into(),
                true,
                "before_tool_call panicked: policy bug".into()
            ),
            (
                "t2".into(),
                true,
                "after_tool_call panicked: redactor bug".into()
            )
        ]
    );
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn a_panicking_model_ends_the_run_with_an_error_message() {
    let model = Arc::new(FnModel::new(|_| async { panic!("provider bug") }));
    let events = run(echo_tools(), AgentLoopConfig::new(), model).await;
    let last = new_messages(&events).last().cloned().unwrap();
    let last = last.as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(
        last.error_message.as_deref(),
        Some("the model panicked: provider bug")
    );
    assert_eq!(
        trace(&events).last().unwrap(),
        "agent_end [user,assistant(error)]"
    );
}

/// Unlock the vault.
#[pi_tool::tool]
async fn unlock() -> ToolResult {
    ToolResult::text("unlocked").with_added_tools(["open_vault"])
}

/// Open the vault.
#[pi_tool::tool]
async fn open_vault() -> String {
    "gold".to_owned()
}

#[tokio::test]
async fn added_tool_names_activate_tools_for_the_next_turn() {
    let available = ToolRegistry::new().with(UnlockTool).with(OpenVaultTool);
    let context = AgentContext::new("")
        .with_available(available)
        .with_tool(UnlockTool);
    let model = scripted(vec![
        calls(vec![call("t1", "unlock", json!({}))]),
        calls(vec![call("t2", "open_vault", json!({}))]),
        text("done"),
    ]);
    let events = run(context, AgentLoopConfig::new(), model.clone()).await;
    let requests = model.requests();
    assert_eq!(requests[0].tool_names(), ["unlock"]);
    assert_eq!(requests[1].tool_names(), ["unlock", "open_vault"]);
    assert_eq!(ends(&events)[1], ("t2".into(), false, "gold".into()));
}

#[tokio::test]
async fn registry_state_reaches_state_parameters() {
    struct Prefix(&'static str);
    /// Greets with the shared prefix.
    #[pi_tool::tool]
    async fn greet(name: String, prefix: pi_tool::State<Prefix>) -> String {
        format!("{} {name}", prefix.0)
    }
    let context = AgentContext::new("").with_registry(
        ToolRegistry::new()
            .with(GreetTool)
            .with_state(Prefix("Hello")),
    );
    let model = scripted(vec![
        calls(vec![call("t1", "greet", json!({"name": "Ada"}))]),
        text("done"),
    ]);
    let events = run(context, AgentLoopConfig::new(), model).await;
    assert_eq!(ends(&events)[0].2, "Hello Ada");
}

#[tokio::test]
async fn the_api_key_hook_runs_before_every_request() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let config = AgentLoopConfig::new().api_key(move |provider| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Some(format!("key-for-{provider}")) }
    });
    let model = scripted(vec![echo_call("t1", "x"), text("done")]);
    run(echo_tools(), config, model.clone()).await;
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    assert!(
        model
            .requests()
            .iter()
            .all(|r| r.api_key.as_deref() == Some("key-for-scripted"))
    );
}

#[tokio::test]
async fn state_nobody_provided_ends_the_run_before_any_call() {
    struct Missing;
    /// Needs state nobody provided.
    #[pi_tool::tool]
    async fn needs_state(db: pi_tool::State<Missing>) -> String {
        let _ = &*db;
        "never".to_owned()
    }
    let model = scripted(vec![
        calls(vec![call("t1", "needs_state", json!({}))]),
        text("done"),
    ]);
    let events = run(
        AgentContext::new("").with_tool(NeedsStateTool),
        AgentLoopConfig::new(),
        model.clone(),
    )
    .await;
    // Reported before the first call (and before the model is asked), naming tool and type.
    assert!(ends(&events).is_empty());
    assert!(model.requests().is_empty());
    let Some(AgentEvent::AgentEnd { messages }) = events.last() else {
        panic!("no agent_end");
    };
    let answer = messages.last().unwrap().as_assistant().unwrap();
    let error = answer.error_message.as_deref().unwrap_or_default();
    assert!(
        error.contains("`needs_state`") && error.contains("Missing"),
        "{error}"
    );
    let _ = ToolError::new("unused");
}

/// A tool that aborts the run, then never finishes (it ignores the signal).
fn stubborn(signal: CancellationToken) -> FnTool {
    FnTool::value("stubborn", move |_, _| {
        let signal = signal.clone();
        async move {
            signal.cancel();
            std::future::pending::<()>().await;
            Ok(ToolResult::text("never"))
        }
    })
}

#[tokio::test]
async fn an_abort_stops_waiting_for_a_parallel_tool_that_ignores_it() {
    let signal = CancellationToken::new();
    let sleepy = FnTool::value("sleepy", |_, _| async {
        tokio::task::yield_now().await;
        std::future::pending::<()>().await;
        Ok(ToolResult::text("never"))
    });
    let context = AgentContext::new("").with_tools([stubborn(signal.clone()).arc(), sleepy.arc()]);
    let model = scripted(vec![
        calls(vec![
            call("t1", "sleepy", json!({"value": "a"})),
            call("t2", "stubborn", json!({"value": "b"})),
            call("t3", "echo", json!({"value": "c"})),
        ]),
        text("never"),
    ]);
    let context = context.with_tool(EchoTool);
    let stream = agent_loop(
        vec![Message::user("go")],
        context,
        AgentLoopConfig::new().abort_grace(std::time::Duration::from_millis(20)),
        model,
        signal,
    );
    let events = collect(stream).await;
    let results: Vec<(String, bool, String)> = results(&events)
        .into_iter()
        .map(|r| (r.tool_call_id.clone(), r.is_error, r.text()))
        .collect();
    assert_eq!(
        results,
        vec![
            ("t1".into(), true, "Operation aborted".into()),
            ("t2".into(), true, "Operation aborted".into()),
            // Checked before it runs: the run was aborted by then.
            ("t3".into(), true, "Operation aborted".into()),
        ]
    );
    let last = new_messages(&events).last().cloned().unwrap();
    assert_eq!(
        last.as_assistant().unwrap().stop_reason,
        StopReason::Aborted
    );
}

#[tokio::test]
async fn an_abort_stops_waiting_for_a_sequential_tool_that_ignores_it() {
    let signal = CancellationToken::new();
    let context =
        AgentContext::new("").with_tool(stubborn(signal.clone()).mode(ExecutionMode::Sequential));
    let model = scripted(vec![
        calls(vec![
            call("t1", "stubborn", json!({"value": "a"})),
            call("t2", "stubborn", json!({"value": "b"})),
        ]),
        text("never"),
    ]);
    let stream = agent_loop(
        vec![Message::user("go")],
        context,
        AgentLoopConfig::new().abort_grace(std::time::Duration::ZERO),
        model,
        signal,
    );
    let events = collect(stream).await;
    assert_eq!(
        ends(&events),
        vec![
            ("t1".into(), true, "Operation aborted".into()),
            ("t2".into(), true, "Operation aborted".into())
        ]
    );
}

#[tokio::test]
async fn messages_serialize_with_pis_json_shapes() {
    let model = scripted(vec![echo_call("t1", "x"), text("done")]);
    let events = run(echo_tools(), AgentLoopConfig::new(), model).await;
    let messages = new_messages(&events);
    let mut assistant = serde_json::to_value(&*messages[1]).unwrap();
    assistant["timestamp"] = json!(0);
    assert_eq!(
        assistant,
        json!({
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "t1", "name": "echo", "arguments": {"value": "x"}}],
            "api": "scripted", "provider": "scripted", "model": "scripted-1",
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                      "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
            "stopReason": "toolUse",
            "timestamp": 0
        })
    );
    let mut result = serde_json::to_value(&*messages[2]).unwrap();
    assert!(result["timestamp"].as_i64().unwrap() > 0);
    result["timestamp"] = json!(0);
    result["durationMs"] = json!(0);
    assert_eq!(
        result,
        json!({
            "role": "toolResult",
            "toolCallId": "t1",
            "toolName": "echo",
            "content": [{"type": "text", "text": "echoed: x"}],
            "details": null,
            "isError": false,
            "durationMs": 0,
            "timestamp": 0
        })
    );
    // And back.
    let parsed: Message = serde_json::from_value(result).unwrap();
    assert_eq!(parsed.as_tool_result().unwrap().text(), "echoed: x");
}

#[tokio::test]
async fn a_tool_that_takes_a_moment_to_abort_answers_for_itself() {
    for mode in [ToolExecution::Parallel, ToolExecution::Sequential] {
        let signal = CancellationToken::new();
        let aborter = signal.clone();
        // Like a shell: on abort it kills its process, which takes a few milliseconds.
        let shell = FnTool::value("shell", move |_, ctx| {
            let aborter = aborter.clone();
            async move {
                aborter.cancel();
                ctx.signal().cancelled().await;
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                Err(ToolError::new("partial output\n\nCommand aborted"))
            }
        });
        let model = scripted(vec![
            calls(vec![call("t1", "shell", json!({"value": "x"}))]),
            text("never"),
        ]);
        let context = AgentContext::new("").with_tool(shell);
        let config = AgentLoopConfig::new().tool_execution(mode);
        let stream = agent_loop(vec![Message::user("go")], context, config, model, signal);
        let events = collect(stream).await;
        let expected = (
            "t1".to_owned(),
            true,
            "partial output\n\nCommand aborted".to_owned(),
        );
        assert_eq!(ends(&events), vec![expected], "{mode:?}");
    }
}

/// The starts and ends of a batch's calls, in stream order (`start t1`, `end t1 Operation
/// aborted`, ..).
fn starts_and_ends(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolExecutionStart { call } => Some(format!("start {}", call.id())),
            AgentEvent::ToolExecutionEnd { call, result, .. } => Some(format!(
                "end {} {}",
                call.id(),
                result
                    .as_tool_result()
                    .map(|r| r.text())
                    .unwrap_or_default()
            )),
            _ => None,
        })
        .collect()
}

/// Both ways of aborting while t1 is prepared: t1 was checked before the abort and is answered
/// when it would start; t2 and t3 are answered at once, each end right after its start.
const ABORTED_AFTER_THE_FIRST_PREPARATION: [&str; 6] = [
    "start t1",
    "start t2",
    "end t2 Operation aborted",
    "start t3",
    "end t3 Operation aborted",
    "end t1 Operation aborted",
];

/// A parallel batch asks the run's signal once per stretch of preparations in which nothing
/// could have cancelled it: it asks again after the consumer's code ran (the loop paused for
/// it) and after a tool's own code ran in preparation (`prepare_arguments`), so a call
/// prepared after an abort is answered at once, its end right after its start.
#[tokio::test]
async fn a_parallel_batch_sees_an_abort_made_while_its_calls_are_prepared() {
    let executed = Arc::new(AtomicUsize::new(0));
    let plain = {
        let executed = Arc::clone(&executed);
        pi_tool::FnTool::builder("echo", "Echo.", value_schema())
            .build(move |_args: Value, _ctx| {
                executed.fetch_add(1, Ordering::SeqCst);
                async { "ran" }
            })
            .unwrap()
    };
    let batch = || {
        calls(vec![
            call("t1", "echo", json!({"value": "a"})),
            call("t2", "echo", json!({"value": "b"})),
            call("t3", "echo", json!({"value": "c"})),
        ])
    };

    // The consumer aborts when it sees the second start (lockstep: after t1 was prepared,
    // before t2 is). t1 is answered when it would start.
    let signal = CancellationToken::new();
    let mut stream = agent_loop(
        vec![Message::user("go")],
        AgentContext::new("").with_tool(plain),
        AgentLoopConfig::new(),
        scripted(vec![batch(), text("never")]),
        signal.clone(),
    )
    .lockstep();
    let mut events = Vec::new();
    while let Some(event) = stream.next_event().await {
        if let AgentEvent::ToolExecutionStart { call } = &event
            && call.id() == "t2"
        {
            signal.cancel();
        }
        events.push(event);
    }
    assert_eq!(executed.load(Ordering::SeqCst), 0);
    assert_eq!(
        starts_and_ends(&events),
        ABORTED_AFTER_THE_FIRST_PREPARATION
    );

    // The first call's `prepare_arguments` aborts (read-ahead: the consumer never runs in
    // between). t1 was checked before it and is answered when it would start; t2 and t3 at once.
    let signal = CancellationToken::new();
    let aborter = signal.clone();
    let executed = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&executed);
    let aborting = pi_tool::FnTool::builder("echo", "Echo.", value_schema())
        .prepare_arguments(move |args: Value| {
            if args["value"] == "a" {
                aborter.cancel();
            }
            Ok::<_, ToolError>(args)
        })
        .build(move |_args: Value, _ctx| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { "ran" }
        })
        .unwrap();
    let stream = agent_loop(
        vec![Message::user("go")],
        AgentContext::new("").with_tool(aborting),
        AgentLoopConfig::new(),
        scripted(vec![batch(), text("never")]),
        signal,
    );
    let events = collect(stream).await;
    assert_eq!(executed.load(Ordering::SeqCst), 0);
    assert_eq!(
        starts_and_ends(&events),
        ABORTED_AFTER_THE_FIRST_PREPARATION
    );
}

/// A parallel batch without hooks queues its calls' starts a stretch at a time, and still
/// pauses for the consumer at the same events as one at a time: with room for three events,
/// the consumer sees the first three starts before any tool ran, the rest (queued with the
/// first end, once every call was polled) after; one event at a time, every start before any
/// tool ran.
#[tokio::test]
async fn a_parallel_batch_pauses_for_the_consumer_at_the_same_events_whatever_it_queues_at_once() {
    for (read_ahead, seen) in [
        (
            3,
            [
                "0 start t1",
                "0 start t2",
                "0 start t3",
                "5 start t4",
                "5 start t5",
            ],
        ),
        (
            1,
            [
                "0 start t1",
                "0 start t2",
                "0 start t3",
                "0 start t4",
                "0 start t5",
            ],
        ),
    ] {
        let executed = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&executed);
        let echo = pi_tool::FnTool::builder("echo", "Echo.", value_schema())
            .build(move |_args: Value, _ctx| {
                counter.fetch_add(1, Ordering::SeqCst);
                async { "ran" }
            })
            .unwrap();
        let batch = calls(
            (1..=5)
                .map(|i| call(&format!("t{i}"), "echo", json!({"value": "x"})))
                .collect(),
        );
        let mut stream = agent_loop(
            vec![Message::user("go")],
            AgentContext::new("").with_tool(echo),
            AgentLoopConfig::new(),
            scripted(vec![batch, text("done")]),
            CancellationToken::new(),
        )
        .read_ahead(read_ahead);
        let mut starts = Vec::new();
        while let Some(event) = stream.next_event().await {
            if let AgentEvent::ToolExecutionStart { call } = &event {
                starts.push(format!(
                    "{} start {}",
                    executed.load(Ordering::SeqCst),
                    call.id()
                ));
            }
        }
        assert_eq!(starts, seen, "read_ahead {read_ahead}");
        assert_eq!(executed.load(Ordering::SeqCst), 5);
    }
}
