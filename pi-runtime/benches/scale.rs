//! Costs that must stay flat as the work grows (issue 37): long runs (turns), many agents over
//! one catalog (agents x tools), and idle tools.
//!
//! ```text
//! cargo bench -p pi-runtime --bench scale                       # every section
//! cargo bench -p pi-runtime --bench scale -- --only turns       # turns | agents | tools
//! options: --turns N (default 10,000)  --agents N (100)  --tools N (1,000)
//! ```
//!
//! - `turns`: one run of N turns (one no-op call each) in each configuration: a plain
//!   `agent_loop`, with every kind of hook, as an `Agent`, and with `FnModel`. Total time, the
//!   time per turn over the first and the last tenth of the run (timed by the model at its
//!   requests), and the ratio to the plain loop; a cost that grows with the transcript shows
//!   as a last-tenth figure far above the first tenth's.
//! - `agents`: the heap held by N runs alive at once over one registry of M tools (every run
//!   inside its first call), against one such run.
//! - `tools`: the heap held per idle `FnTool` (built, never called), and per called one.
//!
//! Memory is the heap the program holds (dhat's count of bytes allocated and not freed: no
//! allocator slack or fragmentation), and each section runs in its own child process (this
//! binary re-executed).

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use pi_runtime::{
    Agent, AgentContext, AgentEvent, AgentLoopConfig, AssistantContent, AssistantMessage,
    BeforeToolCall, FnModel, Message, Model, ScriptedModel, StopReason, agent_loop,
};
use pi_tool::{AgentTool, CancellationToken, FnTool, ToolRegistry};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

fn call_turn(i: usize) -> AssistantMessage {
    AssistantMessage::new(
        vec![AssistantContent::tool_call(
            format!("c{i}"),
            "noop",
            json!({"q": "x"}),
        )],
        StopReason::ToolUse,
    )
}

fn done() -> AssistantMessage {
    AssistantMessage::new(vec![AssistantContent::text("done")], StopReason::Stop)
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"q": {"type": "string"}}})
}

fn noop_fn_tool() -> FnTool {
    FnTool::builder("noop", "Does nothing.", schema())
        .build(|_: Value, _| async { "ok" })
        .expect("a valid tool")
}

fn noop_tool() -> Arc<dyn AgentTool> {
    Arc::new(noop_fn_tool())
}

fn script(turns: usize) -> Vec<AssistantMessage> {
    (0..turns).map(call_turn).chain([done()]).collect()
}

/// One run's time: in all, and in its first and last tenth of turns (from the first request
/// to request N/10, and from request N - N/10 to request N: the run's start and end are
/// outside the latter).
struct Timing {
    total: Duration,
    last_tenth: Duration,
    first_tenth: Duration,
}

/// A model that notes when the requests bounding the first and the last tenth of turns come
/// (so every configuration is timed alike, without a listener or a consumer of its own).
struct Timed {
    inner: Arc<dyn Model>,
    turns: usize,
    requests: AtomicUsize,
    marks: std::sync::Mutex<[Option<Instant>; 4]>,
}

impl Timed {
    fn new(inner: Arc<dyn Model>, turns: usize) -> Arc<Self> {
        Arc::new(Timed {
            inner,
            turns,
            requests: AtomicUsize::new(0),
            marks: Default::default(),
        })
    }

    fn timing(&self, total: Duration) -> Timing {
        let marks = self.marks.lock().unwrap();
        let between = |from: usize, to: usize| match (marks[from], marks[to]) {
            (Some(from), Some(to)) => to - from,
            _ => Duration::ZERO,
        };
        Timing {
            total,
            first_tenth: between(0, 1),
            last_tenth: between(2, 3),
        }
    }
}

impl Model for Timed {
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
        context: pi_runtime::Context<'a>,
        options: &'a pi_runtime::StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, pi_runtime::AssistantEvent> {
        let index = self.requests.fetch_add(1, Ordering::Relaxed);
        let tenth = self.turns / 10;
        let bounds = [0, tenth, self.turns - tenth, self.turns];
        if let Some(mark) = bounds.iter().position(|&bound| bound == index) {
            self.marks.lock().unwrap()[mark] = Some(Instant::now());
        }
        self.inner.stream(context, options)
    }
}

async fn loop_run(turns: usize, config: AgentLoopConfig, model: Arc<dyn Model>) -> Timing {
    let model = Timed::new(model, turns);
    let context = AgentContext::new("You are a benchmark.").with_tools([noop_tool()]);
    let started = Instant::now();
    let mut events = agent_loop(
        vec![Message::user("go")],
        context,
        config,
        Arc::clone(&model) as Arc<dyn Model>,
        CancellationToken::new(),
    );
    let mut count = 0;
    while let Some(event) = events.next().await {
        if let AgentEvent::AgentEnd { messages } = event {
            count = messages.len();
        }
    }
    let total = started.elapsed();
    assert_eq!(count, 2 * turns + 2, "every turn ran");
    model.timing(total)
}

