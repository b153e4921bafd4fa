//! The stateful `Agent`: pi's Agent tests (`reference/pi.md` §5.2) and its misuse texts.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use pi_runtime::{
    Agent, AgentError, AgentEvent, AgentLoopConfig, AssistantContent, AssistantMessage,
    BeforeToolCall, FnModel, Message, QueueMode, ScriptedModel, ScriptedStreaming, StopReason,
    StreamOptions,
};
use pi_tool::{ToolError, ToolRegistry, ToolResult};
use serde_json::json;

fn roles(agent: &Agent) -> Vec<&'static str> {
    agent.messages().iter().map(|m| m.role()).collect()
}

fn user_texts(agent: &Agent) -> Vec<String> {
    agent
        .messages()
        .iter()
        .filter_map(|m| match &**m {
            Message::User(u) => u
                .content
                .first()
                .and_then(|c| c.as_text())
                .map(str::to_owned),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn default_state() {
    let agent = Agent::new(Arc::new(ScriptedModel::recording([])));
    assert_eq!(agent.system_prompt(), "");
    assert!(agent.messages().is_empty());
    assert!(!agent.is_running());
    assert_eq!(agent.error(), None);
    assert!(agent.pending_tool_calls().is_empty());
    assert!(agent.streaming_message().is_none());
    assert!(!agent.has_queued_messages());
}

#[tokio::test]
async fn prompt_runs_tools_and_keeps_the_transcript() {
    let model = Arc::new(ScriptedModel::recording([
        echo_call("t1", "x"),
        text("first"),
        text("second"),
    ]));
    let agent = Agent::new(model.clone())
        .with_system_prompt("sys")
        .with_tools(ToolRegistry::new().with(EchoTool));
    agent.prompt("go").await.unwrap();
    assert_eq!(
        roles(&agent),
        ["user", "assistant", "toolResult", "assistant"]
    );
    agent.prompt("again").await.unwrap();
    assert_eq!(
        roles(&agent),
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant"
        ]
    );
    // The second run saw the whole transcript.
    assert_eq!(model.requests()[2].messages.len(), 5);
    assert_eq!(model.requests()[2].system_prompt, "sys");
    assert_eq!(agent.message_count(), 6);
}

#[tokio::test]
async fn subscribe_delivers_every_event_in_order_and_unsubscribe_stops_it() {
    let agent = Agent::new(Arc::new(ScriptedModel::recording([text("a"), text("b")])));
    let seen: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let log = seen.clone();
    let id = agent.subscribe(move |event, _signal| {
        let log = log.clone();
        async move { log.lock().unwrap().push(event.kind()) }
    });
    agent.prompt("hi").await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    assert!(agent.unsubscribe(id));
    assert!(!agent.unsubscribe(id));
    agent.prompt("again").await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 8);
}

#[tokio::test(start_paused = true)]
async fn listeners_are_awaited_in_order_and_block_the_run() {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let persisted = Arc::new(AtomicBool::new(false));
    let flag = persisted.clone();
    let config = AgentLoopConfig::new().before_tool_call(move |_| {
        let persisted = flag.load(Ordering::SeqCst);
        async move {
            if persisted {
                Ok(BeforeToolCall::allow())
            } else {
                Err(ToolError::new(
                    "the assistant message was not persisted before preflight",
                ))
            }
        }
    });
    let model = Arc::new(ScriptedModel::recording([
        echo_call("t1", "x"),
        text("done"),
    ]));
    let agent = Agent::new(model)
        .with_tools(ToolRegistry::new().with(EchoTool))
        .with_config(config);
    let (first_log, flag) = (log.clone(), persisted.clone());
    agent.subscribe(move |event, _| {
        let (log, flag) = (first_log.clone(), flag.clone());
        async move {
            if let AgentEvent::MessageEnd { message } = &event
                && message.as_assistant().is_some()
            {
                // A slow write: the loop must wait for it.
                tokio::time::sleep(Duration::from_millis(50)).await;
                flag.store(true, Ordering::SeqCst);
            }
            log.lock().unwrap().push(format!("first {}", event.kind()));
        }
    });
    let second_log = log.clone();
    agent.subscribe(move |event, _| {
        let log = second_log.clone();
        async move { log.lock().unwrap().push(format!("second {}", event.kind())) }
    });
    agent.prompt("go").await.unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log[0], "first agent_start");
    assert_eq!(log[1], "second agent_start");
    assert!(
        log.chunks(2)
            .all(|pair| pair[0].strip_prefix("first ") == pair[1].strip_prefix("second "))
    );
    let results: Vec<_> = agent
        .messages()
        .iter()
        .filter_map(|m| m.as_tool_result().cloned())
        .collect();
    assert_eq!(results[0].text(), "echoed: x");
}

