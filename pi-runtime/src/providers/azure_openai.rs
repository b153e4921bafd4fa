//! Azure OpenAI: OpenAI's Responses and Chat Completions wires at an Azure resource, with
//! Azure's endpoints (the `v1` API, `https://{resource}.openai.azure.com/openai/v1/...`, or a
//! dated `api-version` with deployment URLs), its `api-key` header or a Microsoft Entra ID
//! bearer token, deployments named apart from models, and its content filter.
//!
//! The bodies and decoders are OpenAI's (`openai_responses`, `openai_completions`); this file
//! only says where a request goes, how it is signed, and what Azure's refusals mean.

// Without HTTP there are no requests: only the bodies and decoders are used.
#![cfg_attr(not(feature = "http"), allow(dead_code))]

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::assemble::Assembler;
use super::decode::WireDecoder;
use super::entra_id::EntraTokenProvider;
use super::openai_completions::{CompletionsCompat, CompletionsDecoder, OpenAiCompletions};
use super::openai_responses::OpenAiResponses;
use super::settings::{Settings, settings_builder};
use super::sse::SseEvent;
use crate::message::StopReason;
use crate::model::{Context, StreamOptions};

/// The variable with the key (`api-key` header).
const KEY_VARIABLE: &str = "AZURE_OPENAI_API_KEY";
/// The endpoint, e.g. `https://my-resource.openai.azure.com/openai/v1`.
const BASE_URL_VARIABLE: &str = "AZURE_OPENAI_BASE_URL";
/// The resource name, when no base URL is set.
const RESOURCE_VARIABLE: &str = "AZURE_OPENAI_RESOURCE_NAME";
/// A dated API version (`2024-10-21`); unset or `v1` is the `v1` API.
const API_VERSION_VARIABLE: &str = "AZURE_OPENAI_API_VERSION";
/// pi's `model=deployment,model=deployment` map.
const DEPLOYMENTS_VARIABLE: &str = "AZURE_OPENAI_DEPLOYMENT_NAME_MAP";

/// Where the requests of an Azure model go and how they are signed.
#[derive(Clone, Default)]
struct Azure {
    api_version: Option<String>,
    deployment: Option<String>,
    token_provider: Option<Arc<dyn EntraTokenProvider>>,
}

impl std::fmt::Debug for Azure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Azure")
            .field("api_version", &self.api_version)
            .field("deployment", &self.deployment)
            .field(
                "token_provider",
                &self.token_provider.as_ref().map(|_| ".."),
            )
            .finish()
    }
}

/// Which of the two wires a request is for.
#[derive(Clone, Copy)]
enum Wire {
    Responses,
    Completions,
}

/// A resolved endpoint.
struct Endpoint {
    url: String,
    deployment: String,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

impl Azure {
    /// The deployment for `model`: the one set, else `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`'s, else
    /// the model id.
    fn deployment(&self, model: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
        if let Some(deployment) = &self.deployment {
            return deployment.clone();
        }
        lookup(DEPLOYMENTS_VARIABLE)
            .and_then(|map| {
                map.split(',').find_map(|entry| {
                    let (id, deployment) = entry.split_once('=')?;
                    (id.trim() == model && !deployment.trim().is_empty())
                        .then(|| deployment.trim().to_owned())
                })
            })
            .unwrap_or_else(|| model.to_owned())
    }

