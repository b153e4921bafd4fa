//! `--mode rpc`, pi's protocol for editors and scripts (`modes/rpc/rpc-mode.ts`,
//! `rpc-types.ts`): one JSON command per line on stdin (`{"id"?, "type": "prompt", ...}`), one
//! JSON line per response (`{"id"?, "type": "response", "command", "success", "data"? |
//! "error"}`) and per event (pi's session events) on stdout. Lines are split on `\n` only.
//!
//! A prompt runs while further commands are read: `steer`, `follow_up`, `abort`, `bash` and
//! `get_state` are answered at once; commands that change the session wait for the turn to end.
//! At the end of input, the running turn is finished, then `pi` exits (pi exits at once).
//!
//! Calls that wait for a decision (pi has none) add `get_waiting_calls` and `resume_waiting`,
//! and `get_state`'s `waitingCallCount`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use pi_runtime::{AgentEvent, QueueMode, ThinkingLevel, WaitingCall};
use pi_tool::CancellationToken;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::Setup;
use super::model_choice::switchable;
use crate::agent::{AgentControl, CodingAgent};
use crate::compaction::CompactionReason;
use crate::events::{CompactionEnd, Observer, PiJson};
use crate::models::{ModelInfo, ModelRegistry};
use crate::session::Session;

/// One line on stdout.
fn emit(value: &Value) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{value}");
    let _ = stdout.flush();
}

fn success(id: &Option<Value>, command: &str, data: Option<Value>) -> Value {
    let mut response = json!({"type": "response", "command": command, "success": true});
    if let Some(id) = id {
        response["id"] = id.clone();
    }
    if let Some(data) = data {
        response["data"] = data;
    }
    ordered(response)
}

fn failure(id: &Option<Value>, command: &str, error: &str) -> Value {
    let mut response =
        json!({"type": "response", "command": command, "success": false, "error": error});
    if let Some(id) = id {
        response["id"] = id.clone();
    }
    ordered(response)
}

