//! Tool sets that change during a run: `prepare_next_turn` and `prepare_request` swap tools,
//! model, prompt and options; a change of the offered tools is announced to the model (on every
//! API's wire) and keeps the kept tools' order; `Agent::set_tools` during a run takes effect at
//! the next turn; `finish_turn` ends or continues a run beside `should_stop_after_turn`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{calls, new_messages, request_tool_names as names, text};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use pi_runtime::providers::{
    AnthropicMessages, GoogleGenerativeAi, OpenAiCompletions, OpenAiResponses,
};
use pi_runtime::{
    Agent, AgentContext, AgentLoopConfig, AssistantEvent, AssistantMessage, Context, CustomMessage,
    FinishTurn, Message, Model, ScriptedModel, StopReason, StreamOptions, TurnUpdate, agent_loop,
};
use pi_tool::{AgentTool, CancellationToken, FnTool, ToolRegistry};
use serde_json::{Value, json};

/// A tool answering `<name> ran`.
fn tool(name: &str) -> Arc<dyn AgentTool> {
    tool_with(name, false)
}

/// The same, deferred.
fn deferred(name: &str) -> Arc<dyn AgentTool> {
    tool_with(name, true)
}

fn tool_with(name: &str, deferred: bool) -> Arc<dyn AgentTool> {
    let builder = FnTool::builder(
        name,
        format!("The {name} tool."),
        json!({"type": "object", "properties": {}}),
    );
    let builder = if deferred {
        builder.deferred()
    } else {
        builder
    };
    let answer = format!("{name} ran");
    Arc::new(
        builder
            .build(move |_args: Value, _ctx| {
                let answer = answer.clone();
                async move { answer }
            })
            .unwrap(),
    )
}

fn registry(names: &[&str]) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for name in names {
        registry.register_arc(tool(name));
    }
    registry
}

/// An assistant message calling `name` with no arguments.
fn call(id: &str, name: &str) -> AssistantMessage {
    calls(vec![common::call(id, name, json!({}))])
}

/// The `tools_changed` records of a transcript: (added, removed).
fn announcements(messages: &[Arc<Message>]) -> Vec<(Vec<String>, Vec<String>)> {
    let owned = |names: Vec<&str>| names.into_iter().map(str::to_owned).collect();
    messages
        .iter()
        .filter_map(|m| match &**m {
            Message::Custom(c) => c.changed_tools(),
            _ => None,
        })
        .map(|(added, removed)| (owned(added), owned(removed)))
        .collect()
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// Runs the loop with the prompt `go`; the messages the run added.
async fn run(
    context: AgentContext,
    config: AgentLoopConfig,
    model: Arc<ScriptedModel>,
) -> Vec<Arc<Message>> {
    new_messages(&common::run(context, config, model).await)
}

#[tokio::test]
async fn prepare_next_turn_swaps_the_tools_keeps_the_order_and_tells_the_model() {
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "alpha"),
        call("c2", "gamma"),
        call("c3", "alpha"),
        text("done"),
    ]));
    let context = AgentContext::new("Be brief.").with_tools([tool("alpha"), tool("beta")]);
    let turns = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&turns);
    let config = AgentLoopConfig::new().prepare_next_turn(move |turn| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        // The hook sees the turn that ended: its call and its result.
        assert_eq!(turn.tool_results.len(), 1);
        async move {
            // After the first turn: drop `alpha`, add `gamma` (given before `beta`).
            (n == 0).then(|| TurnUpdate::new().tools(vec![tool("gamma"), tool("beta")]))
        }
    });
    let added = run(context, config, Arc::clone(&model)).await;

    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(names(&requests[0]), ["alpha", "beta"]);
    // `beta` keeps its place at the front; the new tool comes after it.
    assert_eq!(names(&requests[1]), ["beta", "gamma"]);
    assert_eq!(names(&requests[3]), ["beta", "gamma"]);
    assert_eq!(turns.load(Ordering::SeqCst), 3);

    // One announcement, before the second request, right after the first turn's result.
    assert_eq!(
        announcements(&added),
        [(strings(&["gamma"]), strings(&["alpha"]))]
    );
    let roles: Vec<&str> = requests[1].messages.iter().map(|m| m.role()).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "custom"]);

    // The new tool runs; the removed one is no longer found.
    let results: Vec<(String, bool)> = added
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| (r.text(), r.is_error))
        .collect();
    assert_eq!(results[0], ("alpha ran".to_owned(), false));
    assert_eq!(results[1], ("gamma ran".to_owned(), false));
    assert!(results[2].1, "a removed tool is not found: {results:?}");
    assert!(results[2].0.contains("alpha"), "{results:?}");
}

