//! Mistral's chat API (`https://api.mistral.ai/v1/chat/completions`): Chat Completions in shape,
//! with Mistral's own rules, as pi's `mistral-conversations` API sends it:
//!
//! - tool-call ids are exactly 9 characters of `[a-zA-Z0-9]`; every other id is mapped to one
//!   (the same for a call and its result, and the same in every request of a conversation);
//! - tools are not strict unless asked for (`.strict(true)`, for models that have it);
//! - a forced tool call is `tool_choice: "any"`;
//! - tool results have no error flag: an error result starts with `[tool error] `;
//! - thinking is asked for with `prompt_mode: "reasoning"` (Magistral) or `reasoning_effort`
//!   (the models that take it), and comes back as `thinking` content parts;
//! - a typed run's answer is asked for with `response_format: {type: "json_schema", ..}`;
//! - `finish_reason: "model_length"` (the context is full) ends as `Length`;
//! - errors come as `{"object": "error", "message": .., "type": ..}` or a validation `detail`.

use std::collections::HashMap;

use pi_tool::{Content, ToolSpec};
use serde_json::{Map, Value, json};

use super::assemble::Assembler;
use super::decode::{WireDecoder, error_message};
use super::openai_completions::{CompletionsDecoder, completions_tool};
use super::root_union::object_root;
use super::settings::{Settings, settings_builder};
use super::sse::SseEvent;
use super::transform::{IdRule, transform};
use super::{arguments_text, image_data_url, text_of};
use crate::message::{AssistantContent, Message, StopReason};
use crate::model::{Context, StreamOptions, ThinkingLevel, ToolChoice};

/// The default endpoint (as pi names it: the path, `/v1/chat/completions`, is added).
pub(crate) const MISTRAL_URL: &str = "https://api.mistral.ai";

/// The length of a Mistral tool-call id.
const ID_LENGTH: usize = 9;

/// The reasoning models that take `reasoning_effort` (as pi 0.73.1 has them).
const REASONING_EFFORT_MODELS: &[&str] = &[
    "mistral-small-2603",
    "mistral-small-latest",
    "mistral-medium-3.5",
];

/// The reasoning models besides `magistral-*` that take `prompt_mode: "reasoning"` (pi 0.73.1's
/// catalog).
const PROMPT_MODE_MODELS: &[&str] = &["mistral-medium-2604", "mistral-medium-latest"];

/// A model behind Mistral's API.
///
/// ```
/// # #[cfg(feature = "http")] {
/// use pi_runtime::Model;
/// use pi_runtime::providers::MistralChat;
///
/// let model = MistralChat::new("mistral-large-latest"); // key from MISTRAL_API_KEY
/// assert_eq!((model.api(), model.provider()), ("mistral-conversations", "mistral"));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct MistralChat {
    pub(crate) settings: Settings,
    strict: bool,
    #[cfg(feature = "http")]
    client: super::http::LazyClient,
}

settings_builder!(MistralChat);

impl MistralChat {
    /// The wire API name (pi's).
    pub const API: &'static str = "mistral-conversations";

    /// A model of Mistral's (`https://api.mistral.ai`, key from `MISTRAL_API_KEY`).
    pub fn new(model: impl Into<String>) -> Self {
        MistralChat {
            settings: Settings::new(&model.into(), "mistral", MISTRAL_URL, &["MISTRAL_API_KEY"]),
            strict: false,
            #[cfg(feature = "http")]
            client: Default::default(),
        }
    }

