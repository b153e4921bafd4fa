//! The loop's limits: argument size and depth (also straight from a provider's decoder), the
//! size of a result entering the transcript, per-tool and loop-wide timeouts, and `blocking`
//! tools that must not freeze their siblings or the event stream.

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{E, call, calls, collect, ends, results, run, text, trace_str};
use futures_util::StreamExt;
use pi_runtime::providers::{AnthropicMessages, OpenAiCompletions, ResponseDecoder};
use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, AssistantEvent, AssistantMessage, Message,
    ScriptedModel, agent_loop,
};
use pi_tool::{ArgumentLimits, CancellationToken, FnTool, ToolContext, ToolResult, tool, tool_fn};
use serde_json::{Value, json};

/// Store a note.
#[tool]
async fn note(text: String) -> String {
    format!("{} bytes", text.len())
}

/// Wait for the abort signal, then report what was done so far.
#[tool(timeout = "250ms")]
async fn polite(ctx: ToolContext) -> String {
    ctx.signal().cancelled().await;
    "stopped after 3 of 10 steps".to_owned()
}

/// Never finish, and ignore the abort signal.
#[tool(timeout = "250ms")]
async fn stubborn() -> String {
    std::future::pending::<()>().await;
    String::new()
}

/// Never finish (bounded only by the loop's `tool_timeout`).
#[tool]
async fn endless() -> String {
    std::future::pending::<()>().await;
    String::new()
}

/// Count lines (a sync fn on the blocking pool).
#[tool(blocking)]
fn count_lines(text: String) -> String {
    text.lines().count().to_string()
}

fn model(replies: Vec<AssistantMessage>) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(replies))
}

/// One call to `name` with these arguments, then a final answer.
async fn one_call(
    context: AgentContext,
    config: AgentLoopConfig,
    name: &str,
    args: Value,
) -> Vec<AgentEvent> {
    let replies = vec![calls(vec![call("c1", name, args)]), text("done")];
    run(context, config, model(replies)).await
}

fn single_result(events: &[AgentEvent]) -> (bool, Vec<String>) {
    let results = results(events);
    assert_eq!(results.len(), 1, "{}", trace_str(events));
    let texts = results[0]
        .content
        .iter()
        .filter_map(|c| c.as_text().map(str::to_owned))
        .collect();
    (results[0].is_error, texts)
}

const NOTE_SIZE_ERROR: &str = "Arguments for tool \"note\" are larger than the limit of 1048576 \
                               bytes. Send smaller arguments (split the work into several calls)";
const NOTE_DEPTH_ERROR: &str = "Arguments for tool \"note\" are nested deeper than the limit of 128 \
                                levels; send flatter arguments";

#[tokio::test]
async fn oversized_and_deep_arguments_get_an_error_result() {
    let tools = || AgentContext::new("t").with_tool(NoteTool);
    let huge = Value::String(format!(
        "{{\"text\": \"{}\"}}",
        "x".repeat(50 * 1024 * 1024)
    ));
    let events = one_call(tools(), AgentLoopConfig::new(), "note", huge).await;
    assert_eq!(
        single_result(&events),
        (true, vec![NOTE_SIZE_ERROR.to_owned()])
    );

    let deep = Value::String(format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)));
    let events = one_call(tools(), AgentLoopConfig::new(), "note", deep).await;
    assert_eq!(
        single_result(&events),
        (true, vec![NOTE_DEPTH_ERROR.to_owned()])
    );

    // The loop's own limits apply.
    let tight = AgentLoopConfig::new().argument_limits(ArgumentLimits::DEFAULT.max_bytes(8));
    let events = one_call(tools(), tight, "note", json!({"text": "0123456789"})).await;
    let (is_error, texts) = single_result(&events);
    assert!(is_error);
    assert!(
        texts[0].contains("larger than the limit of 8 bytes"),
        "{texts:?}"
    );
}