#[tokio::test]
async fn an_update_that_keeps_the_offered_names_announces_nothing() {
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "alpha"),
        text("done"),
    ]));
    let context = AgentContext::new("").with_tools([tool("alpha"), tool("beta")]);
    let config = AgentLoopConfig::new().prepare_next_turn(|_turn| async {
        // The same names in another order, and a new prompt.
        Some(
            TurnUpdate::new()
                .tools(vec![tool("beta"), tool("alpha")])
                .system_prompt("Now be verbose."),
        )
    });
    let added = run(context, config, Arc::clone(&model)).await;
    let requests = model.requests();
    assert!(announcements(&added).is_empty());
    assert_eq!(
        names(&requests[1]),
        ["alpha", "beta"],
        "the old order holds"
    );
    assert_eq!(requests[0].system_prompt, "");
    assert_eq!(requests[1].system_prompt, "Now be verbose.");
}

#[tokio::test]
async fn prepare_request_runs_before_every_request_and_can_swap_the_model() {
    let first = Arc::new(ScriptedModel::recording([call("c1", "alpha")]));
    let second = Arc::new(ScriptedModel::recording([text("from the second model")]));
    let indexes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&indexes);
    let swap_to = Arc::clone(&second);
    let config = AgentLoopConfig::new().prepare_request(move |request| {
        seen.lock()
            .unwrap()
            .push((request.request_index, request.messages.len()));
        let swap: Arc<dyn Model> = swap_to.clone();
        async move { (request.request_index == 1).then(|| TurnUpdate::new().model(swap)) }
    });
    let context = AgentContext::new("").with_tools([tool("alpha")]);
    let added = run(context, config, Arc::clone(&first)).await;
    assert_eq!(first.calls(), 1);
    assert_eq!(second.calls(), 1);
    // Before the first request the prompt is in the transcript; before the second, the
    // first turn's call and result too.
    assert_eq!(*indexes.lock().unwrap(), [(0, 1), (1, 3)]);
    let last = added.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.model, "scripted-1");
    assert_eq!(second.requests()[0].messages.len(), 3);
}

/// The run's last message is a failed one whose error contains `text`.
fn assert_failed_with(added: &[Arc<Message>], text: &str) {
    let last = added.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert!(
        last.error_message.as_deref().unwrap().contains(text),
        "{last:?}"
    );
}

#[tokio::test]
async fn a_panicking_prepare_hook_fails_the_request_with_its_text() {
    let model = Arc::new(ScriptedModel::recording([text("never")]));
    let config = AgentLoopConfig::new().prepare_request(|_request| async {
        panic!("no request today");
        #[allow(unreachable_code)]
        None
    });
    let added = run(AgentContext::new(""), config, Arc::clone(&model)).await;
    assert_eq!(model.calls(), 0);
    assert_failed_with(&added, "prepare_request panicked: no request today");

    // `prepare_next_turn` the same, for the second request (the first was made).
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "alpha"),
        text("never"),
    ]));
    let config = AgentLoopConfig::new().prepare_next_turn(|_turn| async {
        panic!("no next turn");
        #[allow(unreachable_code)]
        None
    });
    let context = AgentContext::new("").with_tools([tool("alpha")]);
    let added = run(context, config, Arc::clone(&model)).await;
    assert_eq!(model.calls(), 1);
    assert_failed_with(&added, "prepare_next_turn panicked: no next turn");
}