    /// Sends tools whose schema qualifies with `strict: true` (default `false`: only some
    /// Mistral models constrain their calls to the schema, pi's `supportsStrictMode`).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The JSON body this model would send for a context: for tests and debugging.
    pub fn request_body(&self, context: Context<'_>, options: &StreamOptions) -> Value {
        // Ids of other models are only sanitized here (the `[a-zA-Z0-9]` in them kept, as pi
        // hashes them); `ToolCallIds` makes them Mistral's.
        let target = self.settings.target(Self::API, IdRule::Sanitize64);
        let mut ids = ToolCallIds::default();
        let mut messages = Vec::new();
        if !context.system_prompt.is_empty() {
            messages.push(json!({"role": "system", "content": context.system_prompt}));
        }
        for message in &transform(context.messages, target) {
            match message {
                Message::User(user) => {
                    messages.push(json!({"role": "user", "content": user_content(&user.content)}))
                }
                Message::Assistant(assistant) => {
                    let parts: Vec<Value> = assistant
                        .content
                        .iter()
                        .filter_map(|block| match block {
                            AssistantContent::Text { text, .. } if !text.trim().is_empty() => {
                                Some(json!({"type": "text", "text": text}))
                            }
                            AssistantContent::Thinking { thinking, .. }
                                if !thinking.trim().is_empty() =>
                            {
                                Some(json!({"type": "thinking",
                                            "thinking": [{"type": "text", "text": thinking}]}))
                            }
                            _ => None,
                        })
                        .collect();
                    let calls: Vec<Value> = assistant
                        .tool_calls()
                        .map(|b| {
                            json!({"id": ids.map(&b.call.id), "type": "function",
                                   "function": {"name": b.call.name,
                                                "arguments": arguments_text(&b.call.arguments)}})
                        })
                        .collect();
                    if parts.is_empty() && calls.is_empty() {
                        continue;
                    }
                    let mut entry = json!({"role": "assistant"});
                    if !parts.is_empty() {
                        entry["content"] = Value::Array(parts);
                    }
                    if !calls.is_empty() {
                        entry["tool_calls"] = Value::Array(calls);
                    }
                    messages.push(entry);
                }
                Message::ToolResult(result) => {
                    let mut content = vec![json!({"type": "text", "text": tool_result_text(
                        &text_of(&result.content),
                        result.content.iter().any(|c| matches!(c, Content::Image { .. })),
                        result.is_error,
                    )})];
                    content.extend(result.content.iter().filter_map(image_part));
                    messages.push(
                        json!({"role": "tool", "tool_call_id": ids.map(&result.tool_call_id),
                                         "name": result.tool_name, "content": content}),
                    );
                }
                Message::Custom(_) => {}
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(self.settings.model));
        body.insert("messages".into(), Value::Array(messages));
        body.insert("stream".into(), json!(true));
        if let Some(max) = options.max_tokens.or(self.settings.max_tokens) {
            body.insert("max_tokens".into(), json!(max));
        }
        if let Some(temperature) = options.temperature.and_then(super::decimal) {
            body.insert("temperature".into(), temperature);
        }
        if let Some(level) = options.thinking.filter(|l| *l != ThinkingLevel::Off) {
            let _ = level; // Mistral has one level of reasoning.
            let model = self.settings.model.as_str();
            if REASONING_EFFORT_MODELS.contains(&model) {
                body.insert("reasoning_effort".into(), json!("high"));
            } else if model.starts_with("magistral") || PROMPT_MODE_MODELS.contains(&model) {
                body.insert("prompt_mode".into(), json!("reasoning"));
            }
        }
        if !context.tools.is_empty() {
            let tools = context.tools.iter().map(|t| self.tool(t)).collect();
            body.insert("tools".into(), Value::Array(tools));
            if let Some(choice) = &options.tool_choice {
                body.insert("tool_choice".into(), tool_choice(choice));
            }
        }
        if let Some(output) = &options.output {
            // Mistral's `response_format` has Chat Completions' shape (`json_schema` with name,
            // schema and strict); every model takes a strict schema, tools or not.
            let format = output.completions_response_format(true);
            body.insert("response_format".into(), format);
        }
        Value::Object(body)
    }

    fn tool(&self, spec: &ToolSpec) -> Value {
        if self.strict {
            return completions_tool(spec, true);
        }
        json!({"type": "function", "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": object_root(&spec.parameters),
            "strict": false,
        }})
    }

    fn wire_decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(MistralDecoder::default())
    }
}

/// Maps tool-call ids to Mistral's 9 characters of `[a-zA-Z0-9]`, one request at a time: an id
/// that already is one stays; any other becomes a hash of it (pi's, so both map an id alike),
/// with a counter mixed in when two ids of the conversation would get the same one.
#[derive(Default)]
struct ToolCallIds {
    mapped: HashMap<String, String>,
    owners: HashMap<String, String>,
}

impl ToolCallIds {
    fn map(&mut self, id: &str) -> String {
        if let Some(known) = self.mapped.get(id) {
            return known.clone();
        }
        let mut attempt = 0u32;
        loop {
            let candidate = mistral_tool_call_id(id, attempt);
            match self.owners.get(&candidate) {
                Some(owner) if owner != id => attempt += 1,
                _ => {
                    self.owners.insert(candidate.clone(), id.to_owned());
                    self.mapped.insert(id.to_owned(), candidate.clone());
                    return candidate;
                }
            }
        }
    }
}

/// The Mistral id for `id` at the given collision attempt (pi's `deriveMistralToolCallId`).
pub(crate) fn mistral_tool_call_id(id: &str, attempt: u32) -> String {
    let alphanumeric: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if attempt == 0 && alphanumeric.len() == ID_LENGTH {
        return alphanumeric;
    }
    let base = if alphanumeric.is_empty() {
        id
    } else {
        &alphanumeric
    };
    let seed = if attempt == 0 {
        base.to_owned()
    } else {
        format!("{base}:{attempt}")
    };
    let mut hashed = short_hash(&seed);
    // pi's hash is at least 9 characters but for a few seeds in billions; pad those.
    while hashed.len() < ID_LENGTH {
        hashed.push('0');
    }
    hashed.truncate(ID_LENGTH);
    hashed
}

/// pi's `shortHash` (two 32-bit multiply-xor lanes over the UTF-16 units, in base 36).
fn short_hash(text: &str) -> String {
    let mut h1: u32 = 0xdead_beef;
    let mut h2: u32 = 0x41c6_ce57;
    for unit in text.encode_utf16() {
        let unit = u32::from(unit);
        h1 = (h1 ^ unit).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ unit).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    format!("{}{}", base36(h2), base36(h1))
}

