//! pi's acceptance cases A1-A25 (`reference/pi.md` §5.3) against `agent_loop`, with our §5
//! fixes where they apply (A15 `length`, A25 late updates). Event order is asserted exactly.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use pi_runtime::{
    AfterToolCall, AgentLoopConfig, AssistantMessage, BeforeToolCall, FnModel, Message,
    ScriptedModel, StopReason, ToolExecution,
};
use pi_tool::{CancellationToken, Content, ExecutionMode, ToolError, ToolResult};
use serde_json::{Value, json};

fn scripted(responses: Vec<AssistantMessage>) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::recording(responses))
}

#[tokio::test]
async fn a01_single_call() {
    let model = scripted(vec![echo_call("t1", "hi"), text("done")]);
    let events = run(echo_tools(), AgentLoopConfig::new(), model.clone()).await;
    assert_eq!(
        trace_str(&events),
        format!(
            "{E}\ntool_execution_start t1\ntool_execution_end t1\nmessage_start toolResult(t1)\nmessage_end toolResult(t1)\n\
             turn_end [t1]\nturn_start\nmessage_start assistant\nmessage_end assistant\nturn_end []\n\
             agent_end [user,assistant,toolResult(t1),assistant]"
        )
    );
    assert_eq!(
        ends(&events),
        vec![("t1".into(), false, "echoed: hi".into())]
    );
    assert_eq!(model.calls(), 2);
    // The second request saw the result.
    assert_eq!(
        model.requests()[1].roles(),
        ["user", "assistant", "toolResult"]
    );
    assert_eq!(model.requests()[0].tool_names(), ["echo"]);
}

#[tokio::test]
async fn a02_unknown_tool() {
    let model = scripted(vec![
        calls(vec![call("t1", "nope", json!({}))]),
        text("done"),
    ]);
    let events = run(echo_tools(), AgentLoopConfig::new(), model.clone()).await;
    assert_eq!(
        ends(&events),
        vec![("t1".into(), true, "Tool nope not found".into())]
    );
    let results = results(&events);
    assert_eq!(results[0].text(), "Tool nope not found");
    assert!(results[0].is_error);
    assert_eq!(results[0].details, json!({}));
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn a02_unknown_tool_suggests_a_close_name() {
    let model = scripted(vec![
        calls(vec![call("t1", "ecko", json!({"value": "x"}))]),
        text("done"),
    ]);
    let events = run(echo_tools(), AgentLoopConfig::new(), model).await;
    assert_eq!(
        ends(&events)[0].2,
        "Tool ecko not found (did you mean \"echo\"?)"
    );
}

#[tokio::test]
async fn a03_missing_required_argument() {
    let executed = Arc::new(AtomicUsize::new(0));
    let counter = executed.clone();
    let tool = FnTool::value("echo", move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolResult::text("ran")) }
    });
    let model = scripted(vec![
        calls(vec![call("t1", "echo", json!({}))]),
        text("done"),
    ]);
    let context = pi_runtime::AgentContext::new("").with_tool(tool);
    let events = run(context, AgentLoopConfig::new(), model.clone()).await;
    assert_eq!(
        ends(&events)[0],
        (
            "t1".into(),
            true,
            "Validation failed for tool \"echo\":\n  - value: missing required property\n\nReceived arguments:\n{}".into()
        )
    );
    assert_eq!(executed.load(Ordering::SeqCst), 0);
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn a04_before_tool_call_blocks() {
    let model = scripted(vec![
        calls(vec![
            call("t1", "echo", json!({"value": "a"})),
            call("t2", "echo", json!({"value": "b"})),
        ]),
        text("done"),
    ]);
    let config = AgentLoopConfig::new().before_tool_call(|ctx| async move {
        Ok(if ctx.tool_call.id == "t1" {
            BeforeToolCall::block("nope by policy")
        } else {
            BeforeToolCall::block_silently()
        })
    });
    let events = run(echo_tools(), config, model).await;
    assert_eq!(
        trace(&events)[6..12].join("\n"),
        "tool_execution_start t1\ntool_execution_end t1\ntool_execution_start t2\ntool_execution_end t2\n\
         message_start toolResult(t1)\nmessage_end toolResult(t1)"
    );
    assert_eq!(
        ends(&events),
        vec![
            ("t1".into(), true, "nope by policy".into()),
            ("t2".into(), true, "Tool execution was blocked".into())
        ]
    );
}

