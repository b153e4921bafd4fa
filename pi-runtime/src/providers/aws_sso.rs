//! A profile signed in with IAM Identity Center (SSO): the token `aws sso login` cached in
//! `~/.aws/sso/cache/<sha1 of the sso-session name, or of the start URL>.json` is exchanged at
//! the SSO portal (`GET /federation/credentials`) for the role's credentials, kept until five
//! minutes before they expire. The token itself is not refreshed here: once it expires,
//! `aws sso login` signs in again.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha1::{Digest, Sha1};

use super::aws_credentials::{
    AwsCredentialsFuture, AwsCredentialsProvider, Expiring, LazyClient, Refreshing, parse_time,
};
use super::bedrock_auth::AwsCredentials;

/// The longest the portal may take to answer.
const PORTAL_TIMEOUT: Duration = Duration::from_secs(30);

/// The portal's endpoint: `AWS_ENDPOINT_URL_SSO`, else `AWS_ENDPOINT_URL`, else the SSO
/// region's.
pub(crate) fn portal_endpoint(env: &dyn Fn(&str) -> Option<String>, sso_region: &str) -> String {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    set("AWS_ENDPOINT_URL_SSO")
        .or_else(|| set("AWS_ENDPOINT_URL"))
        .unwrap_or_else(|| format!("https://portal.sso.{sso_region}.amazonaws.com"))
}

/// Where `aws sso login` caches the token of an sso-session (its name) or of a legacy
/// profile (its start URL): `~/.aws/sso/cache/<sha1 hex>.json`.
pub(crate) fn token_file(home: &std::path::Path, session_or_start_url: &str) -> PathBuf {
    let digest = Sha1::digest(session_or_start_url.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    home.join(".aws")
        .join("sso")
        .join("cache")
        .join(format!("{hex}.json"))
}

/// What the portal is asked for, and where the token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SsoRequest {
    /// The profile, for messages (`aws sso login --profile NAME`).
    pub(crate) profile: String,
    pub(crate) account_id: String,
    pub(crate) role_name: String,
    pub(crate) token_file: PathBuf,
    pub(crate) endpoint: String,
}

/// A role's credentials from the SSO portal.
pub(crate) struct SsoCredentials {
    request: SsoRequest,
    kept: Refreshing,
    client: LazyClient,
}

impl SsoCredentials {
    pub(crate) fn new(request: SsoRequest) -> Self {
        SsoCredentials {
            request,
            kept: Refreshing::default(),
            client: LazyClient::default(),
        }
    }

    /// What to run to sign in again.
    fn login(&self) -> String {
        format!(
            "run `aws sso login --profile {}` (pi-runtime does not refresh SSO tokens itself)",
            self.request.profile
        )
    }

