//! Google Generative AI (Gemini, `:streamGenerateContent?alt=sse`): `parameters` in the OpenAPI
//! subset where the schema allows it (else `parametersJsonSchema`), function responses merged
//! into one user turn, calls that arrive whole, generated ids when a call has none.

use pi_tool::{Content, ToolSpec, Usage};
use serde_json::{Map, Value, json};

use super::assemble::Assembler;
use super::decode::{WireDecoder, error_message, parse_json};
use super::lowering::{SchemaMode, lower_schema};
use super::root_union::object_root;
use super::settings::{Settings, settings_builder};
use super::sse::SseEvent;
use super::transform::{IdRule, transform};
use super::{arguments_object, text_of};
use crate::message::{AssistantContent, Message, StopReason, now_ms};
use crate::model::{Context, StreamOptions, ThinkingLevel, ToolChoice};

const GOOGLE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// A model behind the Google Generative AI (Gemini) API.
///
/// ```
/// use pi_runtime::providers::GoogleGenerativeAi;
///
/// let model = GoogleGenerativeAi::new("gemini-2.5-flash");
/// # let _ = model;
/// ```
#[derive(Clone, Debug)]
pub struct GoogleGenerativeAi {
    pub(crate) settings: Settings,
    #[cfg(feature = "http")]
    client: super::http::LazyClient,
}

settings_builder!(GoogleGenerativeAi);

impl GoogleGenerativeAi {
    /// The wire API name.
    pub const API: &'static str = "google-generative-ai";

    /// A Gemini model (`https://generativelanguage.googleapis.com/v1beta`, key from
    /// `GEMINI_API_KEY` or `GOOGLE_API_KEY`).
    pub fn new(model: impl Into<String>) -> Self {
        GoogleGenerativeAi {
            settings: Settings::new(
                &model.into(),
                "google",
                GOOGLE_URL,
                &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            ),
            #[cfg(feature = "http")]
            client: Default::default(),
        }
    }

    /// Gemini 3 takes images inside function responses; older models get them in a user turn.
    fn nested_result_images(&self) -> bool {
        self.settings.model.contains("gemini-3")
    }

    /// The JSON body this model would send for a context: for tests and debugging.
    pub fn request_body(&self, context: Context<'_>, options: &StreamOptions) -> Value {
        self.request_body_as(Self::API, context, options)
    }

    /// The body as sent by a model of `api` (Gemini on Vertex): earlier answers of that API
    /// are replayed with their signatures.
    pub(crate) fn request_body_as(
        &self,
        api: &'static str,
        context: Context<'_>,
        options: &StreamOptions,
    ) -> Value {
        let target = self.settings.target(api, IdRule::Sanitize64);
        let mut contents: Vec<Value> = Vec::new();
        let mut responses: Vec<Value> = Vec::new();
        let mut result_images: Vec<Value> = Vec::new();
        let flush =
            |contents: &mut Vec<Value>, responses: &mut Vec<Value>, images: &mut Vec<Value>| {
                if !responses.is_empty() {
                    contents.push(json!({"role": "user", "parts": std::mem::take(responses)}));
                }
                if !images.is_empty() {
                    let mut parts = vec![json!({"text": "Tool result image:"})];
                    parts.append(images);
                    contents.push(json!({"role": "user", "parts": parts}));
                }
            };
        for message in &transform(context.messages, target) {
            if !matches!(message, Message::ToolResult(_)) {
                flush(&mut contents, &mut responses, &mut result_images);
            }
            match message {
                Message::User(user) => {
                    let parts = parts_of(&user.content);
                    if !parts.is_empty() {
                        contents.push(json!({"role": "user", "parts": parts}));
                    }
                }
                Message::Assistant(assistant) => {
                    let parts: Vec<Value> =
                        assistant.content.iter().filter_map(model_part).collect();
                    if !parts.is_empty() {
                        contents.push(json!({"role": "model", "parts": parts}));
                    }
                }
                Message::ToolResult(result) => {
                    let text = text_of(&result.content);
                    let response = if result.is_error {
                        json!({"error": text})
                    } else {
                        json!({"output": text})
                    };
                    let mut part = json!({"name": result.tool_name, "response": response});
                    let images: Vec<Value> = result
                        .content
                        .iter()
                        .filter(|c| matches!(c, Content::Image { .. }))
                        .flat_map(|c| parts_of(std::slice::from_ref(c)))
                        .collect();
                    if !images.is_empty() {
                        if self.nested_result_images() {
                            part["parts"] = Value::Array(images);
                        } else {
                            result_images.extend(images);
                        }
                    }
                    responses.push(json!({"functionResponse": part}));
                }
                Message::Custom(_) => {}
            }
        }
        flush(&mut contents, &mut responses, &mut result_images);
        let mut body = Map::new();
        body.insert("contents".into(), Value::Array(contents));
        if !context.system_prompt.is_empty() {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": context.system_prompt}]}),
            );
        }
        let mut generation = Map::new();
        if let Some(max) = options.max_tokens.or(self.settings.max_tokens) {
            generation.insert("maxOutputTokens".into(), json!(max));
        }
        if let Some(temperature) = options.temperature.and_then(super::decimal) {
            generation.insert("temperature".into(), temperature);
        }
        if let Some(level) = options.thinking {
            generation.insert("thinkingConfig".into(), thinking_config(level));
        }
        if let Some(output) = &options.output {
            output.add_to_gemini_generation(&mut generation);
        }
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        if !context.tools.is_empty() {
            let declarations: Vec<Value> = context.tools.iter().map(gemini_tool).collect();
            body.insert(
                "tools".into(),
                json!([{"functionDeclarations": declarations}]),
            );
            if let Some(choice) = &options.tool_choice {
                body.insert(
                    "toolConfig".into(),
                    json!({"functionCallingConfig": tool_choice(choice)}),
                );
            }
        }
        Value::Object(body)
    }

    pub(crate) fn wire_decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(GoogleDecoder::default())
    }
}