#[tokio::test]
async fn state_mutators() {
    let agent = Agent::new(Arc::new(ScriptedModel::recording([text(
        "from the new model",
    )])));
    agent.set_system_prompt("one");
    assert_eq!(agent.system_prompt(), "one");
    agent.append_message(Message::user("a"));
    agent.replace_messages(vec![
        Arc::new(Message::user("b")),
        Arc::new(Message::user("c")),
    ]);
    assert_eq!(user_texts(&agent), ["b", "c"]);
    let replacement = Arc::new(ScriptedModel::recording([text("replacement")]));
    agent.set_model(replacement.clone());
    agent.prompt("d").await.unwrap();
    assert_eq!(replacement.calls(), 1);
    assert_eq!(
        agent.last_message().unwrap().as_assistant().unwrap().text(),
        "replacement"
    );
    agent.steer(Message::user("queued"));
    agent.reset();
    assert!(agent.messages().is_empty());
    assert!(!agent.has_queued_messages());
}

#[tokio::test]
async fn queues_can_be_inspected_and_cleared() {
    let agent = Agent::new(Arc::new(ScriptedModel::recording([])));
    agent.steer(Message::user("s"));
    assert!(agent.has_queued_messages());
    agent.clear_steering_queue();
    assert!(!agent.has_queued_messages());
    agent.follow_up(Message::user("f"));
    assert!(agent.has_queued_messages());
    agent.clear_follow_up_queue();
    agent.steer(Message::user("s"));
    agent.follow_up(Message::user("f"));
    agent.clear_all_queues();
    assert!(!agent.has_queued_messages());
}

/// A model that answers each request after `gate` lets it (so a test can act mid-run).
fn gated_model(gate: Arc<tokio::sync::Semaphore>, replies: Vec<AssistantMessage>) -> Arc<FnModel> {
    let replies = Arc::new(Mutex::new(replies.into_iter()));
    Arc::new(FnModel::new(move |_| {
        let (gate, replies) = (gate.clone(), replies.clone());
        async move {
            gate.acquire().await.expect("open gate").forget();
            replies
                .lock()
                .unwrap()
                .next()
                .unwrap_or_else(|| text("out of replies"))
        }
    }))
}

#[tokio::test]
async fn prompt_and_continue_while_running_fail_with_pis_texts() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let agent = Agent::new(gated_model(gate.clone(), vec![text("done")]));
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("first").await }
    });
    while !agent.is_running() {
        tokio::task::yield_now().await;
    }
    let err = agent.prompt("second").await.unwrap_err();
    assert_eq!(err, AgentError::AlreadyProcessingPrompt);
    assert_eq!(
        err.to_string(),
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    );
    let err = agent.continue_run().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Agent is already processing. Wait for completion before continuing."
    );
    gate.add_permits(1);
    running.await.unwrap().unwrap();
    agent.wait_for_idle().await;
    assert!(!agent.is_running());
}

#[tokio::test]
async fn continue_needs_messages_and_something_to_answer() {
    let agent = Agent::new(Arc::new(ScriptedModel::recording([text("x")])));
    assert_eq!(
        agent.continue_run().await.unwrap_err().to_string(),
        "No messages to continue from"
    );
    agent.append_message(Message::user("q"));
    agent.append_message(Message::Assistant(text("a")));
    let err = agent.continue_run().await.unwrap_err();
    assert_eq!(err, AgentError::ContinueFromAssistant);
    assert_eq!(
        err.to_string(),
        "Cannot continue from message role: assistant"
    );
}

