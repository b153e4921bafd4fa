//! The sandboxed engine: one QuickJS runtime on a thread of its own per `code` call. The script
//! runs as the body of an async function; `tools.<name>(args)` starts the call on this same
//! thread ([`crate::calls`]) and returns a promise, settled at once when the call finishes at
//! once, else when the script next waits and the call has finished.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use pi_tool::{Content, ToolContext, ToolResult};
use rquickjs::context::{EvalOptions, intrinsic};
use rquickjs::function::{Opt, Rest};
use rquickjs::promise::PromiseState;
use rquickjs::{
    Coerced, Context, Ctx, Exception, FromJs, Function, Object, Persistent, Promise, Runtime, Value,
};
use serde_json::Value as Json;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::CodeLimits;
use crate::calls::{Calls, Started};
use crate::catalog::Catalog;
use crate::cpu::thread_cpu_time;
use crate::json::{JsonIntrinsics, JsonReader, NotJson};
use crate::replay::{self, Clock, Random};
use crate::search::search_tools;
use crate::to_js::to_js;

/// The intrinsics a script gets besides the base objects (`Object`, `Function`, `Array`,
/// `Error`s, `Math`, `Reflect`, `Symbol`, `String`, `Number`, `BigInt`, iterators, ...):
/// ECMAScript's, and nothing from the web platform. Not `Context::full`, which adds `atob`,
/// `btoa`, `DOMException` and a high-resolution clock (`performance`); `Eval` is the engine's
/// own evaluator, which the script runs through (the global `eval` is then removed).
type EcmaScript = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
    intrinsic::WeakRef,
);

/// The native stack of the engine's thread: room above QuickJS's own stack cap.
const THREAD_STACK: usize = 16 << 20;
/// The name errors and stack traces give the script.
const SCRIPT_NAME: &str = "script.js";

/// How a run ended.
pub(crate) struct Outcome {
    /// The return value as JSON, or why there is none (for the model).
    pub(crate) value: Result<Json, String>,
    pub(crate) console: String,
    pub(crate) images: Vec<Content>,
    /// The tools whose calls were still running when the script returned.
    pub(crate) unfinished: Vec<String>,
    pub(crate) calls: usize,
}

/// One script, what it may call (tool name, and whether its result is structured), and where
/// its calls run.
pub(crate) struct Job {
    pub(crate) script: String,
    pub(crate) tools: Arc<Catalog>,
    pub(crate) limits: CodeLimits,
    /// The `code` call's context: the script's calls are nested calls of it.
    pub(crate) ctx: ToolContext,
    /// The host's runtime, which the calls run inside.
    pub(crate) runtime: Handle,
    /// Set by the host on abort (then it unparks the thread): the interrupt handler stops the
    /// script at once, a wait for calls at its next look.
    pub(crate) abort: Arc<AtomicBool>,
    /// The engine threads of this code tool still running: one more while this one runs.
    pub(crate) engines: Arc<AtomicUsize>,
}

/// The error of a script whose promise nothing can settle.
const NEVER_SETTLES: &str =
    "the script awaits a promise that can never settle (no tool call is running)";

/// How close to the memory cap the heap must still be, once the script is over, for a promise
/// that never settled to be put down to the cap.
const NEAR_THE_MEMORY_CAP: usize = 1 << 20;

/// A promise that never settled because the memory ran out in a job (the engine drops a job it
/// cannot queue, and with it the rest of the chain): named as the memory cap when the heap is
/// still within [`NEAR_THE_MEMORY_CAP`] of it. Read after the script, when the engine is free
/// to say how much it holds.
fn out_of_memory_in_a_job(message: String, runtime: &Runtime, limits: &CodeLimits) -> String {
    if message != NEVER_SETTLES {
        return message;
    }
    let used = usize::try_from(runtime.memory_usage().malloc_size).unwrap_or(0);
    if used + NEAR_THE_MEMORY_CAP < limits.memory_bytes {
        return message;
    }
    format!(
        "the script ran out of memory (the cap is {} MiB): a promise job could not run, so the promise the script awaits never settles",
        limits.memory_bytes >> 20
    )
}

/// Why the script was stopped.
const RUNNING: u8 = 0;
const TIMED_OUT: u8 = 1;
const ABORTED: u8 = 2;
const CPU_SPENT: u8 = 3;

/// Between two jobs of the queue the stop flag is read; every this many jobs the clock too.
const JOBS_PER_CLOCK_READ: u32 = 32;

