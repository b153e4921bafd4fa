//! Google Cloud's Application Default Credentials, for Vertex AI, looked for in the order
//! Google's libraries use: the file `GOOGLE_APPLICATION_CREDENTIALS` names (a service
//! account's key: a JWT signed with its key, exchanged at its `token_uri`; or workload identity
//! federation's `external_account` configuration: see [`external_account`]), else gcloud's
//! `application_default_credentials.json` (a user's refresh token, exchanged at the same OAuth
//! endpoint), else the metadata server of the machine (GCE, GKE, Cloud Run: see
//! [`metadata_server`]). Tokens are kept and refreshed five minutes before they expire; one
//! refresh runs at a time.
//!
//! The `token_uri` of the file is used when it has one (service-account keys always do), and
//! `GCE_METADATA_HOST` names the metadata server, so a test can point either at a local server.

mod external_account;
mod metadata_server;

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use super::entra_id::TokenFuture;
use external_account::{EXTERNAL_ADVICE, ExternalAccount};
use metadata_server::MetadataServer;

/// Google's OAuth token endpoint (the default `token_uri`).
pub(crate) const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// The scope Vertex AI takes.
const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// A token is refreshed when less than this is left of it.
const REFRESH_MARGIN: Duration = Duration::from_secs(300);
/// A service account's signed assertion is valid this long (Google's maximum).
const ASSERTION_LIFETIME: u64 = 3600;
/// The longest a token exchange may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

/// Supplies Google Cloud access tokens (scope `cloud-platform`) for Vertex AI, asked once per
/// request: [`ApplicationDefaultCredentials`] keeps its token and refreshes it before it
/// expires. [`StaticToken`](super::StaticToken) is one for a token you already have.
pub trait GoogleTokenProvider: Send + Sync {
    /// A current access token, or why there is none (said to the user as it is, and never
    /// holding a secret).
    fn token(&self) -> TokenFuture<'_>;

    /// The project the credentials belong to, used by a model that has none set and finds
    /// none in the environment (default: none).
    fn project(&self) -> Pin<Box<dyn Future<Output = Option<String>> + Send + '_>> {
        Box::pin(async { None })
    }
}

impl GoogleTokenProvider for super::StaticToken {
    fn token(&self) -> TokenFuture<'_> {
        super::EntraTokenProvider::token(self)
    }
}

/// The kinds of credential file Application Default Credentials reads.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CredentialFile {
    ServiceAccount {
        client_email: String,
        private_key: String,
        #[serde(default)]
        private_key_id: Option<String>,
        #[serde(default)]
        token_uri: Option<String>,
        #[serde(default)]
        project_id: Option<String>,
    },
    AuthorizedUser {
        client_id: String,
        client_secret: String,
        refresh_token: String,
        #[serde(default)]
        token_uri: Option<String>,
        #[serde(default)]
        quota_project_id: Option<String>,
    },
}

/// How the credentials get a token.
enum Grant {
    /// A JWT signed with the service account's key (RS256), exchanged for a token.
    ServiceAccount {
        client_email: String,
        key_id: Option<String>,
        key: jsonwebtoken::EncodingKey,
        token_uri: String,
    },
    /// A user's refresh token (gcloud's `auth application-default login`).
    RefreshToken {
        client_id: String,
        client_secret: String,
        refresh_token: String,
        token_uri: String,
    },
    /// Workload identity federation: another identity provider's token exchanged at Google's
    /// STS (then, maybe, for a service account's).
    ExternalAccount(ExternalAccount),
    /// No file: the machine's metadata server gives the tokens.
    MetadataServer(MetadataServer),
}

impl Grant {
    fn kind(&self) -> &'static str {
        match self {
            Grant::ServiceAccount { .. } => "service_account",
            Grant::RefreshToken { .. } => "authorized_user",
            Grant::ExternalAccount(_) => "external_account",
            Grant::MetadataServer(_) => "metadata_server",
        }
    }
}

/// A token and when it stops being used.
struct Cached {
    token: String,
    refresh_at: Instant,
}

