//! The model from the flags, the configuration and the environment: `--provider`, `--model`
//! (`provider/id`, a part of an id, `:level` for the thinking level), pi's `models.json` and
//! `settings.json`, the session's own model when one is resumed; then `--base-url`,
//! `--api-key`, `--strict`, and the environment variables this crate always read. And a quick
//! check that a local server is listening.

use std::sync::Arc;
use std::time::Duration;

use pi_runtime::providers::{OpenAiCompletions, OpenAiResponses, Selection};
use pi_runtime::{Model, ThinkingLevel};

use super::{Args, Strict};
use crate::config::Settings;
use crate::models::{ModelInfo, ModelRegistry, split_level};

/// The providers `--provider` accepts besides `models.json`'s.
pub(super) const PROVIDERS: [&str; 5] = [
    "openai",
    "anthropic",
    "google",
    "mistral",
    "openai-compatible",
];

/// How long the reachability check waits for a connection.
const CONNECT_CHECK: Duration = Duration::from_secs(2);

/// The model, what is known of it, and the base URL of the server it talks to when that is a
/// compatible server named by `--base-url` or `OPENAI_BASE_URL`.
pub(super) struct Chosen {
    pub(super) model: Arc<dyn Model>,
    pub(super) info: ModelInfo,
    pub(super) server: Option<String>,
    /// A `:level` suffix of `--model`.
    pub(super) thinking: Option<ThinkingLevel>,
    /// Said on stderr (an unknown model id used as it is, ...).
    pub(super) warning: Option<String>,
}

/// The model, or the message saying what to set. `saved` is the resumed session's model.
pub(super) fn select_model(
    args: &Args,
    settings: &Settings,
    registry: &ModelRegistry,
    saved: Option<(String, String)>,
) -> Result<Chosen, String> {
    let strict = args.strict.map(|s| s == Strict::On);
    let build = |info: ModelInfo, thinking, warning| -> Result<Chosen, String> {
        let model = registry.build(&info, args.api_key.as_deref(), strict)?;
        Ok(Chosen {
            model,
            info,
            server: None,
            thinking,
            warning,
        })
    };
    let needs_key = |info: &ModelInfo, named: &str| -> Result<(), String> {
        if args.api_key.is_some() || registry.has_auth(&info.provider) {
            return Ok(());
        }
        Err(format!(
            "{named} needs {}, which is not set.\n{}",
            provider_keys(&info.provider),
            HELP
        ))
    };
    let provider = args.provider.as_deref().filter(|p| !p.is_empty());
    let in_registry = |name: &str| registry.provider_names().contains(&name);
    if args.base_url.is_none() && provider != Some("openai-compatible") {
        if let Some(provider) = provider
            && !in_registry(provider)
        {
            let mut known: Vec<&str> = PROVIDERS.to_vec();
            known.extend(
                registry
                    .provider_names()
                    .into_iter()
                    .filter(|p| !PROVIDERS.contains(p)),
            );
            return Err(format!(
                "pi: unknown provider \"{provider}\": use one of {}.",
                known.join(", ")
            ));
        }
        match (provider, args.model.as_deref()) {
            (_, Some(pattern)) => {
                if let Ok((info, thinking, warning)) = registry.resolve_cli(provider, pattern) {
                    let named = match provider {
                        Some(provider) => format!("--provider {provider}"),
                        None => format!("The model \"{pattern}\""),
                    };
                    // A built-in id found in the catalog, or a models.json model.
                    if provider.is_some()
                        || registry.has_auth(&info.provider)
                        || args.api_key.is_some()
                        || !env_configured()
                    {
                        needs_key(&info, &named)?;
                        return build(info, thinking, warning);
                    }
                }
            }
            (Some(provider), None) => {
                let info = default_model(registry, provider)
                    .ok_or_else(|| format!("pi: provider \"{provider}\" has no models"))?;
                needs_key(&info, &format!("--provider {provider}"))?;
                return build(info, None, None);
            }
            (None, None) => {
                let known = |pair: &(String, String)| {
                    registry
                        .find(&pair.0, &pair.1)
                        .filter(|m| registry.has_auth(&m.provider) || args.api_key.is_some())
                        .cloned()
                };
                if let Some(info) = saved.as_ref().and_then(known) {
                    return build(info, None, None);
                }
                let default = settings
                    .default_provider
                    .clone()
                    .zip(settings.default_model.clone());
                if let Some(info) = default.as_ref().and_then(known) {
                    return build(info, None, None);
                }
                if !env_configured()
                    && let Some(info) = registry.initial().cloned()
                {
                    return build(info, None, None);
                }
            }
        }
    }
    let mut chosen = select_from_environment(args)?;
    if let Some(known) = registry.find(&chosen.info.provider, &chosen.info.id) {
        chosen.info = known.clone();
        if let Some(server) = &chosen.server {
            chosen.info.base_url.clone_from(server);
        }
        chosen.model = crate::models::priced(chosen.model, &chosen.info);
    }
    Ok(chosen)
}

