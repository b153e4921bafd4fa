//! OpenAI Chat Completions (`/chat/completions`), the API every OpenAI-compatible server speaks
//! (Ollama, vLLM, llama.cpp, OpenRouter, ...).

use std::borrow::Cow;
use std::collections::HashMap;

use pi_tool::{Content, ToolSpec, Usage};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::assemble::Assembler;
use super::decode::{WireDecoder, error_message, parse_json};
use super::lowering::{SchemaMode, lower_schema};
use super::root_union::object_root;
use super::settings::{Settings, settings_builder};
use super::sse::SseEvent;
use super::transform::{IdRule, transform};
use super::{arguments_text, image_data_url, text_of};
use crate::message::{AssistantContent, Message, StopReason};
use crate::model::{Context, StreamOptions, ThinkingLevel, ToolChoice};

/// The default endpoint.
pub(crate) const OPENAI_URL: &str = "https://api.openai.com/v1";

/// Differences between OpenAI and the servers that copy its API.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompletionsCompat {
    /// Send `strict` on tools, `true` where the schema qualifies. Default: on for OpenAI's own
    /// endpoint only, since many compatible servers (Ollama, vLLM, llama.cpp, LM Studio, ...)
    /// reject the field or ignore it while constraining nothing.
    pub strict: bool,
    /// Name the output limit `max_completion_tokens` (OpenAI) rather than `max_tokens` (most
    /// compatible servers). Default: true for the OpenAI endpoint only.
    pub max_completion_tokens: bool,
    /// Ask for usage in the stream (`stream_options.include_usage`, default true).
    pub stream_usage: bool,
    /// Send `reasoning_effort` when a thinking level is requested (default true).
    pub reasoning_effort: bool,
    /// Add the tool's `name` to tool-result messages (some servers require it; default false).
    pub tool_result_name: bool,
    /// Send `store: false`, so the provider keeps no copy of the exchange (pi's
    /// `supportsStore`). Default: true for the OpenAI endpoint only.
    pub store: bool,
    /// Send the system prompt with the `developer` role instead of `system`, as OpenAI's
    /// reasoning models expect (pi does so for a reasoning model when `supportsDeveloperRole`).
    /// Default false: the caller knows whether the model reasons.
    pub developer_role: bool,
}

impl Default for CompletionsCompat {
    fn default() -> Self {
        CompletionsCompat {
            strict: true,
            max_completion_tokens: true,
            stream_usage: true,
            reasoning_effort: true,
            tool_result_name: false,
            store: true,
            developer_role: false,
        }
    }
}

/// A model behind the OpenAI Chat Completions API.
///
/// ```
/// # #[cfg(feature = "http")] {
/// use pi_runtime::Model;
/// use pi_runtime::providers::OpenAiCompletions;
///
/// // OpenAI itself (key from OPENAI_API_KEY at request time)...
/// let gpt = OpenAiCompletions::new("gpt-4o-mini");
/// // ...or any compatible server; a local one needs no key.
/// let local = OpenAiCompletions::new("qwen2.5:7b").base_url("http://localhost:11434/v1").provider_name("ollama");
/// assert_eq!((gpt.api(), local.provider()), ("openai-completions", "ollama"));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiCompletions {
    pub(crate) settings: Settings,
    compat: Option<CompletionsCompat>,
    #[cfg(feature = "http")]
    client: super::http::LazyClient,
}

settings_builder!(OpenAiCompletions);

impl OpenAiCompletions {
    /// The wire API name.
    pub const API: &'static str = "openai-completions";

    /// A model of OpenAI's (`https://api.openai.com/v1`, key from `OPENAI_API_KEY`).
    pub fn new(model: impl Into<String>) -> Self {
        OpenAiCompletions {
            settings: Settings::new(&model.into(), "openai", OPENAI_URL, &["OPENAI_API_KEY"]),
            compat: None,
            #[cfg(feature = "http")]
            client: Default::default(),
        }
    }