async fn agent_run(turns: usize) -> Timing {
    let model = Timed::new(scripted(turns), turns);
    let agent = Agent::new(Arc::clone(&model) as Arc<dyn Model>)
        .with_tools(ToolRegistry::new().with(noop_fn_tool()));
    let started = Instant::now();
    agent.prompt("go").await.expect("the prompt runs");
    let total = started.elapsed();
    assert_eq!(agent.message_count(), 2 * turns + 2, "every turn ran");
    model.timing(total)
}

fn scripted(turns: usize) -> Arc<dyn Model> {
    Arc::new(ScriptedModel::new(script(turns)))
}

fn fn_model() -> Arc<dyn Model> {
    Arc::new(FnModel::new(|request| async move {
        if request.index < request_turns() {
            call_turn(request.index)
        } else {
            done()
        }
    }))
}

static TURNS: AtomicUsize = AtomicUsize::new(0);

fn request_turns() -> usize {
    TURNS.load(Ordering::Relaxed)
}

fn turns_section(turns: usize) {
    TURNS.store(turns, Ordering::Relaxed);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let every_hook = || {
        AgentLoopConfig::new()
            .before_tool_call(|_| async { Ok(BeforeToolCall::allow()) })
            .after_tool_call(|_| async { Ok(pi_runtime::AfterToolCall::keep()) })
            .finish_turn(|_| async { None })
            .should_stop_after_turn(|_| async { false })
            .prepare_next_turn(|_| async { None })
            .prepare_request(|_| async { None })
    };
    type Case<'a> = (&'static str, Box<dyn Fn() -> Timing + 'a>);
    let cases: Vec<Case<'_>> = vec![
        (
            "agent_loop",
            Box::new(|| runtime.block_on(loop_run(turns, AgentLoopConfig::new(), scripted(turns)))),
        ),
        (
            "agent_loop + prepare_next_turn",
            Box::new(|| {
                let config = AgentLoopConfig::new().prepare_next_turn(|_| async { None });
                runtime.block_on(loop_run(turns, config, scripted(turns)))
            }),
        ),
        (
            "agent_loop + every hook",
            Box::new(|| runtime.block_on(loop_run(turns, every_hook(), scripted(turns)))),
        ),
        (
            "Agent::prompt",
            Box::new(|| runtime.block_on(agent_run(turns))),
        ),
        (
            "agent_loop, FnModel",
            Box::new(|| runtime.block_on(loop_run(turns, AgentLoopConfig::new(), fn_model()))),
        ),
    ];
    println!("turns: one run of {turns} turns (one no-op call each), best of 3");
    println!(
        "{:<34} {:>10} {:>16} {:>16} {:>8}",
        "configuration", "total ms", "us/turn 1st 10%", "us/turn last 10%", "x loop"
    );
    let tenth = (turns / 10).max(1) as f64;
    let mut plain = None;
    for (name, run) in &cases {
        let best = (0..3)
            .map(|_| run())
            .min_by_key(|timing| timing.total)
            .expect("three runs");
        let total = best.total.as_secs_f64();
        let ratio = total / *plain.get_or_insert(total);
        println!(
            "{name:<34} {:>10.1} {:>16.2} {:>16.2} {ratio:>8.2}",
            total * 1e3,
            best.first_tenth.as_secs_f64() * 1e6 / tenth,
            best.last_tenth.as_secs_f64() * 1e6 / tenth,
        );
    }
}

// dhat's allocator passes through to the system's while no profiler runs (the `turns`
// section); the memory sections run one, which counts the bytes held.
#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// The heap the program holds (allocated and not freed), in KB: no allocator slack or
/// fragmentation. Needs a running `dhat::Profiler`.
fn held_kb() -> f64 {
    dhat::HeapStats::get().curr_bytes as f64 / 1024.0
}

/// `count` distinct tools with a realistic schema (a few typed, described properties).
fn catalog(count: usize) -> Vec<Arc<dyn AgentTool>> {
    let schema = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to read, relative to the workspace root."},
            "offset": {"type": "integer", "minimum": 0, "description": "The first line to read."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "How many lines."},
            "mode": {"enum": ["text", "bytes", "lines"], "description": "How to read it."}
        },
        "required": ["path"]
    });
    (0..count)
        .map(|i| {
            let description = format!(
                "Tool number {i} of the catalog: reads part of a file and returns it as text, \
                 with line numbers, so the model can quote it back exactly."
            );
            Arc::new(
                FnTool::builder(format!("tool_{i}"), description, schema.clone())
                    .build(|_: Value, _| async { "ok" })
                    .expect("a valid tool"),
            ) as Arc<dyn AgentTool>
        })
        .collect()
}

