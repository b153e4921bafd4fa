//! Workloads W1-W5 of pi's agent-loop benchmark (`bench/pi/README.md`), run on
//! `pi_runtime::agent_loop` with a scripted model, and optionally side by side with pi itself.
//!
//! ```text
//! cargo bench -p pi-runtime --bench loop_workloads                 # ours only
//! cargo bench -p pi-runtime --bench loop_workloads -- --compare     # ours and pi (node), with ratios
//! options: --only W1,W4  --runs N  --warmup N  --pi-json FILE (reuse a pi result)  --pi-sh PATH
//!          --parts (time the per-call pieces that come from pi-tool, outside the loop, and
//!          the contract's floor: the direct run plus what pi's events and transcript ask)
//!          --traced (W1 also with spans recorded: `W1-spans` in a tracing-subscriber registry,
//!          `W1-otel` through tracing-opentelemetry and the OpenTelemetry SDK)
//!          --keep-heap (our children keep freed memory, as node's heap does: see below)
//! ```
//!
//! Every run starts from a fresh transcript and the previous run's messages are freed before
//! it, so with glibc's default `malloc` each run gets its heap pages back from the kernel
//! (glibc returns a free heap top over 128 KiB) and pays a page fault per page again, inside
//! the timer. Node's heap stays with the process between runs. `--keep-heap` runs our children
//! with `GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824`, so freed memory stays too and
//! the figure is the loop's own work; without it the figure includes the refaulting.
//!
//! Plain `W1` runs without any `tracing` subscriber: the loop's spans are compiled in but
//! disabled, which is what the W1 budget measures.
//!
//! Each workload runs in its own child process (this binary re-executed with `--child W`), so
//! peak RSS (`VmHWM`) is per workload, like pi's harness.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use futures_util::StreamExt;
use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, AssistantContent, AssistantMessage, Message,
    ScriptedModel, StopReason, ToolExecution, agent_loop,
};
use pi_tool::schemars::JsonSchema;
use pi_tool::{AgentTool, CancellationToken, tool};
use serde::Deserialize;
use serde_json::{Value, json};

/// How `echo` changes its text (ignored: the tool echoes the text as given).
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "pi_tool::schemars")]
#[serde(rename_all = "lowercase")]
enum Mode {
    Upper,
    Lower,
    Same,
}

static ECHO_EXECUTIONS: AtomicUsize = AtomicUsize::new(0);

/// Echo the text back.
#[tool]
async fn echo(text: String, count: i64, mode: Option<Mode>) -> String {
    let _ = (
        count,
        mode.map(|m| matches!(m, Mode::Upper | Mode::Lower | Mode::Same)),
    );
    ECHO_EXECUTIONS.fetch_add(1, Ordering::Relaxed);
    text
}

/// Sleep for a while.
#[tool]
async fn sleep(ms: u64) -> String {
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    format!("slept {ms}")
}

fn assistant(content: Vec<AssistantContent>, stop_reason: StopReason) -> AssistantMessage {
    let mut message = AssistantMessage::new(content, stop_reason);
    message.api = "scripted".into();
    message.provider = "scripted".into();
    message.model = "scripted-1".into();
    message
}

fn final_message() -> AssistantMessage {
    assistant(vec![AssistantContent::text("done")], StopReason::Stop)
}

fn echo_args(i: usize) -> Value {
    if i.is_multiple_of(2) {
        json!({"text": format!("t{i}"), "count": i, "mode": "upper"})
    } else {
        json!({"text": format!("t{i}"), "count": i})
    }
}

fn call(id: String, name: &str, args: Value) -> AssistantContent {
    AssistantContent::tool_call(id, name, args)
}

/// What one run produced, checked after the timer stopped.
struct RunOutcome {
    seconds: f64,
    new_messages: Vec<Arc<Message>>,
    model_calls: usize,
    events: usize,
    end_order: Vec<String>,
}

