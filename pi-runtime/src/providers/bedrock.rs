//! AWS Bedrock's Converse API, streamed (`POST /model/{modelId}/converse-stream`, pi's
//! `bedrock-converse-stream` API, provider `amazon-bedrock`): `toolSpec` tools with their JSON
//! schema, `toolUse` calls and `toolResult` results, reasoning content with its signatures,
//! images as bytes, `cachePoint` markers, usage and stop reasons. Models are named by Bedrock
//! ids (`anthropic.claude-sonnet-4-5-20250929-v1:0`), inference profiles
//! (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`) or their ARNs. The response is AWS's binary
//! event stream ([`bedrock_stream`](super::bedrock_stream)); requests are signed with SigV4
//! or a Bedrock API key ([`bedrock_auth`](super::bedrock_auth)).

use pi_tool::{Content, ToolSpec};
use serde_json::{Map, Value, json};

use super::arguments_object;
use super::decode::WireDecoder;
use super::lowering::SchemaMode;
use super::settings::{Settings, settings_builder};
use super::transform::{IdRule, transform};
use crate::message::{AssistantContent, Message};
use crate::model::{Context, StreamOptions, ThinkingLevel, ToolChoice};

/// A model behind AWS Bedrock's ConverseStream.
///
/// ```
/// use pi_runtime::providers::BedrockConverse;
///
/// let model = BedrockConverse::new("us.anthropic.claude-sonnet-4-5-20250929-v1:0").region("us-west-2");
/// assert_eq!(
///     model.endpoint(),
///     "https://bedrock-runtime.us-west-2.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
/// );
/// ```
#[derive(Clone, Debug)]
pub struct BedrockConverse {
    pub(crate) settings: Settings,
    region: Option<String>,
    profile: Option<String>,
    prompt_caching: bool,
    strict: bool,
    credentials: Option<Given>,
    /// The providers made for the profile's credentials, kept across requests.
    profile_providers: super::aws_credentials::ProviderCache,
    client: super::http::LazyClient,
}

settings_builder!(BedrockConverse);

impl BedrockConverse {
    /// The wire API name (pi's).
    pub const API: &'static str = "bedrock-converse-stream";

    /// A model on Bedrock; the region and credentials are read from the environment and the
    /// shared AWS files at each request unless set. `.api_key(..)` (or
    /// `AWS_BEARER_TOKEN_BEDROCK`) signs in with a Bedrock API key.
    pub fn new(model: impl Into<String>) -> Self {
        BedrockConverse {
            settings: Settings::new(
                &model.into(),
                "amazon-bedrock",
                "",
                &["AWS_BEARER_TOKEN_BEDROCK"],
            ),
            region: None,
            profile: None,
            prompt_caching: true,
            strict: false,
            credentials: None,
            profile_providers: Default::default(),
            client: Default::default(),
        }
    }

    /// The AWS region (default: `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`,
    /// else `us-east-1`).
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// The profile of the shared AWS files (default: `AWS_PROFILE`, else `default`).
    pub fn profile(mut self, profile: impl Into<String>) -> Self {
        self.profile = Some(profile.into());
        self
    }

    /// Signs requests with these keys instead of finding them.
    pub fn credentials(mut self, credentials: super::AwsCredentials) -> Self {
        self.credentials = Some(Given::Credentials(credentials));
        self
    }

    /// Signs requests with the credentials `provider` gives, asked at each request, instead
    /// of finding them (your own source of temporary credentials).
    pub fn credentials_provider(
        mut self,
        provider: std::sync::Arc<dyn super::AwsCredentialsProvider>,
    ) -> Self {
        self.credentials = Some(Given::Provider(provider));
        self
    }

    /// Whether the system prompt, the tools and the last user message end with a `cachePoint`
    /// (for the models that cache prompts: Claude and Nova; default true).
    pub fn prompt_caching(mut self, enabled: bool) -> Self {
        self.prompt_caching = enabled;
        self
    }