#[tokio::test]
async fn a05_failing_tool_errors_and_panics() {
    let fails = FnTool::value("fails", |_, _| async { Err(ToolError::new("boom")) });
    let raw = FnTool::value("raw", |_, _| async { Err(ToolError::new("raw string")) });
    let panics = FnTool::value("panics", |_, _| async { panic!("kaboom") });
    let model = scripted(vec![
        calls(vec![
            call("t1", "fails", json!({"value": "x"})),
            call("t2", "raw", json!({"value": "x"})),
            call("t3", "panics", json!({"value": "x"})),
        ]),
        text("done"),
    ]);
    let context =
        pi_runtime::AgentContext::new("").with_tools([fails.arc(), raw.arc(), panics.arc()]);
    let events = run(context, AgentLoopConfig::new(), model.clone()).await;
    let results = results(&events);
    assert_eq!(
        results.iter().map(|r| r.text()).collect::<Vec<_>>(),
        ["boom", "raw string", "Tool panics panicked: kaboom"]
    );
    assert!(results.iter().all(|r| r.is_error && r.details == json!({})));
    assert_eq!(model.calls(), 2, "a failing tool never stops the agent");
}

#[tokio::test]
async fn a05_tool_returning_is_error_counts_as_error() {
    let tool = FnTool::value("soft", |_, _| async {
        Ok(ToolResult::text("not found").with_is_error(true))
    });
    let model = scripted(vec![
        calls(vec![call("t1", "soft", json!({"value": "x"}))]),
        text("done"),
    ]);
    let events = run(
        pi_runtime::AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new(),
        model,
    )
    .await;
    assert_eq!(ends(&events), vec![("t1".into(), true, "not found".into())]);
    assert!(results(&events)[0].is_error);
}

#[tokio::test]
async fn a06_after_tool_call_overrides() {
    let model = scripted(vec![
        calls(vec![
            call("t1", "echo", json!({"value": "a"})),
            call("t2", "echo", json!({"value": "b"})),
            call("t3", "echo", json!({"value": "c"})),
        ]),
        text("done"),
    ]);
    let config = AgentLoopConfig::new().after_tool_call(|ctx| async move {
        assert_eq!(
            ctx.result.text_content(),
            format!("echoed: {}", ctx.args["value"].as_str().unwrap())
        );
        assert!(!ctx.is_error);
        match ctx.tool_call.id.as_str() {
            "t1" => Ok(AfterToolCall::keep()
                .content(vec![Content::text("rewritten")])
                .is_error(true)),
            "t2" => Err(ToolError::new("after failed")),
            _ => Ok(AfterToolCall::keep().details(json!({"replaced": 1}))),
        }
    });
    let events = run(echo_tools(), config, model).await;
    let results = results(&events);
    assert_eq!(
        (results[0].text().as_str(), results[0].is_error),
        ("rewritten", true)
    );
    assert_eq!(
        (results[1].text().as_str(), results[1].is_error),
        ("after failed", true)
    );
    assert_eq!(results[1].details, json!({}));
    assert_eq!(
        (results[2].text().as_str(), results[2].is_error),
        ("echoed: c", false)
    );
    assert_eq!(results[2].details, json!({"replaced": 1}));
}

/// A tool that sends one update, then sleeps `ms` of virtual time.
fn updating(name: &str, ms: u64) -> FnTool {
    FnTool::value(name, move |args, ctx| async move {
        ctx.update(ToolResult::text("working"));
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        Ok(ToolResult::text(format!(
            "done {}",
            args["value"].as_str().unwrap_or_default()
        )))
    })
}

fn mixed_batch() -> Vec<AssistantMessage> {
    vec![
        calls(vec![
            call("t1", "slow", json!({"value": "1"})),
            call("t2", "missing", json!({})),
            call("t3", "fast", json!({"value": "3"})),
        ]),
        text("done"),
    ]
}

