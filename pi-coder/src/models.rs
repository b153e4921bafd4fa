//! The models `pi` knows, as pi 0.73.1's `ModelRegistry` knows them: the built-in catalog of the
//! providers this crate speaks (OpenAI, Anthropic, Google, Mistral, Azure OpenAI, Amazon
//! Bedrock, Google Vertex AI;
//! `models/catalog-pi-0.73.1.json`,
//! written from pi's own `MODELS` by `models/record.mjs`), plus the providers and models of
//! `models.json`. Each model comes with what the agent needs besides its id: the context window
//! (compaction), the output limit, whether it reasons (thinking levels), whether it reads
//! images, and its price (the cost shown for a session).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use pi_runtime::providers::{
    AnthropicMessages, AzureOpenAiResponses, BedrockConverse, CompletionsCompat,
    GoogleGenerativeAi, MistralChat, OpenAiCompletions, OpenAiResponses, VertexAnthropic,
    VertexGemini,
};
use pi_runtime::{AssistantEvent, AssistantMessage, Context, Model, StreamOptions, ThinkingLevel};
use pi_tool::Usage;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::{ModelCost, ModelsConfig, ProviderConfig, resolve_config_value};

/// The providers of the built-in catalog.
pub const BUILT_IN_PROVIDERS: [&str; 7] = [
    "openai",
    "anthropic",
    "google",
    "mistral",
    "azure-openai-responses",
    "amazon-bedrock",
    "google-vertex",
];

/// Claude on Vertex AI: Anthropic's API (`anthropic-messages`) under this provider name is
/// sent to Vertex (pi 0.73.1's catalog has no models of it; name them in `models.json` or with
/// `--model`).
pub const VERTEX_ANTHROPIC: &str = "google-vertex-anthropic";

/// The wire APIs this crate speaks.
pub const SUPPORTED_APIS: [&str; 8] = [
    OpenAiCompletions::API,
    OpenAiResponses::API,
    AnthropicMessages::API,
    GoogleGenerativeAi::API,
    MistralChat::API,
    AzureOpenAiResponses::API,
    BedrockConverse::API,
    VertexGemini::API,
];

/// pi's built-in catalog for [`BUILT_IN_PROVIDERS`].
const CATALOG: &str = include_str!("models/catalog-pi-0.73.1.json");

/// A custom model's context window when `models.json` names none (pi's default).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// A custom model's output limit when `models.json` names none (pi's default).
pub const DEFAULT_MAX_TOKENS: u64 = 16_384;
/// pi never asks for more output than this by default (`buildBaseOptions`).
const MAX_TOKENS_CAP: u64 = 32_000;

/// pi's default model per built-in provider (`defaultModelPerProvider`).
const PI_DEFAULT_MODELS: [(&str, &str); 7] = [
    ("anthropic", "claude-opus-4-7"),
    ("openai", "gpt-5.4"),
    ("google", "gemini-3.1-pro-preview"),
    ("mistral", "devstral-medium-latest"),
    ("azure-openai-responses", "gpt-5.4"),
    ("amazon-bedrock", "us.anthropic.claude-opus-4-6-v1"),
    ("google-vertex", "gemini-3.1-pro-preview"),
];

/// A model and what is known about it, serialized as pi's `Model` (RPC's `get_state`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// The id sent to the provider.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Wire API.
    pub api: String,
    /// Provider name (`openai`, or a `models.json` provider).
    pub provider: String,
    /// Endpoint.
    pub base_url: String,
    /// Whether it reasons.
    pub reasoning: bool,
    /// What each thinking level is called for it; `null` marks a level it lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<Map<String, Value>>,
    /// `text`, and `image` when it reads images.
    pub input: Vec<String>,
    /// US dollars per million tokens.
    pub cost: ModelCost,
    /// Context window in tokens.
    pub context_window: u64,
    /// Output limit in tokens.
    pub max_tokens: u64,
    /// Compatibility flags (`models.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Map<String, Value>>,
    /// Extra HTTP headers (`models.json`; values resolved at request time).
    #[serde(skip)]
    pub headers: BTreeMap<String, String>,
}

impl ModelInfo {
    /// What is assumed of a model nothing is known about (pi's defaults for a custom model):
    /// a 128k context window, 16k output, text only, no reasoning, free.
    pub fn generic(provider: &str, id: &str, api: &str, base_url: &str) -> ModelInfo {
        ModelInfo {
            id: id.to_owned(),
            name: id.to_owned(),
            api: api.to_owned(),
            provider: provider.to_owned(),
            base_url: base_url.to_owned(),
            reasoning: false,
            thinking_level_map: None,
            input: vec!["text".into()],
            cost: ModelCost::default(),
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_tokens: DEFAULT_MAX_TOKENS,
            compat: None,
            headers: BTreeMap::new(),
        }
    }