    /// Sets the compatibility flags (by default they follow the base URL). Start from the
    /// flags in force:
    ///
    /// ```
    /// use pi_runtime::providers::OpenAiCompletions;
    ///
    /// let model = OpenAiCompletions::new("mistral-7b").base_url("http://localhost:8000/v1");
    /// let mut compat = model.compat_flags();
    /// compat.strict = false; // this server rejects `strict`
    /// compat.tool_result_name = true;
    /// let model = model.compat(compat);
    /// # let _ = model;
    /// ```
    pub fn compat(mut self, compat: CompletionsCompat) -> Self {
        self.compat = Some(compat);
        self
    }

    /// Sends tools with `strict: true` where the schema qualifies (`true`), or without `strict`
    /// (`false`), whatever the server. The other compatibility flags stay as they are.
    ///
    /// ```
    /// use pi_runtime::providers::OpenAiCompletions;
    ///
    /// let local = OpenAiCompletions::new("qwen2.5:7b").base_url("http://localhost:11434/v1");
    /// assert!(!local.compat_flags().strict, "off by default for a compatible server");
    /// assert!(local.strict(true).compat_flags().strict);
    /// assert!(OpenAiCompletions::new("gpt-4o").compat_flags().strict, "on for OpenAI");
    /// ```
    pub fn strict(mut self, strict: bool) -> Self {
        let mut compat = self.compat_flags();
        compat.strict = strict;
        self.compat = Some(compat);
        self
    }

    fn is_openai(&self) -> bool {
        self.settings.base_url == OPENAI_URL
    }

    /// The compatibility flags in force: the ones set with [`compat`](Self::compat), else the
    /// defaults for the base URL (OpenAI's own endpoint gets `max_completion_tokens`, `strict`
    /// and `store: false`; other servers get none of them).
    pub fn compat_flags(&self) -> CompletionsCompat {
        self.compat.clone().unwrap_or_else(|| CompletionsCompat {
            max_completion_tokens: self.is_openai(),
            strict: self.is_openai(),
            store: self.is_openai(),
            ..CompletionsCompat::default()
        })
    }

    /// The JSON body this model would send for a context: for tests and debugging.
    pub fn request_body(&self, context: Context<'_>, options: &StreamOptions) -> Value {
        self.request_body_as(Self::API, context, options)
    }

    /// The body, with the transcript replayed as to a model of `api` (Azure OpenAI sends this
    /// wire under its own API name).
    pub(crate) fn request_body_as(
        &self,
        api: &'static str,
        context: Context<'_>,
        options: &StreamOptions,
    ) -> Value {
        let compat = self.compat_flags();
        let target = self.settings.target(api, IdRule::OpenAiCompletions);
        let mut messages = Vec::new();
        if !context.system_prompt.is_empty() {
            let role = if compat.developer_role {
                "developer"
            } else {
                "system"
            };
            messages.push(json!({"role": role, "content": context.system_prompt}));
        }
        let transcript = transform(context.messages, target);
        let mut pending_images: Vec<Value> = Vec::new();
        for message in &transcript {
            if !matches!(message, Message::ToolResult(_)) && !pending_images.is_empty() {
                messages.push(images_message(std::mem::take(&mut pending_images)));
            }
            match message {
                Message::User(user) => {
                    messages.push(json!({"role": "user", "content": user_content(&user.content)}))
                }
                Message::Assistant(assistant) => {
                    let text: Vec<&str> = assistant
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            AssistantContent::Text { text, .. } if !text.is_empty() => {
                                Some(text.as_str())
                            }
                            _ => None,
                        })
                        .collect();
                    let calls: Vec<Value> = assistant
                        .tool_calls()
                        .map(|b| {
                            json!({"id": b.call.id, "type": "function",
                                   "function": {"name": b.call.name, "arguments": arguments_text(&b.call.arguments)}})
                        })
                        .collect();
                    if text.is_empty() && calls.is_empty() {
                        continue;
                    }
                    let mut entry = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text.join("")) }});
                    if !calls.is_empty() {
                        entry["tool_calls"] = Value::Array(calls);
                    }
                    messages.push(entry);
                }
                Message::ToolResult(result) => {
                    let text = text_of(&result.content);
                    let has_images = result
                        .content
                        .iter()
                        .any(|c| matches!(c, Content::Image { .. }));
                    let content = match (text.is_empty(), has_images) {
                        (true, true) => "(see attached image)".to_owned(),
                        _ => text,
                    };
                    let mut entry = json!({"role": "tool", "tool_call_id": result.tool_call_id, "content": content});
                    if compat.tool_result_name {
                        entry["name"] = json!(result.tool_name);
                    }
                    messages.push(entry);
                    pending_images.extend(result.content.iter().filter_map(image_part));
                }
                Message::Custom(_) => {}
            }
        }
        if !pending_images.is_empty() {
            messages.push(images_message(pending_images));
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(self.settings.model));
        body.insert("messages".into(), Value::Array(messages));
        body.insert("stream".into(), json!(true));
        if compat.stream_usage {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        if compat.store {
            body.insert("store".into(), json!(false));
        }
        if let Some(max) = options.max_tokens.or(self.settings.max_tokens) {
            let field = if compat.max_completion_tokens {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body.insert(field.into(), json!(max));
        }
        if let Some(temperature) = options.temperature.and_then(super::decimal) {
            body.insert("temperature".into(), temperature);
        }
        if let (true, Some(level)) = (compat.reasoning_effort, options.thinking)
            && let Some(effort) = reasoning_effort(level)
        {
            body.insert("reasoning_effort".into(), json!(effort));
        }
        if !context.tools.is_empty() {
            body.insert(
                "tools".into(),
                Value::Array(
                    context
                        .tools
                        .iter()
                        .map(|t| completions_tool(t, compat.strict))
                        .collect(),
                ),
            );
            if let Some(choice) = &options.tool_choice {
                body.insert("tool_choice".into(), tool_choice(choice));
            }
        }
        if let Some(output) = &options.output {
            let format = output.completions_response_format(compat.strict);
            body.insert("response_format".into(), format);
        }
        Value::Object(body)
    }

    pub(crate) fn wire_decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(CompletionsDecoder::default())
    }
}

