//! Fault injection through the agent loop: seeded random runs whose tools panic, fail, delay,
//! never return or are aborted mid-batch, whose hooks fail or panic, and whose model errors,
//! panics or cuts its stream, in parallel and sequential batches. Every run is checked for
//! exactly one result per tool call id, the documented event order and an end within its
//! limits (a run that does not end is reported as a hang).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fastrand::Rng;
use futures_util::stream::{self, BoxStream, StreamExt};
use pi_runtime::{
    AfterToolCall, AgentContext, AgentEvent, AgentLoopConfig, AssistantContent, AssistantEvent,
    AssistantMessage, BeforeToolCall, Context, Message, Model, StopReason, StreamOptions,
    ToolExecution, agent_loop,
};
use pi_tool::{
    AgentTool, BoxFuture, CancellationToken, ExecutionMode, ToolContext, ToolError, ToolResult,
    ToolSpec,
};
use serde_json::{Value, json};

/// The message of every panic a fault run causes on purpose (a panic hook can hide them).
pub const FAULT_PANIC: &str = "injected fault";

/// How long a run may take before it counts as hung: far above what any run needs (at most
/// three turns of five calls, each sleeping at most 5 ms, and an abort grace of 5 ms), so only
/// a run that cannot end reaches it.
const HANG_LIMIT: Duration = Duration::from_secs(60);

/// What a fault tool does when called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Behaviour {
    /// Returns text.
    Ok,
    /// Returns `Err`.
    Fail,
    /// Panics inside its future.
    Panic,
    /// Panics in `execute` itself, before any future exists.
    PanicOnCall,
    /// Sleeps `ms`, then returns text.
    Delay,
    /// Never returns and ignores the abort signal.
    Never,
    /// Streams two partial results, sleeping between them.
    Updates,
    /// Returns a result marked `is_error`.
    ErrorResult,
    /// Sleeps `ms` unless aborted first.
    Cooperative,
}

const BEHAVIOURS: [(&str, Behaviour); 9] = [
    ("ok", Behaviour::Ok),
    ("fail", Behaviour::Fail),
    ("panic", Behaviour::Panic),
    ("panic_on_call", Behaviour::PanicOnCall),
    ("delay", Behaviour::Delay),
    ("never", Behaviour::Never),
    ("updates", Behaviour::Updates),
    ("error_result", Behaviour::ErrorResult),
    ("cooperative", Behaviour::Cooperative),
];

/// A tool taking `{"ms": 0..=5}` that does what its [`Behaviour`] says.
struct FaultTool {
    spec: ToolSpec,
    behaviour: Behaviour,
    mode: Option<ExecutionMode>,
}

impl FaultTool {
    fn new(name: &str, behaviour: Behaviour, mode: Option<ExecutionMode>) -> Self {
        FaultTool {
            spec: ToolSpec {
                name: name.to_owned(),
                description: format!("A tool that behaves as {behaviour:?}."),
                parameters: json!({
                    "type": "object",
                    "properties": {"ms": {"type": "integer", "minimum": 0, "maximum": 5}},
                    "required": ["ms"],
                }),
            },
            behaviour,
            mode,
        }
    }
}

impl AgentTool for FaultTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn label(&self) -> &str {
        &self.spec.name
    }

    fn execution_mode(&self) -> Option<ExecutionMode> {
        self.mode
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        let delay = Duration::from_millis(args.get("ms").and_then(Value::as_u64).unwrap_or(0));
        let behaviour = self.behaviour;
        if behaviour == Behaviour::PanicOnCall {
            panic!("{FAULT_PANIC}");
        }
        Box::pin(async move {
            match behaviour {
                Behaviour::Ok => Ok(ToolResult::text("ok")),
                Behaviour::Fail => Err(ToolError::new("failed on purpose")),
                Behaviour::Panic | Behaviour::PanicOnCall => panic!("{FAULT_PANIC}"),
                Behaviour::Delay => {
                    tokio::time::sleep(delay).await;
                    Ok(ToolResult::text("slept"))
                }
                Behaviour::Never => std::future::pending().await,
                Behaviour::Updates => {
                    ctx.update(ToolResult::text("first"));
                    tokio::time::sleep(delay).await;
                    ctx.update(ToolResult::text("second"));
                    Ok(ToolResult::text("updated"))
                }
                Behaviour::ErrorResult => {
                    let mut result = ToolResult::text("bad outcome");
                    result.is_error = true;
                    Ok(result)
                }
                Behaviour::Cooperative => {
                    tokio::select! {
                        () = tokio::time::sleep(delay) => Ok(ToolResult::text("finished")),
                        () = ctx.signal().cancelled() => Err(ToolError::new("stopped on abort")),
                    }
                }
            }
        })
    }
}

