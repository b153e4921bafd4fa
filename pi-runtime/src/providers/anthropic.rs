//! Anthropic Messages (`/v1/messages`): object-root `input_schema`, tool results merged into one
//! user message with `is_error`, thinking blocks replayed with their signatures.

use std::collections::HashMap;

use pi_tool::{Content, ToolSpec, Usage};
use serde_json::{Map, Value, json};

use super::assemble::Assembler;
use super::decode::{WireDecoder, error_message, parse_json};
use super::lowering::SchemaMode;
use super::option_conflicts::OptionConflict;
use super::settings::{Settings, settings_builder};
use super::sse::SseEvent;
use super::transform::{IdRule, transform};
use super::{arguments_object, text_of};
use crate::message::{AssistantContent, Message, StopReason};
use crate::model::{Context, StreamOptions, ThinkingLevel, ToolChoice};

const ANTHROPIC_URL: &str = "https://api.anthropic.com/v1";
#[cfg(feature = "http")]
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`; this is used when neither the options nor the builder set it.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A model behind the Anthropic Messages API.
///
/// ```
/// use pi_runtime::providers::AnthropicMessages;
///
/// let model = AnthropicMessages::new("claude-sonnet-4-5").max_tokens(4096);
/// # let _ = model;
/// ```
#[derive(Clone, Debug)]
pub struct AnthropicMessages {
    pub(crate) settings: Settings,
    prompt_caching: bool,
    strict: bool,
    #[cfg(feature = "http")]
    client: super::http::LazyClient,
}

settings_builder!(AnthropicMessages);

impl AnthropicMessages {
    /// The wire API name.
    pub const API: &'static str = "anthropic-messages";

    /// A model of Anthropic's (`https://api.anthropic.com/v1`, key from `ANTHROPIC_API_KEY`).
    pub fn new(model: impl Into<String>) -> Self {
        AnthropicMessages {
            settings: Settings::new(
                &model.into(),
                "anthropic",
                ANTHROPIC_URL,
                &["ANTHROPIC_API_KEY"],
            ),
            prompt_caching: true,
            strict: false,
            #[cfg(feature = "http")]
            client: Default::default(),
        }
    }

    /// Whether the system prompt and the last user message are marked for prompt caching
    /// (`cache_control: ephemeral`, as pi does; default true). Cached input costs a tenth.
    pub fn prompt_caching(mut self, enabled: bool) -> Self {
        self.prompt_caching = enabled;
        self
    }

