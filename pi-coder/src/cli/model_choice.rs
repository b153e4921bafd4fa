//! The model from the flags and the environment (`--provider`, `--model`, `--base-url`,
//! `--api-key`, `--strict`), and a quick check that a local server is listening.

use std::sync::Arc;
use std::time::Duration;

use pi_runtime::Model;
use pi_runtime::providers::{OpenAiCompletions, OpenAiResponses, Selection};

use super::{Args, Strict};

/// The providers `--provider` accepts.
pub(super) const PROVIDERS: [&str; 4] = ["openai", "anthropic", "google", "openai-compatible"];

/// How long the reachability check waits for a connection.
const CONNECT_CHECK: Duration = Duration::from_secs(2);

/// The model, and the base URL of the server it talks to when that is a compatible server.
pub(super) struct Chosen {
    pub(super) model: Arc<dyn Model>,
    pub(super) server: Option<String>,
}

/// The model from the flags and the environment, or the message saying what to set.
pub(super) fn select_model(args: &Args) -> Result<Chosen, String> {
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
    let model_override = match (&provider, &args.model) {
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
            "pi: --api-key needs a provider: add --provider NAME (openai, anthropic, google) or --model provider/model."
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
    Ok(Chosen { model, server })
}

/// Whether any provider's key or server is in the environment.
fn any_provider_configured() -> bool {
    [
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
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
        _ => "OPENAI_BASE_URL (or --base-url) and a model (--model or PI_MODEL)",
    }
}

/// Whether the environment variable `name` configures `provider`.
fn provider_variable(provider: &str, name: &str) -> bool {
    match provider {
        "openai" => name == "OPENAI_API_KEY",
        "anthropic" => name == "ANTHROPIC_API_KEY",
        "google" => name == "GEMINI_API_KEY" || name == "GOOGLE_API_KEY",
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