    /// Whether tools whose schema qualifies for strict mode go with `strict: true` and that
    /// schema (Bedrock's `toolSpec.strict`, for the models that constrain calls to it; default
    /// false). A request Bedrock refuses for its strict-tool limits is sent once more without
    /// them ([`StrictTools`](super::StrictTools)).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Claude models take Anthropic's thinking budget and cache points.
    fn is_claude(&self) -> bool {
        self.settings.model.contains("anthropic.claude")
    }

    fn caches(&self) -> bool {
        self.prompt_caching && (self.is_claude() || self.settings.model.contains("amazon.nova"))
    }

    /// The region as it is now.
    fn region_now(&self, env: &dyn Fn(&str) -> Option<String>) -> String {
        match &self.region {
            Some(region) => region.clone(),
            None => super::bedrock_auth::find_region(env, self.profile.as_deref()),
        }
    }

    /// The URL a request goes to (the model id percent-encoded, as SigV4 signs the path).
    pub fn endpoint(&self) -> String {
        self.endpoint_with(&|name| std::env::var(name).ok())
    }

    fn endpoint_with(&self, env: &dyn Fn(&str) -> Option<String>) -> String {
        let root = if self.settings.base_url.is_empty() {
            format!(
                "https://bedrock-runtime.{}.amazonaws.com",
                self.region_now(env)
            )
        } else {
            self.settings.base_url.clone()
        };
        format!(
            "{root}/model/{}/converse-stream",
            percent_encoded(&self.settings.model)
        )
    }

    /// The JSON body this model would send for a context: for tests and debugging.
    pub fn request_body(&self, context: Context<'_>, options: &StreamOptions) -> Value {
        let target = self.settings.target(Self::API, IdRule::Sanitize64);
        let mut messages: Vec<Value> = Vec::new();
        let mut results: Vec<Value> = Vec::new();
        for message in &transform(context.messages, target) {
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
                    let mut content = content_blocks(&result.content);
                    // Bedrock refuses an empty result.
                    if content.is_empty() {
                        content.push(json!({"text": "(no tool output)"}));
                    }
                    results.push(json!({"toolResult": {
                        "toolUseId": result.tool_call_id,
                        "content": content,
                        "status": if result.is_error { "error" } else { "success" },
                    }}));
                }
                Message::Custom(_) => {}
            }
        }
        if !results.is_empty() {
            messages.push(json!({"role": "user", "content": results}));
        }
        let caches = self.caches();
        if caches
            && let Some(Value::Array(blocks)) = messages
                .iter_mut()
                .rev()
                .find(|m| m["role"] == "user")
                .and_then(|m| m.get_mut("content"))
        {
            blocks.push(json!({"cachePoint": {"type": "default"}}));
        }
        let mut body = Map::new();
        body.insert("messages".into(), Value::Array(messages));
        if !context.system_prompt.is_empty() {
            let mut system = vec![json!({"text": context.system_prompt})];
            if caches {
                system.push(json!({"cachePoint": {"type": "default"}}));
            }
            body.insert("system".into(), Value::Array(system));
        }
        let budget = options
            .thinking
            .filter(|_| self.is_claude())
            .and_then(thinking_budget);
        let mut inference = Map::new();
        let max_tokens = options.max_tokens.or(self.settings.max_tokens);
        match (max_tokens, budget) {
            (Some(max), Some(budget)) => {
                inference.insert("maxTokens".into(), json!(max.saturating_add(budget)));
            }
            (None, Some(budget)) => {
                inference.insert("maxTokens".into(), json!(8192u32.saturating_add(budget)));
            }
            (Some(max), None) => {
                inference.insert("maxTokens".into(), json!(max));
            }
            (None, None) => {}
        }
        // Claude refuses a temperature together with thinking.
        if budget.is_none()
            && let Some(temperature) = options.temperature.and_then(super::decimal)
        {
            inference.insert("temperature".into(), temperature);
        }
        if !inference.is_empty() {
            body.insert("inferenceConfig".into(), Value::Object(inference));
        }
        if let Some(budget) = budget {
            body.insert(
                "additionalModelRequestFields".into(),
                json!({"thinking": {"type": "enabled", "budget_tokens": budget}}),
            );
        }
        if !context.tools.is_empty() {
            let mut tools: Vec<Value> = context
                .tools
                .iter()
                .map(|spec| bedrock_tool(spec, options, self.strict))
                .collect();
            if caches {
                tools.push(json!({"cachePoint": {"type": "default"}}));
            }
            let mut config = json!({"tools": tools});
            // Bedrock has no "none": the tools stay defined (earlier calls need them) and the
            // model chooses.
            if let Some(choice) = options.tool_choice.as_ref().and_then(tool_choice) {
                config["toolChoice"] = choice;
            }
            body.insert("toolConfig".into(), config);
        }
        Value::Object(body)
    }

    pub(crate) fn wire_decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(super::bedrock_stream::BedrockDecoder::default())
    }

    /// A decoder for this model's response stream (AWS's binary event stream): bytes in,
    /// events out, as [`OpenAiCompletions::decoder`](super::OpenAiCompletions::decoder) but
    /// for Bedrock's framing.
    pub fn stream_decoder(&self) -> super::ResponseDecoder {
        super::ResponseDecoder::event_stream(
            self.wire_decoder(),
            Self::API,
            &self.settings.provider,
            &self.settings.model,
        )
        .with_max_argument_bytes(self.settings.max_argument_bytes)
    }
}

