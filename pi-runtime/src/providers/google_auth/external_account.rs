//! Workload identity federation (`external_account` files, <https://google.aip.dev/auth/4117>),
//! as google-auth's `identity_pool` does it: a token of another identity provider (GitHub
//! Actions' OIDC token, an Azure managed identity's, Kubernetes' service account token), read
//! from a file or a URL (`credential_source`), is exchanged at Google's STS (`token_url`, RFC
//! 8693) for a Google access token (scope `cloud-platform`); with
//! `service_account_impersonation_url`, that token (scope `iam`, as google-auth asks it) then
//! asks IAM for a service account's token with `cloud-platform` (`generateAccessToken`).
//!
//! `executable`, `aws` and `certificate` sources are refused with a message that names them.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{CLOUD_PLATFORM_SCOPE, EXCHANGE_TIMEOUT, oauth_error, send, token_of};

/// Google's STS, where `token_url` points by default.
const DEFAULT_TOKEN_URL: &str = "https://sts.googleapis.com/v1/token";
/// What a service account's impersonated token lives by default (google-auth's).
const DEFAULT_IMPERSONATION_LIFETIME: u64 = 3600;
/// The scope of the STS token that only asks IAM for a service account's (google-auth's: the
/// impersonated token is the one with `cloud-platform`).
const IAM_SCOPE: &str = "https://www.googleapis.com/auth/iam";
/// What to check, said by every failure of these credentials.
pub(super) const EXTERNAL_ADVICE: &str = "check the credential configuration (`gcloud iam \
     workload-identity-pools create-cred-config`) and the workload identity pool's provider";

/// Where the other identity provider's token is read.
enum SubjectSource {
    File(PathBuf),
    Url {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// How the token is found in what the source holds.
enum SubjectFormat {
    /// All of it.
    Text,
    /// One field of a JSON object.
    Json { field: String },
}

/// An `external_account` credential configuration.
pub(super) struct ExternalAccount {
    audience: String,
    subject_token_type: String,
    token_url: String,
    source: SubjectSource,
    format: SubjectFormat,
    impersonation_url: Option<String>,
    impersonation_lifetime: u64,
    client: Option<(String, Option<String>)>,
    workforce_pool_user_project: Option<String>,
}

/// The client secret is never shown.
impl fmt::Debug for ExternalAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.source {
            SubjectSource::File(path) => format!("file {}", path.display()),
            SubjectSource::Url { url, .. } => format!("url {url}"),
        };
        f.debug_struct("ExternalAccount")
            .field("audience", &self.audience)
            .field("token_url", &self.token_url)
            .field("credential_source", &source)
            .field("service_account_impersonation_url", &self.impersonation_url)
            .finish_non_exhaustive()
    }
}

/// A string field of `object`, or none; an error when it is there but not a string.
fn optional_str(object: &Value, name: &str, what: &str) -> Result<Option<String>, String> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(format!("its {what}\"{name}\" is not a string")),
    }
}

fn required_str(object: &Value, name: &str, what: &str) -> Result<String, String> {
    optional_str(object, name, what)?.ok_or_else(|| format!("it has no {what}\"{name}\""))
}