fn base36(mut value: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(value % 36) as usize]);
        value /= 36;
        if value == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// A tool result's text: Mistral has no error flag, so an error says so in front (pi's).
fn tool_result_text(text: &str, has_images: bool, is_error: bool) -> String {
    let prefix = if is_error { "[tool error] " } else { "" };
    let text = text.trim();
    if !text.is_empty() {
        format!("{prefix}{text}")
    } else if has_images {
        format!("{prefix}(see attached image)")
    } else {
        format!("{prefix}(no tool output)")
    }
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("any"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        ToolChoice::AllowedTools {
            required: false, ..
        } => json!("auto"),
        ToolChoice::AllowedTools { required: true, .. } => json!("any"),
    }
}

fn user_content(content: &[Content]) -> Value {
    if let [Content::Text { text }] = content {
        return json!(text);
    }
    Value::Array(
        content
            .iter()
            .filter_map(|block| match block {
                Content::Text { text } => Some(json!({"type": "text", "text": text})),
                image => image_part(image),
            })
            .collect(),
    )
}

/// Mistral's image chunk: `image_url` is the URL itself (a data URL here).
fn image_part(content: &Content) -> Option<Value> {
    match content {
        Content::Image { data, mime_type } => {
            Some(json!({"type": "image_url", "image_url": image_data_url(data, mime_type)}))
        }
        _ => None,
    }
}

/// Chat Completions chunks, plus Mistral's error objects inside the stream.
#[derive(Debug, Default)]
struct MistralDecoder {
    chunks: CompletionsDecoder,
}

impl WireDecoder for MistralDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Assembler) {
        // Every chunk is `"object":"chat.completion.chunk"`; only an error object says
        // `"object":"error"` (checked before paying for a second parse).
        if event.data.contains("\"error\"")
            && let Ok(value) = serde_json::from_str::<Value>(&event.data)
            && let Some(message) = error_message(&value)
        {
            out.fail(StopReason::Error, message);
            return;
        }
        self.chunks.event(event, out);
    }

    fn end(&mut self, out: &mut Assembler) {
        self.chunks.end(out);
    }
}

#[cfg(feature = "http")]
impl crate::model::Model for MistralChat {
    model_identity!();

    fn structured_output(&self) -> bool {
        true
    }

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
        let mut request = super::bearer_request(
            &self.settings,
            options,
            self.settings.base_url == MISTRAL_URL,
            "/v1/chat/completions",
            self.request_body(context, options),
        );
        // Mistral reuses its prompt cache for requests with the same `x-affinity` (pi's).
        if let (Ok(request), Some(session)) = (&mut request, &options.session_id)
            && !self.settings.headers.contains_key("x-affinity")
            && !options.headers.contains_key("x-affinity")
        {
            request
                .headers
                .push(("x-affinity".to_owned(), session.clone()));
        }
        let hint = super::sign_in::KeyHint::new(&self.settings, options);
        super::sign_in::with_hint(
            super::http::stream(
                &self.client,
                &self.settings,
                request,
                self.decoder(),
                options,
            ),
            hint,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_keep_valid_ones_and_hash_the_rest_as_pi_does() {
        assert_eq!(mistral_tool_call_id("abc123XYZ", 0), "abc123XYZ");
        assert_eq!(mistral_tool_call_id("abc-123_XYZ", 0), "abc123XYZ");
        for id in ["call_1|fc_1", "toolu_01ABC", "", "é", "abc123XYZ"] {
            for attempt in 0..3 {
                let mapped = mistral_tool_call_id(id, attempt);
                assert_eq!(mapped.len(), ID_LENGTH, "{id}");
                assert!(
                    mapped.chars().all(|c| c.is_ascii_alphanumeric()),
                    "{mapped}"
                );
            }
        }
        // pi 0.73.1's own ids for these (its `deriveMistralToolCallId`, run under Node), so a
        // conversation moved between pi and us keeps its ids.
        assert_eq!(mistral_tool_call_id("call_1|fc_1", 0), "198dty0p9");
        assert_eq!(mistral_tool_call_id("call_1|fc_1", 1), "1enbbpuox");
        assert_eq!(mistral_tool_call_id("toolu_01ABC", 0), "e18hrht7s");
        assert_eq!(mistral_tool_call_id("é", 0), "1ohi2dgmq");
        assert_eq!(mistral_tool_call_id("abc123XYZ", 1), "13sf0nn13");
    }

    #[test]
    fn two_ids_that_meet_get_different_ones() {
        let mut ids = ToolCallIds::default();
        // Both strip to the same nine characters.
        let first = ids.map("abc-123-XYZ");
        let second = ids.map("abc_123_XYZ");
        assert_eq!(first, "abc123XYZ");
        assert_ne!(first, second);
        assert_eq!(
            ids.map("abc_123_XYZ"),
            second,
            "stable within the conversation"
        );
    }
}