#[tokio::test]
async fn a_panicking_finish_turn_stops_the_run_after_turn_end() {
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "alpha"),
        text("never"),
    ]));
    let config = AgentLoopConfig::new().finish_turn(|_turn| async {
        panic!("no finish");
        #[allow(unreachable_code)]
        None
    });
    let context = AgentContext::new("").with_tools([tool("alpha")]);
    let events = common::run(context, config, model.clone()).await;
    assert_eq!(model.calls(), 1, "no request after the panic");
    let kinds: Vec<&str> = events.iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds[kinds.len() - 2..],
        ["turn_end", "agent_end"],
        "{kinds:?}"
    );
}

#[tokio::test]
async fn finish_turn_ends_before_turn_end_and_continue_forces_one_more_request() {
    // End: the model called a tool, but the run ends after that turn.
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "alpha"),
        text("unused"),
    ]));
    let order = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&order);
    let config = AgentLoopConfig::new().finish_turn(move |turn| {
        seen.lock().unwrap().push("finish_turn");
        assert_eq!(turn.tool_results.len(), 1);
        async { Some(FinishTurn::End) }
    });
    let context = AgentContext::new("").with_tools([tool("alpha")]);
    let mut stream = agent_loop(
        vec![Message::user("go")],
        context,
        config,
        model.clone(),
        CancellationToken::new(),
    );
    while let Some(event) = stream.next().await {
        if event.kind() == "turn_end" {
            order.lock().unwrap().push("turn_end");
        }
    }
    assert_eq!(model.calls(), 1);
    assert_eq!(*order.lock().unwrap(), ["finish_turn", "turn_end"]);

    // Continue: the model answered without a call, and one more request is made anyway.
    let model = Arc::new(ScriptedModel::recording([text("first"), text("second")]));
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&asked);
    let config = AgentLoopConfig::new().finish_turn(move |_turn| {
        let n = count.fetch_add(1, Ordering::SeqCst);
        async move { (n == 0).then_some(FinishTurn::Continue) }
    });
    run(AgentContext::new(""), config, Arc::clone(&model)).await;
    assert_eq!(model.calls(), 2);
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn should_stop_after_turn_still_ends_a_run_finish_turn_continues() {
    let model = Arc::new(ScriptedModel::recording([text("first"), text("second")]));
    let config = AgentLoopConfig::new()
        .finish_turn(|_turn| async { Some(FinishTurn::Continue) })
        .should_stop_after_turn(|_turn| async { true });
    run(AgentContext::new(""), config, Arc::clone(&model)).await;
    assert_eq!(model.calls(), 1, "either hook ending the run ends it");
}

/// A scripted model that notes where each request's transcript and tool specs live.
struct BufferWatcher {
    inner: ScriptedModel,
    seen: Mutex<Vec<usize>>,
    specs: Mutex<Vec<usize>>,
}

impl Model for BufferWatcher {
    fn api(&self) -> &str {
        self.inner.api()
    }

    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn id(&self) -> &str {
        self.inner.id()
    }

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> BoxStream<'a, AssistantEvent> {
        self.seen
            .lock()
            .unwrap()
            .push(context.messages.as_ptr() as usize);
        self.specs
            .lock()
            .unwrap()
            .push(context.tools.as_ptr() as usize);
        self.inner.stream(context, options)
    }
}

