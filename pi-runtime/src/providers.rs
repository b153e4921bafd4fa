//! Real model APIs: OpenAI Chat Completions (and every OpenAI-compatible server), OpenAI
//! Responses, Anthropic Messages, Google Generative AI, Mistral, Azure OpenAI, and Google
//! Vertex AI (Gemini and Claude; signing in needs the `vertex` feature), and AWS Bedrock (the
//! `bedrock` feature).
//!
//! Each provider is a [`Model`](crate::Model) with a builder (base URL, key, timeouts, retries,
//! headers). The wire formats, the schema lowering, the stream decoders and the incremental
//! JSON parser are plain code that compiles without the `http` feature; the HTTP clients
//! (reqwest with rustls) need it.

/// The `Model` methods every HTTP provider answers from its `settings` and its `API` constant.
#[cfg(feature = "http")]
macro_rules! model_identity {
    () => {
        fn api(&self) -> &str {
            Self::API
        }

        fn provider(&self) -> &str {
            &self.settings.provider
        }

        fn id(&self) -> &str {
            &self.settings.model
        }

        fn accepts_images(&self) -> bool {
            self.settings.images
        }
    };
}

mod anthropic;
mod assemble;
#[cfg(feature = "bedrock")]
mod aws_container;
#[cfg(feature = "bedrock")]
mod aws_credentials;
#[cfg(feature = "bedrock")]
mod aws_process;
#[cfg(all(test, feature = "bedrock"))]
mod aws_reference;
#[cfg(feature = "bedrock")]
mod aws_sso;
#[cfg(feature = "bedrock")]
mod aws_sts;
mod azure_openai;
#[cfg(feature = "bedrock")]
mod bedrock;
#[cfg(feature = "bedrock")]
mod bedrock_auth;
#[cfg(feature = "bedrock")]
mod bedrock_stream;
mod decode;
mod entra_id;
mod env;
mod google;
#[cfg(feature = "vertex")]
mod google_auth;
#[cfg(feature = "http")]
mod http;
mod lowering;
mod mistral;
pub(crate) mod native_search;
mod openai_completions;
mod openai_responses;
mod option_conflicts;
mod partial_json;
mod root_union;
mod settings;
#[cfg(feature = "http")]
mod sign_in;
mod sse;
mod strict_fallback;
mod transform;
mod vertex;

pub use anthropic::AnthropicMessages;
#[cfg(feature = "bedrock")]
pub use aws_credentials::{AwsCredentialsFuture, AwsCredentialsProvider, AwsCredentialsResult};
pub use azure_openai::{AzureOpenAiCompletions, AzureOpenAiResponses};
#[cfg(feature = "bedrock")]
pub use bedrock::BedrockConverse;
#[cfg(feature = "bedrock")]
pub use bedrock_auth::AwsCredentials;
pub use decode::ResponseDecoder;
pub use entra_id::{EntraTokenProvider, StaticToken, TokenFuture, TokenResult};
#[cfg(feature = "http")]
pub use env::from_env;
pub use env::{MissingKey, Selection, select_from_env};
pub use google::GoogleGenerativeAi;
#[cfg(feature = "vertex")]
pub use google_auth::{ApplicationDefaultCredentials, GoogleTokenProvider};
#[cfg(feature = "http")]
pub use http::{USER_AGENT, ensure_crypto_provider};
pub use lowering::{CompatibilityReport, Lowered, SchemaMode, SchemaProblem, lower_schema};
pub use mistral::MistralChat;
pub use openai_completions::{CompletionsCompat, OpenAiCompletions};
pub use openai_responses::OpenAiResponses;
pub use option_conflicts::OptionConflict;
pub use partial_json::PartialJson;
pub use sse::{SseDecoder, SseEvent};
pub use strict_fallback::{StrictFallback, StrictPreference, StrictTools};
pub use vertex::{VertexAnthropic, VertexGemini};

use pi_tool::Content;
use serde_json::Value;

/// The text blocks of a content list joined with `\n`.
/// Usage from APIs whose prompt count includes the cached tokens (OpenAI, Gemini): those are
/// moved to `cache_read`, and the total is never less than prompt plus output.
fn usage_with_cached_prompt(prompt: u64, cached: u64, output: u64, total: u64) -> pi_tool::Usage {
    pi_tool::Usage::new(prompt.saturating_sub(cached), output)
        .with_cache(cached, 0)
        .with_total_tokens(total.max(prompt + output))
}

fn text_of(content: &[Content]) -> String {
    let texts: Vec<&str> = content.iter().filter_map(Content::as_text).collect();
    texts.join("\n")
}

/// `data:<mime>;base64,<data>`.
fn image_data_url(data: &str, mime_type: &str) -> String {
    format!("data:{mime_type};base64,{data}")
}

/// A sampling parameter as the user wrote it: an `f32` goes out through its shortest decimal
/// form (`0.3`, where widening to `f64` would send `0.30000001192092896`). NaN and infinity,
/// which JSON cannot carry, are left out of the request.
fn decimal(value: f32) -> Option<Value> {
    if !value.is_finite() {
        tracing::warn!(%value, "a non-finite sampling parameter is not sent");
        return None;
    }
    let shortest: f64 = value.to_string().parse().ok()?;
    serde_json::Number::from_f64(shortest).map(Value::Number)
}

/// Tool-call arguments as the JSON text OpenAI expects (raw text that never parsed is sent
/// back as it came).
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// Tool-call arguments as the object Anthropic and Gemini expect.
fn arguments_object(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(value @ Value::Object(_)) => value,
            _ => Value::Object(Default::default()),
        },
        _ => Value::Object(Default::default()),
    }
}

/// The message of a request that cannot be sent for want of a key.
#[cfg(feature = "http")]
fn missing_key_message(settings: &settings::Settings) -> String {
    let variables = settings.api_key_env.join(" or ");
    if variables.is_empty() {
        format!(
            "No API key for provider \"{}\": set one with .api_key(..)",
            settings.provider
        )
    } else {
        format!(
            "No API key for provider \"{}\": set {variables} (or pass one with .api_key(..))",
            settings.provider
        )
    }
}

/// An OpenAI-style request: `Authorization: Bearer <key>`; the key may be absent only when the
/// endpoint is not the provider's own (a local server).
#[cfg(feature = "http")]
fn bearer_request(
    settings: &settings::Settings,
    options: &crate::StreamOptions,
    key_required: bool,
    path: &str,
    body: Value,
) -> Result<http::WireRequest, String> {
    let mut headers = Vec::new();
    match settings.resolve_key(options.api_key.as_deref()) {
        Some(key) => headers.push(("authorization".to_owned(), format!("Bearer {key}"))),
        None if key_required => return Err(missing_key_message(settings)),
        None => {}
    }
    Ok(http::WireRequest {
        url: format!("{}{path}", settings.base_url),
        headers,
        body,
    })
}