/// What stops a script: the time cap, the CPU cap and an abort. Polled by the engine's
/// interrupt handler while code runs (every few thousand instructions or calls), between the
/// jobs of the queue, and before each wait for calls; all on the engine's thread, whose CPU
/// clock it reads. Once it has said stop it says so for good: the interrupt is uncatchable,
/// and no further job runs.
struct Watch {
    abort: Arc<AtomicBool>,
    started: Instant,
    deadline: Instant,
    cpu_cap: Duration,
    /// The thread's CPU time at the start, where the system has the clock.
    cpu_start: Option<Duration>,
    /// Without the clock: nanoseconds spent waiting for tools (not counted as CPU time).
    waited_nanos: AtomicU64,
    stop: AtomicU8,
}

impl Watch {
    /// Created on the engine's thread, when its run starts.
    fn new(job: &Job) -> Self {
        let started = Instant::now();
        Watch {
            abort: Arc::clone(&job.abort),
            started,
            deadline: started + job.limits.time,
            cpu_cap: job.limits.cpu_time,
            cpu_start: thread_cpu_time(),
            waited_nanos: AtomicU64::new(0),
            stop: AtomicU8::new(RUNNING),
        }
    }

    /// Whether the script must stop now (reads the clocks).
    fn poll(&self) -> bool {
        if self.is_stopped() {
            return true;
        }
        let reason = if Instant::now() >= self.deadline {
            TIMED_OUT
        } else if self.cpu_used() >= self.cpu_cap {
            CPU_SPENT
        } else {
            return false;
        };
        // An abort that came first keeps its reason.
        let _ = self
            .stop
            .compare_exchange(RUNNING, reason, Ordering::Relaxed, Ordering::Relaxed);
        true
    }

    /// The CPU time the engine's thread has used (without the clock: the wall time it did not
    /// wait for tools).
    fn cpu_used(&self) -> Duration {
        match (self.cpu_start, thread_cpu_time()) {
            (Some(start), Some(now)) => now.saturating_sub(start),
            _ => self.started.elapsed().saturating_sub(Duration::from_nanos(
                self.waited_nanos.load(Ordering::Relaxed),
            )),
        }
    }

