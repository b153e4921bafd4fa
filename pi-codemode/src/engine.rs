//! The sandboxed engine: one QuickJS runtime on a thread of its own per `code` call. The script
//! runs as the body of an async function; `tools.<name>(args)` starts the call on this same
//! thread ([`crate::calls`]) and returns a promise, settled at once when the call finishes at
//! once, else when the script next waits and the call has finished.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::thread::{self, Thread};
use std::time::Instant;

use pi_tool::{Content, ToolContext, ToolResult};
use rquickjs::context::EvalOptions;
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
use crate::json::{JsonIntrinsics, JsonReader, NotJson};
use crate::to_js::to_js;

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
    pub(crate) tools: Arc<BTreeMap<String, bool>>,
    pub(crate) limits: CodeLimits,
    /// The `code` call's context: the script's calls are nested calls of it.
    pub(crate) ctx: ToolContext,
    /// The host's runtime, which the calls run inside.
    pub(crate) runtime: Handle,
    /// Set by the host on abort (then it unparks the thread): the interrupt handler stops the
    /// script at once, a wait for calls at its next look.
    pub(crate) abort: Arc<AtomicBool>,
}

/// Why the interrupt handler stopped the script.
const RUNNING: u8 = 0;
const TIMED_OUT: u8 = 1;
const ABORTED: u8 = 2;

/// Starts the engine thread; the host unparks it on abort. It sends the outcome to `done` when
/// the script is over; if it dies without, the sender drops and the host sees the channel close.
pub(crate) fn spawn(job: Job, done: oneshot::Sender<Outcome>) -> std::io::Result<Thread> {
    thread::Builder::new()
        .name("pi-codemode".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            let outcome = run(&job);
            let _ = done.send(outcome);
        })
        .map(|handle| handle.thread().clone())
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
    /// Settles the waiting call's promise with its result.
    fn settle(self, ctx: &Ctx<'_>, result: ToolResult) -> rquickjs::Result<()> {
        let resolve = self.resolve.restore(ctx)?;
        let reject = self.reject.restore(ctx)?;
        settle(ctx, &self.name, self.structured, &resolve, &reject, result)
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

fn run(job: &Job) -> Outcome {
    // For the whole run: the calls are started, polled and dropped inside the host's runtime.
    let _entered = job.runtime.enter();
    let started = Instant::now();
    let deadline = started + job.limits.time;
    let Ok(runtime) = Runtime::new() else {
        return fail("the code engine could not start");
    };
    runtime.set_memory_limit(job.limits.memory_bytes);
    runtime.set_max_stack_size(job.limits.stack_bytes);
    let stop = Arc::new(AtomicU8::new(RUNNING));
    {
        let stop = Arc::clone(&stop);
        let abort = Arc::clone(&job.abort);
        runtime.set_interrupt_handler(Some(Box::new(move || {
            if abort.load(Ordering::Relaxed) {
                stop.store(ABORTED, Ordering::Relaxed);
            } else if Instant::now() >= deadline {
                stop.store(TIMED_OUT, Ordering::Relaxed);
            }
            stop.load(Ordering::Relaxed) != RUNNING
        })));
    }
    let Ok(context) = Context::full(&runtime) else {
        return fail("the code engine could not start");
    };
    let bridge = Rc::new(RefCell::new(Bridge {
        pending: BTreeMap::new(),
        calls: 0,
        console: String::new(),
        console_cut: false,
        images: Vec::new(),
        json: None,
    }));
    let calls = Rc::new(RefCell::new(Calls::new(job.ctx.clone())));
    let value = context.with(|ctx| {
        let driver = Driver {
            ctx: ctx.clone(),
            job,
            bridge: &bridge,
            calls: &calls,
            stop: &stop,
            deadline,
        };
        driver.drive()
    });
    // Calls still waiting are cancelled now (their futures dropped), not when the engine's
    // collector gets to the bridge functions.
    calls.borrow_mut().cancel_all();
    let mut bridge = bridge.borrow_mut();
    bridge.json = None;
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
    stop: &'a AtomicU8,
    deadline: Instant,
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
            while ctx.execute_pending_job() {}
            self.stopped()?;
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

    /// The time cap or an abort, once the interrupt handler (or a wait) has seen it.
    fn stopped(&self) -> Result<(), String> {
        if self.job.abort.load(Ordering::Relaxed) {
            self.stop.store(ABORTED, Ordering::Relaxed);
        }
        match self.stop.load(Ordering::Relaxed) {
            TIMED_OUT => Err(format!(
                "the script ran past its time cap ({} s) and was stopped",
                self.job.limits.time.as_secs_f64()
            )),
            ABORTED => Err("the code call was aborted".into()),
            _ => Ok(()),
        }
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
                            .settle(&self.ctx, result)
                            .map_err(|err| self.describe(err))?;
                    }
                }
                return Ok(());
            }
            let calls = self.calls.borrow();
            if calls.is_empty() {
                return Err(
                    "the script awaits a promise that can never settle (no tool call is running)"
                        .into(),
                );
            }
            self.stopped()?;
            if Instant::now() >= self.deadline {
                self.stop.store(TIMED_OUT, Ordering::Relaxed);
                return self.stopped();
            }
            calls.park_until(self.deadline);
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
        describe_thrown(&self.ctx, thrown, self.job.limits.memory_bytes)
    }

    /// Puts `tools`, `console` and `attachImage` in place and locks the bridge down.
    fn install(&self) -> rquickjs::Result<()> {
        let ctx = &self.ctx;
        self.bridge.borrow_mut().json = Some(Rc::new(JsonIntrinsics::take(ctx)?));
        let tools = Object::new(ctx.clone())?;
        tools.set_prototype(None)?;
        for (name, structured) in self.job.tools.iter() {
            tools.set(name.as_str(), self.tool_function(name, *structured)?)?;
        }
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
        let lockdown: Function<'js> = ctx.eval(LOCKDOWN)?;
        lockdown.call((tools, console, attach))
    }

    fn tool_function(&self, name: &str, structured: bool) -> rquickjs::Result<Function<'js>> {
        let bridge = Rc::clone(self.bridge);
        let calls = Rc::clone(self.calls);
        let max_calls = self.job.limits.max_calls;
        let memory_cap = self.job.limits.memory_bytes;
        let tool: Arc<str> = Arc::from(name);
        let function = Function::new(
            self.ctx.clone(),
            move |ctx: Ctx<'js>, arguments: Opt<Value<'js>>| -> rquickjs::Result<Promise<'js>> {
                let (promise, resolve, reject) = ctx.promise()?;
                // Before the bridge is borrowed: the script's own code may run here (a getter,
                // `toJSON`) and use the bridge itself (log, call a tool).
                let read = match arguments.0 {
                    None => Ok(None),
                    Some(value) => json_reader(&ctx, &bridge, memory_cap)?.read(value),
                };
                let arguments = match read {
                    Ok(arguments) => arguments.unwrap_or_else(|| Json::Object(Default::default())),
                    Err(NotJson::Thrown(err)) => return Err(err),
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
                    // Calls are numbered in the order they are made.
                    state.calls += 1;
                    state.calls as u64 - 1
                };
                // Neither the bridge nor the calls are borrowed while the tool runs, or while
                // its promise is settled (which may run the script's code: a `then` getter).
                let started = calls.borrow().start(id, Arc::clone(&tool), arguments);
                match started {
                    Started::Done(result) => {
                        settle(&ctx, &tool, structured, &resolve, &reject, result)?;
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
                state.images.push(Content::image(data, mime_type));
                Ok(())
            },
        )
    }
}

