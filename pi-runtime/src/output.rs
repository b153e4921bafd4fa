//! Typed results: a run that may call every tool and ends with a value of a Rust type
//! ([`Agent::prompt_output`], [`agent_loop_output`]).
//!
//! The answer is asked for with the API's own structured output where the model has one
//! together with tools ([`Model::structured_output`]), else with an output tool whose call
//! ends the run with its arguments. Either way our validator (compiled once per run) checks
//! it; an invalid answer goes back to the model with the validation message, a bounded number
//! of times, and then the run ends with [`OutputError::Invalid`].

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use pi_tool::schemars::JsonSchema;
use pi_tool::{
    AgentTool, ArgumentValidator, BoxFuture, CancellationToken, FnTool, ToolContext, ToolResult,
    ToolSpec,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::agent::{Agent, AgentError, Prompt};
use crate::agent_loop::{
    AgentContext, AgentStream, Resume, ResumeRefused, agent_loop, agent_loop_resume,
};
use crate::config::{AgentLoopConfig, TurnEndContext};
use crate::event::AgentEvent;
use crate::message::{Message, StopReason};
use crate::model::Model;
use crate::output_format::OutputFormat;
use crate::run_state::RunState;
use crate::turn_hooks::{FinishTurn, TurnUpdate};

/// How many times an invalid answer is sent back to the model by default.
pub const DEFAULT_OUTPUT_RETRIES: u32 = 2;

/// The output tool's name by default (Pydantic AI's).
pub const DEFAULT_OUTPUT_TOOL: &str = "final_result";

/// The property a non-object answer is wrapped in: the APIs' structured outputs and tool
/// arguments take an object root only.
const WRAPPED: &str = "value";

/// How a typed run asks the model for its answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutputMode {
    /// The API's own structured output where the model has it with tools
    /// ([`Model::structured_output`]), else the output tool.
    #[default]
    Auto,
    /// The API's own structured output ([`StreamOptions::output`](crate::StreamOptions::output)):
    /// the answer is the final message's text.
    Native,
    /// An output tool ([`OutputOptions::tool_name`]): the answer is the arguments of its call,
    /// which ends the run.
    Tool,
}

/// How a typed run gets and checks its answer.
///
/// ```
/// use pi_runtime::{OutputMode, OutputOptions};
///
/// let options = OutputOptions::new().mode(OutputMode::Tool).max_retries(1);
/// assert_eq!(options.tool_name, "final_result");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutputOptions {
    /// Structured output, output tool, or the best the model has (the default).
    pub mode: OutputMode,
    /// How many times an invalid answer is sent back with the validation message before the
    /// run ends with [`OutputError::Invalid`] (default [`DEFAULT_OUTPUT_RETRIES`]).
    pub max_retries: u32,
    /// The output tool's name (default [`DEFAULT_OUTPUT_TOOL`]). (The APIs' structured output
    /// names the schema after the type.)
    pub tool_name: String,
    /// What the output tool tells the model.
    pub tool_description: String,
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions {
            mode: OutputMode::Auto,
            max_retries: DEFAULT_OUTPUT_RETRIES,
            tool_name: DEFAULT_OUTPUT_TOOL.to_owned(),
            tool_description: "Give the final answer. Call this once you have everything the \
                               answer needs; the run ends with it."
                .to_owned(),
        }
    }
}

impl OutputOptions {
    /// The defaults: the best mode the model has, 2 retries, the tool `final_result`.
    pub fn new() -> Self {
        OutputOptions::default()
    }