/// A function declaration: `parameters` in the OpenAPI subset when the schema can be described
/// there, otherwise the full JSON Schema as `parametersJsonSchema`.
pub(crate) fn gemini_tool(spec: &ToolSpec) -> Value {
    let lowered = lower_schema(&spec.parameters, SchemaMode::Gemini);
    let no_parameters = lowered
        .schema
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if lowered.qualifies() && no_parameters {
        // Gemini rejects an object without properties: a tool without parameters has none.
        json!({"name": spec.name, "description": spec.description})
    } else if lowered.qualifies() {
        json!({"name": spec.name, "description": spec.description, "parameters": lowered.schema})
    } else {
        // A root union still goes as one object (Gemini wants an object root here too).
        let schema = object_root(&spec.parameters);
        json!({"name": spec.name, "description": spec.description, "parametersJsonSchema": schema})
    }
}

fn thinking_config(level: ThinkingLevel) -> Value {
    let budget = match level {
        ThinkingLevel::Off => 0,
        ThinkingLevel::Minimal => 1024,
        ThinkingLevel::Low => 2048,
        ThinkingLevel::Medium => 8192,
        ThinkingLevel::High | ThinkingLevel::XHigh => 24576,
    };
    json!({"includeThoughts": budget > 0, "thinkingBudget": budget})
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        // Gemini narrows the choice only in `ANY` mode.
        ToolChoice::AllowedTools {
            names,
            required: true,
        } => json!({"mode": "ANY", "allowedFunctionNames": names}),
        ToolChoice::AllowedTools {
            required: false, ..
        } => json!({"mode": "AUTO"}),
    }
}

fn parts_of(content: &[Content]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } if text.is_empty() => None,
            Content::Text { text } => Some(json!({"text": text})),
            Content::Image { data, mime_type } => {
                Some(json!({"inlineData": {"mimeType": mime_type, "data": data}}))
            }
        })
        .collect()
}

fn model_part(block: &AssistantContent) -> Option<Value> {
    let with_signature = |mut part: Value, signature: &Option<String>| {
        if let Some(signature) = signature {
            part["thoughtSignature"] = json!(signature);
        }
        part
    };
    match block {
        AssistantContent::Text { text, .. } if text.is_empty() => None,
        AssistantContent::Text {
            text,
            text_signature,
        } => Some(with_signature(json!({"text": text}), text_signature)),
        AssistantContent::Thinking {
            thinking,
            thinking_signature,
            ..
        } => {
            if thinking.is_empty() && thinking_signature.is_none() {
                return None;
            }
            Some(with_signature(
                json!({"text": thinking, "thought": true}),
                thinking_signature,
            ))
        }
        AssistantContent::ToolCall(call) => Some(with_signature(
            json!({"functionCall": {"name": call.call.name, "args": arguments_object(&call.call.arguments)}}),
            &call.thought_signature,
        )),
        // Another API's own block: nothing Gemini can read.
        AssistantContent::Provider(_) => None,
    }
}

/// Decodes `GenerateContentResponse` chunks.
#[derive(Debug, Default)]
struct GoogleDecoder {
    finish_reason: Option<String>,
    /// Gemini's explanation of an unusual finish (`finishMessage`).
    finish_message: Option<String>,
    generated_ids: u64,
    seen_ids: Vec<String>,
}