/// OpenAI's `reasoning_effort` for a thinking level (`None` for `Off`).
pub(crate) fn reasoning_effort(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some("minimal"),
        ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High => Some("high"),
        ThinkingLevel::XHigh => Some("xhigh"),
    }
}

/// A tool for Chat Completions; strict where the schema qualifies and `strict` is on.
pub(crate) fn completions_tool(spec: &ToolSpec, strict: bool) -> Value {
    let mut function = json!({"name": spec.name, "description": spec.description});
    if strict {
        let lowered = lower_schema(&spec.parameters, SchemaMode::OpenAiStrict);
        let qualifies = lowered.qualifies();
        function["parameters"] = if qualifies {
            lowered.schema
        } else {
            object_root(&spec.parameters).into_owned()
        };
        function["strict"] = json!(qualifies);
    } else {
        function["parameters"] = object_root(&spec.parameters).into_owned();
    }
    json!({"type": "function", "function": function})
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        // Not narrowed: many servers behind this API do not know `allowed_tools`.
        ToolChoice::AllowedTools {
            required: false, ..
        } => json!("auto"),
        ToolChoice::AllowedTools { required: true, .. } => json!("required"),
    }
}

fn user_content(content: &[Content]) -> Value {
    if let [Content::Text { text }] = content {
        return json!(text);
    }
    Value::Array(
        content
            .iter()
            .map(|block| match block {
                Content::Text { text } => json!({"type": "text", "text": text}),
                image => image_part(image).unwrap_or(Value::Null),
            })
            .collect(),
    )
}

fn image_part(content: &Content) -> Option<Value> {
    match content {
        Content::Image { data, mime_type } => Some(
            json!({"type": "image_url", "image_url": {"url": image_data_url(data, mime_type)}}),
        ),
        _ => None,
    }
}

fn images_message(images: Vec<Value>) -> Value {
    let mut parts = vec![json!({"type": "text", "text": "Attached image(s) from tool result:"})];
    parts.extend(images);
    json!({"role": "user", "content": parts})
}

/// What identifies a streamed call: its `index`, or its id when a server sends no index.
#[derive(Debug, PartialEq, Eq, Hash)]
enum CallKey {
    Index(u64),
    Id(String),
}

/// Decodes `chat.completion.chunk` events.
#[derive(Debug, Default)]
pub(crate) struct CompletionsDecoder {
    /// Tool-call key to content index.
    calls: HashMap<CallKey, usize>,
    finish_reason: Option<String>,
}