    /// Whether it reads images.
    pub fn accepts_images(&self) -> bool {
        self.input.iter().any(|i| i == "image")
    }

    /// pi's `getSupportedThinkingLevels`: `off` alone for a model that does not reason; else
    /// `off` to `high`, without those its map sets to `null`, and `xhigh` only where its map
    /// names it.
    pub fn thinking_levels(&self) -> Vec<ThinkingLevel> {
        if !self.reasoning {
            return vec![ThinkingLevel::Off];
        }
        ThinkingLevel::ALL
            .into_iter()
            .filter(|level| {
                let mapped = self
                    .thinking_level_map
                    .as_ref()
                    .and_then(|m| m.get(level.as_str()));
                match mapped {
                    Some(Value::Null) => false,
                    None => *level != ThinkingLevel::XHigh,
                    Some(_) => true,
                }
            })
            .collect()
    }

    /// pi's `clampThinkingLevel`: the level if the model has it, else the next one up it has,
    /// else the next one down.
    pub fn clamp_thinking(&self, level: ThinkingLevel) -> ThinkingLevel {
        let levels = self.thinking_levels();
        if levels.contains(&level) {
            return level;
        }
        let at = ThinkingLevel::ALL
            .iter()
            .position(|l| *l == level)
            .unwrap_or_default();
        ThinkingLevel::ALL[at..]
            .iter()
            .chain(ThinkingLevel::ALL[..at].iter().rev())
            .find(|l| levels.contains(l))
            .copied()
            .unwrap_or(ThinkingLevel::Off)
    }

    /// pi's `calculateCost`: the price of `usage` at this model's rates.
    pub fn cost_of(&self, usage: &Usage) -> pi_tool::Cost {
        let per = |tokens: u64, rate: f64| tokens as f64 * rate / 1_000_000.0;
        let input = per(usage.input, self.cost.input);
        let output = per(usage.output, self.cost.output);
        let cache_read = per(usage.cache_read, self.cost.cache_read);
        let cache_write = per(usage.cache_write, self.cost.cache_write);
        pi_tool::Cost::new(input, output).with_cache(cache_read, cache_write)
    }

    /// The output limit asked for by default: the model's, at most 32,000 (pi's
    /// `buildBaseOptions`).
    pub fn default_max_tokens(&self) -> Option<u32> {
        (self.max_tokens > 0)
            .then(|| u32::try_from(self.max_tokens.min(MAX_TOKENS_CAP)).unwrap_or(u32::MAX))
    }
}

/// Every model: the catalog's and `models.json`'s.
#[derive(Clone, Debug, Default)]
pub struct ModelRegistry {
    models: Vec<ModelInfo>,
    providers: BTreeMap<String, ProviderConfig>,
    /// Why `models.json` was ignored, when it was.
    pub error: Option<String>,
}

impl ModelRegistry {
    /// The catalog, with `models.json` of `agent_dir` applied (overrides of built-in providers,
    /// custom providers and models; a custom model replaces a built-in one of the same id).
    pub fn load(agent_dir: &std::path::Path) -> ModelRegistry {
        let (config, error) = match ModelsConfig::load(agent_dir) {
            Ok(config) => (config, None),
            Err(error) => (ModelsConfig::default(), Some(error)),
        };
        ModelRegistry::from_config(config, error)
    }