    /// The URL and deployment of a request, from the settings and then the environment.
    fn endpoint(
        &self,
        settings: &Settings,
        wire: Wire,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Endpoint, String> {
        let base = if settings.base_url.is_empty() {
            lookup(BASE_URL_VARIABLE)
                .or_else(|| {
                    lookup(RESOURCE_VARIABLE)
                        .map(|name| format!("https://{name}.openai.azure.com/openai/v1"))
                })
                .ok_or_else(|| {
                    format!(
                        "No Azure OpenAI endpoint for provider \"{}\": set {BASE_URL_VARIABLE} \
                         (https://<resource>.openai.azure.com/openai/v1) or {RESOURCE_VARIABLE} \
                         (or call .resource(..) or .base_url(..))",
                        settings.provider
                    )
                })?
        } else {
            settings.base_url.clone()
        };
        let base = base.trim_end_matches('/');
        let deployment = self.deployment(&settings.model, lookup);
        let version = self
            .api_version
            .clone()
            .or_else(|| lookup(API_VERSION_VARIABLE))
            .filter(|v| v != "v1");
        let url = match version {
            None => {
                // A bare resource URL gets the v1 API's path (as pi does).
                let base = match azure_root(base) {
                    Some(root) => format!("{root}/openai/v1"),
                    None => base.to_owned(),
                };
                match wire {
                    Wire::Responses => format!("{base}/responses"),
                    Wire::Completions => format!("{base}/chat/completions"),
                }
            }
            Some(version) => {
                let root = base
                    .strip_suffix("/openai/v1")
                    .or_else(|| base.strip_suffix("/openai"))
                    .unwrap_or(base);
                let version = percent_encoded(&version);
                match wire {
                    Wire::Responses => format!("{root}/openai/responses?api-version={version}"),
                    Wire::Completions => format!(
                        "{root}/openai/deployments/{}/chat/completions?api-version={version}",
                        percent_encoded(&deployment)
                    ),
                }
            }
        };
        Ok(Endpoint { url, deployment })
    }

    /// The sign-in header: a bearer token from the token provider, else `api-key`.
    #[cfg(feature = "http")]
    async fn auth_header(
        &self,
        settings: &Settings,
        options: &StreamOptions,
    ) -> Result<(String, String), String> {
        if options.api_key.is_none()
            && let Some(provider) = &self.token_provider
        {
            let token = tokio::time::timeout(settings.first_byte_timeout, provider.token())
                .await
                .map_err(|_| {
                    format!(
                        "No Entra ID token within {:?} (the token provider did not answer)",
                        settings.first_byte_timeout
                    )
                })?
                .map_err(|err| format!("Could not get a Microsoft Entra ID token: {err}"))?;
            return Ok(("authorization".to_owned(), format!("Bearer {token}")));
        }
        match settings.resolve_key(options.api_key.as_deref()) {
            Some(key) => Ok(("api-key".to_owned(), key)),
            None => Err(format!(
                "No API key for provider \"{}\": set {} (or pass one with .api_key(..)), or sign \
                 in with Microsoft Entra ID through .token_provider(..)",
                settings.provider,
                settings.api_key_env.join(" or ")
            )),
        }
    }
}

/// `https://{resource}.openai.azure.com` (or `.cognitiveservices.azure.com`) of a base URL that
/// names only the resource (no path, or `/openai`).
fn azure_root(base: &str) -> Option<&str> {
    let (scheme, rest) = base.split_once("://")?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let azure =
        host.ends_with(".openai.azure.com") || host.ends_with(".cognitiveservices.azure.com");
    (azure && matches!(path, "" | "openai")).then(|| &base[..scheme.len() + 3 + host.len()])
}

/// A query or path value with everything but unreserved characters percent-encoded.
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

/// The builder methods both Azure types have.
macro_rules! azure_builder {
    ($provider:ty) => {
        impl $provider {
            /// The Azure resource: requests go to
            /// `https://{name}.openai.azure.com/openai/v1/...` (or, with a dated
            /// [`api_version`](Self::api_version), its deployment URLs).
            pub fn resource(self, name: &str) -> Self {
                self.base_url(format!("https://{name}.openai.azure.com/openai/v1"))
            }

            /// A dated API version (`2024-10-21`, `2025-04-01-preview`): requests go to
            /// `/openai/deployments/{deployment}/chat/completions?api-version=..` (Chat
            /// Completions) or `/openai/responses?api-version=..` (Responses) under the
            /// resource. Default: `AZURE_OPENAI_API_VERSION`, else the `v1` API.
            pub fn api_version(mut self, version: impl Into<String>) -> Self {
                self.azure.api_version = Some(version.into());
                self
            }

            /// The deployment that serves the model (default: `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`'s
            /// entry for the model, `gpt-5=my-gpt5,...`, else the model id).
            pub fn deployment(mut self, name: impl Into<String>) -> Self {
                self.azure.deployment = Some(name.into());
                self
            }

            /// Signs in with Microsoft Entra ID: every request asks the provider for a token
            /// and sends it as `Authorization: Bearer ..` instead of an `api-key` (a
            /// per-request `StreamOptions::api_key` still wins).
            pub fn token_provider(mut self, provider: Arc<dyn EntraTokenProvider>) -> Self {
                self.azure.token_provider = Some(provider);
                self
            }

            /// Signs in with a fixed Entra ID token ([`StaticToken`](super::StaticToken)).
            pub fn bearer_token(self, token: impl Into<String>) -> Self {
                self.token_provider(Arc::new(super::StaticToken::new(token)))
            }
        }
    };
}

/// A model of OpenAI's served by Azure OpenAI through the Responses API (pi's
/// `azure-openai-responses`).
///
/// ```
/// # #[cfg(feature = "http")] {
/// use pi_runtime::Model;
/// use pi_runtime::providers::AzureOpenAiResponses;
///
/// // Key from AZURE_OPENAI_API_KEY; endpoint from AZURE_OPENAI_BASE_URL or
/// // AZURE_OPENAI_RESOURCE_NAME unless set here.
/// let model = AzureOpenAiResponses::new("gpt-5").resource("my-resource").deployment("my-gpt5");
/// assert_eq!((model.api(), model.provider()), ("azure-openai-responses", "azure-openai-responses"));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct AzureOpenAiResponses {
    pub(crate) settings: Settings,
    azure: Azure,
    strict: bool,
    #[cfg(feature = "http")]
    client: super::http::LazyClient,
}

settings_builder!(AzureOpenAiResponses);
azure_builder!(AzureOpenAiResponses);

impl AzureOpenAiResponses {
    /// The wire API name (pi's).
    pub const API: &'static str = "azure-openai-responses";