impl CompletionsDecoder {
    fn complete(&mut self, out: &mut Assembler) {
        match self.finish_reason.as_deref() {
            Some("tool_calls" | "function_call") => out.done(StopReason::ToolUse),
            Some("stop" | "end" | "eos") | None => out.done(StopReason::Stop),
            // `model_length`: Mistral's full context.
            Some("length" | "model_length") => out.done(StopReason::Length),
            Some(other) => out.fail(
                StopReason::Error,
                format!("Provider finish_reason: {other}"),
            ),
        }
    }
}

/// One `chat.completion.chunk`, read without building a JSON tree (this runs once per delta).
/// Fields whose type varies between servers are kept as `Value`.
#[derive(Debug, Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice<'a> {
    /// Which of several requested choices (a number; kept loose, as servers differ).
    #[serde(default)]
    index: Option<Value>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
    /// Where Moonshot reports usage (others put it on the chunk).
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Delta<'a> {
    /// A string, or (Mistral's Magistral) an array of `text` and `thinking` parts.
    #[serde(default)]
    content: Option<Value>,
    /// What the model says instead of an answer when it declines (OpenAI).
    #[serde(default)]
    refusal: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<Value>,
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default)]
    reasoning_text: Option<Value>,
    /// OpenRouter's structured reasoning: `reasoning.text` / `reasoning.summary` entries.
    #[serde(default)]
    reasoning_details: Option<Value>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

impl Delta<'_> {
    /// The reasoning in this delta. Servers that fill several fields send the same text in
    /// each (chutes.ai: `reasoning_content` and `reasoning`; OpenRouter: `reasoning` and
    /// `reasoning_details`), so only the first non-empty one counts, as in pi.
    fn reasoning(&self) -> Option<Cow<'_, str>> {
        let plain = [
            &self.reasoning_content,
            &self.reasoning,
            &self.reasoning_text,
        ]
        .into_iter()
        .find_map(|field| {
            field
                .as_ref()
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
        });
        if let Some(text) = plain {
            return Some(Cow::Borrowed(text));
        }
        let details: String = self
            .reasoning_details
            .as_ref()
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|detail| match detail.get("type").and_then(Value::as_str) {
                Some("reasoning.text") => detail.get("text").and_then(Value::as_str),
                Some("reasoning.summary") => detail.get("summary").and_then(Value::as_str),
                _ => None,
            })
            .collect();
        (!details.is_empty()).then_some(Cow::Owned(details))
    }
}

#[derive(Debug, Deserialize)]
struct CallDelta<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    arguments: Option<Value>,
}

impl CompletionsDecoder {
    fn chunk(&mut self, chunk: Chunk<'_>, out: &mut Assembler) {
        if let Some(error) = &chunk.error {
            // An error chunk can carry the usage so far (OpenRouter's, after a `length`
            // finish): keep it on the message the error ends.
            if let Some(usage) = chunk.usage.as_ref().filter(|u| u.is_object()) {
                out.set_usage(completions_usage(usage));
            }
            let wrapped = serde_json::json!({ "error": error });
            out.fail(
                StopReason::Error,
                error_message(&wrapped).unwrap_or_default(),
            );
            return;
        }
        if let Some(id) = chunk.id.as_deref()
            && out.message().response_id.is_none()
        {
            out.set_response_id(id);
        }
        // Only the first choice is the answer (a server asked for several sends each in turn).
        let choice = chunk.choices.and_then(|choices| {
            choices
                .into_iter()
                .find(|c| c.index.as_ref().and_then(Value::as_u64).unwrap_or(0) == 0)
        });
        let usage = chunk
            .usage
            .as_ref()
            .or_else(|| choice.as_ref().and_then(|c| c.usage.as_ref()));
        if let Some(usage) = usage.filter(|u| u.is_object()) {
            out.set_usage(completions_usage(usage));
        }
        let Some(choice) = choice else {
            return;
        };
        if let Some(delta) = choice.delta {
            if let Some(thinking) = delta.reasoning() {
                out.append_thinking(&thinking);
            }
            match &delta.content {
                Some(Value::String(text)) => out.append_text(text),
                Some(Value::Array(parts)) => content_parts(parts, out),
                _ => {}
            }
            if let Some(refusal) = delta.refusal.as_ref().and_then(Value::as_str) {
                out.append_text(refusal);
            }
            for call in delta.tool_calls.unwrap_or_default() {
                self.call(call, out);
            }
        }
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(reason.into_owned());
        }
    }

    fn call(&mut self, call: CallDelta<'_>, out: &mut Assembler) {
        let id = call.id.as_deref().unwrap_or_default();
        let function = call.function;
        let name = function
            .as_ref()
            .and_then(|f| f.name.as_deref())
            .unwrap_or_default();
        let key = match call.index {
            Some(index) => CallKey::Index(index),
            None => CallKey::Id(id.to_owned()),
        };
        let index = match self.calls.get(&key) {
            Some(&index) => {
                out.tool_fill(index, id, name);
                index
            }
            None => {
                out.close_prose();
                let index = out.tool_start(id, name);
                self.calls.insert(key, index);
                index
            }
        };
        // Some servers (Ollama's native shape) send arguments as an object.
        match function.and_then(|f| f.arguments) {
            Some(Value::String(fragment)) => out.tool_delta(index, &fragment),
            Some(object @ Value::Object(_)) => out.tool_delta(index, &object.to_string()),
            _ => {}
        }
    }
}