    /// The cached token, while it is current.
    fn token(&self) -> Result<String, String> {
        let SsoRequest {
            profile,
            token_file,
            ..
        } = &self.request;
        let text = std::fs::read_to_string(token_file).map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "No SSO sign-in is cached for AWS profile \"{profile}\" ({} does not exist): {}",
                    token_file.display(),
                    self.login()
                )
            } else {
                format!(
                    "Cannot read the SSO sign-in of AWS profile \"{profile}\" from {}: {err}",
                    token_file.display()
                )
            }
        })?;
        let cached: Value = serde_json::from_str(&text).unwrap_or_default();
        let token = cached["accessToken"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                format!(
                    "{} holds no SSO token (accessToken) for AWS profile \"{profile}\": {}",
                    token_file.display(),
                    self.login()
                )
            })?;
        // `aws sso login` writes `2026-01-01T00:00:00Z`; older tools `...UTC`.
        let expires_at = cached["expiresAt"].as_str().unwrap_or_default();
        let normalized = match expires_at.strip_suffix("UTC") {
            Some(time) => format!("{time}Z"),
            None => expires_at.to_owned(),
        };
        let expires = parse_time(&normalized, "expiresAt").map_err(|err| {
            format!(
                "The SSO sign-in of AWS profile \"{profile}\" in {} has an {err}: {}",
                token_file.display(),
                self.login()
            )
        })?;
        if expires <= SystemTime::now() {
            return Err(format!(
                "The SSO sign-in of AWS profile \"{profile}\" expired at {expires_at}: {}",
                self.login()
            ));
        }
        Ok(token.to_owned())
    }

    async fn fetch(&self) -> Result<Expiring, String> {
        let token = self.token()?;
        let SsoRequest {
            profile,
            account_id,
            role_name,
            endpoint,
            ..
        } = &self.request;
        let failed = |detail: String| {
            format!(
                "Could not get the credentials of role {role_name} in account {account_id} for AWS profile \"{profile}\" from the SSO portal at {endpoint}: {detail}"
            )
        };
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("role_name", role_name)
            .append_pair("account_id", account_id)
            .finish();
        let url = format!(
            "{}/federation/credentials?{query}",
            endpoint.trim_end_matches('/')
        );
        let client = self.client.get()?;
        let send = client
            .get(&url)
            .header("x-amz-sso_bearer_token", &token)
            .send();
        let response = tokio::time::timeout(PORTAL_TIMEOUT, send)
            .await
            .map_err(|_| failed(format!("no answer within {PORTAL_TIMEOUT:?}")))?
            .map_err(|err| failed(format!("connection failed: {err}")))?;
        let status = response.status();
        let text = tokio::time::timeout(PORTAL_TIMEOUT, response.text())
            .await
            .map_err(|_| failed(format!("no answer within {PORTAL_TIMEOUT:?}")))?
            .map_err(|err| failed(format!("reading the answer failed: {err}")))?;
        let answer: Value = serde_json::from_str(&text).unwrap_or_default();
        if !status.is_success() {
            // {"message": "Session token not found or invalid"}: the token is never repeated,
            // but hide it should a server echo it.
            let message = answer["message"]
                .as_str()
                .or_else(|| answer["Message"].as_str())
                .map(|m| m.replace(&token, "<redacted>"));
            let detail = match message {
                Some(message) => format!("{status}: {message}"),
                None => status.to_string(),
            };
            return Err(match status.as_u16() {
                401 | 403 => failed(format!("{detail} ({})", self.login())),
                _ => failed(detail),
            });
        }
        let role = &answer["roleCredentials"];
        let field = |name: &str| {
            role[name]
                .as_str()
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| failed(format!("the answer has no roleCredentials.{name}")))
        };
        let id = field("accessKeyId")?;
        let secret = field("secretAccessKey")?;
        let session_token = field("sessionToken")?;
        let expiration = role["expiration"]
            .as_u64()
            .ok_or_else(|| failed("the answer has no roleCredentials.expiration".to_owned()))?;
        let expires = UNIX_EPOCH + Duration::from_millis(expiration);
        Expiring::checked(
            AwsCredentials::new(id, secret, Some(session_token)),
            Some(expires),
            &format!("The SSO portal at {endpoint}"),
        )
    }
}

impl AwsCredentialsProvider for SsoCredentials {
    fn credentials(&self) -> AwsCredentialsFuture<'_> {
        Box::pin(self.kept.get(self.fetch()))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use crate::providers::aws_reference::{
        LocalServer, Recorded, botocore_credentials_off_thread, botocore_python, form_fields, ours,
    };

    const CORP_TOKEN: &str = "aoaAAAAAGcorp-sso-access-token";
    const LEGACY_TOKEN: &str = "aoaAAAAAGlegacy-sso-access-token";
    const PARTIAL_TOKEN: &str = "aoaAAAAAGpartial-sso-access-token";
    const FAILING_TOKEN: &str = "aoaAAAAAGfailing-sso-access-token";

    /// The portal: a role's credentials named after it (`ASIA-DEVELOPER`, ...), expiring in
    /// `lifetime()` seconds, for a known token; 401 for any other.
    fn portal(request: &Recorded, lifetime: u64) -> (u16, &'static str, String) {
        let token = request.header("x-amz-sso_bearer_token").unwrap_or_default();
        if token == PARTIAL_TOKEN {
            return (
                200,
                "application/json",
                r#"{"roleCredentials":{"secretAccessKey":"partial-secret","sessionToken":"t","expiration":1}}"#
                    .to_owned(),
            );
        }
        if token == FAILING_TOKEN {
            return (
                500,
                "application/json",
                r#"{"message":"internal failure"}"#.to_owned(),
            );
        }
        if token != CORP_TOKEN && token != LEGACY_TOKEN {
            return (
                401,
                "application/json",
                r#"{"message":"Session token not found or invalid"}"#.to_owned(),
            );
        }
        let query = request
            .target
            .split_once('?')
            .map(|(_, q)| q)
            .unwrap_or_default();
        let role = form_fields(query.as_bytes())
            .into_iter()
            .find(|(k, _)| k == "role_name")
            .map(|(_, v)| v.to_ascii_uppercase())
            .unwrap_or_default();
        let expiration = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
            + lifetime * 1000;
        (
            200,
            "application/json",
            serde_json::json!({"roleCredentials": {
                "accessKeyId": format!("ASIA-{role}"),
                "secretAccessKey": format!("secret/{role}"),
                "sessionToken": format!("token-{role}"),
                "expiration": expiration,
            }})
            .to_string(),
        )
    }

