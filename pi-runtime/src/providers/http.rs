//! The HTTP side shared by every provider: one reqwest client (rustls with the aws-lc-rs crypto
//! provider, the platform's certificate roots), retries with backoff on 429/408/5xx and failed
//! connections, idle timeouts, abort through the signal, and the body fed to the decoder; and
//! the process-wide crypto provider for code that wants one installed.
//! Every failure ends the stream with an `Error` event; nothing here panics.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::StatusCode;
use serde_json::Value;

use super::decode::{ResponseDecoder, error_message};
use super::settings::{MAX_RETRY_WAIT, Settings};
use crate::message::StopReason;
use crate::model::{AssistantEvent, StreamOptions};

/// The `User-Agent` of every provider request, so a server's logs can tell pi-tool's traffic
/// apart (a `User-Agent` header set with `.header(..)` or per request replaces it).
pub const USER_AGENT: &str = concat!("pi-tool/", env!("CARGO_PKG_VERSION"));

/// The text of an aborted request's error message.
pub(crate) const ABORTED: &str = "Request was aborted";

/// One request, ready to send.
#[derive(Clone, Debug)]
pub(crate) struct WireRequest {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

/// A reqwest client built on first use, shared by every request of a provider value.
#[derive(Debug)]
pub(crate) struct LazyClient {
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl Default for LazyClient {
    fn default() -> Self {
        LazyClient {
            client: OnceLock::new(),
        }
    }
}

impl Clone for LazyClient {
    fn clone(&self) -> Self {
        LazyClient::default()
    }
}

impl LazyClient {
    fn get(&self, settings: &Settings) -> Result<reqwest::Client, String> {
        self.client.get_or_init(|| build_client(settings)).clone()
    }
}

/// Installs aws-lc-rs's rustls crypto provider as the process default, unless one is installed.
///
/// Not needed any more for a reqwest client of your own: pi-runtime builds reqwest with its
/// `rustls` feature (aws-lc-rs), and Cargo unifies features, so your reqwest 0.13 has a provider
/// of its own too, even with `default-features = false` (before, pi-runtime used
/// `rustls-no-provider`, and `reqwest::Client::new()` in your crate panicked with "No rustls
/// crypto provider is configured" unless this ran first). Kept for code that reads
/// `CryptoProvider::get_default()`; pi-runtime itself never installs a default and passes its
/// provider explicitly, so a provider you install is the one your code sees.
///
/// Idempotent and cheap.
///
/// ```
/// pi_runtime::providers::ensure_crypto_provider();
/// pi_runtime::providers::ensure_crypto_provider(); // a second call changes nothing
/// assert!(rustls::crypto::CryptoProvider::get_default().is_some());
/// ```
pub fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // `Err` means another thread installed one first: a default exists either way.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    }
}

pub(crate) fn build_client(settings: &Settings) -> Result<reqwest::Client, String> {
    // The provider passed explicitly, so this client does not depend on which default a user
    // installed (and installs none).
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
        .map_err(|err| format!("Could not load the system's TLS certificate roots: {err}"))?;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("Could not configure TLS: {err}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(settings.connect_timeout)
        .user_agent(USER_AGENT)
        .build()
        .map_err(|err| format!("Could not build the HTTP client: {err}"))
}

/// Streams one response: sends `request` (retrying as configured), then decodes the body.
pub(crate) fn stream<'a>(
    client: &'a LazyClient,
    settings: &'a Settings,
    request: Result<WireRequest, String>,
    decoder: ResponseDecoder,
    options: &'a StreamOptions,
) -> BoxStream<'a, AssistantEvent> {
    let state = Exchange {
        client,
        settings,
        options,
        request: Some(request),
        decoder,
        queue: VecDeque::new(),
        body: None,
        first_byte_by: None,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(event) = state.queue.pop_front() {
                return Some((event, state));
            }
            if state.decoder.is_finished() {
                return None;
            }
            let events = state.advance().await;
            state.queue.extend(events);
        }
    })
    .boxed()
}

struct Exchange<'a> {
    client: &'a LazyClient,
    settings: &'a Settings,
    options: &'a StreamOptions,
    request: Option<Result<WireRequest, String>>,
    decoder: ResponseDecoder,
    queue: VecDeque<AssistantEvent>,
    body: Option<reqwest::Response>,
    /// Until the body's first chunk: when the first-byte timeout runs out (counted from the
    /// request that got the response).
    first_byte_by: Option<Instant>,
}