    /// Whether tools whose schema qualifies for strict mode (the rules of OpenAI's, which
    /// [`CompatibilityReport`](super::CompatibilityReport) reports) are sent with
    /// `strict: true` and that schema, so the model's arguments always match it (Anthropic's
    /// structured outputs; default false: a tool that does not qualify is sent as before).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The JSON body this model would send for a context: for tests and debugging.
    pub fn request_body(&self, context: Context<'_>, options: &StreamOptions) -> Value {
        let target = self.settings.target(Self::API, IdRule::Sanitize64);
        let mut messages: Vec<Value> = Vec::new();
        // Consecutive tool results go into one user message.
        let mut results: Vec<Value> = Vec::new();
        let transcript = transform(context.messages, target);
        for message in &transcript {
            if !matches!(message, Message::ToolResult(_)) && !results.is_empty() {
                messages.push(json!({"role": "user", "content": std::mem::take(&mut results)}));
            }
            match message {
                Message::User(user) => {
                    let blocks = content_blocks(&user.content);
                    if !blocks.is_empty() {
                        messages.push(json!({"role": "user", "content": blocks}));
                    }
                }
                Message::Assistant(assistant) => {
                    let blocks: Vec<Value> = assistant
                        .content
                        .iter()
                        .filter_map(assistant_block)
                        .collect();
                    if !blocks.is_empty() {
                        messages.push(json!({"role": "assistant", "content": blocks}));
                    }
                }
                Message::ToolResult(result) => {
                    let has_images = result
                        .content
                        .iter()
                        .any(|c| matches!(c, Content::Image { .. }));
                    let content = if has_images {
                        let mut blocks = content_blocks(&result.content);
                        if text_of(&result.content).is_empty() {
                            blocks
                                .insert(0, json!({"type": "text", "text": "(see attached image)"}));
                        }
                        Value::Array(blocks)
                    } else {
                        json!(text_of(&result.content))
                    };
                    results.push(
                        json!({"type": "tool_result", "tool_use_id": result.tool_call_id,
                        "content": content, "is_error": result.is_error}),
                    );
                }
                Message::Custom(_) => {}
            }
        }
        if !results.is_empty() {
            messages.push(json!({"role": "user", "content": results}));
        }
        if self.prompt_caching {
            mark_last_user_block(&mut messages);
        }
        let mut max_tokens = options
            .max_tokens
            .or(self.settings.max_tokens)
            .unwrap_or(DEFAULT_MAX_TOKENS);
        // Thinking with a forced tool choice is refused by the API: the forced choice wins
        // (it is what the caller's flow depends on; thinking only improves the answer).
        let conflicts = OptionConflict::of_model(
            Self::API,
            &self.settings.model,
            options,
            !context.tools.is_empty(),
        );
        let budget = options
            .thinking
            .and_then(thinking_budget)
            .filter(|_| !conflicts.contains(&OptionConflict::AnthropicThinkingWithForcedTool));
        for conflict in &conflicts {
            tracing::debug!(%conflict, "request options adjusted");
        }
        if let Some(budget) = budget {
            max_tokens = max_tokens.saturating_add(budget);
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(self.settings.model));
        body.insert("max_tokens".into(), json!(max_tokens));
        body.insert("stream".into(), json!(true));
        if !context.system_prompt.is_empty() {
            let mut system = json!({"type": "text", "text": context.system_prompt});
            if self.prompt_caching {
                system["cache_control"] = json!({"type": "ephemeral"});
            }
            body.insert("system".into(), json!([system]));
        }
        // Replayed search blocks of another mode refer only to tools the request defines.
        let mut tools = anthropic_tools(context.tools, options, self.tool_rules());
        super::native_search::define_anthropic_references(
            &mut messages,
            &mut tools,
            &[SEARCH_BM25, SEARCH_REGEX],
        );
        body.insert("messages".into(), Value::Array(messages));
        if let Some(budget) = budget {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        // Not with thinking, nor to a model that no longer takes sampling parameters.
        let temperature_dropped = conflicts.iter().any(|c| {
            matches!(
                c,
                OptionConflict::AnthropicTemperatureWithThinking
                    | OptionConflict::AnthropicSamplingNotTakenByModel
            )
        });
        if !temperature_dropped
            && let Some(temperature) = options.temperature.and_then(super::decimal)
        {
            body.insert("temperature".into(), temperature);
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if !context.tools.is_empty()
            && let Some(choice) = &options.tool_choice
        {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
        if let Some(output) = &options.output {
            body.insert("output_config".into(), output.anthropic_output_config());
        }
        if let Some(container) = container_of(&transcript) {
            body.insert("container".into(), json!(container));
        }
        Value::Object(body)
    }

    fn tool_rules(&self) -> ToolRules {
        ToolRules {
            caching: self.prompt_caching,
            strict: self.strict,
        }
    }

    pub(crate) fn wire_decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(AnthropicDecoder::default())
    }
}

/// The key of the code-execution container in [`AssistantMessage::provider_fields`].
const CONTAINER: &str = "container";

/// The container the latest answer that ran code ran it in, which the next request names so
/// that the code goes on there: a program paused on tool calls continues only in it (the API
/// refuses the results without it), and a later turn finds the earlier programs' state and
/// files (a final answer reports no container, and the conversation stays in the one it ran
/// in, as the Anthropic SDK's threads keep it).
fn container_of(transcript: &[Message]) -> Option<&str> {
    transcript
        .iter()
        .rev()
        .filter_map(Message::as_assistant)
        .find_map(|answer| answer.provider_fields.get(CONTAINER)?.get("id")?.as_str())
}

/// Puts a cache breakpoint on the last block of the last user message, so the next request
/// reads the whole conversation so far from the cache.
fn mark_last_user_block(messages: &mut [Value]) {
    let last_user = messages.iter_mut().rev().find(|m| m["role"] == "user");
    if let Some(Value::Array(blocks)) = last_user.and_then(|m| m.get_mut("content"))
        && let Some(Value::Object(block)) = blocks.last_mut()
    {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

/// Anthropic's search tools (type, name), BM25 and regex.
const SEARCH_BM25: (&str, &str) = ("tool_search_tool_bm25_20251119", "tool_search_tool_bm25");
const SEARCH_REGEX: (&str, &str) = ("tool_search_tool_regex_20251119", "tool_search_tool_regex");
/// The code-execution tool (type, name) whose programs call the tools that allow it
/// (`allowed_callers`), the version with programmatic tool calling.
const CODE_EXECUTION: &str = "code_execution_20260120";
const CODE_EXECUTION_NAME: &str = "code_execution";
/// The beta that tool search, `defer_loading` and `input_examples` are served under.
#[cfg(feature = "http")]
const TOOL_SEARCH_BETA: &str = "advanced-tool-use-2025-11-20";
/// The beta of strict tools.
#[cfg(feature = "http")]
const STRUCTURED_OUTPUTS_BETA: &str = "structured-outputs-2025-11-13";
/// The beta of `eager_input_streaming`.
#[cfg(feature = "http")]
const FINE_GRAINED_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";

/// The request's tools: the sent ones in order, then (with the native search and some deferred
/// tool) the search tool and the deferred tools with `defer_loading: true`. With prompt caching
/// the last tool that is not deferred carries the cache breakpoint (a deferred tool must not:
/// the API refuses it).
fn anthropic_tools(specs: &[ToolSpec], options: &StreamOptions, rules: ToolRules) -> Vec<Value> {
    let (sent, deferred) = crate::request_tools::split_for_native_search(specs, options);
    let mut tools: Vec<Value> = sent
        .into_iter()
        .map(|spec| anthropic_tool(spec, options, rules))
        .collect();
    // Programmatic tool calling: the API's code runner (and who may call each tool, below).
    if crate::request_tools::offers_code_runner(specs, options) {
        tools.insert(
            0,
            json!({"type": CODE_EXECUTION, "name": CODE_EXECUTION_NAME}),
        );
    }
    if rules.caching
        && let Some(Value::Object(last)) = tools.last_mut()
    {
        last.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
    if !deferred.is_empty() {
        let (kind, name) = match options.tool_search {
            crate::ToolSearchMode::NativeRegex => SEARCH_REGEX,
            _ => SEARCH_BM25,
        };
        tools.push(json!({"type": kind, "name": name}));
        for spec in deferred {
            let mut tool = anthropic_tool(spec, options, rules);
            tool["defer_loading"] = json!(true);
            tools.push(tool);
        }
    }
    tools
}

/// What of a model's settings shapes its tools.
#[derive(Clone, Copy, Debug)]
struct ToolRules {
    caching: bool,
    strict: bool,
}

/// A tool for Anthropic: the schema with an object root (lowered once per tool, see
/// [`RequestTools`](crate::RequestTools)), strict where asked and the schema qualifies, with
/// the tool's examples and streaming choice.
fn anthropic_tool(spec: &ToolSpec, options: &StreamOptions, rules: ToolRules) -> Value {
    let strict = rules
        .strict
        .then(|| options.tools.lowered(spec, SchemaMode::OpenAiStrict))
        .filter(|lowered| lowered.qualifies());
    let mut tool = match strict {
        Some(lowered) => json!({"name": spec.name, "description": spec.description,
            "input_schema": lowered.schema, "strict": true}),
        None => {
            let lowered = options.tools.lowered(spec, SchemaMode::Anthropic);
            json!({"name": spec.name, "description": spec.description, "input_schema": lowered.schema})
        }
    };
    let examples = options.tools.examples(&spec.name);
    if !examples.is_empty() {
        tool["input_examples"] = json!(examples);
    }
    if options.tools.eager_input_streaming(&spec.name) {
        tool["eager_input_streaming"] = json!(true);
    }
    if let Some(allowed) =
        crate::request_tools::allowed_callers(&spec.name, options, CODE_EXECUTION)
    {
        tool["allowed_callers"] = allowed;
    }
    tool
}

/// The betas a body's tools need (`anthropic-beta`, comma-separated): tool search and
/// examples, strict tools, unbuffered argument streaming.
#[cfg(feature = "http")]
pub(crate) fn betas(body: &Value) -> Vec<&'static str> {
    let tools = body["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let any = |test: &dyn Fn(&Value) -> bool| tools.iter().any(test);
    let mut betas = Vec::new();
    if any(&|t| {
        t.get("input_examples").is_some()
            || [SEARCH_BM25.0, SEARCH_REGEX.0].contains(&t["type"].as_str().unwrap_or_default())
    }) {
        betas.push(TOOL_SEARCH_BETA);
    }
    if any(&|t| t.get("strict").is_some()) {
        betas.push(STRUCTURED_OUTPUTS_BETA);
    }
    if any(&|t| t.get("eager_input_streaming").is_some()) {
        betas.push(FINE_GRAINED_STREAMING_BETA);
    }
    betas
}

fn thinking_budget(level: ThinkingLevel) -> Option<u32> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some(1024),
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        // pi's `clampReasoning`: budgets stop at `high`.
        ThinkingLevel::High | ThinkingLevel::XHigh => Some(16384),
    }
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        // Anthropic cannot narrow the choice without changing `tools`.
        ToolChoice::AllowedTools {
            required: false, ..
        } => json!({"type": "auto"}),
        ToolChoice::AllowedTools { required: true, .. } => json!({"type": "any"}),
    }
}

/// Text and image blocks; empty texts are left out (the API rejects them).
fn content_blocks(content: &[Content]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } if text.is_empty() => None,
            Content::Text { text } => Some(json!({"type": "text", "text": text})),
            Content::Image { data, mime_type } => {
                Some(json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}}))
            }
        })
        .collect()
}

