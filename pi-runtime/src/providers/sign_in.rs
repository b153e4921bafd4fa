//! What a refused sign-in says: a 401 or 403 from the provider gets a hint naming what to set,
//! and the credential itself never appears in an error message, even when a server echoes it.

use futures_util::StreamExt;
use futures_util::stream::BoxStream;

use super::settings::Settings;
use crate::model::{AssistantEvent, StreamOptions};

/// How to fix a refused sign-in, and the secret to keep out of messages.
pub(crate) struct KeyHint {
    /// Appended to a 401/403 message, e.g. `check MISTRAL_API_KEY (or .api_key(..))`.
    advice: String,
    /// The credential the request was sent with.
    secret: Option<String>,
    /// Appended to a 404 message (a wrong endpoint or deployment).
    not_found: Option<String>,
}

impl KeyHint {
    /// The hint for a provider signed in with an API key (from its variables or `.api_key`).
    #[cfg(feature = "http")]
    pub(crate) fn new(settings: &Settings, options: &StreamOptions) -> Self {
        let variables = settings.api_key_env.join(" or ");
        let advice = if variables.is_empty() {
            "check the key passed with .api_key(..)".to_owned()
        } else {
            format!("check {variables} (or the key passed with .api_key(..))")
        };
        KeyHint {
            advice,
            secret: settings.resolve_key(options.api_key.as_deref()),
            not_found: None,
        }
    }

    /// A hint with its own advice (a token provider).
    pub(crate) fn with_advice(advice: impl Into<String>, secret: Option<String>) -> Self {
        KeyHint {
            advice: advice.into(),
            secret,
            not_found: None,
        }
    }

    /// What to check when the provider answers 404 (the endpoint or deployment is wrong).
    pub(crate) fn when_not_found(mut self, advice: impl Into<String>) -> Self {
        self.not_found = Some(advice.into());
        self
    }

    /// The message as the user sees it.
    pub(crate) fn apply(&self, message: &str) -> String {
        let mut message = match &self.secret {
            // Short values would blank out ordinary words; real keys are long.
            Some(secret) if secret.len() >= 8 => message.replace(secret.as_str(), "<redacted>"),
            _ => message.to_owned(),
        };
        if message.starts_with("401 ") || message.starts_with("403 ") {
            message = format!("{message} (sign-in refused: {})", self.advice);
        } else if let Some(advice) = self
            .not_found
            .as_ref()
            .filter(|_| message.starts_with("404 "))
        {
            message = format!("{message} ({advice})");
        }
        message
    }
}

/// The stream with its error message passed through [`KeyHint::apply`].
pub(crate) fn with_hint(
    stream: BoxStream<'_, AssistantEvent>,
    hint: KeyHint,
) -> BoxStream<'_, AssistantEvent> {
    stream
        .map(move |event| match event {
            AssistantEvent::Error { reason, mut error } => {
                if let Some(message) = &error.error_message {
                    error.error_message = Some(hint.apply(message));
                }
                AssistantEvent::Error { reason, error }
            }
            other => other,
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_get_advice_and_secrets_are_redacted() {
        let hint = KeyHint::with_advice("check MISTRAL_API_KEY", Some("sk-secret-123".into()));
        assert_eq!(
            hint.apply("401 Unauthorized: key sk-secret-123 is not valid"),
            "401 Unauthorized: key <redacted> is not valid (sign-in refused: check MISTRAL_API_KEY)"
        );
        assert_eq!(hint.apply("429 Too Many Requests"), "429 Too Many Requests");
    }
}