impl Exchange<'_> {
    /// One step: connect, or read the next chunk. Returns the events it produced.
    async fn advance(&mut self) -> Vec<AssistantEvent> {
        let signal = self.options.signal.clone();
        if signal.is_cancelled() {
            return self.decoder.fail(StopReason::Aborted, ABORTED);
        }
        if let Some(request) = self.request.take() {
            let request = match request {
                Ok(request) => request,
                Err(message) => return self.decoder.fail(StopReason::Error, message),
            };
            return match self.connect(&request).await {
                Ok((response, first_byte_by)) => {
                    self.body = Some(response);
                    self.first_byte_by = first_byte_by;
                    self.decoder.push(&[])
                }
                Err((reason, message)) => self.decoder.fail(reason, message),
            };
        }
        let Some(response) = self.body.as_mut() else {
            return self.decoder.finish();
        };
        let idle = self.settings.idle_timeout;
        let wait = self
            .first_byte_by
            .map_or(idle, |by| by.saturating_duration_since(Instant::now()));
        let chunk = tokio::select! {
            () = signal.cancelled() => return self.decoder.fail(StopReason::Aborted, ABORTED),
            chunk = tokio::time::timeout(wait, response.chunk()) => chunk,
        };
        match chunk {
            Ok(Ok(Some(bytes))) => {
                self.first_byte_by = None;
                self.decoder.push(&bytes)
            }
            Ok(Ok(None)) => {
                self.body = None;
                self.decoder.finish()
            }
            Ok(Err(err)) => {
                self.body = None;
                let mut events = self.decoder.push(&[]);
                events.extend(self.decoder.fail(
                    StopReason::Error,
                    format!("Connection error while streaming: {}", error_chain(&err)),
                ));
                events
            }
            Err(_) => {
                self.body = None;
                let message = match self.first_byte_by {
                    Some(_) => first_byte_message(self.settings.first_byte_timeout),
                    None => format!("No data from the provider for {idle:?} (idle_timeout)"),
                };
                self.decoder.fail(StopReason::Error, message)
            }
        }
    }

    /// Sends the request until it succeeds, fails for good, or the retries run out.
    async fn connect(
        &self,
        request: &WireRequest,
    ) -> Result<(reqwest::Response, Option<Instant>), (StopReason, String)> {
        let client = self
            .client
            .get(self.settings)
            .map_err(|message| (StopReason::Error, message))?;
        let signal = self.options.signal.clone();
        let body = serde_json::to_vec(&request.body)
            .map_err(|err| (StopReason::Error, err.to_string()))?;
        let mut attempt = 0u32;
        loop {
            let mut builder = client
                .post(&request.url)
                .header("content-type", "application/json")
                .header("accept", "text/event-stream");
            let fixed = request.headers.iter().map(|(name, value)| (name, value));
            for (name, value) in fixed
                .chain(&self.settings.headers)
                .chain(&self.options.headers)
            {
                builder = builder.header(name.as_str(), value.as_str());
            }
            let sent_at = Instant::now();
            let send = tokio::time::timeout(
                self.settings.first_byte_timeout,
                builder.body(body.clone()).send(),
            );
            let outcome = tokio::select! {
                () = signal.cancelled() => return Err((StopReason::Aborted, ABORTED.to_owned())),
                outcome = send => outcome,
            };
            let (message, wait) = match outcome {
                Ok(Ok(response)) if response.status().is_success() => {
                    // A timeout too long to add to an instant leaves the idle timeout to act.
                    let first_byte_by = sent_at.checked_add(self.settings.first_byte_timeout);
                    return Ok((response, first_byte_by));
                }
                Ok(Ok(response)) => {
                    let status = response.status();
                    let retry_after = retry_after(&response);
                    let text = tokio::select! {
                        () = signal.cancelled() => return Err((StopReason::Aborted, ABORTED.to_owned())),
                        text = tokio::time::timeout(self.settings.idle_timeout, response.text()) => text.ok().and_then(Result::ok).unwrap_or_default(),
                    };
                    let message = status_message(status, &text);
                    if !is_retryable(status) {
                        return Err((StopReason::Error, message));
                    }
                    (message, retry_after)
                }
                Ok(Err(err)) => (format!("Connection error: {}", error_chain(&err)), None),
                Err(_) => (first_byte_message(self.settings.first_byte_timeout), None),
            };
            if attempt >= self.settings.max_retries {
                return Err((StopReason::Error, message));
            }
            let delay = wait.unwrap_or_else(|| backoff(self.settings.retry_delay, attempt));
            if delay > MAX_RETRY_WAIT {
                return Err((
                    StopReason::Error,
                    format!(
                        "{message} (the provider asks to retry in {} s)",
                        delay.as_secs()
                    ),
                ));
            }
            tracing::debug!(attempt, ?delay, %message, "retrying model request");
            tokio::select! {
                () = signal.cancelled() => return Err((StopReason::Aborted, ABORTED.to_owned())),
                () = tokio::time::sleep(delay) => {}
            }
            attempt += 1;
        }
    }
}

/// The error of a request whose response did not start in time.
fn first_byte_message(timeout: Duration) -> String {
    format!("No response from the provider within {timeout:?} (first_byte_timeout)")
}

/// 429 (rate limit), 408, and 5xx (529: Anthropic's "overloaded") are worth another try.
fn is_retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
        || status.as_u16() == 529
}

/// `base * 2^attempt`, capped at a minute.
fn backoff(base: Duration, attempt: u32) -> Duration {
    base.saturating_mul(2u32.saturating_pow(attempt))
        .min(MAX_RETRY_WAIT)
}

/// The server's `retry-after` (seconds) or `retry-after-ms`, when present.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    header("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|s| Duration::from_secs_f64(s.max(0.0)))
}

/// `429 Too Many Requests: <the provider's message>`.
fn status_message(status: StatusCode, body: &str) -> String {
    let detail = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|value| {
            // Gemini wraps errors in an array.
            let value = value
                .as_array()
                .and_then(|a| a.first().cloned())
                .unwrap_or(value);
            error_message(&value)
        })
        .unwrap_or_else(|| body.trim().chars().take(500).collect());
    let status_text = status
        .canonical_reason()
        .map_or(status.as_str().to_owned(), |reason| {
            format!("{} {reason}", status.as_str())
        });
    if detail.is_empty() {
        status_text
    } else {
        format!("{status_text}: {detail}")
    }
}

/// An error and its causes, joined with `: ` (reqwest's own text is often just "error sending
/// request").
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