    /// Sets the mode.
    #[must_use]
    pub fn mode(mut self, mode: OutputMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets how many times an invalid answer is sent back.
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Names the output tool (and the schema).
    #[must_use]
    pub fn tool_name(mut self, name: impl Into<String>) -> Self {
        self.tool_name = name.into();
        self
    }

    /// Sets what the output tool tells the model.
    #[must_use]
    pub fn tool_description(mut self, description: impl Into<String>) -> Self {
        self.tool_description = description.into();
        self
    }
}

/// Why a typed run did not end with its value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// Every answer was invalid: the last one as the model gave it, and why it was refused.
    #[error("the answer did not match the output type after {attempts} attempts: {message}")]
    Invalid {
        /// The last answer's text (or the output tool's arguments, as JSON).
        raw: String,
        /// The validation message (what the model was last told).
        message: String,
        /// How many answers were refused.
        attempts: u32,
    },
    /// The model's request failed or was aborted (its error message).
    #[error("the model failed before it answered: {0}")]
    Model(String),
    /// The run paused on calls that wait for a decision: decide them in the state and resume
    /// it typed ([`Agent::resume_output`], [`agent_loop_resume_output`]), here or in another
    /// process.
    #[error("the run paused on calls that wait for a decision")]
    Paused(Box<RunState>),
    /// The run ended without an answer: a hook ended it, or a batch's results asked to stop.
    #[error("the run ended without an answer")]
    NoAnswer,
    /// The output tool could not be offered: its name is taken by another tool or is not a
    /// valid tool name.
    #[error("the output tool cannot be offered: {0}")]
    OutputTool(String),
    /// The resume was refused (see [`agent_loop_resume`](crate::agent_loop_resume)); it
    /// comes back unchanged.
    #[error(transparent)]
    Resume(Box<ResumeRefused>),
    /// The agent could not start the run (one is running already).
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// Where a run stands with its answer, shared by its hooks and its output tool.
struct Progress<T> {
    answer: Option<Result<T, OutputError>>,
    /// The value the output tool accepted this turn.
    from_tool: Option<T>,
    /// The message that sends an invalid answer back, for the next steering poll.
    retry: Option<Message>,
    refused: u32,
}

/// One typed run's answer: its schema, its validator (compiled at most once per run), its
/// mode and its progress.
struct Expected<T> {
    format: Arc<OutputFormat>,
    spec: ToolSpec,
    validator: OnceLock<ArgumentValidator>,
    wrapped: bool,
    mode: OutputMode,
    max_retries: u32,
    progress: Mutex<Progress<T>>,
}

impl<T> Expected<T>
where
    T: JsonSchema + DeserializeOwned + Send + 'static,
{
    fn new(options: &OutputOptions, model: &dyn Model) -> Self {
        let schema = pi_tool::schema_for::<T>();
        let wrapped = schema.get("type").and_then(Value::as_str) != Some("object");
        let schema = if wrapped {
            json!({"type": "object", "properties": {WRAPPED: schema}, "required": [WRAPPED], "additionalProperties": false})
        } else {
            schema
        };
        let mode = match options.mode {
            OutputMode::Auto if model.structured_output() => OutputMode::Native,
            OutputMode::Auto => OutputMode::Tool,
            chosen => chosen,
        };
        Expected {
            // The type's name tells the model what the schema is for.
            format: Arc::new(OutputFormat::new(T::schema_name(), schema.clone())),
            spec: ToolSpec {
                name: options.tool_name.clone(),
                description: options.tool_description.clone(),
                parameters: schema,
            },
            validator: OnceLock::new(),
            wrapped,
            mode,
            max_retries: options.max_retries,
            progress: Mutex::new(Progress {
                answer: None,
                from_tool: None,
                retry: None,
                refused: 0,
            }),
        }
    }

    fn progress(&self) -> MutexGuard<'_, Progress<T>> {
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Checks an answer given as text (the final message, in native mode): JSON matching the
    /// schema, deserialized into `T`; else the message that tells the model why not.
    fn judge_text(&self, text: &str) -> Result<T, String> {
        let validator = self
            .validator
            .get_or_init(|| ArgumentValidator::new(&self.spec));
        let json = without_fence(text);
        let value = validator
            .validate(Value::String(json.to_owned()))
            .map_err(|error| schema_message(&error.to_string()))?;
        self.value_of(value)
    }

    /// `T` from arguments the validator accepted.
    fn value_of(&self, mut value: Value) -> Result<T, String> {
        if self.wrapped {
            value = value
                .get_mut(WRAPPED)
                .map(Value::take)
                .unwrap_or(Value::Null);
        }
        serde_json::from_value(value)
            .map_err(|error| format!("The answer does not fit the output type: {error}"))
    }

    /// `finish_turn`'s part: ends the run with a valid answer, sends an invalid one back, or
    /// gives up after the retries.
    fn finish_turn(&self, turn: &TurnEndContext) -> Option<FinishTurn> {
        let assistant = turn.message.as_assistant()?;
        let mut progress = self.progress();
        if let Some(value) = progress.from_tool.take() {
            progress.answer = Some(Ok(value));
            return Some(FinishTurn::End);
        }
        let tool_name = &self.spec.name;
        let refused_call = turn.tool_results.iter().find_map(|result| {
            let result = result.as_tool_result()?;
            (result.is_error && &result.tool_name == tool_name).then_some(result)
        });
        if let Some(result) = refused_call {
            // The pipeline sent the validation message back as the call's result already.
            let raw = assistant
                .tool_calls()
                .find(|block| block.call.id == result.tool_call_id)
                .map(|block| block.call.arguments.to_string())
                .unwrap_or_default();
            return self.refuse(&mut progress, raw, result.text(), false);
        }
        if assistant.tool_calls().next().is_some() || assistant.stop_reason == StopReason::ToolUse {
            return None;
        }
        let text = assistant.text();
        match (self.judge_text(&text), self.mode) {
            (Ok(value), _) => {
                progress.answer = Some(Ok(value));
                Some(FinishTurn::End)
            }
            (Err(message), OutputMode::Tool) => {
                let message = format!(
                    "Give your final answer by calling the tool `{tool_name}`, not as text. \
                     ({message})"
                );
                self.refuse(&mut progress, text, message, true)
            }
            (Err(message), _) => {
                let message = format!("{message}\n\nAnswer again with the corrected JSON only.");
                self.refuse(&mut progress, text, message, true)
            }
        }
    }

    /// Counts a refused answer: the run ends with [`OutputError::Invalid`] past the retries;
    /// else (`send` for a text answer) the message goes to the model before its next request.
    fn refuse(
        &self,
        progress: &mut Progress<T>,
        raw: String,
        message: String,
        send: bool,
    ) -> Option<FinishTurn> {
        progress.refused += 1;
        if progress.refused > self.max_retries {
            progress.answer = Some(Err(OutputError::Invalid {
                raw,
                message,
                attempts: progress.refused,
            }));
            return Some(FinishTurn::End);
        }
        if send {
            progress.retry = Some(Message::user(message));
            return Some(FinishTurn::Continue);
        }
        None
    }

    /// The output tool: validated by the pipeline (its validator compiled when the tool is
    /// built, once per run); a call whose arguments deserialize ends the run.
    fn output_tool(self: &Arc<Self>) -> Result<Arc<dyn AgentTool>, OutputError> {
        let expected = Arc::clone(self);
        let tool = FnTool::builder(
            self.spec.name.clone(),
            self.spec.description.clone(),
            self.spec.parameters.clone(),
        )
        .sequential()
        .build(move |args: Value, _ctx: ToolContext| {
            let outcome = expected.value_of(args);
            let accepted = match outcome {
                Ok(value) => {
                    expected.progress().from_tool = Some(value);
                    Ok(ToolResult::text("Answer received.").with_terminate(true))
                }
                Err(message) => Err(message),
            };
            async move { accepted }
        })
        .map_err(|error| OutputError::OutputTool(error.to_string()))?;
        Ok(Arc::new(tool))
    }

    /// Sets a run up to produce the answer: the format or the output tool, and the hooks
    /// that judge each final turn and send refused answers back.
    fn install(
        self: &Arc<Self>,
        context: &mut AgentContext,
        config: &mut AgentLoopConfig,
    ) -> Result<(), OutputError> {
        let mut kept = Kept::default();
        match self.mode {
            OutputMode::Tool => {
                if context
                    .tools
                    .iter()
                    .any(|t| t.spec().name == self.spec.name)
                {
                    return Err(OutputError::OutputTool(format!(
                        "a tool named `{}` is offered already; name the output tool with \
                         OutputOptions::tool_name",
                        self.spec.name
                    )));
                }
                let tool = self.output_tool()?;
                context.tools.push(Arc::clone(&tool));
                kept.tool = Some(tool);
            }
            _ => {
                config.stream_options.output = Some(Arc::clone(&self.format));
                kept.format = Some(Arc::clone(&self.format));
            }
        }
        // Hooks that replace the request options or the tools for the rest of the run (an
        // `Agent`'s `set_tools` during a run among them) keep the format and the tool.
        if let Some(hook) = config.prepare_next_turn.take() {
            config.prepare_next_turn = Some(kept.clone().around(hook));
        }
        if let Some(hook) = config.prepare_request.take() {
            config.prepare_request = Some(kept.around(hook));
        }
        // The configured hook decides first; the answer is judged only when it leaves the
        // turn to the loop.
        let configured = config.finish_turn.take();
        let expected = Arc::clone(self);
        config.finish_turn = Some(Arc::new(move |turn| {
            let configured = configured.clone();
            let expected = Arc::clone(&expected);
            Box::pin(async move {
                if let Some(hook) = configured
                    && let Some(decision) = hook(turn.clone()).await
                {
                    return Some(decision);
                }
                expected.finish_turn(&turn)
            })
        }));
        // A refused text answer goes back before the configured steering messages.
        let steering = config.get_steering_messages.take();
        let expected = Arc::clone(self);
        config.get_steering_messages = Some(Arc::new(move || {
            let retry = expected.progress().retry.take();
            let steering = steering.clone();
            Box::pin(async move {
                let mut messages: Vec<Message> = retry.into_iter().collect();
                if let Some(source) = steering {
                    messages.extend(source().await);
                }
                messages
            })
        }));
        Ok(())
    }

    /// The run's result, once it ended: its answer, else why there is none (the last failed
    /// response's error, or the state it paused in).
    fn conclude(
        &self,
        failure: Option<String>,
        paused: Option<RunState>,
    ) -> Result<T, OutputError> {
        if let Some(answer) = self.progress().answer.take() {
            return answer;
        }
        if let Some(state) = paused {
            return Err(OutputError::Paused(Box::new(state)));
        }
        match failure {
            Some(error) => Err(OutputError::Model(error)),
            None => Err(OutputError::NoAnswer),
        }
    }
}

/// What a typed run adds to every request, put back into the updates of the hooks that
/// replace the request options or the tools.
#[derive(Clone, Default)]
struct Kept {
    format: Option<Arc<OutputFormat>>,
    tool: Option<Arc<dyn AgentTool>>,
}

impl Kept {
    /// `hook`, with the format and the output tool kept in the updates it returns.
    fn around<C: Send + 'static>(self, hook: UpdateHook<C>) -> UpdateHook<C> {
        Arc::new(move |turn| {
            let update = hook(turn);
            let kept = self.clone();
            Box::pin(async move { update.await.map(|update| kept.keep(update)) })
        })
    }

