//! AWS credentials that change over time, asked for once per Bedrock request: a provider keeps
//! what it fetched until a few minutes before it expires, then fetches again (one fetch at a
//! time), as Google's and Entra ID's token providers do.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::bedrock_auth::AwsCredentials;

/// What an [`AwsCredentialsProvider`] returns: the credentials, or why there are none (said
/// to the user as it is, and never holding a secret).
pub type AwsCredentialsResult = Result<AwsCredentials, String>;

/// The future of one credentials request.
pub type AwsCredentialsFuture<'a> = Pin<Box<dyn Future<Output = AwsCredentialsResult> + Send + 'a>>;

/// Supplies AWS credentials for Bedrock's SigV4 signing, asked once per request: a provider
/// whose credentials are temporary keeps them and fetches new ones before they expire.
/// [`AwsCredentials`] is one for keys that never change.
///
/// ```
/// use pi_runtime::providers::{AwsCredentials, AwsCredentialsFuture, AwsCredentialsProvider};
///
/// /// Keys a sidecar writes to a file as `ID SECRET TOKEN`.
/// struct KeysFile(std::path::PathBuf);
///
/// impl AwsCredentialsProvider for KeysFile {
///     fn credentials(&self) -> AwsCredentialsFuture<'_> {
///         Box::pin(async move {
///             let text = std::fs::read_to_string(&self.0)
///                 .map_err(|err| format!("cannot read {}: {err}", self.0.display()))?;
///             match text.split_whitespace().collect::<Vec<_>>()[..] {
///                 [id, secret, token] => Ok(AwsCredentials::new(id, secret, Some(token.to_owned()))),
///                 _ => Err(format!("{} does not hold three words", self.0.display())),
///             }
///         })
///     }
/// }
/// ```
pub trait AwsCredentialsProvider: Send + Sync {
    /// Current credentials.
    fn credentials(&self) -> AwsCredentialsFuture<'_>;
}

impl AwsCredentialsProvider for AwsCredentials {
    fn credentials(&self) -> AwsCredentialsFuture<'_> {
        let credentials = self.clone();
        Box::pin(async move { Ok(credentials) })
    }
}

/// The HTTP client of a credentials source (STS, the SSO portal, a container's agent), made
/// on its first fetch: a profile that is only read never builds one.
#[derive(Default)]
pub(crate) struct LazyClient(std::sync::OnceLock<Result<reqwest::Client, String>>);

impl LazyClient {
    /// The client, or why it could not be made.
    pub(crate) fn get(&self) -> Result<reqwest::Client, String> {
        self.0
            .get_or_init(|| {
                super::http::build_client(&super::settings::Settings::new(
                    "",
                    "amazon-bedrock",
                    "",
                    &[],
                ))
            })
            .clone()
    }
}

/// Credentials are fetched again when less than this is left of them.
pub(crate) const REFRESH_MARGIN: Duration = Duration::from_secs(300);

/// Credentials and when they expire (`None`: never).
pub(crate) struct Expiring {
    pub(crate) credentials: AwsCredentials,
    pub(crate) expires: Option<SystemTime>,
}

impl Expiring {
    /// `credentials` from `from` (a source, for the message), refused when they have already
    /// expired on arrival.
    pub(crate) fn checked(
        credentials: AwsCredentials,
        expires: Option<SystemTime>,
        from: &str,
    ) -> Result<Self, String> {
        match expires {
            Some(at) if at <= SystemTime::now() => Err(format!(
                "{from} returned credentials that had already expired (at {})",
                aws_smithy_types::DateTime::from(at)
                    .fmt(aws_smithy_types::date_time::Format::DateTime)
                    .unwrap_or_default()
            )),
            _ => Ok(Expiring {
                credentials,
                expires,
            }),
        }
    }
}

/// The credentials last fetched, kept until [`REFRESH_MARGIN`] before they expire.
#[derive(Default)]
pub(crate) struct Refreshing {
    cached: tokio::sync::Mutex<Option<Expiring>>,
}

impl Refreshing {
    /// The kept credentials while they are fresh, else those `fetch` returns (kept in turn).
    /// Callers wait for a fetch under way instead of starting their own.
    pub(crate) async fn get<F>(&self, fetch: F) -> AwsCredentialsResult
    where
        F: Future<Output = Result<Expiring, String>>,
    {
        let mut cached = self.cached.lock().await;
        if let Some(kept) = cached.as_ref()
            && is_fresh(kept.expires, SystemTime::now())
        {
            return Ok(kept.credentials.clone());
        }
        let fetched = fetch.await?;
        let credentials = fetched.credentials.clone();
        *cached = Some(fetched);
        Ok(credentials)
    }
}