    /// The catalog with `config` applied.
    pub fn from_config(config: ModelsConfig, error: Option<String>) -> ModelRegistry {
        let mut models: Vec<ModelInfo> = serde_json::from_str(CATALOG).unwrap_or_default();
        let vertex_claude = vertex_anthropic_models(&models);
        models.extend(vertex_claude);
        for model in &mut models {
            let Some(provider) = config.providers.get(&model.provider) else {
                continue;
            };
            if let Some(url) = &provider.base_url {
                model.base_url.clone_from(url);
            }
            model.compat = merge(model.compat.take(), provider.compat.as_ref());
            if let Some(over) = provider
                .model_overrides
                .as_ref()
                .and_then(|o| o.get(&model.id))
            {
                apply_override(model, over);
            }
        }
        for (name, provider) in &config.providers {
            let built_in = models.iter().find(|m| &m.provider == name).cloned();
            for definition in provider.models.as_deref().unwrap_or_default() {
                let api = definition
                    .api
                    .clone()
                    .or_else(|| provider.api.clone())
                    .or_else(|| built_in.as_ref().map(|m| m.api.clone()));
                let base_url = definition
                    .base_url
                    .clone()
                    .or_else(|| provider.base_url.clone())
                    .or_else(|| built_in.as_ref().map(|m| m.base_url.clone()));
                let (Some(api), Some(base_url)) = (api, base_url) else {
                    continue;
                };
                let mut model = ModelInfo::generic(name, &definition.id, &api, &base_url);
                if let Some(name) = &definition.name {
                    model.name.clone_from(name);
                }
                model.reasoning = definition.reasoning.unwrap_or(false);
                model
                    .thinking_level_map
                    .clone_from(&definition.thinking_level_map);
                if let Some(input) = &definition.input {
                    model.input.clone_from(input);
                }
                model.cost = definition.cost.unwrap_or_default();
                model.context_window = definition.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW);
                model.max_tokens = definition.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
                model.compat = merge(provider.compat.clone(), definition.compat.as_ref());
                model.headers = definition.headers.clone().unwrap_or_default();
                match models
                    .iter_mut()
                    .find(|m| m.provider == model.provider && m.id == model.id)
                {
                    Some(existing) => *existing = model,
                    None => models.push(model),
                }
            }
        }
        ModelRegistry {
            models,
            providers: config.providers,
            error,
        }
    }

    /// A registry of just these models, with no `models.json` behind it.
    pub fn from_models(models: Vec<ModelInfo>) -> ModelRegistry {
        ModelRegistry {
            models,
            ..ModelRegistry::default()
        }
    }

    /// Every model.
    pub fn all(&self) -> &[ModelInfo] {
        &self.models
    }

    /// The model `provider/id`, if known.
    pub fn find(&self, provider: &str, id: &str) -> Option<&ModelInfo> {
        self.models
            .iter()
            .find(|m| m.provider == provider && m.id == id)
    }

    /// The names of every provider, in order.
    pub fn provider_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.models.iter().map(|m| m.provider.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Whether a key for `provider` is configured (pi's `hasConfiguredAuth`): `models.json`
    /// gives one, or the provider's environment variable is set.
    pub fn has_auth(&self, provider: &str) -> bool {
        self.providers
            .get(provider)
            .is_some_and(|p| p.api_key.is_some())
            || env_key(provider).is_some()
            || cloud_sign_in(provider)
    }

    /// The models with a key configured (pi's `getAvailable`).
    pub fn available(&self) -> Vec<&ModelInfo> {
        self.models
            .iter()
            .filter(|m| self.has_auth(&m.provider))
            .collect()
    }

    /// The key for `provider`: `models.json`'s (resolved: a variable's value, `!command`'s
    /// output, or the text), else the provider's environment variable.
    pub fn api_key(&self, provider: &str) -> Option<String> {
        self.providers
            .get(provider)
            .and_then(|p| p.api_key.as_deref())
            .and_then(resolve_config_value)
            .or_else(|| env_key(provider))
    }

    /// The first model pi would pick with nothing named: a built-in provider's default model
    /// when its key is set, else the first model with a key (pi's `findInitialModel`).
    pub fn initial(&self) -> Option<&ModelInfo> {
        let available = self.available();
        PI_DEFAULT_MODELS
            .iter()
            .find_map(|(provider, id)| {
                available
                    .iter()
                    .find(|m| m.provider == *provider && m.id == *id)
                    .copied()
            })
            .or_else(|| available.first().copied())
    }

    /// `--provider` and `--model` as pi resolves them (`resolveCliModel`): `provider/id`, an
    /// exact id, else a part of an id or name (an alias before a dated version), with an
    /// optional `:level` suffix. An unknown id of a known provider is used as it is, with the
    /// provider's other settings and a warning. Returns the model, the suffix's thinking level,
    /// and the warning.
    pub fn resolve_cli(
        &self,
        provider: Option<&str>,
        pattern: &str,
    ) -> Result<(ModelInfo, Option<ThinkingLevel>, Option<String>), String> {
        let canonical = |name: &str| {
            self.provider_names()
                .into_iter()
                .find(|p| p.eq_ignore_ascii_case(name))
                .map(str::to_owned)
        };
        let mut provider = match provider {
            Some(name) => Some(canonical(name).ok_or_else(|| {
                format!(
                    "Unknown provider \"{name}\". Use --list-models to see available providers/models."
                )
            })?),
            None => None,
        };
        let mut pattern = pattern.to_owned();
        let mut inferred = false;
        if provider.is_none()
            && let Some((prefix, rest)) = pattern.split_once('/')
            && let Some(name) = canonical(prefix)
        {
            provider = Some(name);
            pattern = rest.to_owned();
            inferred = true;
        } else if let Some(name) = &provider {
            let prefix = format!("{}/", name.to_lowercase());
            if pattern.to_lowercase().starts_with(&prefix) {
                pattern = pattern[prefix.len()..].to_owned();
            }
        }
        if provider.is_none()
            && let Some(exact) = self.models.iter().find(|m| {
                m.id.eq_ignore_ascii_case(&pattern)
                    || format!("{}/{}", m.provider, m.id).eq_ignore_ascii_case(&pattern)
            })
        {
            return Ok((exact.clone(), None, None));
        }
        let candidates: Vec<&ModelInfo> = match &provider {
            Some(name) => self.models.iter().filter(|m| &m.provider == name).collect(),
            None => self.models.iter().collect(),
        };
        if let Some((model, level)) = parse_pattern(&pattern, &candidates) {
            return Ok((model.clone(), level, None));
        }
        if inferred {
            let all: Vec<&ModelInfo> = self.models.iter().collect();
            let full = format!("{}/{pattern}", provider.clone().unwrap_or_default());
            if let Some((model, level)) = parse_pattern(&full, &all) {
                return Ok((model.clone(), level, None));
            }
        }
        if let Some(name) = &provider
            && let Some(base) = self.fallback_base(name)
        {
            let (id, level) = split_level(&pattern);
            let mut model = base.clone();
            model.id = id.to_owned();
            model.name = id.to_owned();
            return Ok((
                model,
                level,
                Some(format!(
                    "Model \"{id}\" not found for provider \"{name}\". Using custom model id."
                )),
            ));
        }
        let display = match &provider {
            Some(name) => format!("{name}/{pattern}"),
            None => pattern,
        };
        Err(format!(
            "Model \"{display}\" not found. Use --list-models to see available models."
        ))
    }

    /// The model a custom id of `provider` borrows its settings from (pi's `buildFallbackModel`).
    fn fallback_base(&self, provider: &str) -> Option<&ModelInfo> {
        let default = PI_DEFAULT_MODELS
            .iter()
            .find(|(p, _)| *p == provider)
            .map(|(_, id)| *id);
        let mut of_provider = self.models.iter().filter(|m| m.provider == provider);
        let first = of_provider.clone().next();
        default
            .and_then(|id| of_provider.find(|m| m.id == id))
            .or(first)
    }

    /// The provider model for `info`: the right API, its endpoint and key (`api_key` beats the
    /// configured one), headers, output limit, images, compatibility flags, and the price added
    /// to every answer's usage.
    pub fn build(
        &self,
        info: &ModelInfo,
        api_key: Option<&str>,
        strict: Option<bool>,
    ) -> Result<Arc<dyn Model>, String> {
        let key = api_key
            .map(str::to_owned)
            .or_else(|| self.api_key(&info.provider));
        let provider = self.providers.get(&info.provider);
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in provider
            .and_then(|p| p.headers.as_ref())
            .into_iter()
            .flatten()
            .chain(&info.headers)
        {
            if let Some(value) = resolve_config_value(value) {
                headers.insert(name.clone(), value);
            }
        }
        if provider.and_then(|p| p.auth_header) == Some(true) {
            let key = key
                .clone()
                .ok_or_else(|| format!("No API key found for \"{}\"", info.provider))?;
            headers.insert("Authorization".into(), format!("Bearer {key}"));
        }
        macro_rules! configure {
            ($model:expr) => {{
                let mut model = $model
                    .provider_name(info.provider.clone())
                    .base_url(info.base_url.clone())
                    .images(info.accepts_images());
                if let Some(key) = &key {
                    model = model.api_key(key.clone());
                }
                if let Some(max) = info.default_max_tokens() {
                    model = model.max_tokens(max);
                }
                for (name, value) in &headers {
                    model = model.header(name.clone(), value.clone());
                }
                model
            }};
        }
        // The cloud APIs take their endpoint from the region or location (the catalog's URL is
        // a template or one region's): a base URL only when models.json names another.
        let cloud_base = |model_base: &str| -> Option<String> {
            let catalog = model_base.contains('{')
                || (model_base.starts_with("https://bedrock-runtime.")
                    && model_base.ends_with(".amazonaws.com"));
            (!catalog && !model_base.is_empty()).then(|| model_base.to_owned())
        };
        let model: Arc<dyn Model> = match info.api.as_str() {
            AnthropicMessages::API if info.provider == VERTEX_ANTHROPIC => {
                let mut model = configure!(VertexAnthropic::new(info.id.clone()));
                model = model.base_url(cloud_base(&info.base_url).unwrap_or_default());
                Arc::new(model)
            }
            BedrockConverse::API => {
                // A key here is a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK or models.json's);
                // without one the request is signed with the AWS credentials.
                let mut model = configure!(BedrockConverse::new(info.id.clone()));
                model = model.base_url(cloud_base(&info.base_url).unwrap_or_default());
                Arc::new(model)
            }
            VertexGemini::API => {
                let mut model = configure!(VertexGemini::new(info.id.clone()));
                model = model.base_url(cloud_base(&info.base_url).unwrap_or_default());
                Arc::new(model)
            }
            OpenAiCompletions::API => {
                let mut model = configure!(OpenAiCompletions::new(info.id.clone()));
                let mut compat = completions_compat(info);
                if let Some(strict) = strict {
                    compat.strict = strict;
                }
                model = model.compat(compat);
                Arc::new(model)
            }
            OpenAiResponses::API => {
                let mut model = configure!(OpenAiResponses::new(info.id.clone()));
                if let Some(strict) = strict {
                    model = model.strict(strict);
                }
                Arc::new(model)
            }
            AnthropicMessages::API => Arc::new(configure!(AnthropicMessages::new(info.id.clone()))),
            GoogleGenerativeAi::API => {
                Arc::new(configure!(GoogleGenerativeAi::new(info.id.clone())))
            }
            // pi's catalog has no endpoint for Azure: an empty one is read from the
            // environment at each request (AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME).
            AzureOpenAiResponses::API => {
                let mut model = configure!(AzureOpenAiResponses::new(info.id.clone()));
                if let Some(strict) = strict {
                    model = model.strict(strict);
                }
                Arc::new(model)
            }
            MistralChat::API => {
                let mut model = configure!(MistralChat::new(info.id.clone()));
                if let Some(strict) = strict {
                    model = model.strict(strict);
                }
                Arc::new(model)
            }
            other => {
                return Err(format!(
                    "pi: the model {}/{} uses the \"{other}\" API, which this pi does not speak (it speaks {})",
                    info.provider,
                    info.id,
                    SUPPORTED_APIS.join(", ")
                ));
            }
        };
        Ok(priced(model, info))
    }
}

/// Adds the model's price to every answer it gives (pi computes it in each provider).
pub fn priced(model: Arc<dyn Model>, info: &ModelInfo) -> Arc<dyn Model> {
    if info.cost == ModelCost::default() {
        return model;
    }
    Arc::new(Priced {
        inner: model,
        info: info.clone(),
    })
}

/// A model whose answers carry their cost.
struct Priced {
    inner: Arc<dyn Model>,
    info: ModelInfo,
}

impl Priced {
    fn with_cost(&self, mut message: AssistantMessage) -> AssistantMessage {
        message.usage.cost = self.info.cost_of(&message.usage);
        message
    }
}

impl Model for Priced {
    fn api(&self) -> &str {
        self.inner.api()
    }

    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn id(&self) -> &str {
        self.inner.id()
    }

    fn accepts_images(&self) -> bool {
        self.inner.accepts_images()
    }

    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> BoxStream<'a, AssistantEvent> {
        self.inner
            .stream(context, options)
            .map(move |event| match event {
                AssistantEvent::Done { reason, message } => AssistantEvent::Done {
                    reason,
                    message: self.with_cost(message),
                },
                AssistantEvent::Error { reason, error } => AssistantEvent::Error {
                    reason,
                    error: self.with_cost(error),
                },
                other => other,
            })
            .boxed()
    }
}