    fn keep(&self, mut update: TurnUpdate) -> TurnUpdate {
        if let (Some(options), Some(format)) = (&mut update.stream_options, &self.format) {
            options.output = Some(Arc::clone(format));
        }
        if let (Some(tools), Some(tool)) = (&mut update.tools, &self.tool)
            && !tools.iter().any(|t| t.spec().name == tool.spec().name)
        {
            tools.push(Arc::clone(tool));
        }
        update
    }
}

/// `prepare_next_turn` and `prepare_request`: a hook whose update may replace parts of the run.
type UpdateHook<C> = Arc<dyn Fn(C) -> BoxFuture<'static, Option<TurnUpdate>> + Send + Sync>;

/// The answer inside a Markdown code fence, which models add even when asked for JSON.
fn without_fence(text: &str) -> &str {
    let text = text.trim();
    let Some(inner) = text.strip_prefix("```") else {
        return text;
    };
    let Some(inner) = inner.strip_suffix("```") else {
        return text;
    };
    // The fence's language tag (`json`) ends at the first line break.
    match inner.split_once('\n') {
        Some((tag, body)) if !tag.trim().contains(['{', '[']) => body.trim(),
        _ => inner.trim(),
    }
}

/// The validator's report with its first line (which names a tool) said of the answer.
fn schema_message(report: &str) -> String {
    let problems = report.split_once('\n').map_or(report, |(_, rest)| rest);
    format!("Your answer does not match the output schema:\n{problems}")
}