async fn run_once(
    script: Vec<AssistantMessage>,
    tools: &[Arc<dyn AgentTool>],
    mode: ToolExecution,
) -> RunOutcome {
    let model = Arc::new(ScriptedModel::new(script).without_recording());
    let context = AgentContext::new("You are a benchmark.").with_tools(tools.iter().cloned());
    let config = AgentLoopConfig::new().tool_execution(mode);
    let prompt = Message::user("go");
    let mut end_order = Vec::new();
    let mut events = 0;
    let mut new_messages = Vec::new();
    let started = Instant::now();
    let mut stream = agent_loop(
        vec![prompt],
        context,
        config,
        model.clone(),
        CancellationToken::new(),
    );
    while let Some(event) = stream.next().await {
        events += 1;
        match event {
            AgentEvent::ToolExecutionEnd { call, .. } if end_order.len() < 16 => {
                end_order.push(call.id().to_owned());
            }
            AgentEvent::AgentEnd { messages } => new_messages = messages,
            _ => {}
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    RunOutcome {
        seconds,
        new_messages,
        model_calls: model.calls(),
        events,
        end_order,
    }
}

/// The checks pi's harness makes after every run.
fn verify(
    outcome: &RunOutcome,
    script_len: usize,
    calls: usize,
    check: &dyn Fn(&pi_runtime::ToolResultMessage) -> bool,
) {
    assert_eq!(outcome.model_calls, script_len, "model calls");
    let last = outcome
        .new_messages
        .last()
        .and_then(|m| m.as_assistant())
        .expect("last message is assistant");
    assert_eq!(last.text(), "done", "last message is the final text");
    let results: Vec<_> = outcome
        .new_messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .collect();
    assert_eq!(results.len(), calls, "one result per call");
    let calls_in_order: Vec<&str> = outcome
        .new_messages
        .iter()
        .filter_map(|m| m.as_assistant())
        .flat_map(|m| m.tool_calls().map(|c| c.call.id.as_str()))
        .collect();
    let results_in_order: Vec<&str> = results.iter().map(|r| r.tool_call_id.as_str()).collect();
    assert_eq!(calls_in_order, results_in_order, "results in call order");
    for result in results {
        assert!(check(result), "unexpected result: {result:?}");
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

struct Repeat {
    median_s: f64,
    min_s: f64,
    max_s: f64,
    runs: usize,
    events: usize,
    sample: Option<Arc<Message>>,
}

async fn repeat(
    build: &dyn Fn() -> Vec<AssistantMessage>,
    tools: &[Arc<dyn AgentTool>],
    mode: ToolExecution,
    calls: usize,
    warmup: usize,
    runs: usize,
    check: &dyn Fn(&pi_runtime::ToolResultMessage) -> bool,
) -> Repeat {
    let mut times = Vec::with_capacity(runs);
    let mut events = 0;
    let mut sample = None;
    for i in 0..warmup + runs {
        let script = build();
        let len = script.len();
        let outcome = run_once(script, tools, mode).await;
        verify(&outcome, len, calls, check);
        if i >= warmup {
            times.push(outcome.seconds);
            events = outcome.events;
            sample = outcome
                .new_messages
                .iter()
                .find(|m| m.as_tool_result().is_some())
                .cloned();
        }
    }
    let min_s = times.iter().copied().fold(f64::INFINITY, f64::min);
    let max_s = times.iter().copied().fold(0.0, f64::max);
    Repeat {
        median_s: median(times),
        min_s,
        max_s,
        runs,
        events,
        sample,
    }
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmHWM:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kb| kb.parse().ok())
        })
        .unwrap_or(0)
}

struct Options {
    child: Option<String>,
    only: Option<Vec<String>>,
    runs: Option<usize>,
    warmup: Option<usize>,
    compare: bool,
    keep_heap: bool,
    parts: bool,
    traced: bool,
    pi_json: Option<String>,
    pi_sh: String,
}

fn parse_options() -> Options {
    let mut options = Options {
        child: None,
        only: None,
        runs: None,
        warmup: None,
        compare: false,
        keep_heap: false,
        parts: false,
        traced: false,
        pi_json: None,
        pi_sh: std::env::var("PI_BENCH_SH").unwrap_or_else(|_| {
            concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/pi/run.sh").to_owned()
        }),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--child" => options.child = args.next(),
            "--only" => {
                options.only = args
                    .next()
                    .map(|s| s.split(',').map(str::to_owned).collect())
            }
            "--runs" => options.runs = args.next().and_then(|s| s.parse().ok()),
            "--warmup" => options.warmup = args.next().and_then(|s| s.parse().ok()),
            "--compare" => options.compare = true,
            "--keep-heap" => options.keep_heap = true,
            "--parts" => options.parts = true,
            "--traced" => options.traced = true,
            "--pi-json" => options.pi_json = args.next(),
            "--pi-sh" => {
                if let Some(path) = args.next() {
                    options.pi_sh = path;
                }
            }
            // `cargo bench` passes `--bench`; other harness flags are ignored too.
            _ => {}
        }
    }
    options
}