/// What the model does for one request.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // one per model request of a test run
enum Reply {
    /// A message (`ToolUse` with calls, `Stop` without), streamed as deltas or whole.
    Message {
        message: AssistantMessage,
        deltas: bool,
    },
    /// `Start`, some text, then an `Error` event.
    Error,
    /// `Start`, some text, then the stream ends without a final event.
    Cut,
    /// Panics while streaming.
    Panic,
}

/// A model answering from a per-run script (a run's requests are answered in order; past the
/// end it stops with text).
struct FaultModel {
    replies: Mutex<std::collections::VecDeque<Reply>>,
}

impl Model for FaultModel {
    fn api(&self) -> &str {
        "faults"
    }

    fn provider(&self) -> &str {
        "faults"
    }

    fn id(&self) -> &str {
        "fault-model"
    }

    fn stream<'a>(
        &'a self,
        _context: Context<'a>,
        options: &'a StreamOptions,
    ) -> BoxStream<'a, AssistantEvent> {
        let reply = self
            .replies
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop_front()
            .unwrap_or_else(|| Reply::Message {
                message: text_message("done"),
                deltas: false,
            });
        if options.signal.is_cancelled() {
            let mut error = AssistantMessage::failed(StopReason::Aborted, "Operation aborted");
            error.api = "faults".to_owned();
            return stream::iter([AssistantEvent::Error {
                reason: StopReason::Aborted,
                error,
            }])
            .boxed();
        }
        let start = AssistantEvent::Start {
            partial: AssistantMessage::new(Vec::new(), StopReason::Stop),
        };
        let text = [
            AssistantEvent::TextStart { content_index: 0 },
            AssistantEvent::TextDelta {
                content_index: 0,
                delta: "partial".to_owned(),
            },
        ];
        match reply {
            Reply::Message { message, deltas } => {
                let mut events = vec![start];
                if deltas {
                    events.extend(deltas_of(&message));
                }
                events.push(AssistantEvent::Done {
                    reason: message.stop_reason,
                    message,
                });
                stream::iter(events).boxed()
            }
            Reply::Error => {
                let mut error = AssistantMessage::failed(StopReason::Error, "the model failed");
                error.content = vec![AssistantContent::text("partial")];
                stream::iter([start, text[0].clone(), text[1].clone()])
                    .chain(stream::iter([AssistantEvent::Error {
                        reason: StopReason::Error,
                        error,
                    }]))
                    .boxed()
            }
            Reply::Cut => stream::iter([start, text[0].clone(), text[1].clone()]).boxed(),
            Reply::Panic => stream::iter([start])
                .chain(stream::once(async { panic!("{FAULT_PANIC}") }))
                .boxed(),
        }
    }
}

/// The start, delta and end events of a message's blocks.
fn deltas_of(message: &AssistantMessage) -> Vec<AssistantEvent> {
    let mut events = Vec::new();
    for (index, block) in message.content.iter().enumerate() {
        match block {
            AssistantContent::Text { text, .. } => {
                events.push(AssistantEvent::TextStart {
                    content_index: index,
                });
                events.push(AssistantEvent::TextDelta {
                    content_index: index,
                    delta: text.clone(),
                });
                events.push(AssistantEvent::TextEnd {
                    content_index: index,
                    content: text.clone(),
                });
            }
            AssistantContent::ToolCall(call) => {
                events.push(AssistantEvent::ToolCallStart {
                    content_index: index,
                    id: call.call.id.clone(),
                    name: call.call.name.clone(),
                });
                events.push(AssistantEvent::ToolCallDelta {
                    content_index: index,
                    delta: call.call.arguments.to_string(),
                });
                events.push(AssistantEvent::ToolCallEnd {
                    content_index: index,
                    tool_call: call.clone(),
                });
            }
            _ => {}
        }
    }
    events
}

fn text_message(text: &str) -> AssistantMessage {
    AssistantMessage::new(vec![AssistantContent::text(text)], StopReason::Stop)
}

/// What the hooks do with a call (chosen per call id when the run is planned).
#[derive(Clone, Copy, Debug)]
enum HookFault {
    Pass,
    Fail,
    Panic,
    Block,
    Rewrite,
}

/// One planned run.
struct Plan {
    replies: Vec<Reply>,
    config: AgentLoopConfig,
    /// When to abort (virtual milliseconds after the start), if at all.
    abort_after: Option<u64>,
    tool_calls: usize,
}