/// The error message of the run's last failed response, if it ended with one.
fn failure_of(messages: &[Arc<Message>]) -> Option<String> {
    let last = messages.iter().rev().find_map(|m| m.as_assistant())?;
    matches!(last.stop_reason, StopReason::Error | StopReason::Aborted).then(|| {
        last.error_message
            .clone()
            .unwrap_or_else(|| format!("the response ended with {:?}", last.stop_reason))
    })
}

/// A typed run started with [`agent_loop_output`]: its events, then its value.
pub struct OutputStream<T> {
    stream: AgentStream,
    expected: Arc<Expected<T>>,
}

impl<T> OutputStream<T>
where
    T: JsonSchema + DeserializeOwned + Send + 'static,
{
    /// The next event of the run (as [`AgentStream::next_event`]).
    pub async fn next_event(&mut self) -> Option<AgentEvent> {
        self.stream.next_event().await
    }

    /// Runs to the end; returns the messages the run added and its value.
    pub async fn outcome(mut self) -> (Vec<Arc<Message>>, Result<T, OutputError>) {
        let mut messages = Vec::new();
        while let Some(event) = self.stream.next_event().await {
            if let AgentEvent::AgentEnd { messages: added } = event {
                messages = added;
            }
        }
        let paused = self.stream.take_paused();
        let value = self.expected.conclude(failure_of(&messages), paused);
        (messages, value)
    }

    /// Runs to the end and returns its value.
    pub async fn output(self) -> Result<T, OutputError> {
        self.outcome().await.1
    }
}