impl ExternalAccount {
    /// The configuration of a file's JSON; what is wrong with it otherwise (never quoting a
    /// value: the file may hold a client secret).
    pub(super) fn from_json(file: &Value) -> Result<Self, String> {
        let audience = required_str(file, "audience", "")?;
        let subject_token_type = required_str(file, "subject_token_type", "")?;
        let token_url =
            optional_str(file, "token_url", "")?.unwrap_or_else(|| DEFAULT_TOKEN_URL.to_owned());
        let source = file
            .get("credential_source")
            .filter(|source| source.is_object())
            .ok_or("it has no \"credential_source\" object")?;
        for (kind, name) in [
            (
                "executable",
                "an executable source (a program that prints the token)",
            ),
            (
                "certificate",
                "a certificate source (X.509 workload certificates)",
            ),
        ] {
            if source.get(kind).is_some() {
                return Err(format!(
                    "its credential_source is {name}, which is not supported (file and url sources are)"
                ));
            }
        }
        if let Some(environment) = optional_str(source, "environment_id", "credential_source ")? {
            let name = if environment.starts_with("aws") {
                "an aws source (AWS's instance metadata and a signed GetCallerIdentity request)"
                    .to_owned()
            } else {
                format!("the environment \"{environment}\"")
            };
            return Err(format!(
                "its credential_source is {name}, which is not supported (file and url sources are)"
            ));
        }
        let file_path = optional_str(source, "file", "credential_source ")?;
        let url = optional_str(source, "url", "credential_source ")?;
        let source_kind = match (file_path, url) {
            (Some(_), Some(_)) => {
                return Err(
                    "its credential_source has both \"file\" and \"url\" (one is taken)".to_owned(),
                );
            }
            (Some(path), None) => SubjectSource::File(PathBuf::from(path)),
            (None, Some(url)) => {
                let headers = match source.get("headers") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Object(headers)) => headers
                        .iter()
                        .map(|(name, value)| {
                            value
                                .as_str()
                                .map(|value| (name.clone(), value.to_owned()))
                                .ok_or_else(|| {
                                    format!(
                                        "its credential_source header \"{name}\" is not a string"
                                    )
                                })
                        })
                        .collect::<Result<_, _>>()?,
                    Some(_) => {
                        return Err("its credential_source \"headers\" is not an object".to_owned());
                    }
                };
                SubjectSource::Url { url, headers }
            }
            (None, None) => {
                return Err(
                    "its credential_source has no \"file\" or \"url\" (the sources supported)"
                        .to_owned(),
                );
            }
        };
        let format = match source.get("format") {
            None | Some(Value::Null) => SubjectFormat::Text,
            Some(format @ Value::Object(_)) => {
                match optional_str(format, "type", "credential_source format ")?.as_deref() {
                    None | Some("text") => SubjectFormat::Text,
                    Some("json") => SubjectFormat::Json {
                        field: required_str(
                            format,
                            "subject_token_field_name",
                            "credential_source format ",
                        )
                        .map_err(|err| format!("{err} (a json format names its field)"))?,
                    },
                    Some(other) => {
                        return Err(format!(
                            "its credential_source format \"{other}\" is not text or json"
                        ));
                    }
                }
            }
            Some(_) => return Err("its credential_source \"format\" is not an object".to_owned()),
        };
        let impersonation_lifetime = match file
            .get("service_account_impersonation")
            .and_then(|options| options.get("token_lifetime_seconds"))
        {
            None | Some(Value::Null) => DEFAULT_IMPERSONATION_LIFETIME,
            Some(seconds) => seconds.as_u64().filter(|&s| s > 0).ok_or(
                "its service_account_impersonation token_lifetime_seconds is not a positive number",
            )?,
        };
        let audience_is_workforce_pool = is_workforce_pool(&audience);
        let workforce_pool_user_project = optional_str(file, "workforce_pool_user_project", "")?;
        if workforce_pool_user_project.is_some() && !audience_is_workforce_pool {
            return Err(
                "it sets \"workforce_pool_user_project\", which only a workforce pool's audience \
                 (//iam.googleapis.com/locations/…/workforcePools/…) takes"
                    .to_owned(),
            );
        }
        let client = optional_str(file, "client_id", "")?
            .map(|id| Ok::<_, String>((id, optional_str(file, "client_secret", "")?)))
            .transpose()?;
        Ok(ExternalAccount {
            audience,
            subject_token_type,
            token_url,
            source: source_kind,
            format,
            impersonation_url: optional_str(file, "service_account_impersonation_url", "")?,
            impersonation_lifetime,
            client,
            workforce_pool_user_project,
        })
    }

    /// A new Google access token and how long it lives.
    pub(super) async fn token(
        &self,
        client: &reqwest::Client,
    ) -> Result<(String, Duration), String> {
        let subject_token = self.subject_token(client).await?;
        let (sts_token, lifetime) = self.exchange(client, &subject_token).await?;
        match &self.impersonation_url {
            None => Ok((sts_token, lifetime)),
            Some(url) => self.impersonate(client, url, &sts_token).await,
        }
    }

    /// The other identity provider's token, from the file or the URL.
    async fn subject_token(&self, client: &reqwest::Client) -> Result<String, String> {
        let (text, location) = match &self.source {
            SubjectSource::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|err| {
                    format!(
                        "Cannot read the subject token file {} of the credential_source: {err}",
                        path.display()
                    )
                })?;
                (text, format!("the file {}", path.display()))
            }
            SubjectSource::Url { url, headers } => {
                let mut request = client.get(url);
                for (name, value) in headers {
                    request = request.header(name, value);
                }
                let failed = |detail: String| {
                    format!(
                        "Could not get the subject token from {url} (the credential_source url): {detail}"
                    )
                };
                let (status, _, text) = send(request, EXCHANGE_TIMEOUT).await.map_err(failed)?;
                if !status.is_success() {
                    // The body is left out: it may hold a token.
                    return Err(failed(status.to_string()));
                }
                (text, url.clone())
            }
        };
        let token = match &self.format {
            SubjectFormat::Text => text,
            SubjectFormat::Json { field } => serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|json| json.get(field)?.as_str().map(str::to_owned))
                .ok_or_else(|| {
                    format!(
                        "The subject token in {location} is not JSON with the string field \"{field}\" (credential_source format)"
                    )
                })?,
        };
        if token.trim().is_empty() {
            return Err(format!("The subject token in {location} is empty"));
        }
        Ok(token)
    }

    /// The scope asked of the STS: `cloud-platform` for the token Vertex gets, IAM's when the
    /// token only asks for a service account's.
    fn sts_scope(&self) -> &'static str {
        if self.impersonation_url.is_some() {
            IAM_SCOPE
        } else {
            CLOUD_PLATFORM_SCOPE
        }
    }

    /// RFC 8693's token exchange at `token_url`: the subject token for a Google access token.
    async fn exchange(
        &self,
        client: &reqwest::Client,
        subject_token: &str,
    ) -> Result<(String, Duration), String> {
        // Built apart: the serializer is not `Send`, and the request is awaited.
        let form = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair(
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            )
            .append_pair("audience", &self.audience)
            .append_pair("scope", self.sts_scope())
            .append_pair(
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            )
            .append_pair("subject_token", subject_token)
            .append_pair("subject_token_type", &self.subject_token_type);
            // A workforce pool's user project, unless the client id says it (google-auth's rule).
            if let Some(project) = &self.workforce_pool_user_project
                && self.client.is_none()
            {
                let options = format!("{{\"userProject\": {}}}", Value::from(project.as_str()));
                form.append_pair("options", &percent_encode(&options));
            }
            form.finish()
        };
        let mut request = client
            .post(&self.token_url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form);
        if let Some((id, secret)) = &self.client {
            request = request.basic_auth(id, Some(secret.as_deref().unwrap_or_default()));
        }
        let failed = |detail: String| {
            format!(
                "Google's STS at {} refused the subject token: {detail}",
                self.token_url
            )
        };
        let (status, _, text) = send(request, EXCHANGE_TIMEOUT).await.map_err(failed)?;
        let answer: Value = serde_json::from_str(&text).unwrap_or_default();
        if !status.is_success() {
            return Err(failed(oauth_error(status, &answer)));
        }
        token_of(&answer).map_err(failed)
    }

    /// IAM's `generateAccessToken` for the service account, with the STS token as bearer.
    async fn impersonate(
        &self,
        client: &reqwest::Client,
        url: &str,
        sts_token: &str,
    ) -> Result<(String, Duration), String> {
        let body = serde_json::json!({
            "scope": [CLOUD_PLATFORM_SCOPE],
            "lifetime": format!("{}s", self.impersonation_lifetime),
        });
        let request = client
            .post(url)
            .bearer_auth(sts_token)
            .header("content-type", "application/json")
            .body(body.to_string());
        let failed = |detail: String| {
            format!("Could not impersonate the service account at {url}: {detail}")
        };
        let (status, _, text) = send(request, EXCHANGE_TIMEOUT).await.map_err(failed)?;
        let answer: Value = serde_json::from_str(&text).unwrap_or_default();
        if !status.is_success() {
            // Google's errors: {"error": {"code", "message", "status"}}.
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            return Err(failed(if message.is_empty() {
                status.to_string()
            } else {
                format!("{status}: {message}")
            }));
        }
        let token = answer["accessToken"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| failed("the answer has no accessToken".to_owned()))?;
        let expires = answer["expireTime"]
            .as_str()
            .and_then(unix_seconds_of_rfc3339)
            .ok_or_else(|| failed("the answer has no expireTime as RFC 3339".to_owned()))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Ok((
            token.to_owned(),
            Duration::from_secs(expires.saturating_sub(now)),
        ))
    }
}