#[tokio::test(start_paused = true)]
async fn a07_parallel_with_an_immediate_error() {
    let context = pi_runtime::AgentContext::new("")
        .with_tools([updating("slow", 50).arc(), updating("fast", 10).arc()]);
    let events = run(context, AgentLoopConfig::new(), scripted(mixed_batch())).await;
    assert_eq!(
        trace(&events)[6..18].join("\n"),
        "tool_execution_start t1\ntool_execution_start t2\ntool_execution_end t2\ntool_execution_start t3\n\
         tool_execution_update t1\ntool_execution_update t3\ntool_execution_end t3\ntool_execution_end t1\n\
         message_start toolResult(t1)\nmessage_end toolResult(t1)\nmessage_start toolResult(t2)\nmessage_end toolResult(t2)"
    );
    assert_eq!(trace(&events)[20], "turn_end [t1,t2,t3]");
    assert_eq!(ends(&events)[0].2, "Tool missing not found");
}

#[tokio::test(start_paused = true)]
async fn a08_same_batch_sequential() {
    let context = pi_runtime::AgentContext::new("")
        .with_tools([updating("slow", 50).arc(), updating("fast", 10).arc()]);
    let config = AgentLoopConfig::new().tool_execution(ToolExecution::Sequential);
    let events = run(context, config, scripted(mixed_batch())).await;
    assert_eq!(
        trace(&events)[6..21].join("\n"),
        "tool_execution_start t1\ntool_execution_update t1\ntool_execution_end t1\n\
         message_start toolResult(t1)\nmessage_end toolResult(t1)\n\
         tool_execution_start t2\ntool_execution_end t2\nmessage_start toolResult(t2)\nmessage_end toolResult(t2)\n\
         tool_execution_start t3\ntool_execution_update t3\ntool_execution_end t3\n\
         message_start toolResult(t3)\nmessage_end toolResult(t3)\nturn_end [t1,t2,t3]"
    );
}

fn terminating(name: &str, terminate: bool) -> FnTool {
    FnTool::value(name, move |_, _| async move {
        Ok(ToolResult::text("ok").with_terminate(terminate))
    })
}