fn assistant_block(block: &AssistantContent) -> Option<Value> {
    match block {
        AssistantContent::Text { text, .. } if text.trim().is_empty() => None,
        AssistantContent::Text { text, .. } => Some(json!({"type": "text", "text": text})),
        AssistantContent::Thinking {
            thinking,
            thinking_signature,
            redacted,
        } => match (thinking_signature, redacted) {
            (Some(data), true) => Some(json!({"type": "redacted_thinking", "data": data})),
            (Some(signature), false) => {
                Some(json!({"type": "thinking", "thinking": thinking, "signature": signature}))
            }
            // Thinking without a signature cannot be replayed as thinking.
            (None, _) if thinking.trim().is_empty() => None,
            (None, _) => Some(json!({"type": "text", "text": thinking})),
        },
        AssistantContent::ToolCall(call) => {
            let mut block = json!({"type": "tool_use", "id": call.call.id,
                "name": call.call.name, "input": arguments_object(&call.call.arguments)});
            // `caller` (who made the call) goes back as it came.
            if let Value::Object(map) = &mut block {
                for (key, value) in &call.provider_fields {
                    map.entry(key.clone()).or_insert_with(|| value.clone());
                }
            }
            Some(block)
        }
        AssistantContent::Provider(block) if block.api == AnthropicMessages::API => {
            Some(block.block.clone())
        }
        AssistantContent::Provider(_) => None,
    }
}