/// Decodes a whole stream, fed in `pieces`, to its final message.
fn decode(
    mut decoder: ResponseDecoder,
    pieces: impl IntoIterator<Item = String>,
) -> (AssistantMessage, usize) {
    let mut deltas = 0;
    let mut done = None;
    let mut handle = |events: Vec<AssistantEvent>| {
        for event in events {
            match event {
                AssistantEvent::ToolCallDelta { .. } => deltas += 1,
                AssistantEvent::Done { message, .. } => done = Some(message),
                AssistantEvent::Error { error, .. } => {
                    panic!("stream failed: {:?}", error.error_message)
                }
                _ => {}
            }
        }
    };
    for piece in pieces {
        handle(decoder.push(piece.as_bytes()));
    }
    handle(decoder.finish());
    (done.expect("the stream ends in Done"), deltas)
}

/// An OpenAI Chat Completions stream (the shape of `fixtures/providers/openai_completions_tools.sse`,
/// recorded from the API) calling `note` with `arguments` split into `delta`-sized pieces.
fn completions_stream(arguments: &str, delta: usize) -> Vec<String> {
    let chunk = |body: Value| format!("data: {body}\n\n");
    let mut pieces = vec![chunk(
        json!({"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "note", "arguments": ""}}]}, "finish_reason": null}]}),
    )];
    let bytes = arguments.as_bytes();
    for part in bytes.chunks(delta) {
        let part = std::str::from_utf8(part).expect("ASCII arguments");
        pieces.push(chunk(json!({"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": part}}]}, "finish_reason": null}]})));
    }
    pieces.push(chunk(json!({"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})));
    pieces.push("data: [DONE]\n\n".to_owned());
    pieces
}

/// An Anthropic Messages stream (the shape of `fixtures/providers/anthropic_tools.sse`,
/// recorded from the API) calling `note` with `arguments` as `input_json_delta`s.
fn anthropic_stream(arguments: &str, delta: usize) -> Vec<String> {
    let event = |name: &str, body: Value| format!("event: {name}\ndata: {body}\n\n");
    let mut pieces = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": [], "stop_reason": null, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "note", "input": {}}}),
        ),
    ];
    for part in arguments.as_bytes().chunks(delta) {
        let part = std::str::from_utf8(part).expect("ASCII arguments");
        pieces.push(event("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": part}})));
    }
    pieces.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    pieces.push(event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})));
    pieces.push(event("message_stop", json!({"type": "message_stop"})));
    pieces
}

/// A provider's name, a fresh decoder of it, and its stream for some argument text.
type Provider = (
    &'static str,
    fn() -> ResponseDecoder,
    fn(&str, usize) -> Vec<String>,
);

/// Runs the decoded message through the loop and returns the call's result.
async fn through_the_loop(message: AssistantMessage) -> (bool, Vec<String>) {
    let context = AgentContext::new("t").with_tool(NoteTool);
    let events = run(
        context,
        AgentLoopConfig::new(),
        model(vec![message, text("done")]),
    )
    .await;
    single_result(&events)
}