#[tokio::test]
async fn a09_terminate_when_every_result_terminates() {
    let model = scripted(vec![
        calls(vec![
            call("t1", "stop", json!({"value": "a"})),
            call("t2", "stop", json!({"value": "b"})),
        ]),
        text("never sent"),
    ]);
    let context = pi_runtime::AgentContext::new("").with_tool(terminating("stop", true));
    let events = run(context, AgentLoopConfig::new(), model.clone()).await;
    assert_eq!(
        trace_str(&events),
        format!(
            "{E}\ntool_execution_start t1\ntool_execution_start t2\ntool_execution_end t1\ntool_execution_end t2\n\
             message_start toolResult(t1)\nmessage_end toolResult(t1)\nmessage_start toolResult(t2)\nmessage_end toolResult(t2)\n\
             turn_end [t1,t2]\nagent_end [user,assistant,toolResult(t1),toolResult(t2)]"
        )
    );
    assert!(events.iter().all(|e| match e {
        pi_runtime::AgentEvent::ToolExecutionEnd { terminate, .. } => *terminate,
        _ => true,
    }));
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn a10_mixed_terminate_continues() {
    let model = scripted(vec![
        calls(vec![
            call("t1", "stop", json!({"value": "a"})),
            call("t2", "go", json!({"value": "b"})),
        ]),
        text("done"),
    ]);
    let context = pi_runtime::AgentContext::new("").with_tools([
        terminating("stop", true).arc(),
        terminating("go", false).arc(),
    ]);
    run(context, AgentLoopConfig::new(), model.clone()).await;
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn a11_terminate_and_an_unknown_tool_continues() {
    let model = scripted(vec![
        calls(vec![
            call("t1", "stop", json!({"value": "a"})),
            call("t2", "nope", json!({})),
        ]),
        text("done"),
    ]);
    let context = pi_runtime::AgentContext::new("").with_tool(terminating("stop", true));
    run(context, AgentLoopConfig::new(), model.clone()).await;
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn a12_steering_queued_during_a_tool_waits_for_the_batch() {
    let queue: Arc<Mutex<Vec<Message>>> = Arc::default();
    let pushing = queue.clone();
    let steer_tool = FnTool::value("steer", move |_, _| {
        pushing.lock().unwrap().push(Message::user("steer!"));
        async { Ok(ToolResult::text("queued")) }
    });
    let model = scripted(vec![
        calls(vec![
            call("t1", "steer", json!({"value": "a"})),
            call("t2", "echo", json!({"value": "b"})),
        ]),
        text("done"),
    ]);
    let source = queue.clone();
    let config = AgentLoopConfig::new().steering(move || {
        let messages = std::mem::take(&mut *source.lock().unwrap());
        async move { messages }
    });
    let context = echo_tools().with_tool(steer_tool);
    let events = run(context, config, model.clone()).await;
    let trace = trace(&events);
    assert_eq!(
        trace[14..].join("\n"),
        "turn_end [t1,t2]\nturn_start\nmessage_start user(steer!)\nmessage_end user(steer!)\n\
         message_start assistant\nmessage_end assistant\nturn_end []\n\
         agent_end [user,assistant,toolResult(t1),toolResult(t2),user(steer!),assistant]"
    );
    assert_eq!(
        model.requests()[1].roles(),
        ["user", "assistant", "toolResult", "toolResult", "user"]
    );
}

#[tokio::test]
async fn a13_follow_up() {
    let polls = Arc::new(AtomicUsize::new(0));
    let counter = polls.clone();
    let config = AgentLoopConfig::new().follow_up(move || {
        let first = counter.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if first {
                vec![Message::user("follow")]
            } else {
                Vec::new()
            }
        }
    });
    let events = run(
        echo_tools(),
        config,
        scripted(vec![text("one"), text("two")]),
    )
    .await;
    assert_eq!(
        trace_str(&events),
        format!(
            "{E}\nturn_end []\nturn_start\nmessage_start user(follow)\nmessage_end user(follow)\n\
             message_start assistant\nmessage_end assistant\nturn_end []\nagent_end [user,assistant,user(follow),assistant]"
        )
    );
    assert_eq!(polls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a14_error_stop_reason_runs_no_tools() {
    let mut failed = echo_call("t1", "x");
    failed.stop_reason = StopReason::Error;
    failed.error_message = Some("upstream 500".into());
    let model = scripted(vec![failed, text("never")]);
    let events = run(echo_tools(), AgentLoopConfig::new(), model.clone()).await;
    assert_eq!(
        trace_str(&events),
        "agent_start\nturn_start\nmessage_start user\nmessage_end user\nmessage_start assistant\n\
         message_end assistant(error)\nturn_end []\nagent_end [user,assistant(error)]"
    );
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn a15_length_stop_refuses_the_calls_and_continues() {
    let executed = Arc::new(AtomicUsize::new(0));
    let counter = executed.clone();
    let tool = FnTool::value("echo", move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolResult::text("ran")) }
    });
    let mut truncated = calls(vec![
        call("t1", "echo", json!({"value": "x"})),
        call("t2", "echo", json!({"value": "y"})),
    ]);
    truncated.stop_reason = StopReason::Length;
    let model = scripted(vec![truncated, text("done")]);
    let events = run(
        pi_runtime::AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new(),
        model.clone(),
    )
    .await;
    let text = "Tool call \"echo\" was not executed: the response hit the output token limit, so its arguments may be \
                truncated. Re-issue the tool call with complete arguments.";
    assert_eq!(
        ends(&events),
        vec![
            ("t1".into(), true, text.into()),
            ("t2".into(), true, text.into())
        ]
    );
    assert_eq!(executed.load(Ordering::SeqCst), 0);
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn a16_stop_reason_stop_with_a_tool_call_runs_it() {
    let mut message = echo_call("t1", "x");
    message.stop_reason = StopReason::Stop;
    let model = scripted(vec![message, text("done")]);
    let events = run(echo_tools(), AgentLoopConfig::new(), model.clone()).await;
    assert_eq!(
        ends(&events),
        vec![("t1".into(), false, "echoed: x".into())]
    );
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn a17_abort_during_a_tool() {
    let signal = CancellationToken::new();
    let aborter = signal.clone();
    let tool = FnTool::value("wait", move |_, ctx| {
        let aborter = aborter.clone();
        async move {
            aborter.cancel(); // the user presses Esc while the tool runs
            ctx.signal().cancelled().await;
            Err(ToolError::new("Operation aborted"))
        }
    });
    let model = Arc::new(FnModel::new(|request| async move {
        if request.signal.is_cancelled() {
            AssistantMessage::failed(StopReason::Aborted, "Request was aborted")
        } else {
            calls(vec![call("t1", "wait", json!({"value": "x"}))])
        }
    }));
    let stream = pi_runtime::agent_loop(
        vec![Message::user("go")],
        pi_runtime::AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new(),
        model,
        signal,
    );
    let events = collect(stream).await;
    assert_eq!(
        trace_str(&events),
        format!(
            "{E}\ntool_execution_start t1\ntool_execution_end t1\nmessage_start toolResult(t1)\nmessage_end toolResult(t1)\n\
             turn_end [t1]\nturn_start\nmessage_start assistant(aborted)\nmessage_end assistant(aborted)\nturn_end []\n\
             agent_end [user,assistant,toolResult(t1),assistant(aborted)]"
        )
    );
    assert_eq!(
        ends(&events)[0],
        ("t1".into(), true, "Operation aborted".into())
    );
}

fn shim_tool() -> FnTool {
    FnTool::value("echo", |args, _| async move {
        Ok(ToolResult::text(format!(
            "echoed: {}",
            args["value"].as_str().unwrap_or_default()
        )))
    })
    .prepare(|args| match args.get("text") {
        Some(text) if text.as_str() == Some("bad") => Err(ToolError::new("bad shim")),
        Some(text) => Ok(json!({ "value": text })),
        None => Ok(args),
    })
}

#[tokio::test]
async fn a18_prepare_arguments_shim() {
    let model = scripted(vec![
        calls(vec![call("t1", "echo", json!({"text": "legacy"}))]),
        text("done"),
    ]);
    let events = run(
        pi_runtime::AgentContext::new("").with_tool(shim_tool()),
        AgentLoopConfig::new(),
        model,
    )
    .await;
    assert_eq!(
        ends(&events),
        vec![("t1".into(), false, "echoed: legacy".into())]
    );
}

#[tokio::test]
async fn a19_prepare_arguments_fails() {
    let model = scripted(vec![
        calls(vec![call("t1", "echo", json!({"text": "bad"}))]),
        text("done"),
    ]);
    let events = run(
        pi_runtime::AgentContext::new("").with_tool(shim_tool()),
        AgentLoopConfig::new(),
        model,
    )
    .await;
    assert_eq!(ends(&events), vec![("t1".into(), true, "bad shim".into())]);
}

#[tokio::test(start_paused = true)]
async fn a20_sequential_tool_makes_the_batch_sequential() {
    let overlap = Arc::new(Overlap::default());
    let tool = sleeper("seq", 10, overlap.clone()).mode(ExecutionMode::Sequential);
    let model = scripted(vec![
        calls(vec![
            call("t1", "seq", json!({"value": "a"})),
            call("t2", "seq", json!({"value": "b"})),
        ]),
        text("done"),
    ]);
    let events = run(
        pi_runtime::AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new(),
        model,
    )
    .await;
    assert_eq!(
        trace(&events)[6..14].join("\n"),
        "tool_execution_start t1\ntool_execution_end t1\nmessage_start toolResult(t1)\nmessage_end toolResult(t1)\n\
         tool_execution_start t2\ntool_execution_end t2\nmessage_start toolResult(t2)\nmessage_end toolResult(t2)"
    );
    assert_eq!(overlap.max(), 1);
}

#[tokio::test]
async fn a21_should_stop_after_turn() {
    let follow_polls = Arc::new(AtomicUsize::new(0));
    let counter = follow_polls.clone();
    let config = AgentLoopConfig::new()
        .should_stop_after_turn(|ctx| async move {
            assert_eq!(ctx.tool_results.len(), 1);
            assert_eq!(ctx.new_messages.len(), 3);
            true
        })
        .follow_up(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async { vec![Message::user("never")] }
        });
    let model = scripted(vec![echo_call("t1", "x"), text("never")]);
    let events = run(echo_tools(), config, model.clone()).await;
    assert_eq!(
        trace_str(&events),
        format!(
            "{E}\ntool_execution_start t1\ntool_execution_end t1\nmessage_start toolResult(t1)\nmessage_end toolResult(t1)\n\
             turn_end [t1]\nagent_end [user,assistant,toolResult(t1)]"
        )
    );
    assert_eq!(model.calls(), 1);
    assert_eq!(follow_polls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a22_coercion_and_hook_inputs() {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let executed = seen.clone();
    let tool = FnTool::new(
        "num",
        json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}),
        move |args, _| {
            executed.lock().unwrap().push(args);
            async { Ok(ToolResult::text("ok")) }
        },
    );
    let hook_seen: Arc<Mutex<Vec<(Value, Value)>>> = Arc::default();
    let hook_log = hook_seen.clone();
    let config = AgentLoopConfig::new().before_tool_call(move |ctx| {
        hook_log
            .lock()
            .unwrap()
            .push((ctx.tool_call.arguments.clone(), ctx.args.clone()));
        async { Ok(BeforeToolCall::allow()) }
    });
    let model = scripted(vec![
        calls(vec![call("t1", "num", json!({"n": "5"}))]),
        text("done"),
    ]);
    let events = run(
        pi_runtime::AgentContext::new("").with_tool(tool),
        config,
        model,
    )
    .await;
    let start_args = events.iter().find_map(|e| match e {
        pi_runtime::AgentEvent::ToolExecutionStart { call } => Some(call.arguments().clone()),
        _ => None,
    });
    assert_eq!(start_args, Some(json!({"n": "5"})));
    assert_eq!(
        *hook_seen.lock().unwrap(),
        vec![(json!({"n": "5"}), json!({"n": 5}))]
    );
    assert_eq!(*seen.lock().unwrap(), vec![json!({"n": 5})]);
}

#[tokio::test]
async fn a23_before_tool_call_error_is_immediate() {
    let model = scripted(vec![
        calls(vec![
            call("t1", "echo", json!({"value": "a"})),
            call("t2", "echo", json!({"value": "b"})),
        ]),
        text("done"),
    ]);
    let config = AgentLoopConfig::new().before_tool_call(|ctx| async move {
        if ctx.tool_call.id == "t2" {
            Err(ToolError::new("hook exploded"))
        } else {
            Ok(BeforeToolCall::allow())
        }
    });
    let events = run(echo_tools(), config, model).await;
    assert_eq!(
        trace(&events)[6..10].join("\n"),
        "tool_execution_start t1\ntool_execution_start t2\ntool_execution_end t2\ntool_execution_end t1"
    );
    assert_eq!(
        ends(&events)[0],
        ("t2".into(), true, "hook exploded".into())
    );
}

#[tokio::test]
async fn a24_duplicate_tool_names_use_the_first() {
    let first = FnTool::value("dup", |_, _| async { Ok(ToolResult::text("first")) });
    let second = FnTool::value("dup", |_, _| async { Ok(ToolResult::text("second")) });
    let model = scripted(vec![
        calls(vec![call("t1", "dup", json!({"value": "x"}))]),
        text("done"),
    ]);
    let context = pi_runtime::AgentContext::new("").with_tools([first.arc(), second.arc()]);
    let events = run(context, AgentLoopConfig::new(), model).await;
    assert_eq!(ends(&events)[0].2, "first");
}

#[tokio::test]
async fn a25_late_updates_are_ignored() {
    let attempted = Arc::new(tokio::sync::Notify::new());
    let late_sent = Arc::new(AtomicBool::new(false));
    let (notify, flag) = (attempted.clone(), late_sent.clone());
    let tool = FnTool::value("late", move |_, ctx| {
        let (notify, flag) = (notify.clone(), flag.clone());
        async move {
            ctx.update(ToolResult::text("in time"));
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                ctx.update(ToolResult::text("too late"));
                flag.store(true, Ordering::SeqCst);
                notify.notify_one();
            });
            Ok(ToolResult::text("finished"))
        }
    });
    // The final response waits until the late update was sent, so it happens during the run.
    let waiter = attempted.clone();
    let model = Arc::new(FnModel::new(move |request| {
        let waiter = waiter.clone();
        async move {
            if request.index == 0 {
                calls(vec![call("t1", "late", json!({"value": "x"}))])
            } else {
                waiter.notified().await;
                text("done")
            }
        }
    }));
    let events = run(
        pi_runtime::AgentContext::new("").with_tool(tool),
        AgentLoopConfig::new(),
        model,
    )
    .await;
    assert!(late_sent.load(Ordering::SeqCst));
    let updates: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            pi_runtime::AgentEvent::ToolExecutionUpdate { partial_result, .. } => {
                Some(partial_result.text_content())
            }
            _ => None,
        })
        .collect();
    assert_eq!(updates, ["in time"]);
}