    /// In `hours` hours (negative: ago), as `aws sso login` writes it, `suffix` `Z` or `UTC`.
    fn hours_from_now(hours: i64, suffix: &str) -> String {
        let now = std::time::SystemTime::now();
        let shift = std::time::Duration::from_secs(hours.unsigned_abs() * 3600);
        let time = if hours >= 0 { now + shift } else { now - shift };
        let text = aws_smithy_types::DateTime::from(time)
            .fmt(aws_smithy_types::date_time::Format::DateTime)
            .unwrap();
        // Whole seconds, as the CLI writes them.
        let whole = match text.split_once('.') {
            Some((seconds, _)) => seconds.to_owned(),
            None => text.trim_end_matches('Z').to_owned(),
        };
        format!("{whole}{suffix}")
    }

    /// A home with the config file and the tokens `aws sso login` cached.
    fn home(dir: &Path) -> Vec<(&'static str, String)> {
        let config = dir.join("config");
        std::fs::write(
            &config,
            "[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-central-1\n\
             sso_registration_scopes = sso:account:access\n\
             [profile dev]\nsso_session = corp\nsso_account_id = 111122223333\nsso_role_name = Developer\nregion = eu-west-1\n\
             [profile legacy]\nsso_start_url = https://legacy.awsapps.com/start\nsso_region = us-east-2\n\
             sso_account_id = 444455556666\nsso_role_name = ReadOnly\n\
             [profile stale]\nsso_start_url = https://stale.awsapps.com/start\nsso_region = us-east-2\n\
             sso_account_id = 1\nsso_role_name = R\n\
             [profile never]\nsso_start_url = https://never.awsapps.com/start\nsso_region = us-east-2\n\
             sso_account_id = 1\nsso_role_name = R\n\
             [profile revoked]\nsso_start_url = https://revoked.awsapps.com/start\nsso_region = us-east-2\n\
             sso_account_id = 1\nsso_role_name = R\n\
             [profile broken]\nsso_start_url = https://broken.awsapps.com/start\nsso_region = us-east-2\n\
             sso_account_id = 1\nsso_role_name = R\n\
             [profile partial]\nsso_start_url = https://partial.awsapps.com/start\nsso_region = us-east-2\n\
             sso_account_id = 1\nsso_role_name = R\n\
             [profile failing]\nsso_start_url = https://failing.awsapps.com/start\nsso_region = us-east-2\n\
             sso_account_id = 1\nsso_role_name = R\n\
             [profile half]\nsso_session = corp\nsso_account_id = 111122223333\n\
             [profile lost]\nsso_session = gone\nsso_account_id = 1\nsso_role_name = R\n\
             [profile other_url]\nsso_session = corp\nsso_start_url = https://elsewhere.awsapps.com/start\n\
             sso_account_id = 1\nsso_role_name = R\n",
        )
        .unwrap();
        let cache = |key: &str, body: serde_json::Value| {
            let file = super::token_file(dir, key);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, body.to_string()).unwrap();
        };
        cache(
            "corp",
            serde_json::json!({"startUrl": "https://corp.awsapps.com/start", "region": "eu-central-1",
                "accessToken": CORP_TOKEN, "expiresAt": hours_from_now(8, "Z")}),
        );
        cache(
            "https://legacy.awsapps.com/start",
            serde_json::json!({"startUrl": "https://legacy.awsapps.com/start", "region": "us-east-2",
                "accessToken": LEGACY_TOKEN, "expiresAt": hours_from_now(8, "UTC")}),
        );
        cache(
            "https://stale.awsapps.com/start",
            serde_json::json!({"accessToken": LEGACY_TOKEN, "expiresAt": hours_from_now(-1, "Z")}),
        );
        cache(
            "https://revoked.awsapps.com/start",
            serde_json::json!({"accessToken": "aoaAAAAAGrevoked-token", "expiresAt": hours_from_now(8, "Z")}),
        );
        for (start, token) in [("partial", PARTIAL_TOKEN), ("failing", FAILING_TOKEN)] {
            cache(
                &format!("https://{start}.awsapps.com/start"),
                serde_json::json!({"accessToken": token, "expiresAt": hours_from_now(8, "Z")}),
            );
        }
        cache(
            "https://broken.awsapps.com/start",
            serde_json::json!({"expiresAt": hours_from_now(8, "Z")}),
        );
        vec![
            ("HOME", dir.display().to_string()),
            ("AWS_CONFIG_FILE", config.display().to_string()),
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                dir.join("credentials").display().to_string(),
            ),
        ]
    }

    #[test]
    fn the_token_file_is_named_as_the_cli_names_it() {
        // The sha1 hex of the session name, as Python's `hashlib.sha1(b"my-sso").hexdigest()`
        // gives it (botocore's SSOTokenLoader; the botocore test below reads the files named
        // so).
        assert_eq!(
            super::token_file(Path::new("/h"), "my-sso"),
            Path::new("/h/.aws/sso/cache/0ad374308c5a4e22f723adf10145eafad7c4031c.json")
        );
    }

    /// The sso-session profile and the legacy one, resolved by botocore and by us from the
    /// same files and cached tokens against one local portal: the same credentials, and the
    /// same requests (role, account, token).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sso_roles_resolve_as_botocore_does() {
        let Some(python) = botocore_python() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let server = LocalServer::start(|request| portal(request, 3600)).await;
        let mut env = home(dir.path());
        env.push(("AWS_ENDPOINT_URL_SSO", server.url.clone()));
        for (profile, id) in [("dev", "ASIA-DEVELOPER"), ("legacy", "ASIA-READONLY")] {
            let before = server.seen().len();
            let theirs = botocore_credentials_off_thread(&python, dir.path(), &env, profile).await;
            let ours = ours(&env, profile).await;
            assert_eq!(ours, theirs, "{profile}");
            assert_eq!(ours.unwrap().0, id);
            let seen = server.seen();
            let [botocore, ours] = &seen[before..] else {
                panic!("{profile}: {:?}", &seen[before..]);
            };
            let query = |request: &Recorded| {
                let (path, query) = request.target.split_once('?').unwrap();
                (
                    request.method.clone(),
                    path.to_owned(),
                    form_fields(query.as_bytes()),
                    request.header("x-amz-sso_bearer_token").map(str::to_owned),
                )
            };
            assert_eq!(query(botocore), query(ours), "{profile}");
            assert_eq!(query(ours).1, "/federation/credentials");
        }
    }

    #[tokio::test]
    async fn a_missing_or_expired_sign_in_says_to_run_aws_sso_login() {
        let dir = tempfile::tempdir().unwrap();
        let server = LocalServer::start(|request| portal(request, 3600)).await;
        let mut env = home(dir.path());
        env.push(("AWS_ENDPOINT_URL", server.url.clone()));
        let cases = [
            (
                "stale",
                "The SSO sign-in of AWS profile \"stale\" expired at ",
            ),
            (
                "never",
                "No SSO sign-in is cached for AWS profile \"never\" (",
            ),
            (
                "broken",
                "holds no SSO token (accessToken) for AWS profile \"broken\"",
            ),
            ("revoked", "from the SSO portal at http://127.0.0.1:"),
            (
                "revoked",
                ": 401 Unauthorized: Session token not found or invalid (run `aws sso login --profile revoked`",
            ),
            ("partial", ": the answer has no roleCredentials.accessKeyId"),
            ("failing", ": 500 Internal Server Error: internal failure"),
            (
                "half",
                "The AWS profile \"half\" is configured to use SSO but is missing required configuration: sso_role_name",
            ),
            (
                "lost",
                "The sso-session \"gone\" of AWS profile \"lost\" does not exist in the config file",
            ),
            (
                "other_url",
                "The sso_start_url of AWS profile \"other_url\" is not the one of its sso-session \"corp\"",
            ),
        ];
        for (profile, expected) in cases {
            let err = ours(&env, profile).await.unwrap_err();
            assert!(err.contains(expected), "{profile}: {err}");
            if !["half", "lost", "other_url", "partial", "failing"].contains(&profile) {
                assert!(
                    err.contains(&format!("run `aws sso login --profile {profile}` (pi-runtime does not refresh SSO tokens itself)")),
                    "{profile}: {err}"
                );
            }
            assert!(!err.contains("aoaAAAAAG"), "{profile}: {err}");
            assert!(!err.contains("partial-secret"), "{profile}: {err}");
        }
    }

    #[tokio::test]
    async fn the_role_credentials_are_fetched_again_before_they_expire() {
        let dir = tempfile::tempdir().unwrap();
        let lifetime = Arc::new(AtomicU64::new(3600));
        let answer_lifetime = lifetime.clone();
        let server = LocalServer::start(move |request| {
            portal(request, answer_lifetime.load(Ordering::SeqCst))
        })
        .await;
        let mut env = home(dir.path());
        env.push(("AWS_ENDPOINT_URL_SSO", server.url.clone()));
        let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
        let found = crate::providers::bedrock_auth::find_sign_in(&lookup, Some("dev")).unwrap();
        let crate::providers::bedrock_auth::FoundSignIn::Profile {
            credentials: settings,
            source,
        } = found
        else {
            panic!("{found:?}");
        };
        assert!(
            source.starts_with(
                "the SSO role Developer in account 111122223333 of profile \"dev\" in "
            ),
            "{source}"
        );
        assert!(!format!("{settings:?}").contains("aoaAAAAAG"));
        let provider = settings.provider();
        for _ in 0..3 {
            provider.credentials().await.unwrap();
        }
        assert_eq!(server.seen().len(), 1, "kept while fresh");
        lifetime.store(120, Ordering::SeqCst);
        let provider = settings.provider();
        for _ in 0..3 {
            provider.credentials().await.unwrap();
        }
        assert_eq!(server.seen().len(), 4, "fetched again inside the margin");
    }
}