/// Totals over a fault run, for the report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultReport {
    /// Agent runs.
    pub runs: usize,
    /// Model requests (turns) over all runs.
    pub turns: usize,
    /// Tool calls the model made in messages the loop executes.
    pub tool_calls: usize,
    /// Of those, the calls whose result is an error.
    pub error_results: usize,
    /// Runs aborted while running.
    pub aborted_runs: usize,
    /// Turns whose response failed (an error, a cut stream, a panicking model) or was aborted:
    /// their calls are not run.
    pub model_failures: usize,
}

/// Runs `runs` seeded random agent runs (16 at a time, on a two-thread runtime), checking each;
/// panics with the seed and run number when a run breaks an invariant or hangs.
pub fn run_faults(seed: u64, runs: usize) -> FaultReport {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap_or_else(|err| panic!("a runtime: {err}"));
    runtime.block_on(async {
        let mut outcomes = stream::iter(0..runs)
            .map(|run| {
                let run_seed = seed
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .wrapping_add(run as u64);
                async move { (run, run_seed, one_run(run_seed).await) }
            })
            .buffer_unordered(16);
        let mut report = FaultReport::default();
        while let Some((run, run_seed, outcome)) = outcomes.next().await {
            match outcome {
                Ok(totals) => {
                    report.runs += 1;
                    report.turns += totals.turns;
                    report.tool_calls += totals.tool_calls;
                    report.error_results += totals.error_results;
                    report.aborted_runs += totals.aborted_runs;
                    report.model_failures += totals.model_failures;
                }
                Err(problem) => panic!("fault run {run} (seed {run_seed}): {problem}"),
            }
        }
        report
    })
}

async fn one_run(seed: u64) -> Result<FaultReport, String> {
    let mut rng = Rng::with_seed(seed);
    let plan = plan(&mut rng);
    let plan_text = format!("{:?} abort after {:?}", plan.replies, plan.abort_after);
    let model = Arc::new(FaultModel {
        replies: Mutex::new(plan.replies.into_iter().collect()),
    });
    let sequential_tool = rng.bool();
    let mut context = AgentContext::new("You are under test.");
    for (name, behaviour) in BEHAVIOURS {
        let mode =
            (sequential_tool && behaviour == Behaviour::Delay).then_some(ExecutionMode::Sequential);
        context = context.with_tool(FaultTool::new(name, behaviour, mode));
    }
    let signal = CancellationToken::new();
    if let Some(after) = plan.abort_after {
        let signal = signal.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(after)).await;
            signal.cancel();
        });
    }
    let stream = agent_loop(
        vec![Message::user("go")],
        context,
        plan.config,
        model,
        signal.clone(),
    );
    let mut stream = stream;
    let mut events = Vec::new();
    let collected = tokio::time::timeout(HANG_LIMIT, async {
        while let Some(event) = stream.next().await {
            events.push(event);
        }
    })
    .await;
    if collected.is_err() {
        let seen: Vec<String> = events.iter().map(describe).collect();
        return Err(format!(
            "the run did not end within {HANG_LIMIT:?}; aborted: {}; events so far:\n{}\nplan: {plan_text}",
            signal.is_cancelled(),
            seen.join("\n")
        ));
    }
    let mut totals = check_run(&events)?;
    totals.aborted_runs = usize::from(signal.is_cancelled());
    if totals.tool_calls < plan.tool_calls.min(1) && totals.turns == 0 {
        return Err("no turn ran".to_owned());
    }
    Ok(totals)
}

