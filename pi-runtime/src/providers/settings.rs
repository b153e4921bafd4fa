//! What every provider is configured with: model, endpoint, key, timeouts, retries, headers.

use std::collections::BTreeMap;
use std::time::Duration;

/// Default time to establish a connection.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default longest wait from sending a request to the first byte of its response body
/// (generous: a local server may read a long prompt before it answers at all).
pub(crate) const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default longest silence between two chunks of a response that has started.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default number of retries after a 429, a 408, a 5xx or a failed connection.
pub(crate) const MAX_RETRIES: u32 = 3;
/// Default delay before the first retry; doubled each time.
pub(crate) const RETRY_DELAY: Duration = Duration::from_millis(1000);
/// The longest a provider's `retry-after` is honoured for; longer waits fail instead.
#[cfg(feature = "http")]
pub(crate) const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// The configuration shared by every provider.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) model: String,
    pub(crate) provider: String,
    pub(crate) base_url: String,
    pub(crate) api_key: Option<String>,
    /// Environment variables read for the key when none is set, first set wins.
    pub(crate) api_key_env: Vec<String>,
    pub(crate) connect_timeout: Duration,
    pub(crate) first_byte_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_retries: u32,
    pub(crate) retry_delay: Duration,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) images: bool,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) max_argument_bytes: usize,
    /// Which tools must stay strict, and what fell back per session.
    pub(crate) strict_tools: super::strict_fallback::StrictTools,
}

/// Like the derived `Debug`, with the key and header values hidden (a logged model must not
/// leak credentials).
impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("model", &self.model)
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<hidden>"))
            .field("api_key_env", &self.api_key_env)
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_delay", &self.retry_delay)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("images", &self.images)
            .field("max_tokens", &self.max_tokens)
            .field("max_argument_bytes", &self.max_argument_bytes)
            .field("strict_tools", &self.strict_tools)
            .finish()
    }
}

impl Settings {
    /// Who a request is for: the replay rules of `transform` compare each earlier message's
    /// origin with it.
    pub(crate) fn target(
        &self,
        api: &'static str,
        id_rule: super::transform::IdRule,
    ) -> super::transform::Target<'_> {
        super::transform::Target {
            api,
            provider: &self.provider,
            model: &self.model,
            accepts_images: self.images,
            id_rule,
        }
    }
    pub(crate) fn new(model: &str, provider: &str, base_url: &str, key_env: &[&str]) -> Self {
        Settings {
            model: model.to_owned(),
            provider: provider.to_owned(),
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: None,
            api_key_env: key_env.iter().map(|v| (*v).to_owned()).collect(),
            connect_timeout: CONNECT_TIMEOUT,
            first_byte_timeout: FIRST_BYTE_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            max_retries: MAX_RETRIES,
            retry_delay: RETRY_DELAY,
            headers: BTreeMap::new(),
            images: true,
            max_tokens: None,
            max_argument_bytes: pi_tool::DEFAULT_MAX_ARGUMENT_BYTES,
            strict_tools: Default::default(),
        }
    }

    /// The key: the per-request override, the configured key, or the first environment
    /// variable that is set and not empty.
    #[cfg(feature = "http")]
    pub(crate) fn resolve_key(&self, override_key: Option<&str>) -> Option<String> {
        override_key
            .map(str::to_owned)
            .or_else(|| self.api_key.clone())
            .or_else(|| {
                self.api_key_env.iter().find_map(|var| {
                    std::env::var(var)
                        .ok()
                        .filter(|value| !value.trim().is_empty())
                })
            })
    }
}