impl<T> std::fmt::Debug for OutputStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputStream")
            .field("output", &self.expected.spec.name)
            .field("mode", &self.expected.mode)
            .finish_non_exhaustive()
    }
}

/// [`agent_loop`] for a typed answer: the run may call every tool of `context` and ends with a
/// `T` (see [`OutputOptions`] for how it is asked for and checked).
///
/// # Errors
///
/// [`OutputError::OutputTool`] when the output tool is needed and its name is taken.
///
/// ```
/// use std::sync::Arc;
/// use pi_runtime::{agent_loop_output, AgentContext, AgentLoopConfig, AssistantContent,
///                  AssistantMessage, Message, OutputOptions, ScriptedModel, StopReason};
/// use pi_tool::CancellationToken;
///
/// #[derive(serde::Deserialize, pi_tool::schemars::JsonSchema)]
/// #[schemars(crate = "pi_tool::schemars")]
/// struct Sum { total: i64 }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// // A scripted model has no structured output: the answer comes through the output tool.
/// let model = Arc::new(ScriptedModel::new([AssistantMessage::new(
///     vec![AssistantContent::tool_call("c1", "final_result", serde_json::json!({"total": 5}))],
///     StopReason::ToolUse,
/// )]));
/// let run = agent_loop_output::<Sum>(vec![Message::user("2+3?")], AgentContext::new("Add."),
///     AgentLoopConfig::new(), model, CancellationToken::new(), OutputOptions::new()).unwrap();
/// assert_eq!(run.output().await.unwrap().total, 5);
/// # });
/// ```
pub fn agent_loop_output<T>(
    prompts: Vec<Message>,
    mut context: AgentContext,
    mut config: AgentLoopConfig,
    model: Arc<dyn Model>,
    signal: CancellationToken,
    options: OutputOptions,
) -> Result<OutputStream<T>, OutputError>
where
    T: JsonSchema + DeserializeOwned + Send + 'static,
{
    let expected = Arc::new(Expected::<T>::new(&options, model.as_ref()));
    expected.install(&mut context, &mut config)?;
    let stream = agent_loop(prompts, context, config, model, signal);
    Ok(OutputStream { stream, expected })
}

