//! The credentials a container's agent serves (ECS tasks, EKS Pod Identity, and anything that
//! speaks the same): `GET` the URL `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` (on ECS's
//! `169.254.170.2`) or `AWS_CONTAINER_CREDENTIALS_FULL_URI` names, with the `Authorization`
//! token of `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` (read at each fetch: EKS rotates it) or
//! `AWS_CONTAINER_AUTHORIZATION_TOKEN`; the JSON answer `{AccessKeyId, SecretAccessKey, Token,
//! Expiration}` is kept until five minutes before it expires. As botocore, a full URL must be
//! `https`, or `http` to a loopback address or one of the container agents' own addresses.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::aws_credentials::{
    AwsCredentialsFuture, AwsCredentialsProvider, Expiring, LazyClient, Refreshing, parse_time,
};
use super::bedrock_auth::AwsCredentials;

/// Where ECS's agent serves a relative URI.
const ECS_AGENT: &str = "http://169.254.170.2";
/// The hosts besides loopback addresses a full URL may name over plain `http` (botocore's).
const ALLOWED_HOSTS: [&str; 4] = [
    "169.254.170.2",
    "169.254.170.23",
    "fd00:ec2::23",
    "localhost",
];
/// The longest the agent may take to answer.
const AGENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the authorization token comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AgentToken {
    None,
    /// `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`, read at each fetch.
    File(PathBuf),
    /// `AWS_CONTAINER_AUTHORIZATION_TOKEN` (its value never shown).
    Value(String),
}

/// A container agent's URL and token.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct AgentRequest {
    pub(crate) url: String,
    pub(crate) token: AgentToken,
}

/// The token's value is never shown.
impl std::fmt::Debug for AgentRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let token = match &self.token {
            AgentToken::None => "none".to_owned(),
            AgentToken::File(path) => path.display().to_string(),
            AgentToken::Value(_) => "<hidden>".to_owned(),
        };
        f.debug_struct("AgentRequest")
            .field("url", &self.url)
            .field("token", &token)
            .finish()
    }
}

/// The agent the variables name, if any: `Ok(None)` when neither URI variable is set.
pub(crate) fn agent_request(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<AgentRequest>, String> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let url = match (
        set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
        set("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
    ) {
        (Some(relative), _) => format!("{ECS_AGENT}{relative}"),
        (None, Some(full)) => {
            check_allowed(&full)?;
            full
        }
        (None, None) => return Ok(None),
    };
    let token = match (
        set("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"),
        set("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
    ) {
        (Some(file), _) => AgentToken::File(PathBuf::from(file)),
        (None, Some(value)) => AgentToken::Value(value),
        (None, None) => AgentToken::None,
    };
    Ok(Some(AgentRequest { url, token }))
}

/// Whether a full URL may be asked: `https`, or a loopback or container agent's address.
fn check_allowed(full: &str) -> Result<(), String> {
    let url = reqwest::Url::parse(full)
        .map_err(|_| format!("AWS_CONTAINER_CREDENTIALS_FULL_URI \"{full}\" is not a URL"))?;
    if url.scheme() == "https" {
        return Ok(());
    }
    // IPv6 hosts come in brackets.
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let allowed = match host.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback() || ALLOWED_HOSTS.contains(&ip.to_string().as_str()),
        Err(_) => ALLOWED_HOSTS.contains(&host),
    };
    if allowed {
        Ok(())
    } else {
        Err(format!(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI \"{full}\" names a host credentials are not \
             asked from over http: only https, a loopback address, or {}",
            ALLOWED_HOSTS.join(", ")
        ))
    }
}

/// Credentials from a container's agent.
pub(crate) struct ContainerCredentials {
    request: AgentRequest,
    kept: Refreshing,
    client: LazyClient,
}

impl ContainerCredentials {
    pub(crate) fn new(request: AgentRequest) -> Self {
        ContainerCredentials {
            request,
            kept: Refreshing::default(),
            client: LazyClient::default(),
        }
    }

    async fn fetch(&self) -> Result<Expiring, String> {
        let url = &self.request.url;
        let failed = |detail: String| {
            format!("Could not get the container's AWS credentials from {url}: {detail}")
        };
        let token = match &self.request.token {
            AgentToken::None => None,
            AgentToken::Value(value) => Some(value.clone()),
            AgentToken::File(path) => Some(std::fs::read_to_string(path).map_err(|err| {
                failed(format!(
                    "cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {}: {err}",
                    path.display()
                ))
            })?),
        };
        if let Some(token) = &token
            && (token.contains('\r') || token.contains('\n'))
        {
            return Err(failed(
                "the authorization token holds a line break, which no header may".to_owned(),
            ));
        }
        let client = self.client.get()?;
        let mut request = client.get(url).header("accept", "application/json");
        if let Some(token) = &token {
            request = request.header("authorization", token);
        }
        let response = tokio::time::timeout(AGENT_TIMEOUT, request.send())
            .await
            .map_err(|_| failed(format!("no answer within {AGENT_TIMEOUT:?}")))?
            .map_err(|err| failed(format!("connection failed: {err}")))?;
        let status = response.status();
        let text = tokio::time::timeout(AGENT_TIMEOUT, response.text())
            .await
            .map_err(|_| failed(format!("no answer within {AGENT_TIMEOUT:?}")))?
            .map_err(|err| failed(format!("reading the answer failed: {err}")))?;
        let answer: Value = serde_json::from_str(&text).unwrap_or_default();
        if !status.is_success() {
            // {"code": "...", "message": "..."}: said, the token hidden should it be echoed.
            let mut detail = status.to_string();
            if let Some(message) = answer["message"].as_str().or(answer["Message"].as_str()) {
                detail = format!("{detail}: {message}");
            }
            if let Some(token) = token.as_deref().filter(|t| t.len() >= 8) {
                detail = detail.replace(token, "<redacted>");
            }
            return Err(failed(detail));
        }
        let field = |name: &str| {
            answer[name]
                .as_str()
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| failed(format!("the answer has no {name}")))
        };
        let id = field("AccessKeyId")?;
        let secret = field("SecretAccessKey")?;
        let session_token = field("Token")?;
        let expires = parse_time(&field("Expiration")?, "Expiration").map_err(failed)?;
        Expiring::checked(
            AwsCredentials::new(id, secret, Some(session_token)),
            Some(expires),
            &format!("The container's agent at {url}"),
        )
    }
}

