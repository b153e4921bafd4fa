//! OpenAI Responses (`/responses`): flat function tools with `strict` always explicit, call ids
//! kept as `call_id|item_id`, reasoning items replayed to the model that produced them.

use std::collections::HashMap;

use pi_tool::{Content, ToolSpec, Usage};
use serde_json::{Map, Value, json};

use super::assemble::Assembler;
use super::decode::{WireDecoder, error_message, parse_json};
use super::lowering::SchemaMode;
use super::openai_completions::{OPENAI_URL, reasoning_effort};
use super::root_union::object_root;
use super::settings::{Settings, settings_builder};
use super::sse::SseEvent;
use super::transform::{IdRule, transform};
use super::{arguments_text, image_data_url, text_of};
use crate::message::{AssistantContent, AssistantMessage, Message, StopReason};
use crate::model::{Context, StreamOptions, ToolChoice};

/// A model behind the OpenAI Responses API.
///
/// ```
/// use pi_runtime::providers::OpenAiResponses;
///
/// let model = OpenAiResponses::new("gpt-5-mini").max_retries(5);
/// # let _ = model;
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiResponses {
    pub(crate) settings: Settings,
    strict: bool,
    #[cfg(feature = "http")]
    client: super::http::LazyClient,
}

settings_builder!(OpenAiResponses);

impl OpenAiResponses {
    /// The wire API name.
    pub const API: &'static str = "openai-responses";

    /// A model of OpenAI's (`https://api.openai.com/v1`, key from `OPENAI_API_KEY`).
    pub fn new(model: impl Into<String>) -> Self {
        OpenAiResponses {
            settings: Settings::new(&model.into(), "openai", OPENAI_URL, &["OPENAI_API_KEY"]),
            strict: true,
            #[cfg(feature = "http")]
            client: Default::default(),
        }
    }

    /// Whether tools whose schema qualifies are sent with `strict: true` (default true). Either
    /// way `strict` is sent explicitly, since the API otherwise tries strict on its own.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
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
        let target = self.settings.target(api, IdRule::Sanitize64);
        let mut input = Vec::new();
        if !context.system_prompt.is_empty() {
            input.push(json!({"role": "system", "content": context.system_prompt}));
        }
        // The `caller` of each call a program made: its output names the same caller.
        let mut callers: HashMap<String, Value> = HashMap::new();
        for message in &transform(context.messages, target) {
            match message {
                Message::User(user) => {
                    let parts: Vec<Value> = user.content.iter().map(input_part).collect();
                    input.push(json!({"role": "user", "content": parts}));
                }
                Message::Assistant(assistant) => {
                    for block in assistant.tool_calls() {
                        if let Some(caller) = block.provider_fields.get("caller") {
                            callers.insert(call_id(&block.call.id).to_owned(), caller.clone());
                        }
                    }
                    assistant_items(assistant, &mut input);
                }
                Message::ToolResult(result) => {
                    let has_images = result
                        .content
                        .iter()
                        .any(|c| matches!(c, Content::Image { .. }));
                    let output = if has_images {
                        Value::Array(result.content.iter().map(input_part).collect())
                    } else {
                        json!(text_of(&result.content))
                    };
                    let id = call_id(&result.tool_call_id);
                    let mut item =
                        json!({"type": "function_call_output", "call_id": id, "output": output});
                    if let Some(caller) = callers.get(id) {
                        item["caller"] = caller.clone();
                    }
                    input.push(item);
                }
                Message::Custom(_) => {}
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(self.settings.model));
        body.insert("input".into(), Value::Array(input));
        body.insert("stream".into(), json!(true));
        body.insert("store".into(), json!(false));
        if let Some(max) = options.max_tokens.or(self.settings.max_tokens) {
            body.insert("max_output_tokens".into(), json!(max));
        }
        if let Some(temperature) = options.temperature.and_then(super::decimal) {
            body.insert("temperature".into(), temperature);
        }
        if let Some(effort) = options.thinking.and_then(reasoning_effort) {
            body.insert(
                "reasoning".into(),
                json!({"effort": effort, "summary": "auto"}),
            );
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
        let mut tools = responses_tools(context.tools, options, self.strict);
        if let Some(Value::Array(input)) = body.get("input") {
            super::native_search::define_openai_search(input, &mut tools);
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
            body.insert("text".into(), output.responses_text(self.strict));
        }
        if let Some(session) = &options.session_id {
            body.insert("prompt_cache_key".into(), json!(session));
        }
        Value::Object(body)
    }

    pub(crate) fn wire_decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(ResponsesDecoder::default())
    }
}