/// The environment variable that holds a built-in provider's key, when it is set.
fn env_key(provider: &str) -> Option<String> {
    let names: &[&str] = match provider {
        "openai" => &["OPENAI_API_KEY"],
        "anthropic" => &["ANTHROPIC_API_KEY"],
        "google" => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "azure-openai-responses" => &["AZURE_OPENAI_API_KEY"],
        // Keys proper; the other sign-ins are `cloud_sign_in`'s.
        "amazon-bedrock" => &["AWS_BEARER_TOKEN_BEDROCK"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        _ => &[],
    };
    names
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
}

/// Claude on Vertex AI: the dated Claude models of the catalog under Vertex's ids
/// (`claude-sonnet-4-5-20250929` is `claude-sonnet-4-5@20250929` there), with Anthropic's
/// prices and limits; their endpoint comes from the project and location.
fn vertex_anthropic_models(catalog: &[ModelInfo]) -> Vec<ModelInfo> {
    catalog
        .iter()
        .filter(|m| m.provider == "anthropic")
        .filter_map(|m| {
            let (name, date) = m.id.rsplit_once('-')?;
            (date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit())).then(|| {
                let mut model = m.clone();
                model.provider = VERTEX_ANTHROPIC.to_owned();
                model.id = format!("{name}@{date}");
                model.base_url = String::new();
                model
            })
        })
        .collect()
}