/// The builder methods every provider has, documented once.
macro_rules! settings_builder {
    ($provider:ty) => {
        impl $provider {
            /// Sends requests to this base URL instead of the provider's (a proxy, a local
            /// OpenAI-compatible server such as `http://localhost:11434/v1`).
            pub fn base_url(mut self, url: impl Into<String>) -> Self {
                self.settings.base_url = url.into().trim_end_matches('/').to_owned();
                self
            }

            /// Uses this API key (otherwise it is read from the environment at each request).
            pub fn api_key(mut self, key: impl Into<String>) -> Self {
                self.settings.api_key = Some(key.into());
                self
            }

            /// Reads the API key from this environment variable (replacing the default ones).
            pub fn api_key_env(mut self, variable: impl Into<String>) -> Self {
                self.settings.api_key_env = vec![variable.into()];
                self
            }

            /// Names the provider in messages (`openrouter`, `ollama`, ...); thinking and
            /// signatures are replayed only to the same provider, API and model.
            pub fn provider_name(mut self, name: impl Into<String>) -> Self {
                self.settings.provider = name.into();
                self
            }

            /// How long to wait for a connection (default 30 s).
            pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Self {
                self.settings.connect_timeout = timeout;
                self
            }

            /// The longest wait from sending a request to the first byte of the response body,
            /// headers included (default 300 s); a request that stalls longer ends in an error
            /// event `No response from the provider within <timeout> (first_byte_timeout)`
            /// (after the retries).
            pub fn first_byte_timeout(mut self, timeout: std::time::Duration) -> Self {
                self.settings.first_byte_timeout = timeout;
                self
            }

            /// The longest silence allowed between two chunks of a stream that has started
            /// (default 300 s); a longer one ends the stream with the error event `No data from
            /// the provider for <timeout> (idle_timeout)`.
            pub fn idle_timeout(mut self, timeout: std::time::Duration) -> Self {
                self.settings.idle_timeout = timeout;
                self
            }

            /// How often a request is retried after 429, 408, 5xx or a failed connection (default 3).
            pub fn max_retries(mut self, retries: u32) -> Self {
                self.settings.max_retries = retries;
                self
            }

            /// The delay before the first retry, doubled for each next one (default 1 s); a
            /// `retry-after` header from the server takes precedence.
            pub fn retry_delay(mut self, delay: std::time::Duration) -> Self {
                self.settings.retry_delay = delay;
                self
            }

            /// Adds an HTTP header to every request.
            pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.settings.headers.insert(name.into(), value.into());
                self
            }

            /// Whether the model reads images (default true); when not, images in the
            /// transcript are replaced with pi's placeholder texts.
            pub fn images(mut self, accepts_images: bool) -> Self {
                self.settings.images = accepts_images;
                self
            }

            /// The output token limit used when the request's options set none.
            pub fn max_tokens(mut self, max_tokens: u32) -> Self {
                self.settings.max_tokens = Some(max_tokens);
                self
            }

            /// The most bytes of one tool call's argument text kept from the stream (default
            /// 1 MiB, the agent loop's default argument limit). Past it the rest is dropped, so
            /// a runaway stream cannot fill memory, and the call's arguments are the text so
            /// far, which the loop refuses by its `argument_limits`. Raise both together.
            pub fn max_argument_bytes(mut self, bytes: usize) -> Self {
                self.settings.max_argument_bytes = bytes;
                self
            }

            /// Which tools must stay strict when the API refuses strict tools (every other tool
            /// is sent once more without `strict`, and from then on in that session); the
            /// value is shared, so a clone kept by the caller tells what fell back
            /// ([`StrictTools::fallback`]($crate::providers::StrictTools::fallback)).
            pub fn strict_tools(mut self, policy: $crate::providers::StrictTools) -> Self {
                self.settings.strict_tools = policy;
                self
            }

            /// This model's strict-tool policy and what fell back per session.
            pub fn strict_tools_policy(&self) -> &$crate::providers::StrictTools {
                &self.settings.strict_tools
            }

            /// A decoder for this provider's response stream: bytes in, events out.
            pub fn decoder(&self) -> $crate::providers::ResponseDecoder {
                $crate::providers::ResponseDecoder::new(
                    self.wire_decoder(),
                    Self::API,
                    &self.settings.provider,
                    &self.settings.model,
                )
                .with_max_argument_bytes(self.settings.max_argument_bytes)
            }
        }
    };
}

pub(crate) use settings_builder;