/// [`agent_loop_resume`](crate::agent_loop_resume) for a typed answer: a typed run that paused
/// on calls that wait ([`OutputError::Paused`]) goes on, once they are decided, and ends with
/// its `T` (the refused answers are counted again from zero).
///
/// # Errors
///
/// [`OutputError::Resume`] when the resume is refused (it comes back unchanged);
/// [`OutputError::OutputTool`] when the output tool's name is taken (the resume is dropped
/// unchanged: nothing ran).
pub fn agent_loop_resume_output<T>(
    resume: Resume,
    mut context: AgentContext,
    mut config: AgentLoopConfig,
    model: Arc<dyn Model>,
    signal: CancellationToken,
    options: OutputOptions,
) -> Result<OutputStream<T>, OutputError>
where
    T: JsonSchema + DeserializeOwned + Send + 'static,
{
    let expected = Arc::new(Expected::<T>::new(&options, model.as_ref()));
    expected.install(&mut context, &mut config)?;
    let stream = agent_loop_resume(resume, context, config, model, signal)
        .map_err(|refused| OutputError::Resume(Box::new(refused)))?;
    Ok(OutputStream { stream, expected })
}

impl Agent {
    /// [`prompt`](Self::prompt) for a typed answer: the run may call every tool and ends with
    /// a `T`, asked for with the API's own structured output where the model has it with
    /// tools, else with an output tool, and checked by our validator; an invalid answer is
    /// sent back with the validation message up to twice (see [`OutputOptions`]).
    ///
    /// # Errors
    ///
    /// [`OutputError`]: every answer invalid, the model failed, the run paused on a call that
    /// waits, or the agent is running already.
    pub async fn prompt_output<T>(&self, prompt: impl Into<Prompt>) -> Result<T, OutputError>
    where
        T: JsonSchema + DeserializeOwned + Send + 'static,
    {
        self.prompt_output_with(prompt, OutputOptions::new()).await
    }

    /// [`prompt_output`](Self::prompt_output) with options (mode, retries, the output tool's
    /// name).
    ///
    /// # Errors
    ///
    /// As [`prompt_output`](Self::prompt_output).
    pub async fn prompt_output_with<T>(
        &self,
        prompt: impl Into<Prompt>,
        options: OutputOptions,
    ) -> Result<T, OutputError>
    where
        T: JsonSchema + DeserializeOwned + Send + 'static,
    {
        let mut expected = None;
        self.prompt_adjusted(prompt.into(), |context, config, model| {
            let answer = Arc::new(Expected::<T>::new(&options, model));
            answer.install(context, config)?;
            expected = Some(answer);
            Ok::<(), OutputError>(())
        })
        .await??;
        let Some(expected) = expected else {
            return Err(OutputError::NoAnswer);
        };
        expected.conclude(self.error(), self.take_paused())
    }

    /// [`resume`](Self::resume) for a typed answer: a typed run that paused on calls that wait
    /// ([`OutputError::Paused`] holds its state) goes on once they are decided, and ends with
    /// its `T`.
    ///
    /// # Errors
    ///
    /// As [`prompt_output`](Self::prompt_output); a refused resume comes back in
    /// [`OutputError::Resume`].
    pub async fn resume_output<T>(&self, resume: Resume) -> Result<T, OutputError>
    where
        T: JsonSchema + DeserializeOwned + Send + 'static,
    {
        self.resume_output_with(resume, OutputOptions::new()).await
    }

    /// [`resume_output`](Self::resume_output) with options (give the ones the run was started
    /// with).
    ///
    /// # Errors
    ///
    /// As [`resume_output`](Self::resume_output).
    pub async fn resume_output_with<T>(
        &self,
        resume: Resume,
        options: OutputOptions,
    ) -> Result<T, OutputError>
    where
        T: JsonSchema + DeserializeOwned + Send + 'static,
    {
        let mut expected = None;
        self.resume_adjusted(resume, |context, config, model| {
            let answer = Arc::new(Expected::<T>::new(&options, model));
            answer.install(context, config)?;
            expected = Some(answer);
            Ok::<(), OutputError>(())
        })
        .await
        .map_err(|refused| OutputError::Resume(Box::new(refused)))??;
        let Some(expected) = expected else {
            return Err(OutputError::NoAnswer);
        };
        expected.conclude(self.error(), self.take_paused())
    }
}
