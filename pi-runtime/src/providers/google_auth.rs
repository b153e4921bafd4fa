//! Google Cloud's Application Default Credentials, for Vertex AI: the key file
//! `GOOGLE_APPLICATION_CREDENTIALS` names (a service account's key: a JWT signed with its key,
//! exchanged at its `token_uri`), or gcloud's `application_default_credentials.json` (a user's
//! refresh token, exchanged at the same OAuth endpoint). Tokens are kept and refreshed five
//! minutes before they expire; one refresh runs at a time.
//!
//! The `token_uri` of the file is used when it has one (service-account keys always do), so a
//! test can point the exchange at a local server.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use super::entra_id::TokenFuture;

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
    },
    /// A user's refresh token (gcloud's `auth application-default login`).
    RefreshToken {
        client_id: String,
        client_secret: String,
        refresh_token: String,
    },
}

/// A token and when it stops being used.
struct Cached {
    token: String,
    refresh_at: Instant,
}

/// Application Default Credentials: a service account's key file or gcloud's user credentials,
/// exchanged for access tokens that are kept and refreshed five minutes before they expire.
///
/// ```no_run
/// # async fn demo() -> Result<(), String> {
/// use pi_runtime::providers::ApplicationDefaultCredentials;
///
/// // GOOGLE_APPLICATION_CREDENTIALS, else ~/.config/gcloud/application_default_credentials.json
/// let credentials = ApplicationDefaultCredentials::from_env()?;
/// println!("signed in from {}", credentials.path().display());
/// # Ok(()) }
/// ```
pub struct ApplicationDefaultCredentials {
    path: PathBuf,
    grant: Grant,
    token_uri: String,
    project: Option<String>,
    cached: tokio::sync::Mutex<Option<Cached>>,
    client: std::sync::OnceLock<Result<reqwest::Client, String>>,
}

/// The key and tokens are never shown.
impl fmt::Debug for ApplicationDefaultCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.grant {
            Grant::ServiceAccount { .. } => "service_account",
            Grant::RefreshToken { .. } => "authorized_user",
        };
        f.debug_struct("ApplicationDefaultCredentials")
            .field("path", &self.path)
            .field("type", &kind)
            .field("token_uri", &self.token_uri)
            .finish_non_exhaustive()
    }
}

/// What to set, said by every failure to find credentials.
pub(crate) const ADC_ADVICE: &str = "set GOOGLE_APPLICATION_CREDENTIALS to a service account's \
     key file, or run `gcloud auth application-default login`";

impl ApplicationDefaultCredentials {
    /// The credentials Google's libraries find: the file `GOOGLE_APPLICATION_CREDENTIALS`
    /// names, else gcloud's `application_default_credentials.json` (under
    /// `$CLOUDSDK_CONFIG`, else `~/.config/gcloud`, or `%APPDATA%\gcloud` on Windows).
    pub fn from_env() -> Result<Self, String> {
        Self::find(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn find(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let var = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        if let Some(path) = var("GOOGLE_APPLICATION_CREDENTIALS") {
            return Self::from_file(path);
        }
        let folder = var("CLOUDSDK_CONFIG")
            .map(PathBuf::from)
            .or_else(|| {
                if cfg!(windows) {
                    var("APPDATA").map(|dir| Path::new(&dir).join("gcloud"))
                } else {
                    var("HOME").map(|home| Path::new(&home).join(".config").join("gcloud"))
                }
            })
            .ok_or_else(|| format!("No Google Cloud credentials: {ADC_ADVICE}"))?;
        let path = folder.join("application_default_credentials.json");
        if !path.exists() {
            return Err(format!(
                "No Google Cloud credentials (GOOGLE_APPLICATION_CREDENTIALS is not set and {} does not exist): {ADC_ADVICE}",
                path.display()
            ));
        }
        Self::from_file(path)
    }

    /// The credentials of one file: a service account's key or gcloud's user credentials.
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
        let kind = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.get("type")?.as_str().map(str::to_owned));
        // serde's own message could quote the file, key included: say only what is wrong.
        let file: CredentialFile = serde_json::from_str(text).map_err(|_| match &kind {
            Some(kind) if kind != "service_account" && kind != "authorized_user" => format!(
                "The Google Cloud credentials file {} is of type \"{kind}\", which is not supported \
                 (service_account and authorized_user are): {ADC_ADVICE}",
                path.display()
            ),
            _ => format!(
                "The Google Cloud credentials file {} is not a service account key or gcloud's \
                 user credentials (a field is missing or the JSON is invalid): {ADC_ADVICE}",
                path.display()
            ),
        })?;
        let (grant, token_uri, project) = match file {
            CredentialFile::ServiceAccount {
                client_email,
                private_key,
                private_key_id,
                token_uri,
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
                (
                    Grant::ServiceAccount {
                        client_email,
                        key_id: private_key_id,
                        key,
                    },
                    token_uri,
                    project_id,
                )
            }
            CredentialFile::AuthorizedUser {
                client_id,
                client_secret,
                refresh_token,
                token_uri,
                quota_project_id,
            } => (
                Grant::RefreshToken {
                    client_id,
                    client_secret,
                    refresh_token,
                },
                token_uri,
                quota_project_id,
            ),
        };
        Ok(ApplicationDefaultCredentials {
            path,
            grant,
            token_uri: token_uri.unwrap_or_else(|| GOOGLE_TOKEN_URI.to_owned()),
            project,
            cached: tokio::sync::Mutex::new(None),
            client: std::sync::OnceLock::new(),
        })
    }