    /// The model `model` (its deployment by default has the same name).
    pub fn new(model: impl Into<String>) -> Self {
        AzureOpenAiResponses {
            settings: Settings::new(&model.into(), Self::API, "", &[KEY_VARIABLE]),
            azure: Azure::default(),
            strict: true,
            #[cfg(feature = "http")]
            client: Default::default(),
        }
    }

    /// As [`OpenAiResponses::strict`] (default on).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    fn openai(&self) -> OpenAiResponses {
        let mut openai = OpenAiResponses::new("").strict(self.strict);
        openai.settings = self.settings.clone();
        openai
    }

    /// The JSON body this model would send for a context (its `model` is the deployment).
    pub fn request_body(&self, context: Context<'_>, options: &StreamOptions) -> Value {
        let mut body = self.openai().request_body_as(Self::API, context, options);
        body["model"] = Value::String(self.azure.deployment(&self.settings.model, &env));
        body
    }

    fn wire_decoder(&self) -> Box<dyn WireDecoder> {
        self.openai().wire_decoder()
    }
}

/// A model of OpenAI's served by Azure OpenAI through Chat Completions (also the models of
/// Azure AI Foundry that speak it). Azure's content filter ending a response is an error that
/// names the filtered categories.
///
/// ```
/// # #[cfg(feature = "http")] {
/// use pi_runtime::Model;
/// use pi_runtime::providers::AzureOpenAiCompletions;
///
/// let model = AzureOpenAiCompletions::new("gpt-4o")
///     .base_url("https://my-resource.openai.azure.com")
///     .api_version("2024-10-21")
///     .bearer_token("eyJ0eXAi...");
/// assert_eq!(model.api(), "azure-openai-completions");
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct AzureOpenAiCompletions {
    pub(crate) settings: Settings,
    azure: Azure,
    compat: CompletionsCompat,
    #[cfg(feature = "http")]
    client: super::http::LazyClient,
}

settings_builder!(AzureOpenAiCompletions);
azure_builder!(AzureOpenAiCompletions);

impl AzureOpenAiCompletions {
    /// The wire API name.
    pub const API: &'static str = "azure-openai-completions";

    /// The model `model` (its deployment by default has the same name).
    pub fn new(model: impl Into<String>) -> Self {
        AzureOpenAiCompletions {
            settings: Settings::new(&model.into(), "azure-openai", "", &[KEY_VARIABLE]),
            azure: Azure::default(),
            // OpenAI's own flags: Azure serves OpenAI's models.
            compat: CompletionsCompat::default(),
            #[cfg(feature = "http")]
            client: Default::default(),
        }
    }

    /// Sets the compatibility flags (default: OpenAI's, as for `api.openai.com`).
    pub fn compat(mut self, compat: CompletionsCompat) -> Self {
        self.compat = compat;
        self
    }

    fn openai(&self) -> OpenAiCompletions {
        let mut openai = OpenAiCompletions::new("").compat(self.compat.clone());
        openai.settings = self.settings.clone();
        openai
    }