    /// Parks the engine's thread until a call wakes it, the time cap or an abort, and counts
    /// the wait as no CPU time.
    fn wait_for(&self, calls: &Calls) {
        let parked = Instant::now();
        calls.park_until(self.deadline);
        if self.cpu_start.is_none() {
            let nanos = u64::try_from(parked.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.waited_nanos.fetch_add(nanos, Ordering::Relaxed);
        }
    }

    /// Whether a stop has been seen or the host has aborted (no clock read).
    fn is_stopped(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) != RUNNING {
            return true;
        }
        if self.abort.load(Ordering::Relaxed) {
            let _ =
                self.stop
                    .compare_exchange(RUNNING, ABORTED, Ordering::Relaxed, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Why the script was stopped, if it was.
    fn stopped(&self, limits: &CodeLimits) -> Result<(), String> {
        self.is_stopped();
        match self.stop.load(Ordering::Relaxed) {
            TIMED_OUT => Err(format!(
                "the script ran past its time cap ({} s) and was stopped",
                limits.time.as_secs_f64()
            )),
            CPU_SPENT => Err(format!(
                "the script used more than its CPU time cap ({} s) and was stopped",
                limits.cpu_time.as_secs_f64()
            )),
            ABORTED => Err("the code call was aborted".into()),
            _ => Ok(()),
        }
    }
}

/// Starts the engine thread; the host unparks it on abort. It sends the outcome to `done` when
/// the script is over; if it dies without, the sender drops and the host sees the channel close.
pub(crate) fn spawn(job: Job, done: oneshot::Sender<Outcome>) -> std::io::Result<Thread> {
    let running = Running::count(&job.engines);
    thread::Builder::new()
        .name("pi-codemode".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            let _running = running;
            // The engine is freed after the outcome is sent: a script stopped with a large
            // heap is answered without waiting for it to be freed.
            let mut engine = None;
            let outcome = run(&job, &mut engine);
            let _ = done.send(outcome);
            drop(engine);
        })
        .map(|handle| handle.thread().clone())
}

/// One running engine thread in its tool's count, until dropped (when the thread ends, or when
/// it could not start).
struct Running(Arc<AtomicUsize>);

impl Running {
    fn count(engines: &Arc<AtomicUsize>) -> Self {
        engines.fetch_add(1, Ordering::SeqCst);
        Running(Arc::clone(engines))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What the bridge functions share with the driver loop.
struct Bridge {
    /// The promises of the calls that are waiting, by call id.
    pending: BTreeMap<u64, Pending>,
    /// Calls made so far (also the id of the next one).
    calls: usize,
    console: String,
    console_cut: bool,
    images: Vec<Content>,
    /// The base64 bytes of `images`.
    image_bytes: usize,
    /// What reading values as JSON needs of the realm (dropped before the context is).
    json: Option<Rc<JsonIntrinsics>>,
}

struct Pending {
    name: Arc<str>,
    /// Whether the tool's result is structured (its `details`, not its text).
    structured: bool,
    resolve: Persistent<Function<'static>>,
    reject: Persistent<Function<'static>>,
}

impl Pending {
    /// Settles the waiting call's promise with its result (rejects one past `result_cap`).
    fn settle(self, ctx: &Ctx<'_>, result: ToolResult, result_cap: usize) -> rquickjs::Result<()> {
        let resolve = self.resolve.restore(ctx)?;
        let reject = self.reject.restore(ctx)?;
        let settled = Settled {
            tool: &self.name,
            structured: self.structured,
            result_cap,
        };
        settled.settle(ctx, &resolve, &reject, result)
    }
}

fn fail(message: impl Into<String>) -> Outcome {
    Outcome {
        value: Err(message.into()),
        console: String::new(),
        images: Vec::new(),
        unfinished: Vec::new(),
        calls: 0,
    }
}

/// Runs the job's script; leaves the engine in `engine`, for the caller to free.
fn run(job: &Job, engine: &mut Option<(Context, Runtime)>) -> Outcome {
    // For the whole run: the calls are started, polled and dropped inside the host's runtime.
    let _entered = job.runtime.enter();
    let watch = Arc::new(Watch::new(job));
    let Ok(runtime) = Runtime::new() else {
        return fail("the code engine could not start");
    };
    runtime.set_memory_limit(job.limits.memory_bytes);
    runtime.set_max_stack_size(job.limits.stack_bytes);
    {
        let watch = Arc::clone(&watch);
        runtime.set_interrupt_handler(Some(Box::new(move || watch.poll())));
    }
    let Ok(context) = Context::custom::<EcmaScript>(&runtime) else {
        return fail("the code engine could not start");
    };
    let bridge = Rc::new(RefCell::new(Bridge {
        pending: BTreeMap::new(),
        calls: 0,
        console: String::new(),
        console_cut: false,
        images: Vec::new(),
        image_bytes: 0,
        json: None,
    }));
    let calls = Rc::new(RefCell::new(Calls::new(job.ctx.clone())));
    // The same values when the host replays the script (see `replay`); a host that never
    // replays leaves the engine's own `Date` and `Math.random`.
    let replay = job.ctx.replays().then(|| {
        (
            Rc::new(RefCell::new(Clock::for_call(&job.ctx))),
            Rc::new(Random::for_call(&job.ctx)),
        )
    });
    let value = context.with(|ctx| {
        let driver = Driver {
            ctx: ctx.clone(),
            job,
            bridge: &bridge,
            calls: &calls,
            watch: &watch,
            replay: replay.as_ref(),
        };
        driver.drive()
    });
    if let Some((clock, _)) = &replay {
        clock.borrow().record(&job.ctx);
    }
    let value = value.map_err(|message| out_of_memory_in_a_job(message, &runtime, &job.limits));
    // Calls still waiting are cancelled now (their futures dropped), not when the engine's
    // collector gets to the bridge functions.
    calls.borrow_mut().cancel_all();
    let mut bridge = bridge.borrow_mut();
    bridge.json = None;
    *engine = Some((context, runtime));
    let mut unfinished: Vec<String> = std::mem::take(&mut bridge.pending)
        .into_values()
        .map(|p| p.name.to_string())
        .collect();
    unfinished.sort();
    if bridge.console_cut {
        bridge.console.push_str("\n[console output cut]");
    }
    Outcome {
        value,
        console: std::mem::take(&mut bridge.console),
        images: std::mem::take(&mut bridge.images),
        unfinished,
        calls: bridge.calls,
    }
}

struct Driver<'a, 'js> {
    ctx: Ctx<'js>,
    job: &'a Job,
    bridge: &'a Rc<RefCell<Bridge>>,
    calls: &'a Rc<RefCell<Calls>>,
    watch: &'a Watch,
    /// The replayable clock and random numbers, when the host replays calls.
    replay: Option<&'a (Rc<RefCell<Clock>>, Rc<Random>)>,
}

impl<'js> Driver<'_, 'js> {
    fn drive(&self) -> Result<Json, String> {
        let ctx = &self.ctx;
        self.install().map_err(|err| self.describe(err))?;
        // The script is the body of an async function; its first line stays line 1.
        let wrapped = format!("(async () => {{ 'use strict'; {}\n}})()", self.job.script);
        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = true;
        options.backtrace_barrier = true;
        options.filename = Some(SCRIPT_NAME.into());
        let promise: Promise<'js> = ctx
            .eval_with_options(wrapped, options)
            .map_err(|err| self.describe(err))?;
        loop {
            self.run_jobs()?;
            match promise.state() {
                PromiseState::Resolved => {
                    let value: Value<'js> = promise
                        .result()
                        .unwrap_or_else(|| Ok(Value::new_undefined(ctx.clone())))
                        .map_err(|err| self.describe(err))?;
                    return self.to_json(value);
                }
                PromiseState::Rejected => {
                    let err = match promise.result::<Value<'js>>() {
                        Some(Err(err)) => err,
                        _ => rquickjs::Error::Exception,
                    };
                    return Err(self.describe(err));
                }
                PromiseState::Pending => self.wait()?,
            }
        }
    }

    /// Runs the job queue (the script's code after each `await`, promise reactions) until it is
    /// empty, looking at the caps between jobs. A script that keeps queueing jobs (an async
    /// function that awaits and calls itself, reactions that queue reactions) never empties the
    /// queue: the interrupt handler stops the job that runs at the cap, and the next job would
    /// start afresh, so the queue itself stops there.
    fn run_jobs(&self) -> Result<(), String> {
        let mut jobs: u32 = 0;
        loop {
            // The flag is one load; the clocks are read every `JOBS_PER_CLOCK_READ` jobs (the
            // interrupt handler reads them too, while a job runs).
            if self.watch.is_stopped()
                || (jobs % JOBS_PER_CLOCK_READ == JOBS_PER_CLOCK_READ - 1 && self.watch.poll())
            {
                return self.stopped();
            }
            if !self.ctx.execute_pending_job() {
                return self.stopped();
            }
            jobs = jobs.wrapping_add(1);
        }
    }

    /// The time cap or an abort, once the interrupt handler (or a wait) has seen it.
    fn stopped(&self) -> Result<(), String> {
        self.watch.stopped(&self.job.limits)
    }

    /// Waits for results of the calls that wait and settles their promises (every one that is
    /// ready before the script runs again).
    fn wait(&self) -> Result<(), String> {
        loop {
            // Not borrowed while a promise is settled: that may run the script's code (a
            // `then` getter on `Object.prototype`), which may make calls.
            let ready = self.calls.borrow_mut().ready();
            if !ready.is_empty() {
                for (id, result) in ready {
                    let pending = self.bridge.borrow_mut().pending.remove(&id);
                    if let Some(pending) = pending {
                        pending
                            .settle(&self.ctx, result, self.job.limits.call_result_bytes)
                            .map_err(|err| self.describe(err))?;
                    }
                }
                return Ok(());
            }
            let calls = self.calls.borrow();
            if calls.is_empty() {
                return Err(NEVER_SETTLES.into());
            }
            if self.watch.poll() {
                return self.stopped();
            }
            self.watch.wait_for(&calls);
        }
    }

    /// The return value as `JSON.stringify` reads it (`undefined` is null).
    fn to_json(&self, value: Value<'js>) -> Result<Json, String> {
        let reader = self.json_reader().map_err(|err| self.describe(err))?;
        match reader.read(value) {
            Ok(json) => Ok(json.unwrap_or(Json::Null)),
            Err(NotJson::Thrown(err)) => Err(format!(
                "the script's return value is not JSON: {}",
                self.describe(err)
            )),
            Err(other) => Err(format!(
                "the script's return value is not JSON: {}",
                other.message(self.job.limits.memory_bytes)
            )),
        }
    }

    fn json_reader(&self) -> rquickjs::Result<JsonReader<'js>> {
        json_reader(&self.ctx, self.bridge, self.job.limits.memory_bytes)
    }

    /// The pending exception (or an engine error) as text for the model, with the script's line.
    fn describe(&self, err: rquickjs::Error) -> String {
        if let Err(stopped) = self.stopped() {
            return stopped;
        }
        if !matches!(err, rquickjs::Error::Exception) {
            return format!("the code engine failed: {err}");
        }
        let thrown = self.ctx.catch();
        describe_thrown(
            &self.ctx,
            thrown,
            self.job.limits.memory_bytes,
            &self.job.script,
        )
    }

    /// Puts `tools`, `console` and `attachImage` in place and locks the bridge down.
    fn install(&self) -> rquickjs::Result<()> {
        let ctx = &self.ctx;
        self.bridge.borrow_mut().json = Some(Rc::new(JsonIntrinsics::take(ctx)?));
        let tools = Object::new(ctx.clone())?;
        tools.set_prototype(None)?;
        for (name, entry) in self.job.tools.iter() {
            if !entry.deferred {
                tools.set(name, self.tool_function(name, entry.structured)?)?;
            }
        }
        let deferred = match self.job.tools.deferred() {
            0 => Value::new_null(ctx.clone()),
            _ => self.deferred_function()?.into_value(),
        };
        let console = Object::new(ctx.clone())?;
        for (method, prefix) in [
            ("log", ""),
            ("info", ""),
            ("debug", ""),
            ("warn", "[warn] "),
            ("error", "[error] "),
        ] {
            console.set(method, self.console_function(prefix)?)?;
        }
        let attach = self.attach_function()?;
        let search = self.search_function()?;
        let describe = self.describe_function()?;
        if let Some((clock, random)) = self.replay {
            replay::install(ctx, clock, random)?;
        }
        let lockdown: Function<'js> = ctx.eval(LOCKDOWN)?;
        lockdown.call((tools, console, attach, search, describe, deferred))
    }

    fn tool_function(&self, name: &str, structured: bool) -> rquickjs::Result<Function<'js>> {
        let tool = Tool {
            bridge: self.bridge,
            calls: self.calls,
            limits: &self.job.limits,
        };
        tool.function(&self.ctx, name, structured)
    }