/// `%XX` for every byte but the unreserved ones (`:` and `/` of ids and ARNs included).
fn percent_encoded(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// Anthropic's budgets, as `AnthropicMessages` sends them (Claude on Bedrock).
fn thinking_budget(level: ThinkingLevel) -> Option<u32> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some(1024),
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High | ThinkingLevel::XHigh => Some(16384),
    }
}

fn tool_choice(choice: &ToolChoice) -> Option<Value> {
    match choice {
        ToolChoice::Auto
        | ToolChoice::AllowedTools {
            required: false, ..
        } => Some(json!({"auto": {}})),
        ToolChoice::Required | ToolChoice::AllowedTools { required: true, .. } => {
            Some(json!({"any": {}}))
        }
        ToolChoice::Tool(name) => Some(json!({"tool": {"name": name}})),
        ToolChoice::None => None,
    }
}

/// A `toolSpec`: the schema with an object root (Anthropic's lowering, which every Bedrock
/// model takes), as `inputSchema.json`; with `strict`, the strict lowering and `strict: true`
/// where the schema qualifies.
fn bedrock_tool(spec: &ToolSpec, options: &StreamOptions, strict: bool) -> Value {
    let strict_schema = strict
        .then(|| options.tools.lowered(spec, SchemaMode::OpenAiStrict))
        .filter(|lowered| lowered.qualifies());
    match strict_schema {
        Some(lowered) => json!({"toolSpec": {
            "name": spec.name,
            "description": spec.description,
            "inputSchema": {"json": lowered.schema},
            "strict": true,
        }}),
        None => {
            let lowered = options.tools.lowered(spec, SchemaMode::Anthropic);
            json!({"toolSpec": {
                "name": spec.name,
                "description": spec.description,
                "inputSchema": {"json": lowered.schema},
            }})
        }
    }
}

/// `png`, `jpeg`, `gif` or `webp` of an image's MIME type.
fn image_format(mime_type: &str) -> &str {
    match mime_type {
        "image/jpg" | "image/jpeg" => "jpeg",
        other => other.strip_prefix("image/").unwrap_or(other),
    }
}

/// Text and image blocks; empty texts are left out (Bedrock refuses them).
fn content_blocks(content: &[Content]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } if text.is_empty() => None,
            Content::Text { text } => Some(json!({"text": text})),
            Content::Image { data, mime_type } => Some(json!({"image": {
                "format": image_format(mime_type),
                "source": {"bytes": data},
            }})),
        })
        .collect()
}