impl AwsCredentialsProvider for ContainerCredentials {
    fn credentials(&self) -> AwsCredentialsFuture<'_> {
        Box::pin(self.kept.get(self.fetch()))
    }
}

#[cfg(test)]
mod tests {
    use crate::providers::aws_reference::{
        LocalServer, Recorded, botocore_credentials, botocore_credentials_off_thread,
        botocore_python, ours,
    };

    const AGENT_TOKEN: &str = "eks-pod-identity-token-SECRET";

    /// An agent: its keys for the right token, 401 with the token repeated for any other,
    /// and answers that are wrong in one way each, by path.
    fn agent(request: &Recorded, expires_in: i64) -> (u16, &'static str, String) {
        let expires = {
            let now = std::time::SystemTime::now();
            let shift = std::time::Duration::from_secs(expires_in.unsigned_abs());
            let time = if expires_in >= 0 {
                now + shift
            } else {
                now - shift
            };
            aws_smithy_types::DateTime::from(time)
                .fmt(aws_smithy_types::date_time::Format::DateTime)
                .unwrap()
        };
        let token = request.header("authorization").unwrap_or_default();
        if token != AGENT_TOKEN {
            return (
                401,
                "application/json",
                format!(
                    r#"{{"code":"AccessDeniedException","message":"token {token} is not valid"}}"#
                ),
            );
        }
        match request.target.as_str() {
            "/partial" => (
                200,
                "application/json",
                r#"{"AccessKeyId":"ASIA-C"}"#.to_owned(),
            ),
            _ => (
                200,
                "application/json",
                serde_json::json!({
                    "AccessKeyId": "ASIA-CONTAINER",
                    "SecretAccessKey": "container-secret",
                    "Token": "container-session-token",
                    "Expiration": expires,
                    "AccountId": "123456789012",
                })
                .to_string(),
            ),
        }
    }