    /// `searchTools(query, {limit})`: the best matches of the same search the agent loop
    /// offers, as `[{name, description}]`.
    fn search_function(&self) -> rquickjs::Result<Function<'js>> {
        let catalog = Arc::clone(&self.job.tools);
        Function::new(
            self.ctx.clone(),
            move |ctx: Ctx<'js>,
                  query: Value<'js>,
                  options: Opt<Value<'js>>|
                  -> rquickjs::Result<Value<'js>> {
                search_tools(&ctx, &catalog, query, options.0)
            },
        )
    }

    /// `describeTool(name)`: the tool's TypeScript declaration.
    fn describe_function(&self) -> rquickjs::Result<Function<'js>> {
        let catalog = Arc::clone(&self.job.tools);
        Function::new(
            self.ctx.clone(),
            move |ctx: Ctx<'js>, name: Coerced<String>| -> rquickjs::Result<String> {
                match catalog.get(&name.0) {
                    Some(entry) => Ok(entry.declaration.clone()),
                    None => Err(Exception::throw_reference(
                        &ctx,
                        &format!(
                            "describeTool: no tool a script may call is named {:?}; find tools with searchTools(query)",
                            name.0
                        ),
                    )),
                }
            },
        )
    }

    /// What the prototype of `tools` resolves deferred tools with: the tool's function, made on
    /// first use, or `undefined` for a name that is not a deferred tool.
    fn deferred_function(&self) -> rquickjs::Result<Function<'js>> {
        let catalog = Arc::clone(&self.job.tools);
        let bridge = Rc::clone(self.bridge);
        let calls = Rc::clone(self.calls);
        let limits = self.job.limits.clone();
        Function::new(
            self.ctx.clone(),
            move |ctx: Ctx<'js>, name: Value<'js>| -> rquickjs::Result<Value<'js>> {
                let name = match name.as_string() {
                    Some(name) => name.to_string()?,
                    None => return Ok(Value::new_undefined(ctx)),
                };
                match catalog.get(&name) {
                    Some(entry) if entry.deferred => {
                        let tool = Tool {
                            bridge: &bridge,
                            calls: &calls,
                            limits: &limits,
                        };
                        Ok(tool.function(&ctx, &name, entry.structured)?.into_value())
                    }
                    _ => Ok(Value::new_undefined(ctx)),
                }
            },
        )
    }

    fn console_function(&self, prefix: &'static str) -> rquickjs::Result<Function<'js>> {
        let bridge = Rc::clone(self.bridge);
        let cap = self.job.limits.console_bytes;
        Function::new(
            self.ctx.clone(),
            move |ctx: Ctx<'js>, values: Rest<Value<'js>>| -> rquickjs::Result<()> {
                let mut line = String::from(prefix);
                for (i, value) in values.0.into_iter().enumerate() {
                    if i > 0 {
                        line.push(' ');
                    }
                    line.push_str(&console_text(&ctx, value));
                }
                let mut state = bridge.borrow_mut();
                if state.console_cut {
                    return Ok(());
                }
                if !state.console.is_empty() {
                    line.insert(0, '\n');
                }
                let room = cap.saturating_sub(state.console.len());
                if line.len() > room {
                    let mut end = room;
                    while !line.is_char_boundary(end) {
                        end -= 1;
                    }
                    line.truncate(end);
                    state.console_cut = true;
                }
                state.console.push_str(&line);
                Ok(())
            },
        )
    }

    fn attach_function(&self) -> rquickjs::Result<Function<'js>> {
        let bridge = Rc::clone(self.bridge);
        let max = self.job.limits.max_images;
        let max_bytes = self.job.limits.image_bytes;
        Function::new(
            self.ctx.clone(),
            move |ctx: Ctx<'js>, data: String, mime_type: String| -> rquickjs::Result<()> {
                if !mime_type.starts_with("image/") || data.is_empty() {
                    return Err(Exception::throw_message(
                        &ctx,
                        "attachImage(data, mimeType): data is base64 and mimeType an image type such as \"image/png\"",
                    ));
                }
                let mut state = bridge.borrow_mut();
                if state.images.len() >= max {
                    return Err(Exception::throw_message(
                        &ctx,
                        &format!("a script may attach at most {max} images"),
                    ));
                }
                if state.image_bytes + data.len() > max_bytes {
                    return Err(Exception::throw_message(
                        &ctx,
                        &format!(
                            "the images would take {} bytes of base64, past the cap of {max_bytes} bytes for a script's images (image_bytes)",
                            state.image_bytes + data.len()
                        ),
                    ));
                }
                state.image_bytes += data.len();
                state.images.push(Content::image(data, mime_type));
                Ok(())
            },
        )
    }
}