/// Application Default Credentials: a service account's key file, a workload identity
/// federation configuration (`external_account`), gcloud's user credentials or the metadata
/// server of a Google Cloud machine, giving access tokens that are kept and refreshed five
/// minutes before they expire.
///
/// ```no_run
/// # async fn demo() -> Result<(), String> {
/// use pi_runtime::providers::ApplicationDefaultCredentials;
///
/// // GOOGLE_APPLICATION_CREDENTIALS, else ~/.config/gcloud/application_default_credentials.json,
/// // else the metadata server (on GCE, GKE, Cloud Run).
/// let credentials = ApplicationDefaultCredentials::from_env()?;
/// println!("signing in with {}", credentials.source());
/// let token = credentials.access_token().await?;
/// # Ok(()) }
/// ```
pub struct ApplicationDefaultCredentials {
    path: Option<PathBuf>,
    grant: Grant,
    project: Option<String>,
    cached: tokio::sync::Mutex<Option<Cached>>,
    client: std::sync::OnceLock<Result<reqwest::Client, String>>,
}

/// The key and tokens are never shown.
impl fmt::Debug for ApplicationDefaultCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("ApplicationDefaultCredentials");
        debug.field("type", &self.grant.kind());
        if let Some(path) = &self.path {
            debug.field("path", path);
        }
        match &self.grant {
            Grant::ServiceAccount { token_uri, .. } | Grant::RefreshToken { token_uri, .. } => {
                debug.field("token_uri", token_uri)
            }
            Grant::ExternalAccount(account) => debug.field("external_account", account),
            Grant::MetadataServer(server) => debug.field("metadata_server", server),
        };
        debug.finish_non_exhaustive()
    }
}

/// What to set, said by every failure to find credentials.
pub(crate) const ADC_ADVICE: &str = "set GOOGLE_APPLICATION_CREDENTIALS to a service account's \
     key file, or run `gcloud auth application-default login`";