#[tokio::test]
async fn hostile_arguments_from_a_provider_stream_end_as_error_results() {
    let decoders: [Provider; 2] = [
        (
            "completions",
            || OpenAiCompletions::new("m").decoder(),
            completions_stream,
        ),
        (
            "anthropic",
            || AnthropicMessages::new("m").decoder(),
            anthropic_stream,
        ),
    ];
    for (name, decoder, stream) in decoders {
        // 100,000 levels deep, complete and cut short: no stack overflow in the decoder, the
        // loop or validation.
        for deep in [
            format!(
                "{{\"text\": {}{}}}",
                "[".repeat(100_000),
                "]".repeat(100_000)
            ),
            format!("{{\"text\": {}", "{\"a\": ".repeat(100_000)),
        ] {
            let (message, _) = decode(decoder(), stream(&deep, 4096));
            let (is_error, texts) = through_the_loop(message).await;
            assert!(is_error, "{name}: {texts:?}");
            assert!(
                texts[0] == NOTE_DEPTH_ERROR
                    || texts[0].starts_with("Validation failed for tool \"note\""),
                "{name}: {}",
                &texts[0][..texts[0].len().min(300)]
            );
        }

        // 50 MB of argument text: the decoder keeps about 1 MiB of it, emits no deltas past
        // that, and the loop refuses the call by its size.
        let huge = format!("{{\"text\": \"{}\"}}", "x".repeat(50 * 1024 * 1024));
        let (message, deltas) = decode(decoder(), stream(&huge, 64 * 1024));
        assert!(deltas <= 17, "{name}: {deltas} argument deltas");
        let kept = match message.tool_calls().next().map(|c| &c.call.arguments) {
            Some(Value::String(kept)) => kept.len(),
            other => panic!("{name}: {other:?}"),
        };
        assert!(
            (1024 * 1024..=1024 * 1024 + 64 * 1024).contains(&kept),
            "{name}: kept {kept}"
        );
        assert_eq!(
            through_the_loop(message).await,
            (true, vec![NOTE_SIZE_ERROR.to_owned()])
        );
    }
}

#[tokio::test]
async fn a_100_mb_result_is_cut_before_it_enters_the_transcript() {
    let big = tool_fn(
        "big",
        "Print a lot.",
        json!({"type": "object"}),
        |_args, _ctx| async { "0123456789abcdef\n".repeat(100 * 1024 * 1024 / 17) },
    )
    .unwrap();
    let total = 17 * (100 * 1024 * 1024 / 17);
    let events = one_call(
        AgentContext::new("t").with_tool(big.clone()),
        AgentLoopConfig::new(),
        "big",
        json!({}),
    )
    .await;
    let (is_error, texts) = single_result(&events);
    assert!(!is_error);
    assert_eq!(texts.len(), 2, "the output and the note");
    assert!(
        texts[0].len() <= 256 * 1024 && texts[0].len() > 255 * 1024,
        "{}",
        texts[0].len()
    );
    assert!(texts[0].ends_with('\n'), "cut at a line end");
    assert_eq!(
        texts[1],
        format!(
            "[Tool output truncated: {} of {total} bytes shown. The rest exceeded the limit of 262144 bytes for one tool result. Ask for less at a time: a narrower query, a smaller range, or an offset and limit.]",
            texts[0].len()
        )
    );

    // The limit is the loop's to set.
    let small = AgentLoopConfig::new().max_result_bytes(100);
    let events = one_call(
        AgentContext::new("t").with_tool(big),
        small,
        "big",
        json!({}),
    )
    .await;
    let (_, texts) = single_result(&events);
    assert_eq!(texts[0], "0123456789abcdef\n".repeat(5));
    assert!(texts[1].contains("limit of 100 bytes"), "{}", texts[1]);
}

#[tokio::test]
async fn a_tool_past_its_timeout_is_cancelled_and_answered() {
    let config = AgentLoopConfig::new().abort_grace(Duration::from_millis(100));
    // It answers for itself once cancelled: its words are kept, with the reason.
    let events = one_call(
        AgentContext::new("t").with_tool(PoliteTool),
        config.clone(),
        "polite",
        json!({}),
    )
    .await;
    assert_eq!(
        single_result(&events),
        (
            true,
            vec![
                "stopped after 3 of 10 steps".to_owned(),
                "Tool polite timed out after 250ms".to_owned()
            ]
        )
    );
    // It ignores the cancel: after the grace the loop answers for it.
    let events = one_call(
        AgentContext::new("t").with_tool(StubbornTool),
        config.clone(),
        "stubborn",
        json!({}),
    )
    .await;
    assert_eq!(
        single_result(&events),
        (true, vec!["Tool stubborn timed out after 250ms".to_owned()])
    );
    assert!(trace_str(&events).starts_with(E));
}