    /// The file the credentials came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The project the file names (a service account's `project_id`, a user's
    /// `quota_project_id`), used when no project is set.
    pub fn project(&self) -> Option<&str> {
        self.project.as_deref()
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

    /// Asks the token endpoint for a new token; returns it and how long it lives.
    async fn exchange(&self) -> Result<(String, Duration), String> {
        let form = match &self.grant {
            Grant::ServiceAccount {
                client_email,
                key_id,
                key,
            } => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let claims = serde_json::json!({
                    "iss": client_email,
                    "scope": CLOUD_PLATFORM_SCOPE,
                    "aud": self.token_uri,
                    "iat": now,
                    "exp": now + ASSERTION_LIFETIME,
                });
                let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
                header.kid = key_id.clone();
                let assertion = jsonwebtoken::encode(&header, &claims, key).map_err(|err| {
                    format!(
                        "Could not sign the service account's token request ({}): {err}",
                        self.path.display()
                    )
                })?;
                form_urlencoded::Serializer::new(String::new())
                    .append_pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer")
                    .append_pair("assertion", &assertion)
                    .finish()
            }
            Grant::RefreshToken {
                client_id,
                client_secret,
                refresh_token,
            } => form_urlencoded::Serializer::new(String::new())
                .append_pair("grant_type", "refresh_token")
                .append_pair("client_id", client_id)
                .append_pair("client_secret", client_secret)
                .append_pair("refresh_token", refresh_token)
                .finish(),
        };
        let client = self
            .client
            .get_or_init(|| {
                super::http::build_client(&super::settings::Settings::new(
                    "",
                    "google-vertex",
                    "",
                    &[],
                ))
            })
            .clone()?;
        let failed = |detail: String| {
            format!(
                "Could not get a Google Cloud access token from {} with the credentials in {}: {detail} ({ADC_ADVICE})",
                self.token_uri,
                self.path.display()
            )
        };
        let send = client
            .post(&self.token_uri)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send();
        let response = tokio::time::timeout(EXCHANGE_TIMEOUT, send)
            .await
            .map_err(|_| failed(format!("no answer within {EXCHANGE_TIMEOUT:?}")))?
            .map_err(|err| failed(format!("connection failed: {err}")))?;
        let status = response.status();
        let text = tokio::time::timeout(EXCHANGE_TIMEOUT, response.text())
            .await
            .map_err(|_| failed(format!("no answer within {EXCHANGE_TIMEOUT:?}")))?
            .map_err(|err| failed(format!("reading the answer failed: {err}")))?;
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if !status.is_success() {
            // OAuth errors: {"error": "invalid_grant", "error_description": "..."}; the
            // description never holds the credential.
            let code = answer["error"].as_str().unwrap_or_default();
            let description = answer["error_description"].as_str().unwrap_or_default();
            let detail = match (code, description) {
                ("", "") => status.to_string(),
                (code, "") => format!("{status}: {code}"),
                (code, description) => format!("{status}: {code}: {description}"),
            };
            return Err(failed(detail));
        }
        let token = answer["access_token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| failed("the answer has no access_token".to_owned()))?;
        let lifetime = Duration::from_secs(answer["expires_in"].as_u64().unwrap_or(3600));
        Ok((token.to_owned(), lifetime))
    }
}

impl GoogleTokenProvider for ApplicationDefaultCredentials {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(self.access_token())
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
            r#"{"type": "external_account", "audience": "x"}"#,
            "creds.json".into(),
        )
        .unwrap_err();
        assert!(err.contains("of type \"external_account\""), "{err}");
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
    fn no_credentials_anywhere_says_what_to_set() {
        let dir = std::env::temp_dir().join("pi-runtime-adc-none");
        let home = dir.to_string_lossy().into_owned();
        let err = ApplicationDefaultCredentials::find(|name| match name {
            "HOME" | "APPDATA" => Some(home.clone()),
            _ => None,
        })
        .unwrap_err();
        assert!(
            err.starts_with(
                "No Google Cloud credentials (GOOGLE_APPLICATION_CREDENTIALS is not set"
            ),
            "{err}"
        );
        assert!(
            err.contains("gcloud auth application-default login"),
            "{err}"
        );
    }
}