/// Whether a cloud provider can sign in without a key, as pi's `getEnvApiKey` decides: AWS
/// credentials for Bedrock (a profile, access keys, or a container or web-identity role),
/// Application Default Credentials with a project and location for Vertex AI.
fn cloud_sign_in(provider: &str) -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    match provider {
        "amazon-bedrock" => {
            set("AWS_PROFILE")
                || (set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY"))
                || set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
                || set("AWS_CONTAINER_CREDENTIALS_FULL_URI")
                || set("AWS_WEB_IDENTITY_TOKEN_FILE")
        }
        "google-vertex" | VERTEX_ANTHROPIC => {
            let credentials = set("GOOGLE_APPLICATION_CREDENTIALS")
                || std::env::var_os("HOME").is_some_and(|home| {
                    std::path::Path::new(&home)
                        .join(".config/gcloud/application_default_credentials.json")
                        .exists()
                });
            credentials
                && (set("GOOGLE_CLOUD_PROJECT") || set("GCLOUD_PROJECT"))
                && set("GOOGLE_CLOUD_LOCATION")
        }
        _ => false,
    }
}

/// pi's `detectCompat` + `getCompat` for a Chat Completions model: what the provider and its
/// URL imply, with `models.json`'s `compat` over it.
fn completions_compat(info: &ModelInfo) -> CompletionsCompat {
    let url = info.base_url.as_str();
    let provider = info.provider.as_str();
    let zai = provider == "zai" || url.contains("api.z.ai");
    let moonshot = provider.starts_with("moonshotai") || url.contains("api.moonshot.");
    let workers = provider == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
    let gateway = provider == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
    let grok = provider == "xai" || url.contains("api.x.ai");
    let non_standard = provider == "cerebras"
        || url.contains("cerebras.ai")
        || grok
        || url.contains("chutes.ai")
        || url.contains("deepseek.com")
        || zai
        || moonshot
        || provider == "opencode"
        || url.contains("opencode.ai")
        || workers
        || gateway;
    let flags = info.compat.clone().unwrap_or_default();
    let flag =
        |name: &str, detected: bool| flags.get(name).and_then(Value::as_bool).unwrap_or(detected);
    let max_tokens_field = flags.get("maxTokensField").and_then(Value::as_str);
    let use_max_tokens = match max_tokens_field {
        Some(field) => field == "max_tokens",
        None => url.contains("chutes.ai") || moonshot || gateway,
    };
    let mut compat = OpenAiCompletions::new(info.id.clone())
        .base_url(info.base_url.clone())
        .compat_flags();
    compat.store = flag("supportsStore", !non_standard);
    compat.developer_role = info.reasoning && flag("supportsDeveloperRole", !non_standard);
    compat.reasoning_effort = info.reasoning
        && flag(
            "supportsReasoningEffort",
            !grok && !zai && !moonshot && !gateway,
        );
    compat.stream_usage = flag("supportsUsageInStreaming", true);
    compat.max_completion_tokens = !use_max_tokens;
    compat.tool_result_name = flag("requiresToolResultName", false);
    compat
}