/// The request's tools: the sent ones in order, then (with the native search and some deferred
/// tool) the hosted `tool_search` and the deferred tools with `defer_loading: true` (which the
/// API takes only together with a `tool_search` tool).
fn responses_tools(specs: &[ToolSpec], options: &StreamOptions, strict: bool) -> Vec<Value> {
    let (sent, deferred) = crate::request_tools::split_for_native_search(specs, options);
    let mut tools: Vec<Value> = sent
        .iter()
        .map(|spec| responses_tool(spec, options, strict))
        .collect();
    // Programmatic tool calling: the API's code runner (and who may call each tool, below).
    if crate::request_tools::offers_code_runner(specs, options) {
        tools.insert(0, json!({"type": "programmatic_tool_calling"}));
    }
    if !deferred.is_empty() {
        tools.push(json!({"type": "tool_search"}));
        for spec in deferred {
            let mut tool = responses_tool(spec, options, strict);
            tool["defer_loading"] = json!(true);
            tools.push(tool);
        }
    }
    tools
}

/// A tool for Responses: `strict` always explicit, `true` where the schema qualifies (lowered
/// once per tool, see [`RequestTools`](crate::RequestTools)).
fn responses_tool(spec: &ToolSpec, options: &StreamOptions, strict: bool) -> Value {
    let lowered = strict.then(|| options.tools.lowered(spec, SchemaMode::OpenAiStrict));
    let (parameters, strict) = match lowered {
        Some(lowered) if lowered.qualifies() => (lowered.schema.clone(), true),
        _ => (object_root(&spec.parameters).into_owned(), false),
    };
    let mut tool = json!({"type": "function", "name": spec.name, "description": spec.description, "parameters": parameters, "strict": strict});
    if let Some(allowed) =
        crate::request_tools::allowed_callers(&spec.name, options, "programmatic")
    {
        tool["allowed_callers"] = allowed;
    }
    tool
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
        ToolChoice::AllowedTools { names, required } => json!({
            "type": "allowed_tools",
            "mode": if *required { "required" } else { "auto" },
            "tools": names.iter().map(|name| json!({"type": "function", "name": name})).collect::<Vec<_>>(),
        }),
    }
}

/// The `call_id` part of a `call_id|item_id` id.
fn call_id(id: &str) -> &str {
    id.split('|').next().unwrap_or(id)
}

fn input_part(content: &Content) -> Value {
    match content {
        Content::Text { text } => json!({"type": "input_text", "text": text}),
        Content::Image { data, mime_type } => {
            json!({"type": "input_image", "detail": "auto", "image_url": image_data_url(data, mime_type)})
        }
    }
}

/// The reasoning items of a message that can be replayed: with `store: false` only items that
/// carry their `encrypted_content` mean anything to the API.
fn replayable_reasoning(message: &AssistantMessage) -> Vec<Value> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            // The signature is the reasoning item itself, as the model sent it.
            AssistantContent::Thinking {
                thinking_signature: Some(signature),
                ..
            } => serde_json::from_str::<Value>(signature).ok(),
            _ => None,
        })
        .filter(|item| item.get("encrypted_content").is_some_and(Value::is_string))
        .collect()
}