/// What a tool's function needs: the bridge, the calls, the caps.
struct Tool<'a> {
    bridge: &'a Rc<RefCell<Bridge>>,
    calls: &'a Rc<RefCell<Calls>>,
    limits: &'a CodeLimits,
}

impl Tool<'_> {
    /// `tools.<name>`: reads the arguments, starts the call, and returns its promise.
    fn function<'js>(
        &self,
        ctx: &Ctx<'js>,
        name: &str,
        structured: bool,
    ) -> rquickjs::Result<Function<'js>> {
        let bridge = Rc::clone(self.bridge);
        let calls = Rc::clone(self.calls);
        let max_calls = self.limits.max_calls;
        let max_in_flight = self.limits.max_calls_in_flight;
        let memory_cap = self.limits.memory_bytes;
        let argument_cap = self.limits.call_argument_bytes;
        let result_cap = self.limits.call_result_bytes;
        let tool: Arc<str> = Arc::from(name);
        let function = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, arguments: Opt<Value<'js>>| -> rquickjs::Result<Promise<'js>> {
                let (promise, resolve, reject) = ctx.promise()?;
                // Before the bridge is borrowed: the script's own code may run here (a getter,
                // `toJSON`) and use the bridge itself (log, call a tool).
                let read = match arguments.0 {
                    None => Ok(None),
                    Some(value) => {
                        json_reader(&ctx, &bridge, argument_cap.min(memory_cap))?.read(value)
                    }
                };
                let arguments = match read {
                    Ok(arguments) => arguments.unwrap_or_else(|| Json::Object(Default::default())),
                    Err(NotJson::Thrown(err)) => return Err(err),
                    Err(NotJson::TooLarge) if argument_cap < memory_cap => {
                        let message = format!(
                            "the arguments are larger than {argument_cap} bytes as JSON, the cap for one call's arguments (call_argument_bytes)"
                        );
                        reject_call(&ctx, &reject, &tool, &message)?;
                        return Ok(promise);
                    }
                    Err(other) => {
                        let message = other.message(memory_cap);
                        let message = format!("the arguments are not JSON: {message}");
                        reject_call(&ctx, &reject, &tool, &message)?;
                        return Ok(promise);
                    }
                };
                let id = {
                    let mut state = bridge.borrow_mut();
                    if state.calls >= max_calls {
                        drop(state);
                        let message = format!("the script made more than {max_calls} tool calls");
                        reject_call(&ctx, &reject, &tool, &message)?;
                        return Ok(promise);
                    }
                    if state.pending.len() >= max_in_flight {
                        drop(state);
                        let message = format!(
                            "{max_in_flight} tool calls are running already, the cap of calls at once (max_calls_in_flight): await some before making more"
                        );
                        reject_call(&ctx, &reject, &tool, &message)?;
                        return Ok(promise);
                    }
                    // Calls are numbered in the order they are made.
                    state.calls += 1;
                    state.calls as u64 - 1
                };
                // Neither the bridge nor the calls are borrowed while the tool runs, or while
                // its promise is settled (which may run the script's code: a `then` getter).
                let started = calls.borrow().start(id, Arc::clone(&tool), arguments);
                match started {
                    Started::Done(result) => {
                        let settled = Settled {
                            tool: &tool,
                            structured,
                            result_cap,
                        };
                        settled.settle(&ctx, &resolve, &reject, result)?;
                    }
                    Started::Waiting(call) => {
                        bridge.borrow_mut().pending.insert(
                            id,
                            Pending {
                                name: Arc::clone(&tool),
                                structured,
                                resolve: Persistent::save(&ctx, resolve),
                                reject: Persistent::save(&ctx, reject),
                            },
                        );
                        calls.borrow_mut().wait_for(id, call);
                    }
                }
                Ok(promise)
            },
        )?;
        function.set_name(name)?;
        Ok(function)
    }
}