/// Whether an audience is a workforce pool's
/// (`//iam.googleapis.com/locations/{location}/workforcePools/…`).
fn is_workforce_pool(audience: &str) -> bool {
    audience
        .strip_prefix("//iam.googleapis.com/locations/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(location, rest)| !location.is_empty() && rest.starts_with("workforcePools/"))
}

/// Python's `urllib.parse.quote` (all but letters, digits, `_.-~` and `/` as `%XX`), which
/// google-auth applies to `options` before the form encodes it again.
fn percent_encode(text: &str) -> String {
    const PYTHON_QUOTE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'_')
        .remove(b'.')
        .remove(b'-')
        .remove(b'~')
        .remove(b'/');
    percent_encoding::utf8_percent_encode(text, PYTHON_QUOTE).to_string()
}

/// Seconds since 1970 of an RFC 3339 time (IAM's `expireTime`, `2026-12-05T18:30:15Z`).
fn unix_seconds_of_rfc3339(text: &str) -> Option<u64> {
    let time =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    u64::try_from(time.unix_timestamp()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expire_times_are_read_as_iam_writes_them() {
        assert_eq!(unix_seconds_of_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_seconds_of_rfc3339("2026-12-05T18:30:15Z"),
            Some(1_796_495_415)
        );
        assert_eq!(
            unix_seconds_of_rfc3339("2024-02-29T23:59:59.123456Z"),
            Some(1_709_251_199)
        );
        for bad in ["2026-12-05 18:30:15", "2026-13-05T18:30:15Z", "soon", ""] {
            assert_eq!(unix_seconds_of_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn options_are_quoted_as_python_quotes_them() {
        assert_eq!(
            percent_encode(r#"{"userProject": "123/a b"}"#),
            "%7B%22userProject%22%3A%20%22123/a%20b%22%7D"
        );
    }

    #[test]
    fn workforce_pools_are_told_by_their_audience() {
        assert!(is_workforce_pool(
            "//iam.googleapis.com/locations/global/workforcePools/pool/providers/p"
        ));
        assert!(!is_workforce_pool(
            "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/p"
        ));
    }
}