/// `compat` of a provider with a model's over it, key by key.
fn merge(
    base: Option<Map<String, Value>>,
    over: Option<&Map<String, Value>>,
) -> Option<Map<String, Value>> {
    match (base, over) {
        (None, None) => None,
        (base, over) => {
            let mut merged = base.unwrap_or_default();
            if let Some(over) = over {
                merged.extend(over.clone());
            }
            Some(merged)
        }
    }
}

/// pi's `applyModelOverride`.
fn apply_override(model: &mut ModelInfo, over: &Value) {
    if let Some(name) = over["name"].as_str() {
        model.name = name.to_owned();
    }
    if let Some(reasoning) = over["reasoning"].as_bool() {
        model.reasoning = reasoning;
    }
    if let Some(Value::Object(map)) = over.get("thinkingLevelMap") {
        let mut merged = model.thinking_level_map.clone().unwrap_or_default();
        merged.extend(map.clone());
        model.thinking_level_map = Some(merged);
    }
    if let Some(input) = over["input"].as_array() {
        model.input = input
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect();
    }
    if let Some(window) = over["contextWindow"].as_u64() {
        model.context_window = window;
    }
    if let Some(max) = over["maxTokens"].as_u64() {
        model.max_tokens = max;
    }
    if let Some(cost) = over.get("cost") {
        let rate = |name: &str, old: f64| cost[name].as_f64().unwrap_or(old);
        model.cost = ModelCost {
            input: rate("input", model.cost.input),
            output: rate("output", model.cost.output),
            cache_read: rate("cacheRead", model.cost.cache_read),
            cache_write: rate("cacheWrite", model.cost.cache_write),
        };
    }
    if let Some(Value::Object(compat)) = over.get("compat") {
        model.compat = merge(model.compat.take(), Some(compat));
    }
    if let Some(Value::Object(headers)) = over.get("headers") {
        for (name, value) in headers {
            if let Some(value) = value.as_str() {
                model.headers.insert(name.clone(), value.to_owned());
            }
        }
    }
}

/// `pattern` without a `:level` suffix naming a thinking level, and that level.
pub fn split_level(pattern: &str) -> (&str, Option<ThinkingLevel>) {
    match pattern.rsplit_once(':') {
        Some((id, suffix)) => match ThinkingLevel::parse(suffix) {
            Some(level) => (id, Some(level)),
            None => (pattern, None),
        },
        None => (pattern, None),
    }
}

/// pi's `parseModelPattern` in its strict (CLI) form: the whole pattern as a model, else a
/// `:level` suffix split off and the rest matched.
fn parse_pattern<'a>(
    pattern: &str,
    models: &[&'a ModelInfo],
) -> Option<(&'a ModelInfo, Option<ThinkingLevel>)> {
    if let Some(model) = match_model(pattern, models) {
        return Some((model, None));
    }
    let (prefix, suffix) = pattern.rsplit_once(':')?;
    let level = ThinkingLevel::parse(suffix)?;
    let (model, inner) = parse_pattern(prefix, models)?;
    Some((model, inner.or(Some(level))))
}