impl ApplicationDefaultCredentials {
    /// The credentials Google's libraries find: the file `GOOGLE_APPLICATION_CREDENTIALS`
    /// names, else gcloud's `application_default_credentials.json` (under
    /// `$CLOUDSDK_CONFIG`, else `~/.config/gcloud`, or `%APPDATA%\gcloud` on Windows), else
    /// the metadata server (`GCE_METADATA_HOST`, else `metadata.google.internal`, then
    /// `GCE_METADATA_IP`, else `169.254.169.254`), unless `NO_GCE_CHECK=true`. The metadata
    /// server is asked at the first token: when it does not answer, that says what to set.
    pub fn from_env() -> Result<Self, String> {
        Self::find(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn find(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let var = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        if let Some(path) = var("GOOGLE_APPLICATION_CREDENTIALS") {
            return Self::from_file(path);
        }
        let folder = var("CLOUDSDK_CONFIG").map(PathBuf::from).or_else(|| {
            if cfg!(windows) {
                var("APPDATA").map(|dir| Path::new(&dir).join("gcloud"))
            } else {
                var("HOME").map(|home| Path::new(&home).join(".config").join("gcloud"))
            }
        });
        let not_found = match folder {
            Some(folder) => {
                let path = folder.join("application_default_credentials.json");
                if path.exists() {
                    return Self::from_file(path);
                }
                format!(
                    "GOOGLE_APPLICATION_CREDENTIALS is not set and {} does not exist",
                    path.display()
                )
            }
            None => {
                "GOOGLE_APPLICATION_CREDENTIALS is not set and there is no home folder".to_owned()
            }
        };
        if var("NO_GCE_CHECK").as_deref() == Some("true") {
            return Err(format!(
                "No Google Cloud credentials ({not_found}; NO_GCE_CHECK=true leaves out the \
                 metadata server): {ADC_ADVICE}"
            ));
        }
        Ok(Self::with_grant(
            None,
            Grant::MetadataServer(MetadataServer::find(&var, not_found)),
            None,
        ))
    }

    /// The metadata server of the Google Cloud machine this runs on (GCE, GKE, Cloud Run), at
    /// `GCE_METADATA_HOST` (else `metadata.google.internal`, then `GCE_METADATA_IP`, else
    /// `169.254.169.254`), whatever files there are.
    pub fn metadata_server() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Self::with_grant(
            None,
            Grant::MetadataServer(MetadataServer::find(&var, String::new())),
            None,
        )
    }

    /// The credentials of one file: a service account's key, an `external_account`
    /// configuration or gcloud's user credentials.
    pub fn from_file(path: impl Into<PathBuf>) -> Result<Self, String> {
        let path = path.into();
        let text = std::fs::read_to_string(&path).map_err(|err| {
            format!(
                "Cannot read the Google Cloud credentials file {}: {err} ({ADC_ADVICE})",
                path.display()
            )
        })?;
        Self::from_json(&text, path)
    }

    fn from_json(text: &str, path: PathBuf) -> Result<Self, String> {
        let json = serde_json::from_str::<serde_json::Value>(text).ok();
        let kind = json
            .as_ref()
            .and_then(|v| v.get("type")?.as_str().map(str::to_owned));
        if let (Some("external_account"), Some(json)) = (kind.as_deref(), &json) {
            let account = ExternalAccount::from_json(json).map_err(|reason| {
                format!(
                    "The Google Cloud credentials file {} (external_account) cannot be used: \
                     {reason} ({EXTERNAL_ADVICE})",
                    path.display()
                )
            })?;
            return Ok(Self::with_grant(
                Some(path),
                Grant::ExternalAccount(account),
                None,
            ));
        }
        // serde's own message could quote the file, key included: say only what is wrong.
        let file: CredentialFile = serde_json::from_str(text).map_err(|_| match &kind {
            Some(kind) if kind != "service_account" && kind != "authorized_user" => format!(
                "The Google Cloud credentials file {} is of type \"{kind}\", which is not supported \
                 (service_account, authorized_user and external_account are): {ADC_ADVICE}",
                path.display()
            ),
            _ => format!(
                "The Google Cloud credentials file {} is not a service account key or gcloud's \
                 user credentials (a field is missing or the JSON is invalid): {ADC_ADVICE}",
                path.display()
            ),
        })?;
        let token_uri = |uri: Option<String>| uri.unwrap_or_else(|| GOOGLE_TOKEN_URI.to_owned());
        let (grant, project) = match file {
            CredentialFile::ServiceAccount {
                client_email,
                private_key,
                private_key_id,
                token_uri: uri,
                project_id,
            } => {
                let key = jsonwebtoken::EncodingKey::from_rsa_pem(private_key.as_bytes()).map_err(
                    |_| {
                        format!(
                            "The private key in {} is not an RSA key in PEM form: {ADC_ADVICE}",
                            path.display()
                        )
                    },
                )?;
                let grant = Grant::ServiceAccount {
                    client_email,
                    key_id: private_key_id,
                    key,
                    token_uri: token_uri(uri),
                };
                (grant, project_id)
            }
            CredentialFile::AuthorizedUser {
                client_id,
                client_secret,
                refresh_token,
                token_uri: uri,
                quota_project_id,
            } => {
                let grant = Grant::RefreshToken {
                    client_id,
                    client_secret,
                    refresh_token,
                    token_uri: token_uri(uri),
                };
                (grant, quota_project_id)
            }
        };
        Ok(Self::with_grant(Some(path), grant, project))
    }

    fn with_grant(path: Option<PathBuf>, grant: Grant, project: Option<String>) -> Self {
        ApplicationDefaultCredentials {
            path,
            grant,
            project,
            cached: tokio::sync::Mutex::new(None),
            client: std::sync::OnceLock::new(),
        }
    }

    /// The file the credentials came from (none for the metadata server).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Where the tokens come from, for messages: `the credentials in {file}` or `the metadata
    /// server at {url}`.
    pub fn source(&self) -> String {
        match (&self.grant, &self.path) {
            (Grant::MetadataServer(server), _) => {
                format!("the metadata server at {}", server.root())
            }
            (_, Some(path)) => format!("the credentials in {}", path.display()),
            (_, None) => "Application Default Credentials".to_owned(),
        }
    }

    /// The project the file names (a service account's `project_id`, a user's
    /// `quota_project_id`), used when no project is set. The metadata server's is asked by
    /// [`project_id`](Self::project_id).
    pub fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    /// The project: the file's, or the metadata server's `project/project-id` (asked once,
    /// then kept; none when it does not answer).
    pub async fn project_id(&self) -> Option<String> {
        match &self.grant {
            Grant::MetadataServer(server) => server.project_id(self.client().ok()?).await,
            _ => self.project.clone(),
        }
    }

    /// A current access token: the kept one while more than five minutes are left of it, else
    /// a new one from the token endpoint.
    pub async fn access_token(&self) -> Result<String, String> {
        let mut cached = self.cached.lock().await;
        if let Some(current) = cached.as_ref()
            && Instant::now() < current.refresh_at
        {
            return Ok(current.token.clone());
        }
        let (token, lifetime) = self.exchange().await?;
        let refresh_at = Instant::now() + lifetime.saturating_sub(REFRESH_MARGIN);
        *cached = Some(Cached {
            token: token.clone(),
            refresh_at,
        });
        Ok(token)
    }

    fn client(&self) -> Result<&reqwest::Client, String> {
        self.client
            .get_or_init(|| {
                super::http::build_client(&super::settings::Settings::new(
                    "",
                    "google-vertex",
                    "",
                    &[],
                ))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Asks for a new token; returns it and how long it lives.
    async fn exchange(&self) -> Result<(String, Duration), String> {
        let client = self.client()?;
        let (form, token_uri) = match &self.grant {
            Grant::MetadataServer(server) => return server.token(client).await,
            Grant::ExternalAccount(account) => {
                return account.token(client).await.map_err(|err| {
                    format!(
                        "Could not get a Google Cloud access token with {}: {err} ({EXTERNAL_ADVICE})",
                        self.source()
                    )
                });
            }
            Grant::ServiceAccount {
                client_email,
                key_id,
                key,
                token_uri,
            } => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let claims = serde_json::json!({
                    "iss": client_email,
                    "scope": CLOUD_PLATFORM_SCOPE,
                    "aud": token_uri,
                    "iat": now,
                    "exp": now + ASSERTION_LIFETIME,
                });
                let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
                header.kid = key_id.clone();
                let assertion = jsonwebtoken::encode(&header, &claims, key).map_err(|err| {
                    format!(
                        "Could not sign the service account's token request ({}): {err}",
                        self.source()
                    )
                })?;
                let form = form_urlencoded::Serializer::new(String::new())
                    .append_pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer")
                    .append_pair("assertion", &assertion)
                    .finish();
                (form, token_uri)
            }
            Grant::RefreshToken {
                client_id,
                client_secret,
                refresh_token,
                token_uri,
            } => {
                let form = form_urlencoded::Serializer::new(String::new())
                    .append_pair("grant_type", "refresh_token")
                    .append_pair("client_id", client_id)
                    .append_pair("client_secret", client_secret)
                    .append_pair("refresh_token", refresh_token)
                    .finish();
                (form, token_uri)
            }
        };
        let failed = |detail: String| {
            format!(
                "Could not get a Google Cloud access token from {token_uri} with {}: {detail} ({ADC_ADVICE})",
                self.source()
            )
        };
        let request = client
            .post(token_uri)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form);
        let (status, _, text) = send(request, EXCHANGE_TIMEOUT).await.map_err(failed)?;
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if !status.is_success() {
            return Err(failed(oauth_error(status, &answer)));
        }
        token_of(&answer).map_err(failed)
    }
}

/// Sends a request and reads its answer, both within `timeout`: the status, headers and body,
/// or what went wrong (a connection that failed, no answer in time).
async fn send(
    request: reqwest::RequestBuilder,
    timeout: Duration,
) -> Result<(reqwest::StatusCode, reqwest::header::HeaderMap, String), String> {
    let no_answer = || format!("no answer within {timeout:?}");
    let response = tokio::time::timeout(timeout, request.send())
        .await
        .map_err(|_| no_answer())?
        .map_err(|err| format!("connection failed: {err}"))?;
    let status = response.status();
    let headers = response.headers().clone();
    let text = tokio::time::timeout(timeout, response.text())
        .await
        .map_err(|_| no_answer())?
        .map_err(|err| format!("reading the answer failed: {err}"))?;
    Ok((status, headers, text))
}

/// An OAuth error answer, said as `{status}: {error}: {error_description}` (the description
/// never holds the credential).
fn oauth_error(status: reqwest::StatusCode, answer: &serde_json::Value) -> String {
    let code = answer["error"].as_str().unwrap_or_default();
    let description = answer["error_description"].as_str().unwrap_or_default();
    match (code, description) {
        ("", "") => status.to_string(),
        (code, "") => format!("{status}: {code}"),
        (code, description) => format!("{status}: {code}: {description}"),
    }
}

/// The token of an OAuth answer (`access_token`, `expires_in`, an hour when it has none).
fn token_of(answer: &serde_json::Value) -> Result<(String, Duration), String> {
    let token = answer["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| "the answer has no access_token".to_owned())?;
    let lifetime = Duration::from_secs(answer["expires_in"].as_u64().unwrap_or(3600));
    Ok((token.to_owned(), lifetime))
}

impl GoogleTokenProvider for ApplicationDefaultCredentials {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(self.access_token())
    }

    fn project(&self) -> Pin<Box<dyn Future<Output = Option<String>> + Send + '_>> {
        Box::pin(self.project_id())
    }
}

/// Credentials found on first use (so a model can be built before they are set), then kept.
pub(crate) struct LazyCredentials {
    found: std::sync::OnceLock<Result<Arc<ApplicationDefaultCredentials>, String>>,
}

impl LazyCredentials {
    pub(crate) fn new() -> Self {
        LazyCredentials {
            found: std::sync::OnceLock::new(),
        }
    }