/// Settles a call's promise with its result: the tool's structured value (its `details`) or its
/// text, or an `Error` naming the tool when the call failed.
fn settle<'js>(
    ctx: &Ctx<'js>,
    tool: &str,
    structured: bool,
    resolve: &Function<'js>,
    reject: &Function<'js>,
    result: ToolResult,
) -> rquickjs::Result<()> {
    if result.is_error {
        return reject_call(ctx, reject, tool, &result.text_content());
    }
    let value = if structured {
        to_js(ctx, &result.details)?
    } else if let [Content::Text { text }] = result.content.as_slice() {
        // The usual case, without joining the texts into a new string first.
        rquickjs::String::from_str(ctx.clone(), text)?.into_value()
    } else {
        rquickjs::String::from_str(ctx.clone(), &result.text_content())?.into_value()
    };
    resolve.call((value,))
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
const LOCKDOWN: &str = r#"(function (tools, console, attachImage) {
  'use strict';
  const define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
  for (const name of Object.keys(tools)) Object.freeze(tools[name]);
  Object.freeze(tools);
  for (const name of Object.keys(console)) Object.freeze(console[name]);
  Object.freeze(console);
  Object.freeze(attachImage);
  define('tools', tools);
  define('console', console);
  define('attachImage', attachImage);
  const blocked = function () { throw new EvalError('code generation from strings is disabled in code mode'); };
  blocked.prototype = Function.prototype;
  for (const f of [function () {}, async function () {}, function* () {}, async function* () {}]) {
    Object.defineProperty(Object.getPrototypeOf(f), 'constructor', { value: blocked, writable: false, configurable: false });
  }
  Object.freeze(blocked);
  delete globalThis.eval;
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

/// A thrown value as `the script threw at line N: Name: message`.
fn describe_thrown<'js>(ctx: &Ctx<'js>, thrown: Value<'js>, memory_cap: usize) -> String {
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
        return format!(
            "the script ran out of memory (the cap is {} MiB)",
            memory_cap >> 20
        );
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