/// How a call's promise is settled: the tool, whether its result is structured, and the cap
/// of its result.
struct Settled<'a> {
    tool: &'a str,
    structured: bool,
    result_cap: usize,
}

impl Settled<'_> {
    /// Settles a call's promise with its result: the tool's structured value (its `details`) or
    /// its text, or an `Error` naming the tool when the call failed or its result is past the
    /// cap.
    fn settle<'js>(
        &self,
        ctx: &Ctx<'js>,
        resolve: &Function<'js>,
        reject: &Function<'js>,
        result: ToolResult,
    ) -> rquickjs::Result<()> {
        let tool = self.tool;
        if result.is_error {
            return reject_call(ctx, reject, tool, &result.text_content());
        }
        let too_large = if self.structured {
            json_larger_than(&result.details, self.result_cap)
        } else {
            let text: usize = result
                .content
                .iter()
                .filter_map(Content::as_text)
                .map(str::len)
                .sum();
            text > self.result_cap
        };
        if too_large {
            let message = format!(
                "the result is larger than {} bytes, the cap for one call's result (call_result_bytes): ask the tool for less",
                self.result_cap
            );
            return reject_call(ctx, reject, tool, &message);
        }
        let value = if self.structured {
            to_js(ctx, &result.details)?
        } else if let [Content::Text { text }] = result.content.as_slice() {
            // The usual case, without joining the texts into a new string first.
            rquickjs::String::from_str(ctx.clone(), text)?.into_value()
        } else {
            rquickjs::String::from_str(ctx.clone(), &result.text_content())?.into_value()
        };
        resolve.call((value,))
    }
}