fn plan(rng: &mut Rng) -> Plan {
    let mut replies = Vec::new();
    let mut tool_calls = 0;
    let mut has_never = false;
    let mut hook_faults: HashMap<String, HookFault> = HashMap::new();
    for turn in 0..rng.usize(1..=3) {
        match rng.usize(0..12) {
            0 => replies.push(Reply::Error),
            1 => replies.push(Reply::Cut),
            2 => replies.push(Reply::Panic),
            _ => {
                let mut content = Vec::new();
                if rng.bool() {
                    content.push(AssistantContent::text("calling"));
                }
                for index in 0..rng.usize(0..=5) {
                    let id = format!("call-{turn}-{index}");
                    let (name, behaviour) = BEHAVIOURS[rng.usize(0..BEHAVIOURS.len())];
                    has_never |= behaviour == Behaviour::Never;
                    let (name, args) = match rng.usize(0..12) {
                        0 => ("missing", json!({"ms": 1})),
                        1 => (name, json!({"ms": "soon"})),
                        2 => (name, json!({"ms": "3"})),
                        _ => (name, json!({"ms": rng.u64(0..=5)})),
                    };
                    let fault = match rng.usize(0..10) {
                        0 => HookFault::Fail,
                        1 => HookFault::Panic,
                        2 => HookFault::Block,
                        3 => HookFault::Rewrite,
                        _ => HookFault::Pass,
                    };
                    hook_faults.insert(id.clone(), fault);
                    content.push(AssistantContent::tool_call(id, name, args));
                    tool_calls += 1;
                }
                let stop = if content
                    .iter()
                    .any(|c| matches!(c, AssistantContent::ToolCall(_)))
                {
                    if rng.usize(0..15) == 0 {
                        StopReason::Length
                    } else {
                        StopReason::ToolUse
                    }
                } else {
                    StopReason::Stop
                };
                replies.push(Reply::Message {
                    message: AssistantMessage::new(content, stop),
                    deltas: rng.bool(),
                });
            }
        }
    }
    replies.push(Reply::Message {
        message: text_message("done"),
        deltas: rng.bool(),
    });

    let mut config = AgentLoopConfig::new()
        .abort_grace(Duration::from_millis(5))
        .tool_execution(if rng.bool() {
            ToolExecution::Parallel
        } else {
            ToolExecution::Sequential
        });
    if rng.usize(0..3) == 0 {
        config = config.max_parallel(rng.usize(1..=3));
    }
    let hook_faults = Arc::new(hook_faults);
    if rng.bool() {
        let faults = Arc::clone(&hook_faults);
        config = config.before_tool_call(move |ctx| {
            let fault = faults
                .get(&ctx.tool_call.id)
                .copied()
                .unwrap_or(HookFault::Pass);
            async move {
                match fault {
                    HookFault::Pass => Ok(BeforeToolCall::allow()),
                    HookFault::Fail => Err(ToolError::new("before_tool_call failed")),
                    HookFault::Panic => panic!("{FAULT_PANIC}"),
                    HookFault::Block => Ok(BeforeToolCall::block("blocked by the hook")),
                    HookFault::Rewrite => Ok(BeforeToolCall::replace_args(json!({"ms": 0}))),
                }
            }
        });
    }
    if rng.bool() {
        let faults = Arc::clone(&hook_faults);
        config = config.after_tool_call(move |ctx| {
            let fault = faults
                .get(&ctx.tool_call.id)
                .copied()
                .unwrap_or(HookFault::Pass);
            async move {
                match fault {
                    HookFault::Pass | HookFault::Block => Ok(AfterToolCall::keep()),
                    HookFault::Fail => Err(ToolError::new("after_tool_call failed")),
                    HookFault::Panic => panic!("{FAULT_PANIC}"),
                    HookFault::Rewrite => Ok(AfterToolCall::keep().is_error(!ctx.is_error)),
                }
            }
        });
    }
    // A never-returning tool can only end by an abort (the loop's grace answers it).
    let abort_after = if has_never || rng.usize(0..5) == 0 {
        Some(rng.u64(0..=6))
    } else {
        None
    };
    Plan {
        replies,
        config,
        abort_after,
        tool_calls,
    }
}