fn assistant_block(block: &AssistantContent) -> Option<Value> {
    match block {
        AssistantContent::Text { text, .. } if text.trim().is_empty() => None,
        AssistantContent::Text { text, .. } => Some(json!({"text": text})),
        AssistantContent::Thinking {
            thinking,
            thinking_signature,
            redacted,
        } => match (thinking_signature, redacted) {
            (Some(data), true) => Some(json!({"reasoningContent": {"redactedContent": data}})),
            (Some(signature), false) => Some(json!({"reasoningContent": {
                "reasoningText": {"text": thinking, "signature": signature}}})),
            (None, _) if thinking.trim().is_empty() => None,
            (None, _) => Some(json!({"text": thinking})),
        },
        AssistantContent::ToolCall(call) => Some(json!({"toolUse": {
            "toolUseId": call.call.id,
            "name": call.call.name,
            "input": arguments_object(&call.call.arguments),
        }})),
        _ => None,
    }
}

/// A Bedrock error body (`{"message": ..}`, with the type in `x-amzn-errortype`) made readable:
/// `400 Bad Request: {"message":"x"}` becomes `400 Bad Request: x`.
fn readable_error(message: &str) -> String {
    if let Some((status, json)) = message.split_once(": ")
        && let Ok(value) = serde_json::from_str::<Value>(json)
        && let Some(text) = value
            .get("message")
            .or_else(|| value.get("Message"))
            .and_then(Value::as_str)
    {
        return format!("{status}: {text}");
    }
    message.to_owned()
}

impl crate::model::Model for BedrockConverse {
    model_identity!();

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
        use super::bedrock_auth::{BedrockSignIn, FoundSignIn, find_sign_in};

        let env = |name: &str| std::env::var(name).ok();
        let found = match (
            options.api_key.clone().or(self.settings.api_key.clone()),
            &self.credentials,
        ) {
            (Some(key), _) => Ok(FoundSignIn::Ready(BedrockSignIn::ApiKey {
                key,
                source: ".api_key(..)".to_owned(),
            })),
            (None, Some(Given::Credentials(credentials))) => {
                Ok(FoundSignIn::Ready(BedrockSignIn::SigV4 {
                    credentials: credentials.clone(),
                    source: ".credentials(..)".to_owned(),
                }))
            }
            (None, Some(Given::Provider(provider))) => {
                return self.stream_fetching(
                    provider.clone(),
                    ".credentials_provider(..)".to_owned(),
                    context,
                    options,
                );
            }
            (None, None) => find_sign_in(&env, self.profile.as_deref()),
        };
        match found {
            Ok(FoundSignIn::Ready(sign_in)) => self.stream_signed(Ok(sign_in), context, options),
            Ok(FoundSignIn::Profile {
                credentials,
                source,
            }) => {
                let provider = self.profile_providers.provider(&credentials);
                self.stream_fetching(provider, source, context, options)
            }
            Err(message) => self.stream_signed(Err(message), context, options),
        }
    }
}

/// Credentials set on the model instead of found.
#[derive(Clone)]
enum Given {
    Credentials(super::AwsCredentials),
    Provider(super::aws_credentials::SharedProvider),
}

/// The keys' secret is hidden by `AwsCredentials`' own `Debug`.
impl std::fmt::Debug for Given {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Given::Credentials(credentials) => credentials.fmt(f),
            Given::Provider(_) => f.write_str("AwsCredentialsProvider"),
        }
    }
}

/// The longest a provider may take to give credentials (a `credential_process` is killed
/// sooner, after [`PROCESS_TIMEOUT`](super::aws_process::PROCESS_TIMEOUT)).
const CREDENTIALS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(150);