/// `--provider`'s model when no `--model` names one: this crate's default for a built-in
/// provider (as it always chose), else the provider's first model.
fn default_model(registry: &ModelRegistry, provider: &str) -> Option<ModelInfo> {
    let ours = match provider {
        "openai" => Some("gpt-5-mini"),
        "anthropic" => Some("claude-sonnet-4-5"),
        "google" => Some("gemini-2.5-flash"),
        _ => None,
    };
    ours.and_then(|id| registry.find(provider, id))
        .or_else(|| registry.all().iter().find(|m| m.provider == provider))
        .cloned()
}

/// Whether the environment names a model or a server this crate reads (`PI_MODEL`,
/// `OPENAI_BASE_URL`) or holds a provider's key.
fn env_configured() -> bool {
    ["PI_MODEL", "OPENAI_BASE_URL"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()))
        || any_provider_configured()
}

/// pi's `resolveModelScope` for `--models` (else settings.json's `enabledModels`): each pattern
/// with its `:level`, globs (`anthropic/*`, `*sonnet*`) matched against `provider/id` and id,
/// over the models with a key; a pattern that matches nothing is said on stderr.
pub(super) fn scope(
    args: &Args,
    settings: &Settings,
    registry: &ModelRegistry,
) -> Vec<(ModelInfo, Option<ThinkingLevel>)> {
    let patterns = args
        .models
        .clone()
        .or_else(|| settings.enabled_models.clone())
        .unwrap_or_default();
    let available = registry.available();
    let mut scoped: Vec<(ModelInfo, Option<ThinkingLevel>)> = Vec::new();
    let mut push = |info: &ModelInfo, level| {
        if !scoped
            .iter()
            .any(|(m, _)| m.provider == info.provider && m.id == info.id)
        {
            scoped.push((info.clone(), level));
        }
    };
    for pattern in patterns.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let (body, level) = split_level(pattern);
        if body.contains(['*', '?', '[']) {
            let Ok(glob) = globset::GlobBuilder::new(body)
                .case_insensitive(true)
                .build()
                .map(|g| g.compile_matcher())
            else {
                eprintln!("Warning: No models match pattern \"{pattern}\"");
                continue;
            };
            let matching: Vec<&&ModelInfo> = available
                .iter()
                .filter(|m| {
                    glob.is_match(format!("{}/{}", m.provider, m.id)) || glob.is_match(&m.id)
                })
                .collect();
            if matching.is_empty() {
                eprintln!("Warning: No models match pattern \"{pattern}\"");
            }
            for model in matching {
                push(model, level);
            }
            continue;
        }
        let only_available =
            ModelRegistry::from_models(available.iter().map(|m| (*m).clone()).collect());
        match only_available.resolve_cli(None, pattern) {
            Ok((model, level, None)) => push(&model, level),
            _ => eprintln!("Warning: No models match pattern \"{pattern}\""),
        }
    }
    scoped
}

/// What `/model`, the model selector and `cycle_model` switch between: the `--models` set
/// (`scoped`), else every model with a key.
pub(super) fn switchable(
    registry: &ModelRegistry,
    scoped: &[(ModelInfo, Option<ThinkingLevel>)],
) -> Vec<(ModelInfo, Option<ThinkingLevel>)> {
    if scoped.is_empty() {
        registry
            .available()
            .into_iter()
            .map(|m| (m.clone(), None))
            .collect()
    } else {
        scoped.to_vec()
    }
}