/// Whether credentials expiring at `expires` are used at `now` without fetching new ones.
fn is_fresh(expires: Option<SystemTime>, now: SystemTime) -> bool {
    expires.is_none_or(|expires| now + REFRESH_MARGIN < expires)
}

/// An ISO 8601 time (`2026-01-01T00:00:00Z`, fractions and offsets allowed), `what` naming the
/// field in the message.
pub(crate) fn parse_time(text: &str, what: &str) -> Result<SystemTime, String> {
    aws_smithy_types::DateTime::from_str(
        text.trim(),
        aws_smithy_types::date_time::Format::DateTimeWithOffset,
    )
    .ok()
    .and_then(|time| SystemTime::try_from(time).ok())
    .ok_or_else(|| format!("{what} \"{text}\" is not an ISO 8601 time"))
}

/// The providers made for profiles, kept across requests (and clones of a model) while the
/// profile's settings stay the same.
#[derive(Clone, Default)]
pub(crate) struct ProviderCache {
    kept: Arc<std::sync::Mutex<Option<(super::bedrock_auth::ProfileCredentials, SharedProvider)>>>,
}

/// A provider shared by the requests that use it.
pub(crate) type SharedProvider = Arc<dyn AwsCredentialsProvider>;

impl std::fmt::Debug for ProviderCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProviderCache")
    }
}

impl ProviderCache {
    /// The provider kept for `settings`, or a new one made from them (and kept).
    pub(crate) fn provider(
        &self,
        settings: &super::bedrock_auth::ProfileCredentials,
    ) -> SharedProvider {
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((kept_settings, provider)) = kept.as_ref()
            && kept_settings == settings
        {
            return provider.clone();
        }
        let provider = settings.provider();
        *kept = Some((settings.clone(), provider.clone()));
        provider
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_fetched_again_five_minutes_before_they_expire() {
        let now = SystemTime::now();
        assert!(is_fresh(None, now));
        assert!(is_fresh(Some(now + Duration::from_secs(301)), now));
        assert!(!is_fresh(Some(now + Duration::from_secs(299)), now));
        assert!(!is_fresh(Some(now - Duration::from_secs(1)), now));
    }

    #[test]
    fn times_with_fractions_and_offsets() {
        let utc = parse_time("2026-01-01T10:00:00Z", "Expiration").unwrap();
        assert_eq!(
            parse_time("2026-01-01T11:00:00+01:00", "Expiration").unwrap(),
            utc
        );
        assert!(parse_time("2026-01-01T10:00:00.250Z", "Expiration").unwrap() > utc);
        let err = parse_time("tomorrow", "Expiration").unwrap_err();
        assert_eq!(err, "Expiration \"tomorrow\" is not an ISO 8601 time");
    }

    #[tokio::test]
    async fn one_fetch_at_a_time_and_kept_while_fresh() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let refreshing = Arc::new(Refreshing::default());
        let fetches = Arc::new(AtomicUsize::new(0));
        let fetch = |expires: Option<SystemTime>| {
            let fetches = fetches.clone();
            async move {
                let n = fetches.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
                Ok(Expiring {
                    credentials: AwsCredentials::new(format!("AKID{n}"), "s", None),
                    expires,
                })
            }
        };
        let soon = Some(SystemTime::now() + Duration::from_secs(60));
        let (a, b) = tokio::join!(refreshing.get(fetch(soon)), refreshing.get(fetch(soon)));
        // Expiring within the margin: each asks again, one after the other.
        assert_eq!(a.unwrap().access_key_id(), "AKID0");
        assert_eq!(b.unwrap().access_key_id(), "AKID1");
        let later = Some(SystemTime::now() + Duration::from_secs(3600));
        let c = refreshing.get(fetch(later)).await.unwrap();
        let d = refreshing.get(fetch(later)).await.unwrap();
        assert_eq!((c.access_key_id(), d.access_key_id()), ("AKID2", "AKID2"));
        assert_eq!(fetches.load(Ordering::SeqCst), 3);
    }
}