fn assistant_items(message: &AssistantMessage, input: &mut Vec<Value>) {
    let mut reasoning = replayable_reasoning(message).into_iter();
    // Item ids tie outputs to their reasoning; without it they would point at nothing.
    let with_ids = reasoning.len() > 0;
    for block in &message.content {
        match block {
            AssistantContent::Thinking { .. } => {
                if let Some(item) = reasoning.next() {
                    input.push(item);
                }
            }
            AssistantContent::Text {
                text,
                text_signature,
            } => {
                if text.is_empty() {
                    continue;
                }
                let mut item = json!({"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}], "status": "completed"});
                if let (true, Some(id)) = (with_ids, text_signature) {
                    item["id"] = json!(id);
                }
                input.push(item);
            }
            AssistantContent::ToolCall(block) => {
                let mut item = json!({"type": "function_call", "call_id": call_id(&block.call.id),
                    "name": block.call.name, "arguments": arguments_text(&block.call.arguments)});
                if let (true, Some((_, item_id))) = (with_ids, block.call.id.split_once('|')) {
                    item["id"] = json!(item_id);
                }
                // `namespace` (a tool a search loaded), `caller` (a call made by code).
                if let Value::Object(map) = &mut item {
                    for (key, value) in &block.provider_fields {
                        map.entry(key.clone()).or_insert_with(|| value.clone());
                    }
                }
                input.push(item);
            }
            AssistantContent::Provider(block) if block.api == OpenAiResponses::API => {
                input.push(block.block.clone());
            }
            AssistantContent::Provider(_) => {}
        }
    }
}

/// Output items of the API's own that are kept whole and replayed: the search's call and
/// output, and the program of programmatic tool calling.
const KEPT_ITEMS: &[&str] = &[
    "tool_search_call",
    "tool_search_output",
    "program",
    "program_output",
];

/// A `function_call` item's fields besides the ones the call is made of (`namespace`,
/// `caller`).
fn call_fields(item: &Value) -> Map<String, Value> {
    const KNOWN: &[&str] = &["type", "id", "call_id", "name", "arguments", "status"];
    item.as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| !KNOWN.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// Decodes Responses stream events.
///
/// Events name their output item by `output_index` and `item_id`. Some servers send a new
/// `item_id` on every event (GitHub Copilot's Responses endpoint), so the output index is what
/// ties an event to its block; the item id, then the item added last (pi's rule), serve servers
/// that send no index.
#[derive(Debug, Default)]
struct ResponsesDecoder {
    /// Output index to content index.
    by_index: HashMap<u64, usize>,
    /// Item id (as first announced) to content index.
    by_id: HashMap<String, usize>,
    /// The block of the item added last; `None` after an item that has no block (a built-in
    /// tool's call), so that its events go nowhere.
    current: Option<usize>,
    /// Some output item was announced (with or without a block).
    any_item: bool,
    /// The thinking block of the reasoning summary being streamed, and where in its text the
    /// current summary part began.
    summary_part: Option<(usize, usize)>,
}

impl ResponsesDecoder {
    /// The block an event (or a finished item with id `item_id`) belongs to.
    fn block(&self, event: &Value, item_id: Option<&str>) -> Option<usize> {
        if let Some(output_index) = event.get("output_index").and_then(Value::as_u64) {
            return self.by_index.get(&output_index).copied();
        }
        let id = item_id.or_else(|| event.get("item_id").and_then(Value::as_str));
        match id.and_then(|id| self.by_id.get(id)) {
            Some(&index) => Some(index),
            None => self.current,
        }
    }

    /// Opens the block for a new output item (none for items that are not shown, such as a
    /// built-in tool's call).
    fn add_item(&mut self, item: &Value, output_index: Option<u64>, out: &mut Assembler) {
        self.any_item = true;
        let item_id = item.get("id").and_then(Value::as_str).unwrap_or_default();
        let index = match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => {
                out.close_prose();
                let index = out.thinking_start();
                self.summary_part = Some((index, 0));
                index
            }
            Some("message") => {
                out.close_prose();
                out.text_start()
            }
            Some(kind) if KEPT_ITEMS.contains(&kind) => {
                out.close_prose();
                out.provider_start(item.clone())
            }
            Some("function_call") => {
                let call = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                out.close_prose();
                let index = out.tool_start(&format!("{call}|{item_id}"), name);
                out.set_provider_fields(index, call_fields(item));
                if let Some(arguments) = item.get("arguments").and_then(Value::as_str) {
                    out.tool_delta(index, arguments);
                }
                index
            }
            _ => {
                self.current = None;
                return;
            }
        };
        if let Some(output_index) = output_index {
            self.by_index.insert(output_index, index);
        }
        if !item_id.is_empty() {
            self.by_id.insert(item_id.to_owned(), index);
        }
        self.current = Some(index);
    }

    /// A summary part ended: the part's text as the event gives it completes what streamed of
    /// it (a server may send no deltas), then a blank line separates it from the next, as in pi.
    fn summary_part_done(&mut self, index: usize, full: &str, out: &mut Assembler) {
        let Some(AssistantContent::Thinking { thinking, .. }) = out.message().content.get(index)
        else {
            return;
        };
        let start = match self.summary_part {
            Some((block, start)) if block == index => start.min(thinking.len()),
            _ => thinking.len(),
        };
        let streamed = thinking.get(start..).unwrap_or_default();
        if let Some(rest) = full.strip_prefix(streamed) {
            let rest = rest.to_owned();
            out.thinking_delta(index, &rest);
        }
        out.thinking_delta(index, "\n\n");
        let end = match out.message().content.get(index) {
            Some(AssistantContent::Thinking { thinking, .. }) => thinking.len(),
            _ => 0,
        };
        self.summary_part = Some((index, end));
    }

    /// Builds the message from `response.output` when the stream announced no item at all.
    fn add_output(&mut self, output: &[Value], out: &mut Assembler) {
        for (output_index, item) in (0u64..).zip(output) {
            self.add_item(item, Some(output_index), out);
            if let Some(index) = self.by_index.get(&output_index).copied() {
                complete_block(index, item, out);
                finish_item(index, item, out);
            }
        }
    }

    fn finish(&mut self, kind: &str, data: &Value, out: &mut Assembler) {
        let response = data.get("response").unwrap_or(&Value::Null);
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            out.set_usage(responses_usage(usage));
        }
        let status = response
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or(kind.trim_start_matches("response."));
        if matches!(status, "completed" | "incomplete") {
            // What the final response holds where no deltas came.
            let output = response
                .get("output")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            if self.any_item {
                for (output_index, item) in (0u64..).zip(output) {
                    let item_id = item.get("id").and_then(Value::as_str);
                    let index = self
                        .by_index
                        .get(&output_index)
                        .copied()
                        .or_else(|| item_id.and_then(|id| self.by_id.get(id).copied()));
                    if let Some(index) = index {
                        complete_block(index, item, out);
                    }
                }
            } else {
                self.add_output(output, out);
            }
        }
        match status {
            "completed" => out.done(StopReason::Stop),
            "incomplete" => {
                match response
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                {
                    None | Some("max_output_tokens") => out.done(StopReason::Length),
                    Some("content_filter") => out.fail(
                        StopReason::Error,
                        "The provider's content filter stopped the response",
                    ),
                    Some(reason) => out.fail(
                        StopReason::Error,
                        format!("The response is incomplete: {reason}"),
                    ),
                }
            }
            status => {
                let message =
                    error_message(response).unwrap_or_else(|| format!("Response {status}"));
                out.fail(StopReason::Error, message);
            }
        }
    }
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Completes a block from its finished item, as found in `output_item.done` or
/// `response.completed`: a server may send an item whole instead of streaming it, or stream
/// only part of it. The missing rest is emitted as a delta, so the events still rebuild the
/// message; content that does not extend what streamed is left alone.
fn complete_block(index: usize, item: &Value, out: &mut Assembler) {
    if !out.is_open(index) {
        return;
    }
    let strings = |list: &str, fields: &[&str]| -> Vec<String> {
        item.get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|part| {
                fields
                    .iter()
                    .find_map(|field| part.get(*field).and_then(Value::as_str))
                    .map(str::to_owned)
            })
            .collect()
    };
    if matches!(out.message().content[index], AssistantContent::Provider(_)) {
        // The finished item replaces the announced one.
        out.provider_set(index, item.clone());
        return;
    }
    let streamed = match &out.message().content[index] {
        AssistantContent::Text { text, .. } => text.as_str(),
        AssistantContent::Thinking { thinking, .. } => thinking.as_str(),
        AssistantContent::ToolCall(_) => out.tool_arguments(index),
        AssistantContent::Provider(_) => return,
    };
    match item.get("type").and_then(Value::as_str) {
        Some("message") => {
            let full = strings("content", &["text", "refusal"]).concat();
            if let Some(rest) = full.strip_prefix(streamed) {
                let rest = rest.to_owned();
                out.text_delta(index, &rest);
            }
        }
        // Streamed summaries carry a separator after each part; only an empty block is filled.
        Some("reasoning") if out.is_empty_block(index) => {
            let mut thinking = strings("summary", &["text"]).join("\n\n");
            if thinking.is_empty() {
                thinking = strings("content", &["text"]).concat();
            }
            out.thinking_delta(index, &thinking);
        }
        Some("function_call") if out.is_empty_block(index) => {
            if let Some(arguments) = item.get("arguments").and_then(Value::as_str) {
                out.tool_delta(index, arguments);
            }
        }
        _ => {}
    }
}

/// Records what a finished item adds to its block (the reasoning item itself, replayed later;
/// the message's id) and closes the block.
fn finish_item(index: usize, item: &Value, out: &mut Assembler) {
    match item.get("type").and_then(Value::as_str) {
        Some("reasoning") => out.add_thinking_signature(index, &item.to_string(), false),
        Some("message") => {
            if let Some(id) = item.get("id").and_then(Value::as_str) {
                out.set_text_signature(index, id);
            }
        }
        Some("function_call") => out.set_provider_fields(index, call_fields(item)),
        _ => {}
    }
    out.end_block(index);
}

impl WireDecoder for ResponsesDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Assembler) {
        let Some(data) = parse_json(event, out) else {
            return;
        };
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        let text = |field: &str| data.get(field).and_then(Value::as_str).unwrap_or_default();
        match kind {
            "response.created" => {
                if let Some(id) = data.pointer("/response/id").and_then(Value::as_str) {
                    out.set_response_id(id);
                }
            }
            "response.output_item.added" => {
                if let Some(item) = data.get("item") {
                    let output_index = data.get("output_index").and_then(Value::as_u64);
                    self.add_item(item, output_index, out);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(index) = self.block(&data, None) {
                    out.thinking_delta(index, text("delta"));
                }
            }
            "response.reasoning_summary_part.done" => {
                if let Some(index) = self.block(&data, None) {
                    self.summary_part_done(index, str_at(&data, "/part/text"), out);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(index) = self.block(&data, None) {
                    out.text_delta(index, text("delta"));
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(index) = self.block(&data, None) {
                    out.tool_delta(index, text("delta"));
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(index) = self.block(&data, None) {
                    let full = text("arguments");
                    // The final text normally extends what streamed; send the rest as a delta.
                    match full.strip_prefix(out.tool_arguments(index)) {
                        Some(rest) => {
                            let rest = rest.to_owned();
                            out.tool_delta(index, &rest);
                        }
                        None => out.tool_set_arguments(index, full),
                    }
                }
            }
            "response.output_item.done" => {
                let Some(item) = data.get("item") else { return };
                let item_id = item.get("id").and_then(Value::as_str);
                if let Some(index) = self.block(&data, item_id).filter(|&i| out.is_open(i)) {
                    complete_block(index, item, out);
                    finish_item(index, item, out);
                }
            }
            "response.completed"
            | "response.incomplete"
            | "response.failed"
            | "response.cancelled" => self.finish(kind, &data, out),
            "error" => {
                let message = data
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| error_message(&data))
                    .unwrap_or_else(|| data.to_string());
                out.fail(StopReason::Error, message);
            }
            _ => {}
        }
    }

    fn end(&mut self, _out: &mut Assembler) {}
}

fn responses_usage(usage: &Value) -> Usage {
    let number = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    super::usage_with_cached_prompt(
        number(usage.get("input_tokens")),
        number(usage.pointer("/input_tokens_details/cached_tokens")),
        number(usage.get("output_tokens")),
        number(usage.get("total_tokens")),
    )
}

#[cfg(feature = "http")]
impl crate::model::Model for OpenAiResponses {
    model_identity!();

    fn structured_output(&self) -> bool {
        true
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
        let request = super::bearer_request(
            &self.settings,
            options,
            self.settings.base_url == OPENAI_URL,
            "/responses",
            self.request_body(context, options),
        );
        super::strict_fallback::stream(
            &self.settings.strict_tools,
            super::strict_fallback::Dialect::OpenAiResponses,
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