/// This crate's own choice from `--base-url`, `--provider openai-compatible`, `PI_MODEL`,
/// `OPENAI_BASE_URL` and the providers' keys.
fn select_from_environment(args: &Args) -> Result<Chosen, String> {
    let model_arg = args.model.as_deref().map(split_level);
    let thinking = model_arg.and_then(|(_, level)| level);
    let model_name = model_arg.map(|(name, _)| name.to_owned());
    let provider = if args.base_url.is_some() {
        Some("openai-compatible".to_owned())
    } else {
        args.provider.clone()
    };
    if let Some(provider) = &provider
        && !PROVIDERS.contains(&provider.as_str())
    {
        return Err(format!(
            "pi: unknown provider \"{provider}\": use one of {}.",
            PROVIDERS.join(", ")
        ));
    }
    let model_override = match (&provider, &model_name) {
        (Some(provider), Some(model)) if !model.contains('/') => {
            Some(format!("{provider}/{model}"))
        }
        (_, Some(model)) => Some(model.clone()),
        (_, None) => None,
    };
    // `--api-key` configures the provider named by `--provider` or `--model provider/..`.
    let keyed_provider = provider.clone().or_else(|| {
        model_override
            .as_deref()
            .and_then(|m| m.split_once('/'))
            .map(|(p, _)| p.to_owned())
            .filter(|p| PROVIDERS.contains(&p.as_str()))
    });
    if args.api_key.is_some() && keyed_provider.is_none() && !any_provider_configured() {
        return Err(
            "pi: --api-key needs a provider: add --provider NAME (openai, anthropic, google, mistral) or --model provider/model."
                .into(),
        );
    }
    let base_url = args.base_url.clone();
    let api_key = args.api_key.clone();
    let lookup = |name: &str| -> Option<String> {
        if name == "OPENAI_BASE_URL"
            && let Some(url) = &base_url
        {
            return Some(url.clone());
        }
        if let (Some(key), Some(keyed)) = (&api_key, &keyed_provider)
            && provider_variable(keyed, name)
            && name != "OPENAI_BASE_URL"
        {
            return Some(key.clone());
        }
        // With --provider and no model, only that provider's variables count, so the choice
        // cannot fall to another configured provider.
        if let (Some(provider), None) = (&provider, &model_override)
            && !provider_variable(provider, name)
        {
            return None;
        }
        std::env::var(name).ok()
    };
    let selection = Selection::resolve(model_override.as_deref(), lookup).map_err(|err| {
        let message = err.to_string();
        if message.starts_with("OPENAI_BASE_URL is set, but no model is named") {
            // Only the model is missing: say only that.
            let server = base_url
                .clone()
                .or_else(|| std::env::var("OPENAI_BASE_URL").ok())
                .unwrap_or_default();
            return format!(
                "pi: no model named for the server at {server}: pass --model <id> (a model the server has, e.g. --model llama3.2), or set PI_MODEL."
            );
        }
        match (&provider, &model_override) {
            // Only that provider's variables were looked at: say which one is missing.
            (Some(provider), None) => {
                let help = message
                    .split_once('\n')
                    .map_or(message.as_str(), |(_, help)| help);
                format!(
                    "--provider {provider} needs {}, which is not set.\n{help}",
                    provider_keys(provider)
                )
            }
            _ => message,
        }
    })?;
    let server = selection.base_url.clone();
    let model: Arc<dyn Model> = match (selection.api, args.strict) {
        ("openai-completions", strict) => {
            let mut model =
                OpenAiCompletions::new(selection.model).provider_name(selection.provider);
            if let Some(url) = selection.base_url {
                model = model.base_url(url);
            }
            if let Some(strict) = strict {
                model = model.strict(strict == Strict::On);
            }
            Arc::new(model)
        }
        ("openai-responses", Some(strict)) => {
            Arc::new(OpenAiResponses::new(selection.model).strict(strict == Strict::On))
        }
        _ => Arc::from(selection.into_model()),
    };
    let info = ModelInfo::generic(
        model.provider(),
        model.id(),
        model.api(),
        server.as_deref().unwrap_or_default(),
    );
    Ok(Chosen {
        model,
        info,
        server,
        thinking,
        warning: None,
    })
}