    /// The agent's credentials, by botocore and by us, with the token from a file and from the
    /// variable: the same credentials and the same request; a profile's keys come first.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_containers_agent_is_asked_as_botocore_asks_it() {
        let Some(python) = botocore_python() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let server = LocalServer::start(|request| agent(request, 3600)).await;
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, AGENT_TOKEN).unwrap();
        let credentials = dir.path().join("credentials");
        std::fs::write(
            &credentials,
            "[keys]\naws_access_key_id = AKIDKEYS\naws_secret_access_key = keys-secret\n",
        )
        .unwrap();
        let config = dir.path().join("config");
        std::fs::write(&config, "").unwrap();
        let files = vec![
            ("AWS_CONFIG_FILE", config.display().to_string()),
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                credentials.display().to_string(),
            ),
            (
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                format!("{}/v2/credentials/abc", server.url),
            ),
        ];
        let mut from_file = files.clone();
        from_file.push((
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            token_file.display().to_string(),
        ));
        let mut from_value = files.clone();
        from_value.push(("AWS_CONTAINER_AUTHORIZATION_TOKEN", AGENT_TOKEN.to_owned()));
        for env in [&from_file, &from_value] {
            let before = server.seen().len();
            let theirs = botocore_credentials_off_thread(&python, dir.path(), env, "").await;
            let ours = ours(env, "").await;
            assert_eq!(ours, theirs);
            assert_eq!(ours.unwrap().0, "ASIA-CONTAINER");
            let seen = server.seen();
            let [botocore, ours] = &seen[before..] else {
                panic!("{:?}", &seen[before..]);
            };
            for request in [botocore, ours] {
                assert_eq!(
                    (request.method.as_str(), request.target.as_str()),
                    ("GET", "/v2/credentials/abc")
                );
                assert_eq!(request.header("authorization"), Some(AGENT_TOKEN));
                assert_eq!(request.header("accept"), Some("application/json"));
            }
        }
        // A profile's keys come before the agent.
        let theirs = botocore_credentials(&python, dir.path(), &from_file, "keys");
        assert_eq!(ours(&from_file, "keys").await, theirs);
        assert_eq!(theirs.unwrap().0, "AKIDKEYS");
    }

    #[tokio::test]
    async fn what_goes_wrong_with_an_agent_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let server = LocalServer::start(|request| {
            if request.target == "/stale" {
                agent(request, -60)
            } else {
                agent(request, 3600)
            }
        })
        .await;
        let home = ("HOME", dir.path().display().to_string());
        let with = |path: &str, token: &str| {
            vec![
                home.clone(),
                (
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    format!("{}{path}", server.url),
                ),
                ("AWS_CONTAINER_AUTHORIZATION_TOKEN", token.to_owned()),
            ]
        };
        let cases = [
            (
                with("/x", "wrong-token-SECRET"),
                ": 401 Unauthorized: token <redacted> is not valid",
            ),
            (
                with("/partial", AGENT_TOKEN),
                ": the answer has no SecretAccessKey",
            ),
            (
                with("/stale", AGENT_TOKEN),
                "returned credentials that had already expired",
            ),
            (
                with("/x", "line\nbreak-SECRET"),
                ": the authorization token holds a line break, which no header may",
            ),
        ];
        for (env, expected) in cases {
            let err = ours(&env, "").await.unwrap_err();
            assert!(
                err.starts_with(
                    "Could not get the container's AWS credentials from http://127.0.0.1:"
                ) || err.starts_with("The container's agent at http://127.0.0.1:"),
                "{err}"
            );
            assert!(err.contains(expected), "{err}");
            assert!(
                !err.contains("SECRET") && !err.contains("container-secret"),
                "{err}"
            );
        }
        let missing = dir.path().join("no-token");
        let env = vec![
            home.clone(),
            (
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                format!("{}/x", server.url),
            ),
            (
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                missing.display().to_string(),
            ),
        ];
        let err = ours(&env, "").await.unwrap_err();
        assert!(
            err.contains(&format!(
                "cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {}",
                missing.display()
            )),
            "{err}"
        );
        let requests = server.seen().len();
        // Plain http only to loopback and the agents' own addresses; nothing is sent otherwise.
        for refused in [
            "http://10.0.0.1/creds",
            "http://example.com/creds",
            "not a url",
        ] {
            let env = vec![
                home.clone(),
                ("AWS_CONTAINER_CREDENTIALS_FULL_URI", refused.to_owned()),
            ];
            let err = ours(&env, "").await.unwrap_err();
            assert!(
                err.starts_with(&format!("AWS_CONTAINER_CREDENTIALS_FULL_URI \"{refused}\"")),
                "{err}"
            );
        }
        assert_eq!(server.seen().len(), requests);
        for allowed in [
            "https://example.com/creds",
            "http://localhost:1/creds",
            "http://127.0.0.2/creds",
            "http://[::1]:1/creds",
            "http://169.254.170.23/v1/credentials",
            "http://[fd00:ec2::23]/v1/credentials",
        ] {
            assert!(super::check_allowed(allowed).is_ok(), "{allowed}");
        }
        // ECS's relative URI is asked at its agent's address.
        let relative = |name: &str| {
            (name == "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
                .then(|| "/v2/credentials/id".to_owned())
        };
        assert_eq!(
            super::agent_request(&relative).unwrap().unwrap().url,
            "http://169.254.170.2/v2/credentials/id"
        );
        assert!(
            !format!(
                "{:?}",
                super::agent_request(&|name: &str| match name {
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI" => Some("http://127.0.0.1/x".to_owned()),
                    "AWS_CONTAINER_AUTHORIZATION_TOKEN" => Some("tok-SECRET".to_owned()),
                    _ => None,
                })
                .unwrap()
            )
            .contains("SECRET")
        );
    }
}