impl WireDecoder for GoogleDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Assembler) {
        let Some(chunk) = parse_json(event, out) else {
            return;
        };
        let chunk = chunk
            .as_array()
            .and_then(|a| a.first().cloned())
            .unwrap_or(chunk);
        if let Some(message) = error_message(&chunk) {
            out.fail(StopReason::Error, message);
            return;
        }
        if let Some(id) = chunk.get("responseId").and_then(Value::as_str)
            && out.message().response_id.is_none()
        {
            out.set_response_id(id);
        }
        if let Some(usage) = chunk.get("usageMetadata") {
            out.set_usage(google_usage(usage));
        }
        // A blocked prompt gets no candidates, only the reason.
        if let Some(reason) = chunk
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            let mut message = format!("The provider blocked the prompt ({reason})");
            if let Some(detail) = chunk
                .pointer("/promptFeedback/blockReasonMessage")
                .and_then(Value::as_str)
            {
                message = format!("{message}: {detail}");
            }
            out.fail(StopReason::Error, message);
            return;
        }
        let Some(candidate) = chunk.get("candidates").and_then(|c| c.get(0)) else {
            return;
        };
        let parts = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for part in parts {
            let signature = part.get("thoughtSignature").and_then(Value::as_str);
            if let Some(call) = part.get("functionCall") {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                let id = match call.get("id").and_then(Value::as_str) {
                    Some(id) if !id.is_empty() && !self.seen_ids.iter().any(|seen| seen == id) => {
                        id.to_owned()
                    }
                    _ => {
                        self.generated_ids += 1;
                        format!("{name}_{}_{}", now_ms(), self.generated_ids)
                    }
                };
                self.seen_ids.push(id.clone());
                out.close_prose();
                let index = out.tool_start(&id, name);
                let arguments = call.get("args").cloned().unwrap_or_else(|| json!({}));
                out.tool_delta(index, &arguments.to_string());
                if let Some(signature) = signature {
                    out.set_thought_signature(index, signature);
                }
                out.end_block(index);
                continue;
            }
            let Some(text) = part.get("text").and_then(Value::as_str) else {
                continue;
            };
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                out.append_thinking(text);
                if let (Some(signature), Some(index)) = (signature, out.open_thinking()) {
                    out.add_thinking_signature(index, signature, false);
                }
            } else {
                out.append_text(text);
                if let (Some(signature), Some(index)) = (signature, out.open_text()) {
                    out.set_text_signature(index, signature);
                }
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        if let Some(message) = candidate.get("finishMessage").and_then(Value::as_str) {
            self.finish_message = Some(message.to_owned());
        }
    }

    fn end(&mut self, out: &mut Assembler) {
        let has_calls = out.message().tool_calls().next().is_some();
        match self.finish_reason.as_deref() {
            None => {}
            Some(_) if has_calls => out.done(StopReason::ToolUse),
            Some("STOP") => out.done(StopReason::Stop),
            Some("MAX_TOKENS") => out.done(StopReason::Length),
            Some(other) => {
                let mut message = format!("Provider finishReason: {other}");
                if let Some(detail) = &self.finish_message {
                    message = format!("{message}: {detail}");
                }
                out.fail(StopReason::Error, message)
            }
        }
    }
}

fn google_usage(usage: &Value) -> Usage {
    let number = |field: &str| usage.get(field).and_then(Value::as_u64).unwrap_or(0);
    super::usage_with_cached_prompt(
        // What a built-in tool (code execution, URL context, search) read is prompt too, counted
        // apart (`toolUsePromptTokenCount`) but within the total.
        number("promptTokenCount") + number("toolUsePromptTokenCount"),
        number("cachedContentTokenCount"),
        number("candidatesTokenCount") + number("thoughtsTokenCount"),
        number("totalTokenCount"),
    )
}

#[cfg(feature = "http")]
impl crate::model::Model for GoogleGenerativeAi {
    model_identity!();

    /// Gemini 3 takes a response schema together with function calling; older models refuse
    /// the two in one request.
    fn structured_output(&self) -> bool {
        self.settings.model.contains("gemini-3")
    }

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
        let body = self.request_body(context, options);
        let request = match self.settings.resolve_key(options.api_key.as_deref()) {
            Some(key) => Ok(super::http::WireRequest {
                url: format!(
                    "{}/models/{}:streamGenerateContent?alt=sse",
                    self.settings.base_url, self.settings.model
                ),
                headers: vec![("x-goog-api-key".to_owned(), key)],
                body,
            }),
            None => Err(super::missing_key_message(&self.settings)),
        };
        super::http::stream(
            &self.client,
            &self.settings,
            request,
            self.decoder(),
            options,
        )
    }
}