/// Whether `value` takes more than `cap` bytes as JSON text (stops writing at the cap).
fn json_larger_than(value: &Json, cap: usize) -> bool {
    /// Counts bytes, and fails once past the cap (which ends the writing).
    struct Counter {
        left: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.left = self
                .left
                .checked_sub(bytes.len())
                .ok_or_else(|| std::io::Error::other("past the cap"))?;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(&mut Counter { left: cap }, value).is_err()
}

/// Rejects a call's promise with an `Error` saying `<tool>: <message>`, whose `tool` names the
/// tool: a call that failed, and one refused before it started, alike.
fn reject_call<'js>(
    ctx: &Ctx<'js>,
    reject: &Function<'js>,
    tool: &str,
    message: &str,
) -> rquickjs::Result<()> {
    let err = Exception::from_message(ctx.clone(), &format!("{tool}: {message}"))?;
    err.set("tool", tool)?;
    reject.call((err,))
}

/// A reader of the realm's values as JSON; the bridge is borrowed only to take its intrinsics
/// (the reading runs script code: getters, `toJSON`).
fn json_reader<'js>(
    ctx: &Ctx<'js>,
    bridge: &Rc<RefCell<Bridge>>,
    memory_cap: usize,
) -> rquickjs::Result<JsonReader<'js>> {
    let intrinsics = bridge.borrow().json.clone();
    let intrinsics = intrinsics
        .ok_or_else(|| Exception::throw_internal(ctx, "the code engine's bridge is not set up"))?;
    JsonReader::new(ctx, intrinsics, memory_cap)
}