impl BedrockConverse {
    /// Asks `provider` for the credentials first, then streams the request they sign.
    fn stream_fetching<'a>(
        &'a self,
        provider: super::aws_credentials::SharedProvider,
        source: String,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
        use futures_util::StreamExt;
        let prepare = async move {
            // An abort while the credentials are fetched stops the fetch (a process is killed):
            // the request then ends as aborted (the HTTP layer sees the signal first).
            let fetched = tokio::select! {
                () = options.signal.cancelled() => {
                    return self.stream_signed(Err(super::http::ABORTED.to_owned()), context, options);
                }
                fetched = tokio::time::timeout(CREDENTIALS_TIMEOUT, provider.credentials()) => fetched,
            };
            let sign_in = match fetched {
                Ok(Ok(credentials)) => Ok(super::bedrock_auth::BedrockSignIn::SigV4 {
                    credentials,
                    source,
                }),
                Ok(Err(message)) => Err(format!(
                    "Could not get AWS credentials for Bedrock from {source}: {message}"
                )),
                Err(_) => Err(format!(
                    "Could not get AWS credentials for Bedrock from {source}: no answer within {CREDENTIALS_TIMEOUT:?}"
                )),
            };
            self.stream_signed(sign_in, context, options)
        };
        futures_util::stream::once(prepare).flatten().boxed()
    }

    /// Streams the request, signed as `sign_in` says (or the error why it cannot be).
    fn stream_signed<'a>(
        &'a self,
        sign_in: Result<super::bedrock_auth::BedrockSignIn, String>,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
        use super::bedrock_auth::{BedrockSignIn, SIGNING_NAME, SigningScope, sigv4_headers};
        use futures_util::StreamExt;

        let env = |name: &str| std::env::var(name).ok();
        let region = self.region_now(&env);
        let url = self.endpoint_with(&env);
        let body = self.request_body(context, options);
        // Signed at each attempt: the strict-tool fallback may send a changed body.
        let request = sign_in.clone().map(|sign_in| {
            let mut headers = vec![(
                "accept".to_owned(),
                "application/vnd.amazon.eventstream".to_owned(),
            )];
            if let BedrockSignIn::ApiKey { key, .. } = &sign_in {
                headers.push(("authorization".to_owned(), format!("Bearer {key}")));
            }
            super::http::WireRequest {
                url: url.clone(),
                headers,
                body,
            }
        });
        let signer = sign_in.clone().ok();
        let signing_region = region.clone();
        let sign = move |request: super::http::WireRequest| {
            let Some(BedrockSignIn::SigV4 { credentials, .. }) = &signer else {
                return Ok(request);
            };
            let mut request = request;
            let bytes = serde_json::to_vec(&request.body).map_err(|err| err.to_string())?;
            // What the HTTP layer sends that is signed: the type and the host.
            let signed = [("content-type".to_owned(), "application/json".to_owned())];
            let scope = SigningScope {
                credentials,
                region: &signing_region,
                service: SIGNING_NAME,
                time: std::time::SystemTime::now(),
            };
            let headers = sigv4_headers("POST", &request.url, &signed, &bytes, &scope)?;
            request.headers.extend(headers);
            Ok(request)
        };
        let (advice, secrets) = match &sign_in {
            Ok(sign_in) => (
                format!(
                    "check the credentials from {} and the region \"{region}\" (AWS_REGION): \
                     the identity needs bedrock:InvokeModelWithResponseStream on the model, \
                     and the model access must be granted in that region",
                    sign_in.source()
                ),
                sign_in.sent_secret(),
            ),
            Err(_) => (String::new(), None),
        };
        let hint = super::sign_in::KeyHint::with_advice(advice, secrets).when_not_found(format!(
            "check the model id or inference profile \"{}\" and the region \"{region}\" \
                 ({url})",
            self.settings.model
        ));
        let send = move |request: Result<super::http::WireRequest, String>| {
            let signed = request.and_then(&sign);
            super::http::stream(
                &self.client,
                &self.settings,
                signed,
                self.stream_decoder(),
                options,
            )
        };
        // Bedrock's error bodies made readable first, then the hint added (and secrets hidden).
        let events = super::strict_fallback::stream(
            &self.settings.strict_tools,
            super::strict_fallback::Dialect::Bedrock,
            request,
            context.tools,
            options,
            send,
        )
        .map(|event| match event {
            crate::model::AssistantEvent::Error { reason, mut error } => {
                if let Some(message) = &error.error_message {
                    error.error_message = Some(readable_error(message));
                }
                crate::model::AssistantEvent::Error { reason, error }
            }
            other => other,
        })
        .boxed();
        super::sign_in::with_hint(events, hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_and_arns_are_encoded_in_the_path() {
        let arn = BedrockConverse::new(
            "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123",
        )
        .region("us-east-1");
        assert_eq!(
            arn.endpoint(),
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fabc123/converse-stream"
        );
    }
}