#[tokio::test]
async fn continue_after_a_user_message_asks_the_model() {
    let model = Arc::new(ScriptedModel::recording([text("answer")]));
    let agent = Agent::new(model.clone());
    agent.append_message(Message::user("question"));
    agent.continue_run().await.unwrap();
    assert_eq!(roles(&agent), ["user", "assistant"]);
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn continue_processes_a_queued_follow_up_from_an_assistant_tail() {
    let model = Arc::new(ScriptedModel::recording([text("follow-up answer")]));
    let agent = Agent::new(model.clone());
    agent.append_message(Message::user("q"));
    agent.append_message(Message::Assistant(text("a")));
    agent.follow_up(Message::user("and then?"));
    agent.continue_run().await.unwrap();
    assert_eq!(roles(&agent), ["user", "assistant", "user", "assistant"]);
    assert_eq!(user_texts(&agent), ["q", "and then?"]);
}

#[tokio::test]
async fn continue_keeps_one_at_a_time_steering_from_an_assistant_tail() {
    let model = Arc::new(ScriptedModel::recording([text("r1"), text("r2")]));
    let agent = Agent::new(model.clone());
    agent.append_message(Message::Assistant(text("previous")));
    agent.steer(Message::user("s1"));
    agent.steer(Message::user("s2"));
    agent.continue_run().await.unwrap();
    assert_eq!(
        roles(&agent),
        ["assistant", "user", "assistant", "user", "assistant"]
    );
    assert_eq!(user_texts(&agent), ["s1", "s2"]);
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn follow_ups_in_all_mode_arrive_together() {
    let model = Arc::new(ScriptedModel::recording([text("r1"), text("r2")]));
    let agent = Agent::new(model.clone()).with_follow_up_mode(QueueMode::All);
    agent.follow_up(Message::user("f1"));
    agent.follow_up(Message::user("f2"));
    agent.prompt("go").await.unwrap();
    assert_eq!(
        roles(&agent),
        ["user", "assistant", "user", "user", "assistant"]
    );
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn steering_during_a_run_is_injected_after_the_turn() {
    let agent_slot: Arc<Mutex<Option<Agent>>> = Arc::default();
    let slot = agent_slot.clone();
    let tool = FnTool::value("echo", move |_, _| {
        if let Some(agent) = slot.lock().unwrap().as_ref() {
            agent.steer(Message::user("change of plan"));
        }
        async { Ok(ToolResult::text("ok")) }
    });
    let model = Arc::new(ScriptedModel::recording([
        echo_call("t1", "x"),
        text("adjusted"),
    ]));
    let agent = Agent::new(model.clone());
    agent.set_tool_list(vec![tool.arc()]);
    *agent_slot.lock().unwrap() = Some(agent.clone());
    agent.prompt("go").await.unwrap();
    *agent_slot.lock().unwrap() = None;
    assert_eq!(
        roles(&agent),
        ["user", "assistant", "toolResult", "user", "assistant"]
    );
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn abort_stops_a_running_tool_and_the_run() {
    let tool = FnTool::value("wait", |_, ctx| async move {
        ctx.signal().cancelled().await;
        Err(ToolError::new("Operation aborted"))
    });
    let model = Arc::new(FnModel::new(|request| async move {
        if request.signal.is_cancelled() {
            AssistantMessage::failed(StopReason::Aborted, "Request was aborted")
        } else {
            calls(vec![call("t1", "wait", json!({"value": "x"}))])
        }
    }));
    let agent = Agent::new(model);
    agent.set_tool_list(vec![tool.arc()]);
    let aborter = agent.clone();
    agent.subscribe(move |event, _| {
        let aborter = aborter.clone();
        async move {
            if let AgentEvent::ToolExecutionStart { call } = &event {
                assert_eq!(aborter.pending_tool_calls(), [call.id()]);
                aborter.abort();
            }
        }
    });
    agent.prompt("go").await.unwrap();
    let last = agent.last_message().unwrap();
    assert_eq!(
        last.as_assistant().unwrap().stop_reason,
        StopReason::Aborted
    );
    assert!(agent.pending_tool_calls().is_empty());
    assert!(!agent.is_running());
}

#[tokio::test]
async fn a_failed_response_sets_the_error() {
    let model = Arc::new(ScriptedModel::recording([AssistantMessage::failed(
        StopReason::Error,
        "rate limited",
    )]));
    let agent = Agent::new(model);
    agent.prompt("go").await.unwrap();
    assert_eq!(agent.error().as_deref(), Some("rate limited"));
}

#[tokio::test]
async fn session_id_is_forwarded_to_the_model() {
    let model = Arc::new(ScriptedModel::recording([text("ok")]));
    let mut options = StreamOptions::default();
    options.session_id = Some("session-42".into());
    let agent =
        Agent::new(model.clone()).with_config(AgentLoopConfig::new().stream_options(options));
    agent.prompt("go").await.unwrap();
    assert_eq!(
        model.requests()[0].session_id.as_deref(),
        Some("session-42")
    );
}

#[tokio::test]
async fn the_streaming_message_follows_the_deltas() {
    let model = Arc::new(
        ScriptedModel::recording([AssistantMessage::new(
            vec![AssistantContent::text("Hello world")],
            StopReason::Stop,
        )])
        .streaming(ScriptedStreaming::Deltas),
    );
    let agent = Agent::new(model);
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (log, watcher) = (seen.clone(), agent.clone());
    agent.subscribe(move |event, _| {
        let (log, watcher) = (log.clone(), watcher.clone());
        async move {
            if let AgentEvent::MessageUpdate { .. } = event {
                let partial = watcher.streaming_message().expect("a message is streaming");
                log.lock().unwrap().push(partial.text());
            }
        }
    });
    agent.prompt("go").await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        ["", "Hello", "Hello world", "Hello world"]
    );
    assert!(agent.streaming_message().is_none());
}

#[tokio::test]
async fn a_panicking_listener_does_not_break_the_agent() {
    let agent = Agent::new(Arc::new(ScriptedModel::recording([text("fine")])));
    agent.subscribe(|_, _| async { panic!("listener bug") });
    agent.prompt("go").await.unwrap();
    assert_eq!(roles(&agent), ["user", "assistant"]);
    assert!(!agent.is_running());
}

#[tokio::test]
async fn dropping_a_prompt_mid_run_leaves_the_agent_idle() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let agent = Agent::new(gated_model(gate.clone(), vec![text("never")]));
    let run = agent.prompt("go");
    // The model never answers: give up after the run started.
    let outcome = tokio::time::timeout(Duration::from_millis(20), run).await;
    assert!(outcome.is_err());
    assert!(!agent.is_running());
    agent.wait_for_idle().await;
    // The agent takes a new prompt.
    gate.add_permits(1);
    agent.prompt("again").await.unwrap();
    assert_eq!(
        agent.last_message().unwrap().as_assistant().unwrap().text(),
        "never"
    );
}