/// Decodes Messages stream events.
#[derive(Debug, Default)]
struct AnthropicDecoder {
    /// Anthropic's block index to content index.
    blocks: HashMap<u64, usize>,
    stop_reason: Option<String>,
    /// Why the model stopped, when it says (`stop_details.explanation` of a refusal).
    stop_explanation: Option<String>,
    /// The input JSON streamed so far of each open `server_tool_use` block, by content index.
    server_inputs: HashMap<usize, String>,
}

/// Whether a content block is one of the API's own (a server tool's call or result), kept and
/// replayed whole.
fn is_server_block(kind: &str) -> bool {
    kind == "server_tool_use" || kind.ends_with("_tool_result")
}

/// Keeps the code-execution container a response ran in (in `message_start`'s message or
/// `message_delta`'s delta), for the next request (see [`container_of`]).
fn keep_container(holder: &Value, out: &mut Assembler) {
    if let Some(container) = holder.get("container").filter(|c| c.is_object()) {
        out.set_message_field(CONTAINER, container.clone());
    }
}

/// A block's fields besides the ones the call itself is made of (`caller`, ...).
fn extra_fields(block: &Value, known: &[&str]) -> Map<String, Value> {
    block
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| !known.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

impl AnthropicDecoder {
    /// Puts the streamed input of a `server_tool_use` block into it (left as announced when
    /// nothing, or no valid JSON, streamed).
    fn finish_server_input(&mut self, index: usize, out: &mut Assembler) {
        let Some(input) = self.server_inputs.remove(&index) else {
            return;
        };
        if input.trim().is_empty() {
            return;
        }
        match serde_json::from_str::<Value>(&input) {
            Ok(parsed) => {
                if let Some(Value::Object(block)) = out.provider_block_mut(index) {
                    block.insert("input".into(), parsed);
                }
            }
            Err(error) => {
                tracing::debug!(%error, "a server tool's input is not JSON; kept as announced")
            }
        }
    }

    /// Opens the content index for a block as it starts (a `content_block_start`'s block, or
    /// one of a `message_start`'s complete blocks); `None` for a kind we do not keep.
    fn start_block(&mut self, content: &Value, out: &mut Assembler) -> Option<usize> {
        let text = |field: &str| {
            content
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        out.close_prose();
        let index = match content.get("type").and_then(Value::as_str) {
            Some("text") => {
                let index = out.text_start();
                out.text_delta(index, text("text"));
                index
            }
            Some("thinking") => {
                let index = out.thinking_start();
                out.thinking_delta(index, text("thinking"));
                if !text("signature").is_empty() {
                    out.add_thinking_signature(index, text("signature"), false);
                }
                index
            }
            Some("redacted_thinking") => {
                let index = out.thinking_start();
                out.add_thinking_signature(index, text("data"), true);
                index
            }
            Some(kind) if is_server_block(kind) => {
                let index = out.provider_start(content.clone());
                if kind == "server_tool_use" {
                    self.server_inputs.insert(index, String::new());
                }
                index
            }
            Some("tool_use") => {
                let index = out.tool_start(text("id"), text("name"));
                out.set_provider_fields(
                    index,
                    extra_fields(content, &["type", "id", "name", "input"]),
                );
                if let Some(input) = content
                    .get("input")
                    .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                {
                    out.tool_seed(index, input.clone());
                }
                index
            }
            _ => return None,
        };
        Some(index)
    }
}

impl WireDecoder for AnthropicDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Assembler) {
        let Some(data) = parse_json(event, out) else {
            return;
        };
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        let block_index = data.get("index").and_then(Value::as_u64);
        let block = block_index.and_then(|i| self.blocks.get(&i).copied());
        match kind {
            "message_start" => {
                let Some(message) = data.get("message") else {
                    return;
                };
                if let Some(id) = message.get("id").and_then(Value::as_str) {
                    out.set_response_id(id);
                }
                if let Some(usage) = message.get("usage") {
                    update_usage(out.usage_mut(), usage);
                }
                keep_container(message, out);
                // A response that continues a program paused on a tool call can arrive whole
                // in its start: its blocks (complete) and its stop reason, then `message_stop`.
                for content in message
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(index) = self.start_block(content, out) {
                        self.finish_server_input(index, out);
                        out.end_block(index);
                    }
                }
                if let Some(reason) = message.get("stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
            }
            "content_block_start" => {
                let Some(content) = data.get("content_block") else {
                    return;
                };
                if let (Some(index), Some(block_index)) =
                    (self.start_block(content, out), block_index)
                {
                    self.blocks.insert(block_index, index);
                }
            }
            "content_block_delta" => {
                let (Some(index), Some(delta)) = (block, data.get("delta")) else {
                    return;
                };
                let text =
                    |field: &str| delta.get(field).and_then(Value::as_str).unwrap_or_default();
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => out.text_delta(index, text("text")),
                    Some("thinking_delta") => out.thinking_delta(index, text("thinking")),
                    Some("signature_delta") => {
                        out.add_thinking_signature(index, text("signature"), false)
                    }
                    Some("input_json_delta") => match self.server_inputs.get_mut(&index) {
                        Some(input) => input.push_str(text("partial_json")),
                        None => out.tool_delta(index, text("partial_json")),
                    },
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(index) = block {
                    self.finish_server_input(index, out);
                    out.end_block(index);
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(explanation) = data
                    .pointer("/delta/stop_details/explanation")
                    .and_then(Value::as_str)
                {
                    self.stop_explanation = Some(explanation.to_owned());
                }
                if let Some(usage) = data.get("usage") {
                    update_usage(out.usage_mut(), usage);
                }
                if let Some(delta) = data.get("delta") {
                    keep_container(delta, out);
                }
            }
            "message_stop" => match self.stop_reason.as_deref() {
                Some("tool_use") => out.done(StopReason::ToolUse),
                Some("end_turn" | "pause_turn" | "stop_sequence") | None => {
                    out.done(StopReason::Stop)
                }
                Some("max_tokens") => out.done(StopReason::Length),
                Some(other) => {
                    let mut message = format!("Provider stop_reason: {other}");
                    if let Some(explanation) = &self.stop_explanation {
                        message = format!("{message}: {explanation}");
                    }
                    out.fail(StopReason::Error, message)
                }
            },
            "error" => {
                let message = error_message(&data).unwrap_or_else(|| data.to_string());
                out.fail(StopReason::Error, message);
            }
            _ => {}
        }
    }

    fn end(&mut self, _out: &mut Assembler) {}
}

/// Anthropic reports input usage at the start and cumulative output usage in `message_delta`.
fn update_usage(usage: &mut Usage, reported: &Value) {
    let number = |field: &str| reported.get(field).and_then(Value::as_u64);
    if let Some(input) = number("input_tokens") {
        usage.input = input;
    }
    if let Some(output) = number("output_tokens") {
        usage.output = output;
    }
    if let Some(read) = number("cache_read_input_tokens") {
        usage.cache_read = read;
    }
    if let Some(write) = number("cache_creation_input_tokens") {
        usage.cache_write = write;
    }
    usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
}

#[cfg(feature = "http")]
impl crate::model::Model for AnthropicMessages {
    model_identity!();

    /// Claude Opus 4.1, Sonnet 4.5, Haiku 4.5 and later take `output_config.format`; the
    /// Claude 3 models and Sonnet and Opus 4.0 do not.
    fn structured_output(&self) -> bool {
        const OLDER: [&str; 5] = [
            "claude-3",
            "claude-sonnet-4-0",
            "claude-opus-4-0",
            "claude-sonnet-4-2025",
            "claude-opus-4-2025",
        ];
        !OLDER.iter().any(|old| self.settings.model.contains(old))
    }

    fn native_tool_search(&self) -> bool {
        true
    }

    fn native_code_calls(&self) -> bool {
        true
    }

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
        let body = self.request_body(context, options);
        let betas = betas(&body);
        let request = match self.settings.resolve_key(options.api_key.as_deref()) {
            Some(key) => {
                let mut headers = vec![
                    ("x-api-key".to_owned(), key),
                    ("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned()),
                ];
                if !betas.is_empty() {
                    headers.push(("anthropic-beta".to_owned(), betas.join(",")));
                }
                Ok(super::http::WireRequest {
                    url: format!("{}/messages", self.settings.base_url),
                    headers,
                    body,
                })
            }
            None => Err(super::missing_key_message(&self.settings)),
        };
        super::strict_fallback::stream(
            &self.settings.strict_tools,
            super::strict_fallback::Dialect::Anthropic,
            request,
            context.tools,
            options,
            move |request| {
                super::http::stream(
                    &self.client,
                    &self.settings,
                    request,
                    self.decoder(),
                    options,
                )
            },
        )
    }
}
