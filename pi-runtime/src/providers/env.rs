//! Picking a provider from the environment, for examples and the `pi` CLI.

use std::fmt;

/// Default models when only a key is given.
const OPENAI_DEFAULT: &str = "gpt-5-mini";
const ANTHROPIC_DEFAULT: &str = "claude-sonnet-4-5";
const GOOGLE_DEFAULT: &str = "gemini-2.5-flash";
/// pi's default Mistral model.
const MISTRAL_DEFAULT: &str = "devstral-medium-latest";

/// The provider and model the environment points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// `openai`, `anthropic`, `google`, `mistral`, or `openai-compatible`.
    pub provider: String,
    /// The wire API (`openai-responses`, `anthropic-messages`, `google-generative-ai`,
    /// `mistral-conversations`, `openai-completions`).
    pub api: &'static str,
    /// The model id.
    pub model: String,
    /// The base URL, for an OpenAI-compatible server.
    pub base_url: Option<String>,
}

/// No provider could be chosen: says which environment variables to set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingKey {
    /// What is missing, and what to set.
    pub message: String,
}

impl fmt::Display for MissingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MissingKey {}

/// What to set, listed in every [`MissingKey`].
const HELP: &str = "Set one of:
  OPENAI_API_KEY     OpenAI (default model gpt-5-mini)
  ANTHROPIC_API_KEY  Anthropic (default model claude-sonnet-4-5)
  GEMINI_API_KEY     Google Gemini (default model gemini-2.5-flash; GOOGLE_API_KEY also works)
  MISTRAL_API_KEY    Mistral (default model devstral-medium-latest)
  OPENAI_BASE_URL    an OpenAI-compatible server (Ollama, vLLM, llama.cpp, OpenRouter), e.g.
                     http://localhost:11434/v1, together with PI_MODEL=<model id>
PI_MODEL=<provider>/<model> (e.g. anthropic/claude-haiku-4-5) picks a provider and model.";

/// Chooses a provider and model from the environment; see [`Selection::resolve`].
pub fn select_from_env(model_override: Option<&str>) -> Result<Selection, MissingKey> {
    Selection::resolve(model_override, |name| std::env::var(name).ok())
}