/// Content sent as typed parts (Mistral's Magistral): `{"type":"text","text":..}` and
/// `{"type":"thinking","thinking":[{"type":"text","text":..}]}` (or a plain string).
fn content_parts(parts: &[Value], out: &mut Assembler) {
    for part in parts {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = part.get("text").and_then(Value::as_str) {
                    out.append_text(text);
                }
            }
            Some("thinking") => match part.get("thinking") {
                Some(Value::String(text)) => out.append_thinking(text),
                Some(Value::Array(inner)) => {
                    for text in inner.iter().filter_map(|p| p.get("text")?.as_str()) {
                        out.append_thinking(text);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
}

impl WireDecoder for CompletionsDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Assembler) {
        if event.data.trim() == "[DONE]" {
            self.complete(out);
            return;
        }
        match serde_json::from_str::<Chunk<'_>>(&event.data) {
            Ok(chunk) => self.chunk(chunk, out),
            Err(err) => {
                // Not JSON, or JSON of another shape: an error object is reported, anything
                // else is skipped.
                let Some(value) = parse_json(event, out) else {
                    return;
                };
                match error_message(&value) {
                    Some(message) => out.fail(StopReason::Error, message),
                    None => tracing::debug!(%err, "skipping a chunk of unexpected shape"),
                }
            }
        }
    }

    fn end(&mut self, out: &mut Assembler) {
        // Some servers close the stream without `[DONE]` after the finishing chunk.
        if self.finish_reason.is_some() {
            self.complete(out);
        }
    }
}

fn completions_usage(usage: &Value) -> Usage {
    let number = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let prompt = number(usage.get("prompt_tokens"));
    let completion = number(usage.get("completion_tokens"));
    let reasoning = number(usage.pointer("/completion_tokens_details/reasoning_tokens"));
    let total = number(usage.get("total_tokens"));
    // OpenAI counts reasoning inside `completion_tokens`; xAI (Grok) reports it beside them, and
    // its total says so (prompt + completion + reasoning). Reasoning is output either way.
    let output = if reasoning > 0 && total == prompt + completion + reasoning {
        completion + reasoning
    } else {
        completion
    };
    super::usage_with_cached_prompt(
        prompt,
        number(usage.pointer("/prompt_tokens_details/cached_tokens")),
        output,
        total,
    )
}

#[cfg(feature = "http")]
impl crate::model::Model for OpenAiCompletions {
    model_identity!();

    fn structured_output(&self) -> bool {
        true
    }

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
        let request = super::bearer_request(
            &self.settings,
            options,
            self.is_openai(),
            "/chat/completions",
            self.request_body(context, options),
        );
        super::strict_fallback::stream(
            &self.settings.strict_tools,
            super::strict_fallback::Dialect::OpenAiCompletions,
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