/// Issue 37: the turn hooks see the run's own transcript, not a copy of it (a copy per turn
/// made every run with a turn hook, and so every `Agent` run, quadratic in turns). The
/// snapshot `prepare_request` gets is the buffer its request reads, and the one a turn's
/// `finish_turn`, `should_stop_after_turn` and `prepare_next_turn` get is the buffer the next
/// request reads (nothing is appended in between).
#[tokio::test]
async fn turn_hooks_share_the_runs_transcript_instead_of_copying_it() {
    let model = Arc::new(BufferWatcher {
        inner: ScriptedModel::recording([call("c1", "a"), call("c2", "a"), text("done")]),
        seen: Mutex::new(Vec::new()),
        specs: Mutex::new(Vec::new()),
    });
    type Seen = Arc<Mutex<Vec<usize>>>;
    let (requests, finished, stopped, next): (Seen, Seen, Seen, Seen) = Default::default();
    let note = |seen: &Seen, messages: &pi_runtime::Transcript| {
        seen.lock().unwrap().push(messages.as_ptr() as usize);
    };
    let config = {
        let (requests, finished, stopped, next) = (
            Arc::clone(&requests),
            Arc::clone(&finished),
            Arc::clone(&stopped),
            Arc::clone(&next),
        );
        AgentLoopConfig::new()
            .prepare_request(move |ctx| {
                note(&requests, &ctx.messages);
                async { None }
            })
            .finish_turn(move |ctx| {
                note(&finished, &ctx.messages);
                async { None }
            })
            .should_stop_after_turn(move |ctx| {
                note(&stopped, &ctx.messages);
                async { false }
            })
            .prepare_next_turn(move |ctx| {
                note(&next, &ctx.messages);
                async { None }
            })
    };
    let context = AgentContext::new("").with_tools([tool("a")]);
    let events = agent_loop(
        vec![Message::user("go")],
        context,
        config,
        Arc::clone(&model) as Arc<dyn Model>,
        CancellationToken::new(),
    );
    events.count().await;
    let seen = model.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(*requests.lock().unwrap(), seen, "prepare_request");
    let finished = finished.lock().unwrap().clone();
    assert_eq!(finished.len(), 3);
    assert_eq!(finished[..2], seen[1..], "finish_turn");
    assert_eq!(*stopped.lock().unwrap(), finished, "should_stop_after_turn");
    assert_eq!(*next.lock().unwrap(), finished[..2], "prepare_next_turn");
}

/// Issue 37: a run that offers exactly a registry's tools requests with the registry's
/// shared specs, not a copy per run (100 runs over a 1,000-tool catalog held 620 MB of
/// copies); a run offering other tools has its own.
#[tokio::test]
async fn runs_over_one_registry_share_its_specs() {
    let catalog = registry(&["a", "b", "c"]);
    let shared = catalog.shared_specs().as_ptr() as usize;
    let watch = |context: AgentContext| async move {
        let model = Arc::new(BufferWatcher {
            inner: ScriptedModel::new([call("c1", "a"), text("done")]),
            seen: Mutex::new(Vec::new()),
            specs: Mutex::new(Vec::new()),
        });
        let events = agent_loop(
            vec![Message::user("go")],
            context,
            AgentLoopConfig::new(),
            Arc::clone(&model) as Arc<dyn Model>,
            CancellationToken::new(),
        );
        events.count().await;
        model.specs.lock().unwrap().clone()
    };
    for _ in 0..2 {
        let specs = watch(AgentContext::new("").with_registry(catalog.clone())).await;
        assert_eq!(specs, [shared, shared]);
    }
    let other = watch(AgentContext::new("").with_tools(catalog.tools().take(2).cloned())).await;
    assert_ne!(other[0], shared);
}

#[tokio::test]
async fn agent_set_tools_during_a_run_takes_effect_at_the_next_turn() {
    let model = Arc::new(ScriptedModel::recording([
        call("c1", "alpha"),
        call("c2", "delta"),
        text("done"),
    ]));
    let agent = Agent::new(model.clone()).with_tools(registry(&["alpha"]));
    // A listener swaps the tools while the first call runs.
    let swapper = agent.clone();
    agent.subscribe(move |event, _signal| {
        let swapper = swapper.clone();
        async move {
            if event.kind() == "tool_execution_start" {
                swapper.set_tools(registry(&["alpha", "delta"]));
            }
        }
    });
    agent.prompt("go").await.unwrap();
    let requests = model.requests();
    assert_eq!(names(&requests[0]), ["alpha"]);
    assert_eq!(names(&requests[1]), ["alpha", "delta"]);
    let messages = agent.messages();
    assert_eq!(
        announcements(&messages),
        [(strings(&["delta"]), Vec::new())]
    );
    let delta = messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .find(|r| r.tool_name == "delta")
        .unwrap();
    assert!(!delta.is_error);
}