/// Runs once on a fresh realm, before the script: freezes the bridge, makes its globals
/// read-only, and removes code generation from strings (`eval`, the `Function` constructors).
///
/// With deferred tools, the prototype of `tools` is a Proxy (over a frozen empty object) whose
/// only trap looks a name up with `deferred` and keeps what it made: a deferred tool is
/// `tools.<name>` like any other, and no function is made for every tool of a large catalog
/// per call; the listed tools stay own properties (no trap on their calls).
const LOCKDOWN: &str = r#"(function (tools, console, attachImage, searchTools, describeTool, deferred) {
  'use strict';
  const define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
  const freeze = Object.freeze;
  for (const name of Object.keys(tools)) freeze(tools[name]);
  if (deferred !== null) {
    const made = Object.create(null);
    const handler = freeze({
      __proto__: null,
      get(target, key) {
        if (typeof key !== 'string') return undefined;
        let tool = made[key];
        if (tool === undefined) {
          tool = deferred(key);
          if (tool !== undefined) made[key] = freeze(tool);
        }
        return tool;
      },
    });
    freeze(handler.get);
    Object.setPrototypeOf(tools, new Proxy(freeze(Object.create(null)), handler));
  }
  freeze(tools);
  for (const name of Object.keys(console)) freeze(console[name]);
  freeze(console);
  freeze(attachImage);
  freeze(searchTools);
  freeze(describeTool);
  define('tools', tools);
  define('console', console);
  define('attachImage', attachImage);
  define('searchTools', searchTools);
  define('describeTool', describeTool);
  const blocked = function () { throw new EvalError('code generation from strings is disabled in code mode'); };
  blocked.prototype = Function.prototype;
  for (const f of [function () {}, async function () {}, function* () {}, async function* () {}]) {
    Object.defineProperty(Object.getPrototypeOf(f), 'constructor', { value: blocked, writable: false, configurable: false });
  }
  Object.freeze(blocked);
  delete globalThis.eval;
  // The base objects' one host function (HTML's, not ECMAScript's).
  delete globalThis.queueMicrotask;
  define('Function', blocked);
})"#;

/// One console argument: strings as they are, other values as JSON where they have one.
fn console_text<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> String {
    if let Some(text) = value.as_string() {
        return text.to_string().unwrap_or_default();
    }
    if let Ok(Some(text)) = ctx.json_stringify(value.clone())
        && let Ok(text) = text.to_string()
    {
        return text;
    }
    let _ = ctx.catch();
    Coerced::<String>::from_js(ctx, value)
        .map(|text| text.0)
        .unwrap_or_else(|_| {
            let _ = ctx.catch();
            "[value]".into()
        })
}

/// A thrown value as `the script threw at line N: Name: message`. `source` is the script's.
fn describe_thrown<'js>(
    ctx: &Ctx<'js>,
    thrown: Value<'js>,
    memory_cap: usize,
    source: &str,
) -> String {
    let out_of_memory = format!(
        "the script ran out of memory (the cap is {} MiB)",
        memory_cap >> 20
    );
    if thrown.is_null() {
        // What the engine throws when it cannot even make the `out of memory` error. The
        // memory is freed again by the time the error reaches here, so it cannot be read off
        // the heap; a script with no `throw` or `reject` cannot have thrown null itself.
        if !source.contains("throw") && !source.contains("reject") {
            return format!("{out_of_memory}: the engine could not even make the error");
        }
        return format!(
            "the script threw null (if it did not throw null itself, it ran out of memory: the cap is {} MiB)",
            memory_cap >> 20
        );
    }
    let Some(exception) = thrown.as_exception() else {
        let text = console_text(ctx, thrown);
        return format!("the script threw a value that is not an Error: {text}");
    };
    let message = exception.message().unwrap_or_default();
    let name: String = exception
        .get::<_, Coerced<String>>("name")
        .map(|name| name.0)
        .unwrap_or_else(|_| "Error".into());
    if message == "out of memory" {
        return out_of_memory;
    }
    let stack = exception.stack().unwrap_or_default();
    match script_line(&stack) {
        Some(line) => format!("the script threw at line {line}: {name}: {message}"),
        None => format!("the script threw: {name}: {message}"),
    }
}

/// The first line of the script named in a stack trace (`script.js:LINE[:COL]`).
fn script_line(stack: &str) -> Option<u32> {
    let at = stack.find(SCRIPT_NAME)? + SCRIPT_NAME.len();
    let rest = stack[at..].strip_prefix(':')?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::script_line;

    #[test]
    fn finds_the_script_line_in_a_stack() {
        assert_eq!(script_line("    at <anonymous> (script.js:3:9)\n"), Some(3));
        assert_eq!(
            script_line("    at f (script.js:12)\n    at <eval>"),
            Some(12)
        );
        assert_eq!(script_line("    at native"), None);
    }
}
