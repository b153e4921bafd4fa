//! Helpers shared by the loop tests: tools, scripted replies, and event traces.
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt;
use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, AgentStream, AssistantContent, AssistantMessage,
    Message, Model, StopReason, agent_loop,
};
use pi_tool::{
    AgentTool, BoxFuture, CancellationToken, ExecutionMode, ToolContext, ToolError, ToolResult,
    ToolSpec, tool,
};
use serde_json::{Value, json};

/// Echo the value.
#[tool]
pub async fn echo(value: String) -> String {
    format!("echoed: {value}")
}

type Run = Arc<
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolResult, ToolError>> + Send + Sync,
>;
type Prepare = Arc<dyn Fn(Value) -> Result<Value, ToolError> + Send + Sync>;

/// A hand-written tool whose behaviour is a closure.
#[derive(Clone)]
pub struct FnTool {
    spec: ToolSpec,
    mode: Option<ExecutionMode>,
    prepare: Option<Prepare>,
    run: Run,
}

impl FnTool {
    pub fn new<F, Fut>(name: &str, parameters: Value, run: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResult, ToolError>> + Send + 'static,
    {
        FnTool {
            spec: ToolSpec {
                name: name.to_owned(),
                description: format!("The {name} tool."),
                parameters,
            },
            mode: None,
            prepare: None,
            run: Arc::new(move |args, ctx| Box::pin(run(args, ctx))),
        }
    }

    /// A tool taking `{value: string}` (any value when `loose`).
    pub fn value<F, Fut>(name: &str, run: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResult, ToolError>> + Send + 'static,
    {
        FnTool::new(name, value_schema(), run)
    }

    pub fn mode(mut self, mode: ExecutionMode) -> Self {
        self.mode = Some(mode);
        self
    }

    pub fn prepare(
        mut self,
        prepare: impl Fn(Value) -> Result<Value, ToolError> + Send + Sync + 'static,
    ) -> Self {
        self.prepare = Some(Arc::new(prepare));
        self
    }

    pub fn arc(self) -> Arc<dyn AgentTool> {
        Arc::new(self)
    }
}

impl AgentTool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn label(&self) -> &str {
        &self.spec.name
    }

    fn execution_mode(&self) -> Option<ExecutionMode> {
        self.mode
    }

    fn prepare_arguments(&self, args: Value) -> Result<Value, ToolError> {
        match &self.prepare {
            Some(prepare) => prepare(args),
            None => Ok(args),
        }
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        (self.run)(args, ctx)
    }
}

pub fn value_schema() -> Value {
    json!({"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]})
}

/// Tracks how many calls run at once.
#[derive(Default)]
pub struct Overlap {
    active: AtomicUsize,
    max: AtomicUsize,
    pub order: std::sync::Mutex<Vec<String>>,
}

impl Overlap {
    pub fn enter(&self, name: &str) {
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        self.order.lock().unwrap().push(name.to_owned());
    }

    pub fn leave(&self) {
        self.active.fetch_sub(1, Ordering::SeqCst);
    }

    pub fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }

    pub fn order(&self) -> Vec<String> {
        self.order.lock().unwrap().clone()
    }
}

/// A tool `{value}` that sleeps `ms` (virtual time in paused tests) and records overlap.
pub fn sleeper(name: &str, ms: u64, overlap: Arc<Overlap>) -> FnTool {
    let tool_name = name.to_owned();
    FnTool::value(name, move |args, _ctx| {
        let overlap = Arc::clone(&overlap);
        let name = format!("{tool_name}:{}", args["value"].as_str().unwrap_or_default());
        async move {
            overlap.enter(&name);
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            overlap.leave();
            Ok(ToolResult::text(name))
        }
    })
}

pub fn call(id: &str, name: &str, args: Value) -> AssistantContent {
    AssistantContent::tool_call(id, name, args)
}

/// An assistant message with these tool calls (`ToolUse`).
pub fn calls(content: Vec<AssistantContent>) -> AssistantMessage {
    AssistantMessage::new(content, StopReason::ToolUse)
}

/// An assistant message with one echo call.
pub fn echo_call(id: &str, value: &str) -> AssistantMessage {
    calls(vec![call(id, "echo", json!({ "value": value }))])
}

pub fn text(text: &str) -> AssistantMessage {
    AssistantMessage::new(vec![AssistantContent::text(text)], StopReason::Stop)
}

pub fn echo_tools() -> AgentContext {
    AgentContext::new("You are a test.").with_tool(EchoTool)
}

/// Runs `agent_loop` with the prompt `go` and collects every event.
pub async fn run(
    context: AgentContext,
    config: AgentLoopConfig,
    model: Arc<dyn Model>,
) -> Vec<AgentEvent> {
    collect(agent_loop(
        vec![Message::user("go")],
        context,
        config,
        model,
        CancellationToken::new(),
    ))
    .await
}

pub async fn collect(mut stream: AgentStream) -> Vec<AgentEvent> {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    events
}

fn role(message: &Message) -> String {
    match message {
        Message::ToolResult(result) => format!("toolResult({})", result.tool_call_id),
        Message::Assistant(m) => match m.stop_reason {
            StopReason::Error => "assistant(error)".to_owned(),
            StopReason::Aborted => "assistant(aborted)".to_owned(),
            _ => "assistant".to_owned(),
        },
        Message::User(u) => match u.content.first().and_then(|c| c.as_text()) {
            Some("go") | None => "user".to_owned(),
            Some(text) => format!("user({text})"),
        },
        other => other.role().to_owned(),
    }
}

fn roles(messages: &[Arc<Message>]) -> String {
    messages
        .iter()
        .map(|m| role(m))
        .collect::<Vec<_>>()
        .join(",")
}

/// One line per event: `kind`, plus the message role, the call id, or the result ids.
pub fn trace(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .map(|event| match event {
            AgentEvent::MessageStart { message } => format!("message_start {}", role(message)),
            AgentEvent::MessageEnd { message } => format!("message_end {}", role(message)),
            AgentEvent::ToolExecutionStart { call } => {
                format!("tool_execution_start {}", call.id())
            }
            AgentEvent::ToolExecutionUpdate { call, .. } => {
                format!("tool_execution_update {}", call.id())
            }
            AgentEvent::ToolExecutionEnd { call, .. } => {
                format!("tool_execution_end {}", call.id())
            }
            AgentEvent::TurnEnd { tool_results, .. } => {
                let ids: Vec<&str> = tool_results
                    .iter()
                    .filter_map(|m| m.as_tool_result())
                    .map(|r| r.tool_call_id.as_str())
                    .collect();
                format!("turn_end [{}]", ids.join(","))
            }
            AgentEvent::AgentEnd { messages } => format!("agent_end [{}]", roles(messages)),
            other => other.kind().to_owned(),
        })
        .collect()
}

/// The trace as one string, lines separated by `\n`.
pub fn trace_str(events: &[AgentEvent]) -> String {
    trace(events).join("\n")
}

/// pi's prefix `E`: start, the prompt, and the first assistant message.
pub const E: &str = "agent_start\nturn_start\nmessage_start user\nmessage_end user\nmessage_start assistant\nmessage_end assistant";

/// The tool-result messages of a run, in order.
pub fn results(events: &[AgentEvent]) -> Vec<pi_runtime::ToolResultMessage> {
    match events.last() {
        Some(AgentEvent::AgentEnd { messages }) => messages
            .iter()
            .filter_map(|m| m.as_tool_result())
            .cloned()
            .collect(),
        _ => panic!("the run did not end with agent_end"),
    }
}

/// The `ToolExecutionEnd` events: (id, is_error, result text).
pub fn ends(events: &[AgentEvent]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolExecutionEnd {
                call,
                result,
                is_error,
                ..
            } => Some((
                call.id().to_owned(),
                *is_error,
                result
                    .as_tool_result()
                    .map(|r| r.text())
                    .unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

/// The names of the tools a scripted model's request offered, owned (to compare with arrays).
pub fn request_tool_names(request: &pi_runtime::ModelRequest) -> Vec<String> {
    request
        .tool_names()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// An `Agent` on `model` with `tools`, asking for the API's own code runner
/// (`StreamOptions::native_code_calls`).
pub fn native_code_agent(
    model: Arc<dyn Model>,
    tools: Vec<Arc<dyn AgentTool>>,
) -> pi_runtime::Agent {
    let mut stream = pi_runtime::StreamOptions::default();
    stream.native_code_calls = true;
    pi_runtime::Agent::new(model)
        .with_tools(tools.into_iter().collect())
        .with_config(AgentLoopConfig::new().stream_options(stream))
}

/// The tool results of a transcript, in order: text and whether it is an error.
pub fn tool_results(messages: &[Arc<Message>]) -> Vec<(String, bool)> {
    messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| (r.text(), r.is_error))
        .collect()
}

/// The messages the run added (from `AgentEnd`).
pub fn new_messages(events: &[AgentEvent]) -> Vec<Arc<Message>> {
    match events.last() {
        Some(AgentEvent::AgentEnd { messages }) => messages.clone(),
        _ => panic!("the run did not end with agent_end"),
    }
}