/// The announcement reaches the model on every API, as text on the user's side after the tool
/// results (where the API takes it), and changes nothing else of the request.
#[test]
fn every_api_sends_the_announcement_as_a_note() {
    let messages = vec![
        Arc::new(Message::user("go")),
        Arc::new(Message::Assistant(call("c1", "alpha"))),
        Arc::new(Message::ToolResult(
            pi_runtime::ToolResultMessage::new(
                "c1",
                "alpha",
                vec![pi_tool::Content::text("alpha ran")],
            )
            .with_timestamp(0),
        )),
        Arc::new(Message::Custom(CustomMessage::tools_changed(
            strings(&["gamma"]),
            strings(&["alpha"]),
        ))),
    ];
    let note = "[The tools available to you changed. New tools: gamma. Removed tools, which can no longer be called: alpha.]";
    let context = || Context {
        system_prompt: "Be brief.",
        messages: &messages,
        tools: &[],
    };
    let options = StreamOptions::default();

    let completions = OpenAiCompletions::new("gpt-4o-mini").request_body(context(), &options);
    let last = completions["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(text_of(&last["content"]), note);

    let responses = OpenAiResponses::new("gpt-5").request_body(context(), &options);
    let last = responses["input"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(text_of(&last["content"]), note);

    let anthropic = AnthropicMessages::new("claude-sonnet-4-5").request_body(context(), &options);
    let wire = anthropic["messages"].as_array().unwrap();
    // After the user turn with the tool result comes one with the note (the API joins
    // consecutive user turns, as it does for a steering message).
    let [.., result, last] = wire.as_slice() else {
        panic!("{anthropic}")
    };
    assert_eq!(result["content"][0]["type"], "tool_result");
    assert_eq!(last["role"], "user");
    assert_eq!(text_of(&last["content"]), note);

    let google = GoogleGenerativeAi::new("gemini-2.5-flash").request_body(context(), &options);
    let contents = google["contents"].as_array().unwrap();
    let text = contents
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap())
        .filter_map(|p| p["text"].as_str())
        .next_back()
        .unwrap();
    assert_eq!(text, note);
}

/// A message's text, whether the API spells content as a string or as parts.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => panic!("content: {other}"),
    }
}

#[tokio::test]
async fn a_swap_keeps_loaded_deferred_tools_loaded_and_the_request_prefix() {
    let model = Arc::new(ScriptedModel::recording([
        // Calling a deferred tool by name loads it.
        call("c1", "xray"),
        call("c2", "zulu"),
        text("done"),
    ]));
    let context =
        AgentContext::new("").with_tools([tool("echo"), deferred("xray"), deferred("yank")]);
    let (x, y) = (deferred("xray"), deferred("yank"));
    let config = AgentLoopConfig::new().prepare_next_turn(move |turn| {
        let first = turn
            .new_messages
            .iter()
            .filter(|m| m.as_assistant().is_some())
            .count()
            == 1;
        let tools = vec![tool("echo"), Arc::clone(&x), Arc::clone(&y), tool("zulu")];
        async move { first.then(|| TurnUpdate::new().tools(tools)) }
    });
    let added = run(context, config, Arc::clone(&model)).await;
    let requests = model.requests();
    assert_eq!(names(&requests[0]), ["echo", "tool_search"]);
    // `xray` stays loaded (the transcript loaded it); the new tool comes after the old prefix.
    assert_eq!(names(&requests[1]), ["echo", "tool_search", "xray", "zulu"]);
    assert_eq!(names(&requests[2]), ["echo", "tool_search", "xray", "zulu"]);
    assert_eq!(announcements(&added), [(strings(&["zulu"]), Vec::new())]);
}