    pub(crate) fn get(&self) -> Result<Arc<ApplicationDefaultCredentials>, String> {
        self.found
            .get_or_init(|| ApplicationDefaultCredentials::from_env().map(Arc::new))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_and_broken_files_say_what_to_set_without_quoting_them() {
        let err = ApplicationDefaultCredentials::from_json(
            r#"{"type": "external_account_authorized_user", "audience": "x"}"#,
            "creds.json".into(),
        )
        .unwrap_err();
        assert!(
            err.contains("of type \"external_account_authorized_user\""),
            "{err}"
        );
        assert!(err.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{err}");
        let err = ApplicationDefaultCredentials::from_json(
            r#"{"type": "authorized_user", "client_id": "id", "refresh_token": "1//secret-refresh"}"#,
            "creds.json".into(),
        )
        .unwrap_err();
        assert!(err.contains("a field is missing"), "{err}");
        assert!(!err.contains("secret-refresh"), "{err}");
        let err = ApplicationDefaultCredentials::from_json(
            r#"{"type": "service_account", "client_email": "a@b", "private_key": "not a key"}"#,
            "key.json".into(),
        )
        .unwrap_err();
        assert!(err.contains("not an RSA key"), "{err}");
    }

    #[test]
    fn without_a_file_the_metadata_server_is_next_unless_no_gce_check() {
        let dir = std::env::temp_dir().join("pi-runtime-adc-none");
        let home = dir.to_string_lossy().into_owned();
        let credentials = ApplicationDefaultCredentials::find(|name| match name {
            "HOME" | "APPDATA" => Some(home.clone()),
            "GCE_METADATA_HOST" => Some("127.0.0.1:9".to_owned()),
            _ => None,
        })
        .unwrap();
        assert_eq!(credentials.path(), None);
        assert_eq!(
            credentials.source(),
            "the metadata server at http://127.0.0.1:9/computeMetadata/v1"
        );
        let debug = format!("{credentials:?}");
        assert!(debug.contains("metadata_server"), "{debug}");
        assert!(
            debug.contains("http://169.254.169.254/computeMetadata/v1"),
            "{debug}"
        );

        let err = ApplicationDefaultCredentials::find(|name| match name {
            "HOME" | "APPDATA" => Some(home.clone()),
            "NO_GCE_CHECK" => Some("true".to_owned()),
            _ => None,
        })
        .unwrap_err();
        assert!(
            err.starts_with(
                "No Google Cloud credentials (GOOGLE_APPLICATION_CREDENTIALS is not set"
            ),
            "{err}"
        );
        assert!(err.contains("NO_GCE_CHECK=true"), "{err}");
        assert!(
            err.contains("gcloud auth application-default login"),
            "{err}"
        );
    }
}