/// Resident memory added by `runs` runs alive at once over `registry`, each inside its first
/// call (a tool that waits until released).
fn runs_alive(runtime: &tokio::runtime::Runtime, registry: &ToolRegistry, runs: usize) -> f64 {
    let entered = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(Semaphore::new(0));
    let hold = {
        let (entered, release) = (Arc::clone(&entered), Arc::clone(&release));
        FnTool::builder("hold", "Waits.", schema())
            .build(move |_: Value, _| {
                let (entered, release) = (Arc::clone(&entered), Arc::clone(&release));
                async move {
                    entered.fetch_add(1, Ordering::SeqCst);
                    let _permit = release.acquire().await;
                    "released"
                }
            })
            .expect("a valid tool")
    };
    let registry = registry.clone().with(hold);
    let before = held_kb();
    runtime.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..runs {
            let model = Arc::new(ScriptedModel::new([
                AssistantMessage::new(
                    vec![AssistantContent::tool_call("c1", "hold", json!({}))],
                    StopReason::ToolUse,
                ),
                done(),
            ]));
            let context = AgentContext::new("You are a benchmark.").with_registry(registry.clone());
            let stream = agent_loop(
                vec![Message::user("go")],
                context,
                AgentLoopConfig::new(),
                model,
                CancellationToken::new(),
            );
            tasks.push(tokio::spawn(stream.count()));
        }
        while entered.load(Ordering::SeqCst) < runs {
            tokio::task::yield_now().await;
        }
        let added = held_kb() - before;
        release.add_permits(runs);
        for task in tasks {
            task.await.expect("the run ends");
        }
        added
    })
}

fn agents_section(agents: usize, tools: usize) {
    let _profiler = dhat::Profiler::builder().testing().build();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let registry: ToolRegistry = catalog(tools).into_iter().collect();
    // One run first, so one-time costs (the runtime, first allocations) are not counted.
    runs_alive(&runtime, &registry, 1);
    let one = runs_alive(&runtime, &registry, 1);
    let many = runs_alive(&runtime, &registry, agents);
    println!("agents: runs alive at once over one registry of {tools} tools (heap held)");
    println!("  1 run:    {:>8.1} MB", one / 1024.0);
    println!(
        "  {agents} runs: {:>8.1} MB  ({:.1} MB more than one run, {:.1} KB per run)",
        many / 1024.0,
        (many - one) / 1024.0,
        many / agents as f64,
    );
}

fn tools_section(tools: usize) {
    let _profiler = dhat::Profiler::builder().testing().build();
    let before = held_kb();
    let catalog = catalog(tools);
    let idle = held_kb() - before;
    println!("tools: {tools} FnTools, a schema of four described properties (heap held)");
    println!(
        "  idle (built, never called):     {:>6.1} KB per tool",
        idle / tools as f64
    );
    let before = held_kb();
    for tool in &catalog {
        pi_tool::validate_arguments(tool.as_ref(), &json!({"path": "a.txt"}))
            .expect("valid arguments");
    }
    let called = held_kb() - before;
    println!(
        "  after one validated call each: {:>6.1} KB more per tool",
        called / tools as f64
    );
    drop(catalog);
}

fn option(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|arg| arg == name)
        .and_then(|at| args.get(at + 1))
        .cloned()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let number = |name: &str, default: usize| {
        option(&args, name)
            .and_then(|value| value.replace(',', "").parse().ok())
            .unwrap_or(default)
    };
    let turns = number("--turns", 10_000);
    let agents = number("--agents", 100);
    let tools = number("--tools", 1_000);
    if let Some(section) = option(&args, "--child") {
        match section.as_str() {
            "turns" => turns_section(turns),
            "agents" => agents_section(agents, tools),
            "tools" => tools_section(tools),
            other => panic!("unknown section {other}"),
        }
        return;
    }
    let only = option(&args, "--only");
    for section in ["turns", "agents", "tools"] {
        if only
            .as_ref()
            .is_some_and(|only| !only.split(',').any(|s| s == section))
        {
            continue;
        }
        let status = Command::new(std::env::current_exe().expect("this binary"))
            .args(["--child", section])
            .args(["--turns", &turns.to_string()])
            .args(["--agents", &agents.to_string()])
            .args(["--tools", &tools.to_string()])
            .status()
            .expect("the section runs");
        assert!(status.success(), "section {section} failed");
        println!();
    }
}