/// What to set, as the environment choice lists it.
const HELP: &str = "Set one of:
  OPENAI_API_KEY     OpenAI (default model gpt-5-mini)
  ANTHROPIC_API_KEY  Anthropic (default model claude-sonnet-4-5)
  GEMINI_API_KEY     Google Gemini (default model gemini-2.5-flash; GOOGLE_API_KEY also works)
  MISTRAL_API_KEY    Mistral (default model devstral-medium-latest)
  AZURE_OPENAI_API_KEY  Azure OpenAI (--provider azure-openai-responses), with
                     AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME
  AWS_BEARER_TOKEN_BEDROCK, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE
                     Amazon Bedrock (--provider amazon-bedrock; region from AWS_REGION)
  GOOGLE_APPLICATION_CREDENTIALS (or `gcloud auth application-default login`) with
                     GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION: Vertex AI
                     (--provider google-vertex, or google-vertex-anthropic for Claude)
  OPENAI_BASE_URL    an OpenAI-compatible server (Ollama, vLLM, llama.cpp, OpenRouter), e.g.
                     http://localhost:11434/v1, together with PI_MODEL=<model id>
PI_MODEL=<provider>/<model> (e.g. anthropic/claude-haiku-4-5) picks a provider and model.
Or add providers and models to ~/.pi/agent/models.json, as for pi.";

/// Whether any provider's key or server is in the environment.
fn any_provider_configured() -> bool {
    [
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "MISTRAL_API_KEY",
    ]
    .iter()
    .any(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()))
}

/// The variable(s) that configure `provider`, for messages.
fn provider_keys(provider: &str) -> &'static str {
    match provider {
        "openai" => "OPENAI_API_KEY",
        "anthropic" => "ANTHROPIC_API_KEY",
        "google" => "GEMINI_API_KEY (or GOOGLE_API_KEY)",
        "mistral" => "MISTRAL_API_KEY",
        "azure-openai-responses" => {
            "AZURE_OPENAI_API_KEY (with AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME)"
        }
        "amazon-bedrock" => {
            "AWS_BEARER_TOKEN_BEDROCK, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (region: AWS_REGION)"
        }
        "google-vertex" | "google-vertex-anthropic" => {
            "GOOGLE_APPLICATION_CREDENTIALS (or `gcloud auth application-default login`) with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION"
        }
        _ => "OPENAI_BASE_URL (or --base-url) and a model (--model or PI_MODEL)",
    }
}

/// Whether the environment variable `name` configures `provider`.
fn provider_variable(provider: &str, name: &str) -> bool {
    match provider {
        "openai" => name == "OPENAI_API_KEY",
        "anthropic" => name == "ANTHROPIC_API_KEY",
        "google" => name == "GEMINI_API_KEY" || name == "GOOGLE_API_KEY",
        "mistral" => name == "MISTRAL_API_KEY",
        "openai-compatible" => name == "OPENAI_BASE_URL" || name == "OPENAI_API_KEY",
        _ => false,
    }
}

/// Says at once when nothing listens at a compatible server's address: requests to it are
/// retried for several seconds before they fail, which otherwise looks like a hang.
pub(super) async fn warn_if_unreachable(server: &str) {
    let Some(address) = host_and_port(server) else {
        return;
    };
    let connect = tokio::net::TcpStream::connect(address.clone());
    let problem = match tokio::time::timeout(CONNECT_CHECK, connect).await {
        Ok(Ok(_)) => return,
        Ok(Err(err)) => err.to_string(),
        Err(_) => format!("no answer in {} s", CONNECT_CHECK.as_secs()),
    };
    eprintln!(
        "pi: cannot reach the server at {server} ({address}: {problem}). Is it running? Each request is retried for a few seconds before it fails."
    );
}

/// `host:port` of an `http(s)://` URL (the scheme's port when none is given).
fn host_and_port(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if authority.is_empty() {
        return None;
    }
    // `[::1]:8080`, `[::1]`, `host:8080`, `host`.
    let has_port = match authority.rfind(']') {
        Some(close) => authority[close..].contains(':'),
        None => authority.contains(':'),
    };
    Some(if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{default_port}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_of_urls() {
        assert_eq!(
            host_and_port("http://127.0.0.1:11434/v1").as_deref(),
            Some("127.0.0.1:11434")
        );
        assert_eq!(
            host_and_port("https://api.example.com/v1").as_deref(),
            Some("api.example.com:443")
        );
        assert_eq!(
            host_and_port("http://[::1]/v1").as_deref(),
            Some("[::1]:80")
        );
        assert_eq!(
            host_and_port("http://user:pw@[::1]:8000").as_deref(),
            Some("[::1]:8000")
        );
        assert_eq!(host_and_port("localhost:8000"), None);
        assert_eq!(host_and_port("ftp://x"), None);
    }
}