    /// The JSON body this model would send for a context (its `model` is the deployment).
    pub fn request_body(&self, context: Context<'_>, options: &StreamOptions) -> Value {
        let mut body = self.openai().request_body_as(Self::API, context, options);
        body["model"] = Value::String(self.azure.deployment(&self.settings.model, &env));
        body
    }

    fn wire_decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(ContentFilterDecoder::default())
    }
}

/// Chat Completions chunks with Azure's content-filter results: the categories a filter
/// flagged (`"filtered": true` in `content_filter_results` of a choice or in
/// `prompt_filter_results`) name the error when `finish_reason` is `content_filter`.
#[derive(Debug, Default)]
struct ContentFilterDecoder {
    chunks: CompletionsDecoder,
    flagged: BTreeSet<String>,
}

impl ContentFilterDecoder {
    fn read_filters(&mut self, chunk: &Value) -> bool {
        let mut results: Vec<&Value> = Vec::new();
        let mut stopped = false;
        for choice in chunk
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            results.extend(choice.get("content_filter_results"));
            stopped |=
                choice.get("finish_reason").and_then(Value::as_str) == Some("content_filter");
        }
        for prompt in chunk
            .get("prompt_filter_results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            results.extend(prompt.get("content_filter_results"));
        }
        for result in results.into_iter().filter_map(Value::as_object) {
            for (category, verdict) in result {
                if verdict.get("filtered").and_then(Value::as_bool) == Some(true) {
                    let severity = verdict.get("severity").and_then(Value::as_str);
                    self.flagged.insert(match severity {
                        Some(severity) => format!("{category} ({severity})"),
                        None => category.clone(),
                    });
                }
            }
        }
        stopped
    }
}

impl WireDecoder for ContentFilterDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Assembler) {
        // Every Azure chunk carries filter results; only a flagged one or a filter's finish
        // is read twice.
        let data = event.data.as_str();
        let interesting = data.contains("\"filtered\":true")
            || data.contains("\"filtered\": true")
            || data.contains("\"content_filter\"");
        let stopped = interesting
            && serde_json::from_str::<Value>(data).is_ok_and(|chunk| self.read_filters(&chunk));
        self.chunks.event(event, out);
        if stopped && !out.is_finished() {
            let mut message = "Azure's content filter stopped the response".to_owned();
            if !self.flagged.is_empty() {
                let flagged: Vec<&str> = self.flagged.iter().map(String::as_str).collect();
                message.push_str(&format!(": {}", flagged.join(", ")));
            }
            out.fail(StopReason::Error, message);
        }
    }

    fn end(&mut self, out: &mut Assembler) {
        self.chunks.end(out);
    }
}

/// A request body and the tools it was built from (for the strict-tool fallback).
#[cfg(feature = "http")]
struct Outgoing<'a> {
    body: Value,
    tools: &'a [pi_tool::ToolSpec],
}

/// The stream of one Azure request: signs it (a token provider may take a while), then sends
/// it as any other, once more without `strict` on the tools Azure refuses strict (as OpenAI's).
#[cfg(feature = "http")]
fn azure_stream<'a>(
    client: &'a super::http::LazyClient,
    settings: &'a Settings,
    azure: &'a Azure,
    wire: Wire,
    outgoing: Outgoing<'a>,
    decoder: impl Fn() -> super::ResponseDecoder + Send + Sync + 'a,
    options: &'a StreamOptions,
) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
    use futures_util::StreamExt;
    let Outgoing { body, tools } = outgoing;
    let prepare = async move {
        let endpoint = azure.endpoint(settings, wire, &env);
        let deployment = endpoint.as_ref().map(|e| e.deployment.clone()).ok();
        let mut secret = None;
        let request = match endpoint {
            Err(message) => Err(message),
            Ok(endpoint) => azure.auth_header(settings, options).await.map(|header| {
                secret = Some(header.1.trim_start_matches("Bearer ").to_owned());
                super::http::WireRequest {
                    url: endpoint.url,
                    headers: vec![header],
                    body,
                }
            }),
        };
        let advice = if azure.token_provider.is_some() && options.api_key.is_none() {
            "check the Entra ID token: its audience must be https://cognitiveservices.azure.com \
             and the identity needs an Azure OpenAI role on the resource"
                .to_owned()
        } else {
            format!("check {KEY_VARIABLE} (or the key passed with .api_key(..))")
        };
        let mut hint = super::sign_in::KeyHint::with_advice(advice, secret);
        if let (Ok(request), Some(deployment)) = (&request, deployment) {
            hint = hint.when_not_found(format!(
                "check the deployment \"{deployment}\" (.deployment(..) or {DEPLOYMENTS_VARIABLE}) \
                 and the endpoint {} ({BASE_URL_VARIABLE}, {RESOURCE_VARIABLE}, {API_VERSION_VARIABLE})",
                request.url
            ));
        }
        let dialect = match wire {
            Wire::Responses => super::strict_fallback::Dialect::OpenAiResponses,
            Wire::Completions => super::strict_fallback::Dialect::OpenAiCompletions,
        };
        let events = super::strict_fallback::stream(
            &settings.strict_tools,
            dialect,
            request,
            tools,
            options,
            move |request| super::http::stream(client, settings, request, decoder(), options),
        );
        super::sign_in::with_hint(events, hint)
    };
    futures_util::stream::once(prepare).flatten().boxed()
}