impl Selection {
    /// Chooses a provider and model, reading variables through `lookup` (empty values count as
    /// unset).
    ///
    /// The model is `model_override`, else `PI_MODEL`; either may name the provider as
    /// `provider/model` (`openai`, `anthropic`, `google`, `mistral`, or `openai-compatible`).
    /// Without a named provider the first that is configured wins: `OPENAI_BASE_URL` (an
    /// OpenAI-compatible server, key from `OPENAI_API_KEY` if set, model required),
    /// `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`/`GOOGLE_API_KEY`,
    /// `MISTRAL_API_KEY`.
    ///
    /// ```
    /// use pi_runtime::providers::Selection;
    ///
    /// let env = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| "sk-ant-test".to_owned());
    /// let chosen = Selection::resolve(None, env).unwrap();
    /// assert_eq!((chosen.provider.as_str(), chosen.model.as_str()), ("anthropic", "claude-sonnet-4-5"));
    ///
    /// let none = Selection::resolve(None, |_| None).unwrap_err();
    /// assert!(none.to_string().contains("OPENAI_API_KEY"));
    /// ```
    pub fn resolve(
        model_override: Option<&str>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Selection, MissingKey> {
        let var = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let requested = model_override
            .map(str::to_owned)
            .or_else(|| var("PI_MODEL"));
        let (provider, model) = match requested.as_deref().map(|m| m.split_once('/')) {
            Some(Some((provider, model))) if KNOWN.contains(&provider) => {
                (Some(provider.to_owned()), Some(model.to_owned()))
            }
            _ => (None, requested.clone()),
        };
        let has = |provider: &str| match provider {
            "openai-compatible" => var("OPENAI_BASE_URL").is_some(),
            "openai" => var("OPENAI_API_KEY").is_some(),
            "anthropic" => var("ANTHROPIC_API_KEY").is_some(),
            "mistral" => var("MISTRAL_API_KEY").is_some(),
            _ => var("GEMINI_API_KEY").is_some() || var("GOOGLE_API_KEY").is_some(),
        };
        let provider = match provider {
            Some(provider) if has(&provider) => provider,
            Some(provider) => {
                let needs = match provider.as_str() {
                    "openai-compatible" => "OPENAI_BASE_URL",
                    "openai" => "OPENAI_API_KEY",
                    "anthropic" => "ANTHROPIC_API_KEY",
                    "mistral" => "MISTRAL_API_KEY",
                    _ => "GEMINI_API_KEY",
                };
                return Err(MissingKey {
                    message: format!(
                        "The model \"{}\" needs {needs}, which is not set.\n{HELP}",
                        requested.unwrap_or_default()
                    ),
                });
            }
            None => match KNOWN.iter().find(|p| has(p)) {
                Some(provider) => (*provider).to_owned(),
                None => {
                    return Err(MissingKey {
                        message: format!("No model provider is configured.\n{HELP}"),
                    });
                }
            },
        };
        let (api, default) = match provider.as_str() {
            "openai-compatible" => ("openai-completions", None),
            "openai" => ("openai-responses", Some(OPENAI_DEFAULT)),
            "anthropic" => ("anthropic-messages", Some(ANTHROPIC_DEFAULT)),
            "mistral" => ("mistral-conversations", Some(MISTRAL_DEFAULT)),
            _ => ("google-generative-ai", Some(GOOGLE_DEFAULT)),
        };
        let model = match (model, default) {
            (Some(model), _) => model,
            (None, Some(default)) => default.to_owned(),
            (None, None) => {
                return Err(MissingKey {
                    message: format!(
                        "OPENAI_BASE_URL is set, but no model is named: set PI_MODEL to a model the server has (e.g. PI_MODEL=llama3.2).\n{HELP}"
                    ),
                });
            }
        };
        let base_url = (provider == "openai-compatible")
            .then(|| var("OPENAI_BASE_URL"))
            .flatten();
        Ok(Selection {
            provider,
            api,
            model,
            base_url,
        })
    }

    /// Builds the model (its key is read from the environment at each request).
    #[cfg(feature = "http")]
    pub fn into_model(self) -> Box<dyn crate::Model> {
        use super::{
            AnthropicMessages, GoogleGenerativeAi, MistralChat, OpenAiCompletions, OpenAiResponses,
        };
        match self.api {
            "openai-completions" => {
                let mut model = OpenAiCompletions::new(self.model).provider_name(self.provider);
                if let Some(url) = self.base_url {
                    model = model.base_url(url);
                }
                Box::new(model)
            }
            "openai-responses" => Box::new(OpenAiResponses::new(self.model)),
            "anthropic-messages" => Box::new(AnthropicMessages::new(self.model)),
            "mistral-conversations" => Box::new(MistralChat::new(self.model)),
            _ => Box::new(GoogleGenerativeAi::new(self.model)),
        }
    }
}

/// Providers in the order they are tried.
const KNOWN: [&str; 5] = [
    "openai-compatible",
    "openai",
    "anthropic",
    "google",
    "mistral",
];

/// A model chosen from the environment ([`Selection::resolve`] says how), or an error that says
/// which variables to set.
#[cfg(feature = "http")]
pub fn from_env(model_override: Option<&str>) -> Result<Box<dyn crate::Model>, MissingKey> {
    select_from_env(model_override).map(Selection::into_model)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn a_base_url_wins_and_needs_a_model() {
        let err = Selection::resolve(
            None,
            env(&[("OPENAI_BASE_URL", "http://localhost:11434/v1")]),
        )
        .unwrap_err();
        assert!(
            err.message
                .starts_with("OPENAI_BASE_URL is set, but no model is named"),
            "{err}"
        );
        let chosen = Selection::resolve(
            None,
            env(&[
                ("OPENAI_BASE_URL", "http://localhost:11434/v1"),
                ("PI_MODEL", "llama3.2"),
                ("OPENAI_API_KEY", "k"),
            ]),
        )
        .unwrap();
        assert_eq!(chosen.api, "openai-completions");
        assert_eq!(
            chosen.base_url.as_deref(),
            Some("http://localhost:11434/v1")
        );
        assert_eq!(chosen.model, "llama3.2");
    }

    #[test]
    fn a_named_provider_without_its_key_is_explained() {
        let err = Selection::resolve(
            Some("google/gemini-2.5-pro"),
            env(&[("OPENAI_API_KEY", "k")]),
        )
        .unwrap_err();
        assert!(
            err.message.starts_with(
                "The model \"google/gemini-2.5-pro\" needs GEMINI_API_KEY, which is not set."
            ),
            "{err}"
        );
        let chosen = Selection::resolve(
            Some("gpt-4.1"),
            env(&[("OPENAI_API_KEY", "k"), ("GEMINI_API_KEY", "")]),
        )
        .unwrap();
        assert_eq!(
            (chosen.api, chosen.model.as_str()),
            ("openai-responses", "gpt-4.1")
        );
        let chosen = Selection::resolve(None, env(&[("GOOGLE_API_KEY", "k")])).unwrap();
        assert_eq!(
            (chosen.provider.as_str(), chosen.model.as_str()),
            ("google", "gemini-2.5-flash")
        );
        let chosen = Selection::resolve(None, env(&[("MISTRAL_API_KEY", "k")])).unwrap();
        assert_eq!(
            (chosen.api, chosen.model.as_str()),
            ("mistral-conversations", "devstral-medium-latest")
        );
        let err = Selection::resolve(Some("mistral/mistral-large-latest"), env(&[])).unwrap_err();
        assert!(
            err.message.starts_with(
                "The model \"mistral/mistral-large-latest\" needs MISTRAL_API_KEY, which is not set."
            ),
            "{err}"
        );
    }
}