#[tokio::test]
async fn the_loop_wide_timeout_applies_to_tools_without_their_own() {
    let config = AgentLoopConfig::new()
        .abort_grace(Duration::from_millis(50))
        .tool_timeout(Duration::from_millis(150));
    let events = one_call(
        AgentContext::new("t").with_tool(EndlessTool),
        config.clone(),
        "endless",
        json!({}),
    )
    .await;
    assert_eq!(
        single_result(&events),
        (true, vec!["Tool endless timed out after 150ms".to_owned()])
    );
    // A tool's own timeout wins over the loop's.
    let config = config.tool_timeout(Duration::from_secs(3600));
    let events = one_call(
        AgentContext::new("t").with_tool(StubbornTool),
        config,
        "stubborn",
        json!({}),
    )
    .await;
    assert_eq!(
        single_result(&events),
        (true, vec!["Tool stubborn timed out after 250ms".to_owned()])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_tool_delays_neither_its_sibling_nor_the_events() {
    // The blocking tool holds its thread until the test has seen the sibling's result; were
    // it run on the loop's task, that result could not come first (it would wait out the
    // 30 s bound and then report that nobody released it).
    let (release, released) = mpsc::channel::<()>();
    let released = Arc::new(Mutex::new(released));
    let blocker = FnTool::builder("blocker", "Block the thread.", json!({"type": "object"}))
        .blocking()
        .build(move |_args, _ctx| {
            let released = Arc::clone(&released);
            async move {
                let waited = released
                    .lock()
                    .expect("lock")
                    .recv_timeout(Duration::from_secs(30));
                match waited {
                    Ok(()) => "released",
                    Err(_) => "nobody released me",
                }
            }
        })
        .unwrap();
    let quick = tool_fn(
        "quick",
        "Answer at once.",
        json!({"type": "object"}),
        |_a, _c| async { "quick" },
    )
    .unwrap();
    let context = AgentContext::new("t").with_tool(blocker).with_tool(quick);
    let replies = vec![
        calls(vec![
            call("b", "blocker", json!({})),
            call("q", "quick", json!({})),
        ]),
        text("done"),
    ];
    let mut stream = agent_loop(
        vec![Message::user("go")],
        context,
        AgentLoopConfig::new(),
        model(replies),
        CancellationToken::new(),
    );
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if let AgentEvent::ToolExecutionEnd { call, .. } = &event
            && call.id() == "q"
        {
            release.send(()).expect("the blocker is waiting");
        }
        events.push(event);
    }
    let ends = ends(&events);
    assert_eq!(
        ends,
        vec![
            ("q".to_owned(), false, "quick".to_owned()),
            ("b".to_owned(), false, "released".to_owned())
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_sync_blocking_tool_runs_in_the_loop_on_a_current_thread_runtime() {
    let events = one_call(
        AgentContext::new("t").with_tool(CountLinesTool),
        AgentLoopConfig::new(),
        "count_lines",
        json!({"text": "a\nb"}),
    )
    .await;
    assert_eq!(single_result(&events), (false, vec!["2".to_owned()]));
}

#[tokio::test]
async fn blocking_and_timeout_together() {
    // A blocking tool past its timeout: the loop stops waiting (its thread runs on until the
    // tool returns; only the tool can stop it, by watching its signal).
    let slow = FnTool::builder("slow", "Spin until cancelled.", json!({"type": "object"}))
        .blocking()
        .timeout(Duration::from_millis(100))
        .build(|_args, ctx: ToolContext| async move {
            while !ctx.is_aborted() {
                std::thread::sleep(Duration::from_millis(5));
            }
            ToolResult::text("noticed the cancel")
        })
        .unwrap();
    let config = AgentLoopConfig::new().abort_grace(Duration::from_secs(5));
    let events = one_call(
        AgentContext::new("t").with_tool(slow),
        config,
        "slow",
        json!({}),
    )
    .await;
    assert_eq!(
        single_result(&events),
        (
            true,
            vec![
                "noticed the cancel".to_owned(),
                "Tool slow timed out after 100ms".to_owned()
            ]
        )
    );
    let _ = collect;
}