#[cfg(feature = "http")]
impl crate::model::Model for AzureOpenAiResponses {
    model_identity!();

    fn structured_output(&self) -> bool {
        true
    }

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
        azure_stream(
            &self.client,
            &self.settings,
            &self.azure,
            Wire::Responses,
            Outgoing {
                body: self.request_body(context, options),
                tools: context.tools,
            },
            move || self.decoder(),
            options,
        )
    }
}

#[cfg(feature = "http")]
impl crate::model::Model for AzureOpenAiCompletions {
    model_identity!();

    fn structured_output(&self) -> bool {
        true
    }

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
        azure_stream(
            &self.client,
            &self.settings,
            &self.azure,
            Wire::Completions,
            Outgoing {
                body: self.request_body(context, options),
                tools: context.tools,
            },
            move || self.decoder(),
            options,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn url(
        model: &AzureOpenAiCompletions,
        wire: Wire,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, String> {
        model
            .azure
            .endpoint(&model.settings, wire, env)
            .map(|e| e.url)
    }

    #[test]
    fn endpoints_follow_the_resource_version_and_deployment() {
        let none = lookup(&[]);
        let model = AzureOpenAiCompletions::new("gpt-4o").resource("acme");
        assert_eq!(
            url(&model, Wire::Completions, &none).unwrap(),
            "https://acme.openai.azure.com/openai/v1/chat/completions"
        );
        assert_eq!(
            url(&model, Wire::Responses, &none).unwrap(),
            "https://acme.openai.azure.com/openai/v1/responses"
        );
        let dated = model
            .clone()
            .api_version("2024-10-21")
            .deployment("prod 4o");
        assert_eq!(
            url(&dated, Wire::Completions, &none).unwrap(),
            "https://acme.openai.azure.com/openai/deployments/prod%204o/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            url(&dated, Wire::Responses, &none).unwrap(),
            "https://acme.openai.azure.com/openai/responses?api-version=2024-10-21"
        );
        // A bare resource URL gets the v1 path; the environment fills what is not set.
        let bare = AzureOpenAiCompletions::new("gpt-4o")
            .base_url("https://acme.cognitiveservices.azure.com/");
        assert_eq!(
            url(&bare, Wire::Completions, &none).unwrap(),
            "https://acme.cognitiveservices.azure.com/openai/v1/chat/completions"
        );
        let from_env = AzureOpenAiCompletions::new("gpt-4o");
        let env = lookup(&[
            ("AZURE_OPENAI_RESOURCE_NAME", "beta"),
            ("AZURE_OPENAI_API_VERSION", "2025-04-01-preview"),
            (
                "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
                "gpt-5=big, gpt-4o = small",
            ),
        ]);
        assert_eq!(
            url(&from_env, Wire::Completions, &env).unwrap(),
            "https://beta.openai.azure.com/openai/deployments/small/chat/completions?api-version=2025-04-01-preview"
        );
        let missing = url(&from_env, Wire::Completions, &none).unwrap_err();
        assert!(
            missing.contains("AZURE_OPENAI_BASE_URL")
                && missing.contains("AZURE_OPENAI_RESOURCE_NAME"),
            "{missing}"
        );
    }
}