/// Checks one run's events: the documented order, exactly one result per executed tool call
/// id, and `AgentEnd` carrying every message the run added. Returns the run's totals.
pub fn check_run(events: &[AgentEvent]) -> Result<FaultReport, String> {
    let mut totals = FaultReport::default();
    let kinds = || {
        events
            .iter()
            .map(AgentEvent::kind)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let fail = |what: &str| Err(format!("{what}\nevents: {}", kinds()));
    if !matches!(events.first(), Some(AgentEvent::AgentStart)) {
        return fail("the run does not begin with agent_start");
    }
    let Some(AgentEvent::AgentEnd { messages }) = events.last() else {
        return fail("the run does not end with agent_end");
    };
    let mut in_turn = false;
    let mut open_message: Option<&Arc<Message>> = None;
    let mut ended_messages: Vec<&Arc<Message>> = Vec::new();
    // The turn's assistant message, once complete, and its calls' progress.
    let mut assistant: Option<&Arc<Message>> = None;
    let mut started: HashSet<String> = HashSet::new();
    let mut ended: HashSet<String> = HashSet::new();
    let mut results_in_turn: Vec<String> = Vec::new();
    for event in &events[1..events.len() - 1] {
        match event {
            AgentEvent::AgentStart | AgentEvent::AgentEnd { .. } => {
                return fail("a second agent_start or agent_end");
            }
            AgentEvent::TurnStart => {
                if in_turn {
                    return fail("turn_start inside a turn");
                }
                in_turn = true;
                assistant = None;
                started.clear();
                ended.clear();
                results_in_turn.clear();
            }
            AgentEvent::MessageStart { message } => {
                if !in_turn || open_message.is_some() {
                    return fail("message_start outside a turn or inside another message");
                }
                if let Some(result) = message.as_tool_result()
                    && !ended.contains(&result.tool_call_id)
                {
                    return fail("a tool result message before its tool_execution_end");
                }
                open_message = Some(message);
            }
            AgentEvent::MessageUpdate { .. } => match open_message {
                Some(message) if message.as_assistant().is_some() => {}
                _ => return fail("message_update outside an assistant message"),
            },
            AgentEvent::MessageEnd { message } => {
                let Some(open) = open_message.take() else {
                    return fail("message_end without message_start");
                };
                if open.role() != message.role() {
                    return fail("message_end of another role than its message_start");
                }
                if message.as_assistant().is_some() {
                    if assistant.is_some() {
                        return fail("two assistant messages in one turn");
                    }
                    assistant = Some(message);
                    totals.turns += 1;
                }
                if let Some(result) = message.as_tool_result() {
                    results_in_turn.push(result.tool_call_id.clone());
                    totals.error_results += usize::from(result.is_error);
                }
                ended_messages.push(message);
            }
            AgentEvent::ToolExecutionStart { call } => {
                if assistant.is_none() || open_message.is_some() {
                    return fail("tool_execution_start before the assistant message ended");
                }
                if !started.insert(call.id().to_owned()) {
                    return fail("a second tool_execution_start for one id");
                }
            }
            AgentEvent::ToolExecutionUpdate { call, .. } => {
                if !started.contains(call.id()) || ended.contains(call.id()) {
                    return fail("tool_execution_update outside its call");
                }
            }
            AgentEvent::ToolExecutionEnd { call, result, .. } => {
                if !started.contains(call.id()) || !ended.insert(call.id().to_owned()) {
                    return fail("tool_execution_end without start, or twice");
                }
                if result.as_tool_result().map(|r| r.tool_call_id.as_str()) != Some(call.id()) {
                    return fail("tool_execution_end carries another call's result");
                }
            }
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => {
                if !in_turn || open_message.is_some() {
                    return fail("turn_end outside a turn or inside a message");
                }
                in_turn = false;
                let Some(turn_message) = assistant else {
                    return fail("turn_end without an assistant message");
                };
                if !Arc::ptr_eq(turn_message, message) {
                    return fail("turn_end names another assistant message");
                }
                let Some(assistant_message) = message.as_assistant() else {
                    return fail("turn_end's message is not an assistant message");
                };
                let calls: Vec<String> = assistant_message
                    .tool_calls()
                    .map(|c| c.call.id.clone())
                    .collect();
                let executed = !matches!(
                    assistant_message.stop_reason,
                    StopReason::Error | StopReason::Aborted
                );
                if !executed {
                    totals.model_failures += 1;
                }
                let expected: Vec<String> = if executed { calls } else { Vec::new() };
                totals.tool_calls += expected.len();
                let listed: Vec<String> = tool_results
                    .iter()
                    .filter_map(|m| m.as_tool_result())
                    .map(|r| r.tool_call_id.clone())
                    .collect();
                if listed != expected || results_in_turn != expected {
                    return fail(&format!(
                        "calls {expected:?}, turn_end results {listed:?}, result messages {results_in_turn:?}"
                    ));
                }
                let mut ids: Vec<&String> = started.iter().collect();
                ids.sort();
                let mut want: Vec<&String> = expected.iter().collect();
                want.sort();
                if ids != want || started != ended {
                    return fail("tool executions do not match the calls one to one");
                }
            }
            other => {
                return fail(&format!(
                    "an event this check does not know: {}",
                    other.kind()
                ));
            }
        }
    }
    if in_turn || open_message.is_some() {
        return fail("agent_end inside a turn or a message");
    }
    let same = messages.len() == ended_messages.len()
        && messages
            .iter()
            .zip(&ended_messages)
            .all(|(a, b)| Arc::ptr_eq(a, b));
    if !same {
        return fail("agent_end does not carry exactly the messages the run ended");
    }
    Ok(totals)
}

/// A panic hook that keeps quiet about [`FAULT_PANIC`] panics and reports every other one as
/// the default hook would.
pub fn silence_fault_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied());
        if message != Some(FAULT_PANIC) {
            default(info);
        }
    }));
}

/// An event as one line: its kind and the call id or message role it concerns.
fn describe(event: &AgentEvent) -> String {
    match (event.tool_call(), event.message()) {
        (Some(call), _) => format!("{} {} ({})", event.kind(), call.id(), call.name()),
        (None, Some(message)) => format!("{} {}", event.kind(), message.role()),
        (None, None) => event.kind().to_owned(),
    }
}