/// pi's `tryMatchModel`: `provider/id` or an id exactly, else the models whose id or name
/// contains the pattern, an alias (no `-YYYYMMDD` suffix) before a dated version, the one that
/// sorts last.
fn match_model<'a>(pattern: &str, models: &[&'a ModelInfo]) -> Option<&'a ModelInfo> {
    let lower = pattern.trim().to_lowercase();
    if lower.is_empty() {
        return None;
    }
    let exact: Vec<&ModelInfo> = models
        .iter()
        .copied()
        .filter(|m| format!("{}/{}", m.provider, m.id).to_lowercase() == lower)
        .collect();
    if exact.len() == 1 {
        return Some(exact[0]);
    }
    let by_id: Vec<&ModelInfo> = models
        .iter()
        .copied()
        .filter(|m| m.id.to_lowercase() == lower)
        .collect();
    if by_id.len() == 1 {
        return Some(by_id[0]);
    }
    let mut matches: Vec<&ModelInfo> = models
        .iter()
        .copied()
        .filter(|m| m.id.to_lowercase().contains(&lower) || m.name.to_lowercase().contains(&lower))
        .collect();
    if matches.is_empty() {
        return None;
    }
    let is_alias = |id: &str| {
        id.ends_with("-latest")
            || !(id.len() > 9
                && id.as_bytes()[id.len() - 9] == b'-'
                && id[id.len() - 8..].bytes().all(|b| b.is_ascii_digit()))
    };
    let aliases: Vec<&ModelInfo> = matches
        .iter()
        .copied()
        .filter(|m| is_alias(&m.id))
        .collect();
    if !aliases.is_empty() {
        matches = aliases;
    }
    matches.sort_by(|a, b| b.id.cmp(&a.id));
    matches.first().copied()
}