/// Counts the spans a subscriber closed (recorded and finished).
struct CountClosed(Arc<AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CountClosed {
    fn on_close(&self, _id: tracing::span::Id, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// An OpenTelemetry exporter that counts the spans it is given and drops them.
#[derive(Debug)]
struct CountingExporter(Arc<AtomicUsize>);

impl opentelemetry_sdk::trace::SpanExporter for CountingExporter {
    async fn export(
        &self,
        batch: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.fetch_add(batch.len(), Ordering::Relaxed);
        Ok(())
    }
}

/// Installs the subscriber of a traced W1 variant; returns the counter of recorded spans.
fn install_subscriber(workload: &str) -> Option<Arc<AtomicUsize>> {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt;
    let count = Arc::new(AtomicUsize::new(0));
    let installed = match workload {
        "W1-spans" => tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(CountClosed(Arc::clone(&count))),
        ),
        "W1-otel" => {
            let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
                .with_simple_exporter(CountingExporter(Arc::clone(&count)))
                .build();
            let tracer = provider.tracer("loop_workloads");
            tracing::subscriber::set_global_default(
                tracing_subscriber::registry()
                    .with(tracing_opentelemetry::layer().with_tracer(tracer)),
            )
        }
        _ => return None,
    };
    installed.expect("the only subscriber of this process");
    Some(count)
}

fn child(workload: &str, options: &Options) -> Value {
    let recorded = install_subscriber(workload);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio runtime");
    let echo: Arc<dyn AgentTool> = Arc::new(EchoTool);
    let sleep: Arc<dyn AgentTool> = Arc::new(SleepTool);
    let runs = |default: usize| options.runs.unwrap_or(default);
    let warmup = |default: usize| options.warmup.unwrap_or(default);
    let ok = |r: &pi_runtime::ToolResultMessage| !r.is_error;
    let out = runtime.block_on(async {
        match workload {
            "W1" | "W1-spans" | "W1-otel" => {
                const N: usize = 1000;
                let build = || {
                    let calls = (0..N).map(|i| call(format!("call_{i}"), "echo", echo_args(i))).collect();
                    vec![assistant(calls, StopReason::ToolUse), final_message()]
                };
                let check = |r: &pi_runtime::ToolResultMessage| !r.is_error && r.text().starts_with('t');
                let r = repeat(&build, std::slice::from_ref(&echo), ToolExecution::Parallel, N, warmup(10), runs(30), &check).await;
                json!({"calls_per_s": N as f64 / r.median_s, "median_ms": r.median_s * 1e3, "min_ms": r.min_s * 1e3,
                       "max_ms": r.max_s * 1e3, "runs": r.runs, "calls_per_run": N, "events_per_run": r.events})
            }
            "W2" => {
                const TURNS: usize = 2000;
                let build = || {
                    let mut script: Vec<AssistantMessage> = (0..TURNS)
                        .map(|t| assistant(vec![call(format!("call_{t}"), "echo", echo_args(t))], StopReason::ToolUse))
                        .collect();
                    script.push(final_message());
                    script
                };
                let r = repeat(&build, std::slice::from_ref(&echo), ToolExecution::Parallel, TURNS, warmup(3), runs(10), &ok).await;
                json!({"turns_per_s": TURNS as f64 / r.median_s, "median_ms": r.median_s * 1e3, "min_ms": r.min_s * 1e3,
                       "max_ms": r.max_s * 1e3, "runs": r.runs, "turns_per_run": TURNS, "events_per_run": r.events})
            }
            "W3" => {
                const N: usize = 100;
                let build = || {
                    let calls = (0..N).map(|i| call(format!("call_{i}"), "sleep", json!({"ms": 20}))).collect();
                    vec![assistant(calls, StopReason::ToolUse), final_message()]
                };
                let tools = [sleep.clone()];
                let parallel = repeat(&build, &tools, ToolExecution::Parallel, N, warmup(2), runs(10), &ok).await;
                let sequential =
                    repeat(&build, &tools, ToolExecution::Sequential, N, warmup(1), options.runs.unwrap_or(3), &ok).await;
                // Completion order vs result order (5 sleeps of 50..10 ms), untimed.
                let probe = vec![
                    assistant(
                        [50, 40, 30, 20, 10]
                            .iter()
                            .enumerate()
                            .map(|(i, ms)| call(format!("p{i}"), "sleep", json!({"ms": ms})))
                            .collect(),
                        StopReason::ToolUse,
                    ),
                    final_message(),
                ];
                let probe = run_once(probe, &tools, ToolExecution::Parallel).await;
                let result_order: Vec<String> = probe
                    .new_messages
                    .iter()
                    .filter_map(|m| m.as_tool_result())
                    .map(|r| r.tool_call_id.clone())
                    .collect();
                // The timer alone: one 20 ms tokio sleep, outside any loop.
                let mut alone = Vec::new();
                for _ in 0..10 {
                    let started = Instant::now();
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    alone.push(started.elapsed().as_secs_f64());
                }
                let timer_alone_ms = median(alone) * 1e3;
                json!({"timer_alone_ms": timer_alone_ms, "parallel": {"median_ms": parallel.median_s * 1e3, "min_ms": parallel.min_s * 1e3, "max_ms": parallel.max_s * 1e3, "runs": parallel.runs},
                       "sequential": {"median_ms": sequential.median_s * 1e3, "min_ms": sequential.min_s * 1e3, "max_ms": sequential.max_s * 1e3, "runs": sequential.runs},
                       "calls_per_run": N, "timer_ms": 20,
                       "order_probe": {"tool_execution_end_order": probe.end_order, "tool_result_message_order": result_order}})
            }
            "W4" => {
                const N: usize = 1000;
                let bad = json!({"text": ["not", "a", "string"], "count": "three"});
                let build = || {
                    let calls = (0..N).map(|i| call(format!("call_{i}"), "echo", bad.clone())).collect();
                    vec![assistant(calls, StopReason::ToolUse), final_message()]
                };
                let before = ECHO_EXECUTIONS.load(Ordering::Relaxed);
                let check = |r: &pi_runtime::ToolResultMessage| r.is_error && r.text().starts_with("Validation failed");
                let r = repeat(&build, std::slice::from_ref(&echo), ToolExecution::Parallel, N, warmup(10), runs(30), &check).await;
                let executed = ECHO_EXECUTIONS.load(Ordering::Relaxed) - before;
                assert_eq!(executed, 0, "the tool must never execute with invalid arguments");
                let text = r.sample.as_ref().and_then(|m| m.as_tool_result()).map(|m| m.text()).unwrap_or_default();
                json!({"calls_per_s": N as f64 / r.median_s, "median_ms": r.median_s * 1e3, "min_ms": r.min_s * 1e3,
                       "max_ms": r.max_s * 1e3, "runs": r.runs, "calls_per_run": N, "tool_executed": executed, "error_text": text})
            }
            "W5" => {
                let build = || {
                    vec![
                        assistant(vec![call("call_0".into(), "no_such_tool", json!({"text": "x", "count": 1}))], StopReason::ToolUse),
                        final_message(),
                    ]
                };
                let check = |r: &pi_runtime::ToolResultMessage| r.is_error;
                let r = repeat(&build, std::slice::from_ref(&echo), ToolExecution::Parallel, 1, warmup(10), runs(50), &check).await;
                let text = r.sample.as_ref().and_then(|m| m.as_tool_result()).map(|m| m.text()).unwrap_or_default();
                json!({"median_ms": r.median_s * 1e3, "min_ms": r.min_s * 1e3, "max_ms": r.max_s * 1e3, "runs": r.runs, "result_text": text})
            }
            other => panic!("unknown workload {other}"),
        }
    });
    let mut out = out;
    if let Some(recorded) = recorded {
        // Every run: one span per call, two model requests, one run.
        let runs = options.warmup.unwrap_or(10) + options.runs.unwrap_or(30);
        let spans = recorded.load(Ordering::Relaxed);
        assert_eq!(spans, runs * (1000 + 2 + 1), "spans recorded");
        out["spans_recorded"] = json!(spans);
    }
    out["peak_rss_kb"] = json!(peak_rss_kb());
    out
}

/// Times the per-call pieces that come from `pi-tool` (and the tool itself), without the loop,
/// to show where a W1/W4 call's time goes. Median of 30 rounds of 1,000 calls, ns per call.
fn parts() {
    use futures_util::FutureExt;
    use pi_tool::{PreparedArguments, ToolContext, ToolResult, execute_prepared, prepare_call};

    fn time_per_call(mut round: impl FnMut() -> usize) -> f64 {
        time_rounds(&mut (), |_| {}, |_| round())
    }

    let echo = EchoTool;
    let good: Vec<Value> = (0..1000).map(echo_args).collect();
    let bad = json!({"text": ["not", "a", "string"], "count": "three"});
    let signal = CancellationToken::new();
    let sink: pi_tool::UpdateSink = Arc::new(|_: ToolResult| {});
    let prepared: Vec<PreparedArguments> = good
        .iter()
        .map(|args| prepare_call(&echo, args).expect("valid"))
        .collect();

    let valid = time_per_call(|| {
        good.iter()
            .filter(|args| prepare_call(&echo, args).is_ok())
            .count()
    });
    let invalid = time_per_call(|| {
        (0..1000)
            .filter(|_| prepare_call(&echo, &bad).is_err())
            .count()
    });
    let context = time_per_call(|| {
        (0..1000)
            .map(|i| {
                let ctx = ToolContext::new(if i % 2 == 0 { "call_0" } else { "call_1" })
                    .with_signal(signal.clone())
                    .with_updates(Arc::clone(&sink));
                drop(ctx);
            })
            .count()
    });
    let execute = time_per_call(|| {
        good.iter()
            .zip(&prepared)
            .filter_map(|(raw, args)| {
                execute_prepared(&echo, raw, args.clone(), ToolContext::new("c")).now_or_never()
            })
            .count()
    });
    let clone_args = time_per_call(|| good.iter().map(Value::clone).count());
    // The whole pipeline of one call outside the loop: what W1's per-call time compares with.
    let registry = pi_tool::ToolRegistry::new().with(EchoTool);
    let calls: Vec<pi_tool::ToolCall> = good
        .iter()
        .enumerate()
        .map(|(i, args)| pi_tool::ToolCall::new(format!("call_{i}"), "echo", args.clone()))
        .collect();
    let direct = time_per_call(|| {
        calls
            .iter()
            .filter_map(|call| registry.run(call).now_or_never())
            .filter(|result| !result.is_error)
            .count()
    });
    // The same, but each result is kept until the round ends (dropped before the next round's
    // timer), as a transcript keeps every result: what keeping alone costs.
    let direct_kept = time_rounds(
        &mut Vec::<ToolResult>::with_capacity(calls.len()),
        Vec::clear,
        |kept| {
            kept.extend(
                calls
                    .iter()
                    .filter_map(|call| registry.run(call).now_or_never()),
            );
            kept.len()
        },
    );
    let cancelled = time_per_call(|| (0..1000).filter(|_| !signal.is_cancelled()).count());
    // The least any loop does per call under the event contract, with none of the loop's own
    // machinery: the direct run, then each obligation the contract adds (`contract_floor`).
    let floor = [
        Obligation::ResultMessage,
        Obligation::Events,
        Obligation::Transcript,
    ]
    .map(|upto| contract_floor(&registry, &calls, upto));
    println!("\n# per-call pieces outside the loop (ns per call, median)");
    println!("pi_tool::prepare_call, valid echo args (W1):    {valid:>7.0}");
    println!("pi_tool::prepare_call, invalid args (W4):       {invalid:>7.0}");
    println!("ToolContext::new + with_signal + with_updates:  {context:>7.0}");
    println!(
        "execute_prepared(echo) incl. ToolContext::new:  {execute:>7.0}  (cloning the args would add: {clone_args:.0})"
    );
    println!("CancellationToken::is_cancelled:                {cancelled:>7.0}");
    println!("ToolRegistry::run(echo), the whole pipeline:    {direct:>7.0}");
    println!("the same, each result kept until the round ends: {direct_kept:>7.0}");
    for (what, ns) in [
        "the contract's floor: + the result message kept:",
        "                      + its four events:        ",
        "                      + the transcript:         ",
    ]
    .iter()
    .zip(floor)
    {
        println!("{what} {ns:>7.0}  ({:.2}x the direct run)", ns / direct);
    }
}

/// Median of 30 rounds (after 10 to warm up), in ns per call: `reset` runs before each
/// round's timer (to drop what the last round kept), `round` returns how many calls it made.
fn time_rounds<S>(
    state: &mut S,
    mut reset: impl FnMut(&mut S),
    mut round: impl FnMut(&mut S) -> usize,
) -> f64 {
    let mut samples: Vec<f64> = (0..40)
        .map(|_| {
            reset(state);
            let started = Instant::now();
            let calls = round(state);
            started.elapsed().as_secs_f64() * 1e9 / calls as f64
        })
        .skip(10)
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// How much of a call's obligations under pi's event contract [`contract_floor`] does.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Obligation {
    /// The result message, with its copies of the call's id and name, kept until the run ends.
    ResultMessage,
    /// Also `ToolExecutionStart`, `ToolExecutionEnd`, `MessageStart` and `MessageEnd`, each
    /// owning its data, through a queue to a consumer that drops them.
    Events,
    /// Also the message in the transcript, which is dropped when the run ends.
    Transcript,
}

/// Times the least a loop must do per call under pi's event contract, as plain code: the
/// direct run of the call, then what `upto` adds. No clock (not even the message's
/// timestamp), no scheduling, no hooks, no async stream. The run's new messages are kept past
/// the timer, as W1 keeps them, and dropped before the next round, as W1's go between runs.
fn contract_floor(
    registry: &pi_tool::ToolRegistry,
    calls: &[pi_tool::ToolCall],
    upto: Obligation,
) -> f64 {
    use futures_util::FutureExt;
    use pi_runtime::{ToolCallRef, ToolResultMessage};
    use std::collections::VecDeque;

    let blocks = calls
        .iter()
        .map(|c| call(c.id.clone(), &c.name, c.arguments.clone()))
        .collect();
    let message = Arc::new(Message::Assistant(assistant(blocks, StopReason::ToolUse)));
    let template = ToolResultMessage::new(String::new(), String::new(), Vec::new());
    time_rounds(
        &mut Vec::new(),
        Vec::clear,
        |new_messages: &mut Vec<Arc<Message>>| {
            let mut transcript: Vec<Arc<Message>> = Vec::with_capacity(calls.len());
            let mut queue: VecDeque<AgentEvent> = VecDeque::with_capacity(64);
            let mut events = 0;
            new_messages.reserve(calls.len());
            for (index, tool_call) in calls.iter().enumerate() {
                let call = ToolCallRef::new(Arc::clone(&message), index).expect("a tool call");
                if upto >= Obligation::Events {
                    queue.push_back(AgentEvent::ToolExecutionStart { call: call.clone() });
                }
                let result = registry
                    .run(tool_call)
                    .now_or_never()
                    .expect("echo finishes at once");
                // The template's clone allocates nothing: it saves `new`'s clock read.
                let mut answer = template.clone();
                answer.tool_call_id = tool_call.id.clone();
                answer.tool_name = tool_call.name.clone();
                answer.content = result.content;
                answer.details = result.details;
                answer.is_error = result.is_error;
                let answer = Arc::new(Message::ToolResult(answer));
                if upto >= Obligation::Events {
                    queue.push_back(AgentEvent::ToolExecutionEnd {
                        call,
                        result: Arc::clone(&answer),
                        is_error: result.is_error,
                        terminate: result.terminate,
                        usage: None,
                        duration_ms: 0,
                    });
                    queue.push_back(AgentEvent::MessageStart {
                        message: Arc::clone(&answer),
                    });
                    queue.push_back(AgentEvent::MessageEnd {
                        message: Arc::clone(&answer),
                    });
                }
                if upto >= Obligation::Transcript {
                    transcript.push(Arc::clone(&answer));
                }
                new_messages.push(answer);
                while let Some(event) = queue.pop_front() {
                    events += usize::from(!matches!(event, AgentEvent::AgentStart));
                }
            }
            let expected = if upto >= Obligation::Events { 4 } else { 0 };
            assert_eq!(events, expected * calls.len());
            calls.len()
        },
    )
}

fn fmt_num(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    let (int, frac) = s
        .split_once('.')
        .map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, ch) in int.chars().rev().enumerate() {
        if i > 0 && i % 3 == 0 && ch != '-' {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let mut out: String = grouped.chars().rev().collect();
    if let Some(frac) = frac {
        out.push('.');
        out.push_str(frac);
    }
    out
}

fn summary(workload: &str, r: &Value) -> String {
    let rss = r["peak_rss_kb"].as_f64().unwrap_or(0.0) / 1024.0;
    match workload {
        "W1" | "W1-spans" | "W1-otel" => format!(
            "{workload} dispatch: {} calls/s (median of {} runs; {:.3} ms/run, {:.3} us/call, peak RSS {rss:.1} MiB)",
            fmt_num(r["calls_per_s"].as_f64().unwrap_or(0.0), 0),
            r["runs"],
            r["median_ms"].as_f64().unwrap_or(0.0),
            r["median_ms"].as_f64().unwrap_or(0.0) * 1e3 / 1000.0
        ),
        "W2" => format!(
            "W2 turns: {} turns/s (median of {} runs; {:.2} ms/run, {:.3} us/turn, peak RSS {rss:.1} MiB)",
            fmt_num(r["turns_per_s"].as_f64().unwrap_or(0.0), 0),
            r["runs"],
            r["median_ms"].as_f64().unwrap_or(0.0),
            r["median_ms"].as_f64().unwrap_or(0.0) * 1e3 / 2000.0
        ),
        "W3" => format!(
            "W3 parallel-io: parallel {:.2} ms (median of {} runs; one 20 ms tokio sleep alone takes {:.2} ms), sequential {:.1} ms (median of {} runs) for 100 calls x 20 ms (peak RSS {rss:.1} MiB)",
            r["parallel"]["median_ms"].as_f64().unwrap_or(0.0),
            r["parallel"]["runs"],
            r["timer_alone_ms"].as_f64().unwrap_or(0.0),
            r["sequential"]["median_ms"].as_f64().unwrap_or(0.0),
            r["sequential"]["runs"]
        ),
        "W4" => format!(
            "W4 validation-errors: {} calls/s (median of {} runs; {:.3} ms/run, tool executed {} times, peak RSS {rss:.1} MiB)",
            fmt_num(r["calls_per_s"].as_f64().unwrap_or(0.0), 0),
            r["runs"],
            r["median_ms"].as_f64().unwrap_or(0.0),
            r["tool_executed"]
        ),
        "W5" => format!(
            "W5 not-found: result text {} (median of {} runs {:.1} us/run, peak RSS {rss:.1} MiB)",
            r["result_text"],
            r["runs"],
            r["median_ms"].as_f64().unwrap_or(0.0) * 1e3
        ),
        _ => String::new(),
    }
}

/// One row of the side-by-side table: name, unit, pi's and our figure, and whether more is better.
struct Row {
    name: &'static str,
    pi: Option<f64>,
    ours: Option<f64>,
    higher_is_better: bool,
    target: &'static str,
    decimals: usize,
}

fn compare(ours: &serde_json::Map<String, Value>, pi: &Value) {
    let p = |w: &str, path: &[&str]| {
        let mut v = &pi["results"][w];
        for key in path {
            v = &v[*key];
        }
        v.as_f64()
    };
    let o = |w: &str, path: &[&str]| {
        let mut v = ours.get(w)?;
        for key in path {
            v = &v[*key];
        }
        v.as_f64()
    };
    let mib = |kb: Option<f64>| kb.map(|kb| kb / 1024.0);
    let rows = [
        Row {
            name: "W1 dispatch, calls/s",
            pi: p("W1", &["calls_per_s"]),
            ours: o("W1", &["calls_per_s"]),
            higher_is_better: true,
            target: ">= 15x",
            decimals: 0,
        },
        Row {
            name: "W1 with spans recorded (registry), calls/s",
            pi: p("W1", &["calls_per_s"]),
            ours: o("W1-spans", &["calls_per_s"]),
            higher_is_better: true,
            target: "",
            decimals: 0,
        },
        Row {
            name: "W1 with spans exported (OpenTelemetry SDK), calls/s",
            pi: p("W1", &["calls_per_s"]),
            ours: o("W1-otel", &["calls_per_s"]),
            higher_is_better: true,
            target: "",
            decimals: 0,
        },
        Row {
            name: "W2 turns, turns/s",
            pi: p("W2", &["turns_per_s"]),
            ours: o("W2", &["turns_per_s"]),
            higher_is_better: true,
            target: ">= 20x",
            decimals: 0,
        },
        Row {
            name: "W3 parallel, ms",
            pi: p("W3", &["parallel", "median_ms"]),
            ours: o("W3", &["parallel", "median_ms"]),
            higher_is_better: false,
            target: "<= 21 ms",
            decimals: 2,
        },
        Row {
            name: "W3 sequential, ms",
            pi: p("W3", &["sequential", "median_ms"]),
            ours: o("W3", &["sequential", "median_ms"]),
            higher_is_better: false,
            target: "",
            decimals: 1,
        },
        Row {
            name: "W4 validation errors, calls/s",
            pi: p("W4", &["calls_per_s"]),
            ours: o("W4", &["calls_per_s"]),
            higher_is_better: true,
            target: ">= 15x",
            decimals: 0,
        },
        Row {
            name: "W5 not found, us/run",
            pi: p("W5", &["median_ms"]).map(|ms| ms * 1e3),
            ours: o("W5", &["median_ms"]).map(|ms| ms * 1e3),
            higher_is_better: false,
            target: "",
            decimals: 1,
        },
        Row {
            name: "W1 peak RSS, MiB",
            pi: mib(p("W1", &["peak_rss_kb"])),
            ours: mib(o("W1", &["peak_rss_kb"])),
            higher_is_better: false,
            target: "<= 16 MiB",
            decimals: 1,
        },
        Row {
            name: "W2 peak RSS, MiB",
            pi: mib(p("W2", &["peak_rss_kb"])),
            ours: mib(o("W2", &["peak_rss_kb"])),
            higher_is_better: false,
            target: "",
            decimals: 1,
        },
        Row {
            name: "W4 peak RSS, MiB",
            pi: mib(p("W4", &["peak_rss_kb"])),
            ours: mib(o("W4", &["peak_rss_kb"])),
            higher_is_better: false,
            target: "",
            decimals: 1,
        },
    ];
    println!();
    println!("| workload | pi 0.73.1 | pi-runtime | ours vs pi | target |");
    println!("| --- | ---: | ---: | ---: | --- |");
    for row in rows {
        let show = |v: Option<f64>| v.map_or("-".to_owned(), |v| fmt_num(v, row.decimals));
        let ratio = match (row.pi, row.ours) {
            (Some(pi), Some(ours)) if pi > 0.0 && ours > 0.0 => {
                let better = if row.higher_is_better {
                    ours / pi
                } else {
                    pi / ours
                };
                if better >= 1.0 {
                    format!("{better:.1}x better")
                } else {
                    format!("{better:.2}x (worse)")
                }
            }
            _ => "-".to_owned(),
        };
        println!(
            "| {} | {} | {} | {} | {} |",
            row.name,
            show(row.pi),
            show(row.ours),
            ratio,
            row.target
        );
    }
}

/// glibc's `malloc` keeps freed memory up to 1 GiB instead of returning a heap top over 128 KiB.
const KEEP_HEAP: &str = "glibc.malloc.trim_threshold=1073741824";

fn main() {
    let options = parse_options();
    if options.parts {
        parts();
        return;
    }
    if let Some(workload) = &options.child {
        let result = child(workload, &options);
        println!("@@RESULT {result}");
        return;
    }
    let all = ["W1", "W2", "W3", "W4", "W5"];
    let mut which: Vec<String> = options
        .only
        .clone()
        .unwrap_or_else(|| all.iter().map(|s| (*s).to_owned()).collect());
    if options.traced && which.iter().any(|w| w == "W1") {
        which.extend(["W1-spans".to_owned(), "W1-otel".to_owned()]);
    }
    let exe = std::env::current_exe().expect("the benchmark's own path");
    let mut ours = serde_json::Map::new();
    println!(
        "# pi-runtime agent loop: workloads W1-W5 (agent_loop + ScriptedModel, tokio current-thread{})",
        if options.keep_heap {
            ", glibc malloc keeping freed memory"
        } else {
            ", glibc malloc defaults"
        }
    );
    for workload in &which {
        let mut command = Command::new(&exe);
        command.args(["--child", workload]);
        if options.keep_heap {
            command.env("GLIBC_TUNABLES", KEEP_HEAP);
        }
        if let Some(runs) = options.runs {
            command.args(["--runs", &runs.to_string()]);
        }
        if let Some(warmup) = options.warmup {
            command.args(["--warmup", &warmup.to_string()]);
        }
        let output = command.output().expect("run a workload in a child process");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let Some(line) = stdout.lines().find_map(|l| l.strip_prefix("@@RESULT ")) else {
            eprintln!(
                "{workload} failed:\n{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            std::process::exit(1);
        };
        let result: Value = serde_json::from_str(line).expect("the child's JSON");
        println!("{}", summary(workload, &result));
        ours.insert(workload.clone(), result);
    }
    if let Some(w4) = ours.get("W4") {
        println!(
            "\n--- W4 exact error text the model receives ---\n{}",
            w4["error_text"].as_str().unwrap_or("")
        );
    }
    if !options.compare && options.pi_json.is_none() {
        return;
    }
    let pi_json_path = match &options.pi_json {
        Some(path) => path.clone(),
        None => {
            let path = std::env::temp_dir().join("pi-runtime-bench-pi.json");
            println!(
                "\n# running pi's harness: {} --json {}",
                options.pi_sh,
                path.display()
            );
            let mut command = Command::new(&options.pi_sh);
            command.args(["--json", &path.to_string_lossy()]);
            if let Some(only) = &options.only {
                command.args(["--only", &only.join(",")]);
            }
            let status = command
                .stdout(std::process::Stdio::null())
                .status()
                .expect("run pi's benchmark (node)");
            if !status.success() {
                eprintln!("pi's benchmark failed ({status})");
                std::process::exit(1);
            }
            path.to_string_lossy().into_owned()
        }
    };
    let pi: Value =
        serde_json::from_str(&std::fs::read_to_string(&pi_json_path).expect("pi's JSON result"))
            .expect("pi's JSON result parses");
    for line in pi["summary"].as_array().into_iter().flatten() {
        println!("pi: {}", line.as_str().unwrap_or(""));
    }
    compare(&ours, &pi);
}