/// pi's key order: `id` first.
fn ordered(value: Value) -> Value {
    let Value::Object(map) = value else {
        return value;
    };
    let mut out = serde_json::Map::new();
    if let Some(id) = map.get("id") {
        out.insert("id".into(), id.clone());
    }
    for (k, v) in map {
        if k != "id" {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}

/// Events as pi's JSON lines.
struct Events {
    encoder: PiJson,
    /// A command's response that goes out just before the first event (so that a command
    /// refused before anything ran can still answer with a failure instead).
    response: Option<Value>,
}

impl Events {
    fn new() -> Self {
        Events {
            encoder: PiJson::new(),
            response: None,
        }
    }

    fn send_response(&mut self) {
        if let Some(response) = self.response.take() {
            emit(&response);
        }
    }
}

impl Observer for Events {
    fn agent_event(&mut self, event: &AgentEvent) {
        self.send_response();
        emit(&self.encoder.agent_event(event));
    }

    fn compaction_start(&mut self, reason: CompactionReason) {
        self.send_response();
        emit(&PiJson::compaction_start(reason));
    }

    fn compaction_end(&mut self, end: &CompactionEnd) {
        self.send_response();
        emit(&PiJson::compaction_end(end));
    }

    fn queue_update(&mut self, steering: &[String], follow_up: &[String]) {
        self.send_response();
        emit(&PiJson::queue_update(steering, follow_up));
    }
}

/// What stays the same for the whole process, and what a turn updates for `get_state` to read
/// while the agent is busy.
struct Rpc {
    agent: Arc<Mutex<CodingAgent>>,
    control: AgentControl,
    registry: ModelRegistry,
    scoped: Vec<(ModelInfo, Option<ThinkingLevel>)>,
    session_dir: PathBuf,
    api_key: Option<String>,
    strict: Option<bool>,
    state: std::sync::Mutex<Value>,
    bash: std::sync::Mutex<Option<CancellationToken>>,
    shell: (Option<PathBuf>, Option<String>, PathBuf),
    /// What the commands started and has not ended: finished before `pi` leaves at the end
    /// of input.
    tasks: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Rpc {
    /// Runs `task` on this thread, beside the reading of further commands.
    fn spawn(&self, task: impl Future<Output = ()> + 'static) {
        let handle = tokio::task::spawn_local(task);
        let mut tasks = lock(&self.tasks);
        tasks.retain(|task| !task.is_finished());
        tasks.push(handle);
    }

    /// Runs `task` once the agent is free, after the commands that waited for it before: the
    /// task is given its turn at once, so that it queues for the agent before the next
    /// command is read.
    async fn when_free(
        self: &Arc<Self>,
        task: impl AsyncFnOnce(tokio::sync::OwnedMutexGuard<CodingAgent>) + 'static,
    ) {
        let agent = Arc::clone(&self.agent);
        self.spawn(async move { task(agent.lock_owned().await).await });
        tokio::task::yield_now().await;
    }
}

/// Runs the protocol until the end of input.
pub(super) async fn run(setup: Setup) -> Result<ExitCode, String> {
    let Setup {
        agent,
        registry,
        settings,
        input,
        interrupts,
        scoped,
        session_dir,
        api_key,
        strict,
        ..
    } = setup;
    let shell = (
        settings.shell_path.as_deref().map(PathBuf::from),
        settings.shell_command_prefix.clone(),
        agent.cwd().to_path_buf(),
    );
    let control = agent.control();
    // Turns run as local tasks: a turn's observer (the JSON writer) stays on this thread.
    let local = tokio::task::LocalSet::new();
    local
        .run_until(serve(
            agent,
            control,
            registry,
            scoped,
            session_dir,
            api_key,
            strict,
            shell,
            input,
            interrupts,
        ))
        .await
}

#[allow(clippy::too_many_arguments)]
async fn serve(
    agent: CodingAgent,
    control: AgentControl,
    registry: ModelRegistry,
    scoped: Vec<(ModelInfo, Option<ThinkingLevel>)>,
    session_dir: PathBuf,
    api_key: Option<String>,
    strict: Option<bool>,
    shell: (Option<PathBuf>, Option<String>, PathBuf),
    input: super::Input,
    mut interrupts: tokio::signal::unix::Signal,
) -> Result<ExitCode, String> {
    let rpc = Arc::new(Rpc {
        state: std::sync::Mutex::new(state_of(&agent)),
        agent: Arc::new(Mutex::new(agent)),
        control,
        registry,
        scoped,
        session_dir,
        api_key,
        strict,
        bash: std::sync::Mutex::new(None),
        shell,
        tasks: std::sync::Mutex::new(Vec::new()),
    });
    loop {
        let line = {
            let mut lines = input.lock().await;
            tokio::select! {
                line = lines.next_line() => line.ok().flatten(),
                _ = interrupts.recv() => {
                    rpc.control.abort();
                    return Ok(ExitCode::from(130));
                }
            }
        };
        let Some(line) = line else { break };
        let line = line.strip_suffix('\r').unwrap_or(&line).to_owned();
        if line.trim().is_empty() {
            continue;
        }
        handle_line(&rpc, &line).await;
    }
    // The end of input: finish the turn that runs and the commands that wait, then leave.
    loop {
        let next = lock(&rpc.tasks).pop();
        let Some(task) = next else { break };
        let _ = task.await;
    }
    Ok(ExitCode::SUCCESS)
}

async fn handle_line(rpc: &Arc<Rpc>, line: &str) {
    let command: Value = match serde_json::from_str(line) {
        Ok(value @ Value::Object(_)) => value,
        Ok(_) => {
            emit(&failure(
                &None,
                "parse",
                "Failed to parse command: a command is a JSON object",
            ));
            return;
        }
        Err(err) => {
            emit(&failure(
                &None,
                "parse",
                &format!("Failed to parse command: {err}"),
            ));
            return;
        }
    };
    if command["type"] == "extension_ui_response" {
        return;
    }
    let id = command.get("id").cloned().filter(|v| !v.is_null());
    let kind = command["type"].as_str().unwrap_or_default().to_owned();
    // Answered without the agent, at once, even while a turn runs.
    match kind.as_str() {
        "prompt" => return prompt(rpc, id, &command).await,
        "resume_waiting" => return resume_waiting(rpc, id, command).await,
        "steer" | "follow_up" => {
            let Some(message) = command["message"].as_str() else {
                return emit(&failure(&id, &kind, "\"message\" is required"));
            };
            if kind == "steer" {
                rpc.control.steer(message);
            } else {
                rpc.control.follow_up(message);
            }
            let (steering, follow_up) = rpc.control.queued();
            emit(&PiJson::queue_update(&steering, &follow_up));
            return emit(&success(&id, &kind, None));
        }
        "abort" => {
            rpc.control.abort();
            drop(rpc.agent.lock().await);
            return emit(&success(&id, "abort", None));
        }
        "get_state" if rpc.agent.try_lock().is_err() => {
            let mut state = lock(&rpc.state).clone();
            state["isStreaming"] = json!(true);
            state["isCompacting"] = json!(rpc.control.is_compacting());
            state["pendingMessageCount"] = json!(rpc.control.pending_count());
            return emit(&success(&id, "get_state", Some(state)));
        }
        "set_steering_mode" | "set_follow_up_mode" => {
            let mode = match command["mode"].as_str() {
                Some("all") => QueueMode::All,
                Some("one-at-a-time") => QueueMode::OneAtATime,
                _ => {
                    return emit(&failure(
                        &id,
                        &kind,
                        "mode must be \"all\" or \"one-at-a-time\"",
                    ));
                }
            };
            let (steering, follow_up) = rpc.control.queue_modes();
            if kind == "set_steering_mode" {
                rpc.control.set_queue_modes(mode, follow_up);
            } else {
                rpc.control.set_queue_modes(steering, mode);
            }
            return emit(&success(&id, &kind, None));
        }
        "set_auto_retry" | "abort_retry" => return emit(&success(&id, &kind, None)),
        "get_commands" => {
            return emit(&success(&id, "get_commands", Some(json!({"commands": []}))));
        }
        "bash" => {
            let rpc = Arc::clone(rpc);
            let command = command.clone();
            // The command runs now, as in pi, also while a turn runs; its result joins the
            // context when the agent is free.
            let task = Arc::clone(&rpc);
            rpc.spawn(async move { bash(&task, id, &command).await });
            return;
        }
        "abort_bash" => {
            if let Some(signal) = lock(&rpc.bash).as_ref() {
                signal.cancel();
            }
            return emit(&success(&id, "abort_bash", None));
        }
        _ => {}
    }
    match Arc::clone(&rpc.agent).try_lock_owned() {
        Ok(mut agent) => {
            let response = agent_command(rpc, &mut agent, id, &kind, &command).await;
            *lock(&rpc.state) = state_of(&agent);
            emit(&response);
        }
        Err(_) => {
            let task = Arc::clone(rpc);
            rpc.when_free(async move |mut agent| {
                let response = agent_command(&task, &mut agent, id, &kind, &command).await;
                *lock(&task.state) = state_of(&agent);
                emit(&response);
            })
            .await;
        }
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `prompt`: queued when a turn runs (with `streamingBehavior`), else started: the response
/// first, then the turn's events.
async fn prompt(rpc: &Arc<Rpc>, id: Option<Value>, command: &Value) {
    let Some(message) = command["message"].as_str().map(str::to_owned) else {
        return emit(&failure(&id, "prompt", "\"message\" is required"));
    };
    let mut content = vec![pi_tool::Content::text(message.clone())];
    if let Some(images) = command["images"].as_array() {
        for image in images {
            match serde_json::from_value::<pi_tool::Content>(image.clone()) {
                Ok(image) => content.push(image),
                Err(err) => {
                    return emit(&failure(&id, "prompt", &format!("images: {err}")));
                }
            }
        }
    }
    let agent = match Arc::clone(&rpc.agent).try_lock_owned() {
        Ok(agent) => agent,
        Err(_) => {
            let queued = |rpc: &Rpc| {
                let (steering, follow_up) = rpc.control.queued();
                emit(&PiJson::queue_update(&steering, &follow_up));
                emit(&success(&id, "prompt", None));
            };
            return match command["streamingBehavior"].as_str() {
                Some("steer") => {
                    rpc.control.steer(&message);
                    queued(rpc);
                }
                Some("followUp") => {
                    rpc.control.follow_up(&message);
                    queued(rpc);
                }
                _ => emit(&failure(
                    &id,
                    "prompt",
                    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.",
                )),
            };
        }
    };
    emit(&success(&id, "prompt", None));
    let task = Arc::clone(rpc);
    let mut agent = agent;
    let signal = CancellationToken::new();
    // The turn owns the agent until it ends (commands that need it wait, `get_state` answers
    // from the last state); `abort` reaches it through its control.
    rpc.spawn(async move {
        let mut events = Events::new();
        agent.prompt_content(content, signal, &mut events).await;
        *lock(&task.state) = state_of(&agent);
    });
}

/// `resume_waiting` (ours: pi has no calls that wait): settles the calls the last run left
/// waiting and goes on with that run, as `pi -c` does on a terminal. The response first, then
/// the run's events; while a turn runs, it waits for the turn to end (and commands after it
/// wait for it).
async fn resume_waiting(rpc: &Arc<Rpc>, id: Option<Value>, command: Value) {
    let task = Arc::clone(rpc);
    match Arc::clone(&rpc.agent).try_lock_owned() {
        Ok(agent) => rpc.spawn(settle_waiting(task, agent, id, command)),
        Err(_) => {
            rpc.when_free(async move |agent| settle_waiting(task, agent, id, command).await)
                .await;
        }
    }
}

async fn settle_waiting(
    rpc: Arc<Rpc>,
    mut agent: tokio::sync::OwnedMutexGuard<CodingAgent>,
    id: Option<Value>,
    command: Value,
) {
    let approve = match decisions(agent.waiting_calls(), &command) {
        Ok(approve) => approve,
        Err(error) => return emit(&failure(&id, "resume_waiting", &error)),
    };
    let mut events = Events::new();
    events.response = Some(success(&id, "resume_waiting", None));
    let decide = |call: &WaitingCall| approve.contains(&call.id);
    let outcome = agent
        .resume_waiting(decide, CancellationToken::new(), &mut events)
        .await;
    // A run that could not be resumed is refused before its first event: the failure goes
    // out instead of the success.
    match outcome {
        Some(Err(error)) => match events.response.take() {
            Some(_) => emit(&failure(&id, "resume_waiting", &error)),
            None => eprintln!("resume_waiting: {error}"),
        },
        _ => events.send_response(),
    }
    *lock(&rpc.state) = state_of(&agent);
}

/// The ids of the waiting calls `command` approves: `"approve": true|false` decides them all,
/// `"decisions": {"<toolCallId>": true|false}` each one, and must name every call that waits
/// and no other.
fn decisions(waiting: &[WaitingCall], command: &Value) -> Result<Vec<String>, String> {
    let ids = || {
        waiting
            .iter()
            .map(|call| call.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if waiting.is_empty() {
        return Err("No calls are waiting".to_owned());
    }
    match (&command["approve"], &command["decisions"]) {
        (Value::Bool(approve), Value::Null) => Ok(if *approve {
            waiting.iter().map(|call| call.id.clone()).collect()
        } else {
            Vec::new()
        }),
        (Value::Null, Value::Object(decisions)) => {
            let mut approved = Vec::new();
            for (call_id, decision) in decisions {
                if !waiting.iter().any(|call| &call.id == call_id) {
                    return Err(format!("No call {call_id} is waiting (waiting: {})", ids()));
                }
                match decision {
                    Value::Bool(true) => approved.push(call_id.clone()),
                    Value::Bool(false) => {}
                    _ => return Err(format!("The decision for {call_id} must be true or false")),
                }
            }
            let undecided: Vec<&str> = waiting
                .iter()
                .filter(|call| !decisions.contains_key(&call.id))
                .map(|call| call.id.as_str())
                .collect();
            if !undecided.is_empty() {
                return Err(format!("No decision for {}", undecided.join(", ")));
            }
            Ok(approved)
        }
        _ => Err(format!(
            "Either \"approve\": true|false (every waiting call) or \"decisions\": {{\"<toolCallId>\": true|false}} (each one) is required; waiting: {}",
            ids()
        )),
    }
}

/// `bash`: runs the command, answers with pi's `BashResult`, records it in the session.
async fn bash(rpc: &Arc<Rpc>, id: Option<Value>, command: &Value) {
    let Some(text) = command["command"].as_str() else {
        return emit(&failure(&id, "bash", "\"command\" is required"));
    };
    let signal = CancellationToken::new();
    *lock(&rpc.bash) = Some(signal.clone());
    let (shell, prefix, cwd) = &rpc.shell;
    let result = crate::agent::run_user_command(
        shell.as_deref(),
        prefix.as_deref(),
        cwd,
        text,
        &signal,
        |_| {},
    )
    .await;
    *lock(&rpc.bash) = None;
    emit(&success(&id, "bash", Some(result.to_json())));
    let mut agent = rpc.agent.lock().await;
    agent.add_bash_result(text, &result, false);
    *lock(&rpc.state) = state_of(&agent);
}

/// pi's `RpcSessionState`.
fn state_of(agent: &CodingAgent) -> Value {
    let control = agent.control();
    let (steering, follow_up) = control.queue_modes();
    let mode = |m: QueueMode| match m {
        QueueMode::All => "all",
        QueueMode::OneAtATime => "one-at-a-time",
    };
    let session = agent.session_state();
    let mut state = json!({
        "model": agent.model_info(),
        "thinkingLevel": agent.thinking().as_str(),
        "isStreaming": control.is_streaming(),
        "isCompacting": control.is_compacting(),
        "steeringMode": mode(steering),
        "followUpMode": mode(follow_up),
        "sessionId": session.id(),
        "autoCompactionEnabled": agent.compaction_settings().enabled,
        "messageCount": agent.agent_messages().len(),
        "pendingMessageCount": control.pending_count(),
    });
    if let Some(file) = session.file() {
        state["sessionFile"] = json!(file.display().to_string());
    }
    if let Some(name) = session.name() {
        state["sessionName"] = json!(name);
    }
    // Ours: a client that continues a session learns that calls wait (`get_waiting_calls`).
    let waiting = agent.waiting_calls().len();
    if waiting > 0 {
        state["waitingCallCount"] = json!(waiting);
    }
    state
}

/// The commands that need the agent to themselves.
async fn agent_command(
    rpc: &Rpc,
    agent: &mut CodingAgent,
    id: Option<Value>,
    kind: &str,
    command: &Value,
) -> Value {
    let ok = |data: Option<Value>| success(&id, kind, data);
    let err = |message: &str| failure(&id, kind, message);
    match kind {
        "get_state" => ok(Some(state_of(agent))),
        "get_messages" => ok(Some(json!({"messages": agent.agent_messages()}))),
        // pi's `{text: undefined}` is `{}` on the wire.
        "get_last_assistant_text" => ok(Some(match agent.last_assistant_text() {
            Some(text) => json!({ "text": text }),
            None => json!({}),
        })),
        "get_session_stats" => ok(Some(agent.stats().to_json())),
        // Ours, with `resume_waiting`: the calls the last run left waiting for a decision.
        "get_waiting_calls" => ok(Some(json!({
            "waiting": agent
                .waiting_calls()
                .iter()
                .map(PiJson::waiting_call)
                .collect::<Vec<_>>(),
        }))),
        "get_available_models" => ok(Some(json!({"models": rpc.registry.available()}))),
        "set_model" => {
            let (Some(provider), Some(model_id)) =
                (command["provider"].as_str(), command["modelId"].as_str())
            else {
                return err("\"provider\" and \"modelId\" are required");
            };
            let Some(info) = rpc
                .registry
                .available()
                .into_iter()
                .find(|m| m.provider == provider && m.id == model_id)
                .cloned()
            else {
                return err(&format!("Model not found: {provider}/{model_id}"));
            };
            match rpc
                .registry
                .build(&info, rpc.api_key.as_deref(), rpc.strict)
            {
                Ok(model) => {
                    agent.set_model(model, info.clone());
                    save_model(&info);
                    ok(Some(json!(info)))
                }
                Err(message) => err(&message),
            }
        }
        "cycle_model" => {
            let choices = switchable(&rpc.registry, &rpc.scoped);
            let scoped = !rpc.scoped.is_empty();
            if choices.len() <= 1 {
                return ok(Some(Value::Null));
            }
            let current = agent.model_info();
            let at = choices
                .iter()
                .position(|(m, _)| m.provider == current.provider && m.id == current.id)
                .unwrap_or(0);
            let (info, level) = choices[(at + 1) % choices.len()].clone();
            match rpc
                .registry
                .build(&info, rpc.api_key.as_deref(), rpc.strict)
            {
                Ok(model) => {
                    agent.set_model(model, info.clone());
                    save_model(&info);
                    if let Some(level) = level {
                        save_thinking(agent.set_thinking(level));
                    }
                    ok(Some(json!({
                        "model": info,
                        "thinkingLevel": agent.thinking().as_str(),
                        "isScoped": scoped,
                    })))
                }
                Err(message) => err(&message),
            }
        }
        "set_thinking_level" => match command["level"].as_str().and_then(ThinkingLevel::parse) {
            Some(level) => {
                save_thinking(agent.set_thinking(level));
                ok(None)
            }
            None => err("level must be one of off, minimal, low, medium, high, xhigh"),
        },
        "cycle_thinking_level" => {
            if !agent.model_info().reasoning {
                return ok(Some(Value::Null));
            }
            let levels = agent.model_info().thinking_levels();
            let at = levels
                .iter()
                .position(|l| *l == agent.thinking())
                .unwrap_or(0);
            let level = agent.set_thinking(levels[(at + 1) % levels.len()]);
            save_thinking(level);
            ok(Some(json!({"level": level.as_str()})))
        }
        "compact" => {
            let instructions = command["customInstructions"].as_str();
            let mut events = Events::new();
            match agent
                .compact(instructions, CancellationToken::new(), &mut events)
                .await
            {
                Ok(result) => ok(Some(result.to_json())),
                Err(message) => err(&message),
            }
        }
        "set_auto_compaction" => match command["enabled"].as_bool() {
            Some(enabled) => {
                agent.set_auto_compaction(enabled);
                ok(None)
            }
            None => err("\"enabled\" must be true or false"),
        },
        "new_session" => {
            let parent = command["parentSession"].as_str().map(PathBuf::from);
            let session = Session::create_in(&rpc.session_dir, agent.cwd(), parent.as_deref());
            agent.replace_session(session, Vec::new());
            agent.record_start();
            ok(Some(json!({"cancelled": false})))
        }
        "switch_session" => {
            let Some(path) = command["sessionPath"].as_str() else {
                return err("\"sessionPath\" is required");
            };
            match Session::resume(std::path::Path::new(path)) {
                Ok(resumed) => {
                    agent.replace_session(resumed.session, resumed.messages);
                    agent.record_start();
                    ok(Some(json!({"cancelled": false})))
                }
                Err(message) => err(&message.to_string()),
            }
        }
        "fork" | "clone" => {
            let session = agent.session_state();
            let (leaf, text) = if kind == "clone" {
                match session.leaf_id() {
                    Some(leaf) => (Some(leaf.to_owned()), None),
                    None => return err("Cannot clone session: no current entry selected"),
                }
            } else {
                let Some(entry_id) = command["entryId"].as_str() else {
                    return err("\"entryId\" is required");
                };
                let entry = session.entry(entry_id);
                let Some(entry) =
                    entry.filter(|e| e["type"] == "message" && e["message"]["role"] == "user")
                else {
                    return err("Invalid entry ID for forking");
                };
                let text = session
                    .user_messages()
                    .into_iter()
                    .find(|(id, _)| id == entry_id)
                    .map(|(_, text)| text);
                (entry["parentId"].as_str().map(str::to_owned), text)
            };
            let dir = session
                .file()
                .and_then(|f| f.parent())
                .map_or_else(|| rpc.session_dir.clone(), std::path::Path::to_path_buf);
            match session.branched(leaf.as_deref(), &dir) {
                Ok(forked) => {
                    let messages = forked.context().map(|c| c.messages).unwrap_or_default();
                    agent.replace_session(forked, messages);
                    if kind == "clone" {
                        ok(Some(json!({"cancelled": false})))
                    } else {
                        ok(Some(json!({"text": text, "cancelled": false})))
                    }
                }
                Err(message) => err(&message.to_string()),
            }
        }
        "get_fork_messages" => {
            let messages: Vec<Value> = agent
                .session_state()
                .user_messages()
                .into_iter()
                .map(|(entry_id, text)| json!({"entryId": entry_id, "text": text}))
                .collect();
            ok(Some(json!({"messages": messages})))
        }
        "set_session_name" => {
            let name = command["name"].as_str().unwrap_or_default().trim();
            if name.is_empty() {
                return err("Session name cannot be empty");
            }
            agent.set_session_name(name);
            ok(None)
        }
        "export_html" => {
            let Some(file) = agent.session().and_then(Session::file) else {
                return err("Cannot export in-memory session to HTML");
            };
            let output = command["outputPath"].as_str().map(PathBuf::from);
            match crate::export::export_file(file, output.as_deref()) {
                Ok(path) => ok(Some(json!({"path": path.display().to_string()}))),
                Err(message) => err(&message),
            }
        }
        other => failure(&None, other, &format!("Unknown command: {other}")),
    }
}

/// The model chosen, saved to settings.json as pi's setters save it (a failure goes to
/// stderr: stdout is the protocol's).
fn save_model(info: &ModelInfo) {
    let saved = super::saved_settings::save(
        &crate::session::pi_agent_dir(),
        &[
            ("defaultProvider", info.provider.clone().into()),
            ("defaultModel", info.id.clone().into()),
        ],
    );
    if let Err(err) = saved {
        eprintln!("Warning: could not save settings: {err}");
    }
}

/// The thinking level chosen, saved to settings.json as pi saves it.
fn save_thinking(level: ThinkingLevel) {
    let saved = super::saved_settings::save(
        &crate::session::pi_agent_dir(),
        &[("defaultThinkingLevel", level.as_str().into())],
    );
    if let Err(err) = saved {
        eprintln!("Warning: could not save settings: {err}");
    }
}