/// pi's `formatTokenCount` for `--list-models`: `128K`, `16.4K`, `1M`.
pub fn format_token_count(count: u64) -> String {
    let format = |value: f64, unit: &str| {
        if value.fract() == 0.0 {
            format!("{value}{unit}")
        } else {
            format!("{value:.1}{unit}")
        }
    };
    if count >= 1_000_000 {
        format(count as f64 / 1_000_000.0, "M")
    } else if count >= 1_000 {
        format(count as f64 / 1_000.0, "K")
    } else {
        count.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(models_json: &str) -> ModelRegistry {
        ModelRegistry::from_config(serde_json::from_str(models_json).unwrap(), None)
    }

    #[test]
    fn the_catalog_has_pi_s_models_and_models_json_adds_its_own() {
        let registry = registry(
            r#"{"providers": {"mock": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
                "apiKey": "MOCK_KEY_LITERAL", "models": [{"id": "mock-model"}]}}}"#,
        );
        let sonnet = registry.find("anthropic", "claude-sonnet-4-5").unwrap();
        assert_eq!(sonnet.context_window, 200_000);
        assert!(sonnet.reasoning);
        let mock = registry.find("mock", "mock-model").unwrap();
        assert_eq!(
            (mock.context_window, mock.max_tokens, mock.reasoning),
            (128_000, 16_384, false)
        );
        assert!(registry.has_auth("mock"));
        assert_eq!(
            registry.api_key("mock").as_deref(),
            Some("MOCK_KEY_LITERAL")
        );
        assert_eq!(
            (
                format_token_count(mock.context_window),
                format_token_count(mock.max_tokens)
            ),
            ("128K".to_owned(), "16.4K".to_owned())
        );
    }

    #[test]
    fn mistral_models_are_built_on_mistrals_api() {
        let registry = registry(r#"{"providers": {}}"#);
        let (devstral, _, warning) = registry
            .resolve_cli(Some("mistral"), "devstral-medium-latest")
            .unwrap();
        assert_eq!(warning, None);
        assert_eq!(
            (devstral.api.as_str(), devstral.base_url.as_str()),
            ("mistral-conversations", "https://api.mistral.ai")
        );
        let model = registry.build(&devstral, Some("k"), None).unwrap();
        assert_eq!(
            (model.api(), model.provider(), model.id()),
            ("mistral-conversations", "mistral", "devstral-medium-latest")
        );
        assert_eq!(
            PI_DEFAULT_MODELS.iter().find(|(p, _)| *p == "mistral"),
            Some(&("mistral", "devstral-medium-latest"))
        );
    }

    #[test]
    fn azure_models_are_built_on_azures_api() {
        let registry = registry(r#"{"providers": {}}"#);
        let (gpt, _, warning) = registry
            .resolve_cli(Some("azure-openai-responses"), "gpt-5.4")
            .unwrap();
        assert_eq!(warning, None);
        let model = registry.build(&gpt, Some("k"), None).unwrap();
        assert_eq!(
            (model.api(), model.provider(), model.id()),
            (
                "azure-openai-responses",
                "azure-openai-responses",
                "gpt-5.4"
            )
        );
    }

    #[test]
    fn bedrock_and_vertex_models_are_built_on_their_apis() {
        let registry = registry(r#"{"providers": {}}"#);
        let (claude, _, warning) = registry
            .resolve_cli(Some("amazon-bedrock"), "us.anthropic.claude-opus-4-6-v1")
            .unwrap();
        assert_eq!(warning, None);
        let model = registry.build(&claude, None, None).unwrap();
        assert_eq!(
            (model.api(), model.provider(), model.id()),
            (
                "bedrock-converse-stream",
                "amazon-bedrock",
                "us.anthropic.claude-opus-4-6-v1"
            )
        );
        let (gemini, _, warning) = registry
            .resolve_cli(Some("google-vertex"), "gemini-3.1-pro-preview")
            .unwrap();
        assert_eq!(warning, None);
        let model = registry.build(&gemini, None, None).unwrap();
        assert_eq!(
            (model.api(), model.provider()),
            ("google-vertex", "google-vertex")
        );
        // Claude on Vertex: the catalog's dated Claude models under Vertex's ids.
        let (vertex_claude, _, warning) = registry
            .resolve_cli(
                Some("google-vertex-anthropic"),
                "claude-sonnet-4-5@20250929",
            )
            .unwrap();
        assert_eq!(warning, None);
        assert_eq!(
            vertex_claude.cost,
            registry
                .find("anthropic", "claude-sonnet-4-5-20250929")
                .unwrap()
                .cost
        );
        let model = registry.build(&vertex_claude, None, None).unwrap();
        assert_eq!(
            (model.api(), model.provider(), model.id()),
            (
                "anthropic-messages",
                "google-vertex-anthropic",
                "claude-sonnet-4-5@20250929"
            )
        );
        assert!(
            registry
                .find("google-vertex-anthropic", "claude-sonnet-4-5")
                .is_none()
        );
    }

    #[test]
    fn cli_patterns_resolve_as_pi_resolves_them() {
        let registry = registry(
            r#"{"providers": {"mock": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
                "apiKey": "k", "models": [{"id": "mock-model", "reasoning": true}]}}}"#,
        );
        let (model, level, warning) = registry.resolve_cli(None, "mock-model:high").unwrap();
        assert_eq!(
            (model.id.as_str(), level, warning),
            ("mock-model", Some(ThinkingLevel::High), None)
        );
        let (model, _, _) = registry
            .resolve_cli(Some("mock"), "mock/mock-model")
            .unwrap();
        assert_eq!(model.provider, "mock");
        let (model, _, _) = registry.resolve_cli(None, "sonnet-4-5").unwrap();
        // An alias before a dated version, the one that sorts last: with Bedrock's models in
        // the catalog that is its inference profile, as pi 0.73.1's resolveCliModel answers
        // over the same providers' models.
        assert_eq!(model.id, "us.anthropic.claude-sonnet-4-5-20250929-v1:0");
        let (model, _, _) = registry
            .resolve_cli(Some("anthropic"), "sonnet-4-5")
            .unwrap();
        assert_eq!(
            model.id, "claude-sonnet-4-5",
            "an alias before a dated version"
        );
        let (model, _, warning) = registry.resolve_cli(Some("openai"), "gpt-99").unwrap();
        assert_eq!(model.id, "gpt-99");
        assert_eq!(
            warning.as_deref(),
            Some("Model \"gpt-99\" not found for provider \"openai\". Using custom model id.")
        );
        assert_eq!(
            registry.resolve_cli(Some("nope"), "x").unwrap_err(),
            "Unknown provider \"nope\". Use --list-models to see available providers/models."
        );
        assert_eq!(
            registry
                .resolve_cli(None, "no-such-model-anywhere")
                .unwrap_err(),
            "Model \"no-such-model-anywhere\" not found. Use --list-models to see available models."
        );
    }

    #[test]
    fn thinking_levels_clamp_to_what_the_model_has() {
        let mut model = ModelInfo::generic("p", "m", "openai-completions", "http://x");
        assert_eq!(
            model.clamp_thinking(ThinkingLevel::High),
            ThinkingLevel::Off
        );
        model.reasoning = true;
        assert_eq!(
            model.clamp_thinking(ThinkingLevel::XHigh),
            ThinkingLevel::High
        );
        model.thinking_level_map =
            Some(serde_json::from_str(r#"{"xhigh": "xhigh", "minimal": null}"#).unwrap());
        assert_eq!(
            model.clamp_thinking(ThinkingLevel::XHigh),
            ThinkingLevel::XHigh
        );
        assert_eq!(
            model.clamp_thinking(ThinkingLevel::Minimal),
            ThinkingLevel::Low
        );
    }
}
