//! A profile's `role_arn`: the role assumed with STS `AssumeRole` (the Query API: a form POST
//! signed with SigV4 for `sts` by the source credentials, an XML answer), or with
//! `AssumeRoleWithWebIdentity` (unsigned, with the token a file holds: Kubernetes' service
//! account token on EKS, a CI system's OIDC token); its credentials kept until five minutes
//! before they expire, then the role assumed again.

use std::path::PathBuf;
use std::time::Duration;

use super::aws_credentials::{
    AwsCredentialsFuture, AwsCredentialsProvider, Expiring, LazyClient, Refreshing, SharedProvider,
    parse_time,
};
use super::bedrock_auth::{AwsCredentials, SigningScope, sigv4_headers};

/// The longest an `AssumeRole` call may take.
const STS_TIMEOUT: Duration = Duration::from_secs(30);
/// The STS API version the Query API is asked in.
const STS_VERSION: &str = "2011-06-15";

/// STS's endpoint: `AWS_ENDPOINT_URL_STS`, else `AWS_ENDPOINT_URL`, else the region's.
pub(crate) fn sts_endpoint(env: &dyn Fn(&str) -> Option<String>, region: &str) -> String {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    set("AWS_ENDPOINT_URL_STS")
        .or_else(|| set("AWS_ENDPOINT_URL"))
        .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com"))
}

/// What `AssumeRole` is asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RoleRequest {
    pub(crate) role_arn: String,
    /// `role_session_name`, else `pi-runtime-session-<unix time>` (botocore's is
    /// `botocore-session-<unix time>`).
    pub(crate) session_name: Option<String>,
    pub(crate) external_id: Option<String>,
    pub(crate) duration_seconds: Option<u32>,
    /// The profile that names the role, for messages.
    pub(crate) profile: String,
    /// STS's URL and the region it is signed for.
    pub(crate) endpoint: String,
    pub(crate) region: String,
}

/// What a role is assumed with.
enum Proof {
    /// `AssumeRole`, signed with these credentials.
    Credentials(SharedProvider),
    /// `AssumeRoleWithWebIdentity`, with the token in this file (read at each call: such
    /// tokens are rotated).
    WebIdentity(PathBuf),
}

/// Credentials of an assumed role.
pub(crate) struct AssumedRole {
    request: RoleRequest,
    session_name: String,
    proof: Proof,
    kept: Refreshing,
    client: LazyClient,
}

impl AssumedRole {
    /// The role `request` names, assumed with the credentials `source` gives.
    pub(crate) fn new(request: RoleRequest, source: SharedProvider) -> Self {
        Self::with(request, Proof::Credentials(source))
    }

    /// The role `request` names, assumed with the web identity token in `token_file`.
    pub(crate) fn with_web_identity(request: RoleRequest, token_file: PathBuf) -> Self {
        Self::with(request, Proof::WebIdentity(token_file))
    }

    fn with(request: RoleRequest, proof: Proof) -> Self {
        let session_name = request.session_name.clone().unwrap_or_else(|| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs();
            format!("pi-runtime-session-{now}")
        });
        AssumedRole {
            request,
            session_name,
            proof,
            kept: Refreshing::default(),
            client: LazyClient::default(),
        }
    }

    /// The form `AssumeRole` is sent (`AssumeRoleWithWebIdentity` with a web identity token).
    fn form(&self, web_identity_token: Option<&str>) -> String {
        let mut form = form_urlencoded::Serializer::new(String::new());
        let action = match web_identity_token {
            Some(_) => "AssumeRoleWithWebIdentity",
            None => "AssumeRole",
        };
        form.append_pair("Action", action)
            .append_pair("Version", STS_VERSION)
            .append_pair("RoleArn", &self.request.role_arn)
            .append_pair("RoleSessionName", &self.session_name);
        if let Some(token) = web_identity_token {
            form.append_pair("WebIdentityToken", token);
        }
        if let Some(seconds) = self.request.duration_seconds {
            form.append_pair("DurationSeconds", &seconds.to_string());
        }
        if let Some(external_id) = &self.request.external_id {
            form.append_pair("ExternalId", external_id);
        }
        form.finish()
    }

    async fn assume(&self) -> Result<Expiring, String> {
        let RoleRequest {
            role_arn,
            profile,
            endpoint,
            region,
            ..
        } = &self.request;
        let failed = |detail: String| {
            format!(
                "Could not assume the role {role_arn} of AWS profile \"{profile}\" with STS at {endpoint}: {detail}"
            )
        };
        let content_type = (
            "content-type".to_owned(),
            "application/x-www-form-urlencoded; charset=utf-8".to_owned(),
        );
        let url = if endpoint.ends_with('/') {
            endpoint.clone()
        } else {
            format!("{endpoint}/")
        };
        // The web identity token is a secret: kept out of every message.
        let mut token = None;
        let (body, signed) = match &self.proof {
            Proof::Credentials(source) => {
                let source = source.credentials().await.map_err(|err| {
                    format!(
                        "Could not get the source credentials of AWS profile \"{profile}\": {err}"
                    )
                })?;
                let body = self.form(None);
                let scope = SigningScope {
                    credentials: &source,
                    region,
                    service: "sts",
                    time: std::time::SystemTime::now(),
                };
                let signed = sigv4_headers(
                    "POST",
                    &url,
                    std::slice::from_ref(&content_type),
                    body.as_bytes(),
                    &scope,
                )
                .map_err(failed)?;
                (body, signed)
            }
            Proof::WebIdentity(file) => {
                let read = std::fs::read_to_string(file).map_err(|err| {
                    failed(format!(
                        "cannot read the web identity token file {}: {err}",
                        file.display()
                    ))
                })?;
                // Sent as the file holds it, as botocore sends it.
                if read.trim().is_empty() {
                    return Err(failed(format!(
                        "the web identity token file {} is empty",
                        file.display()
                    )));
                }
                let body = self.form(Some(&read));
                token = Some(read);
                (body, Vec::new())
            }
        };
        let hide = |text: String| match &token {
            Some(token) => text.replace(token.trim(), "<redacted>"),
            None => text,
        };
        let client = self.client.get()?;
        let mut request = client
            .post(&url)
            .header(content_type.0, content_type.1)
            .body(body);
        for (name, value) in signed {
            request = request.header(name, value);
        }
        let response = tokio::time::timeout(STS_TIMEOUT, request.send())
            .await
            .map_err(|_| failed(format!("no answer within {STS_TIMEOUT:?}")))?
            .map_err(|err| failed(format!("connection failed: {err}")))?;
        let status = response.status();
        let text = tokio::time::timeout(STS_TIMEOUT, response.text())
            .await
            .map_err(|_| failed(format!("no answer within {STS_TIMEOUT:?}")))?
            .map_err(|err| failed(format!("reading the answer failed: {err}")))?;
        let document = roxmltree::Document::parse(&text);
        let find = |name: &str| {
            document.as_ref().ok().and_then(|document| {
                document
                    .descendants()
                    .find(|node| node.has_tag_name(name))
                    .and_then(|node| node.text())
                    .map(str::trim)
                    .filter(|text| !text.is_empty())
                    .map(str::to_owned)
            })
        };
        if !status.is_success() {
            // <ErrorResponse><Error><Code>AccessDenied</Code><Message>User: ... is not
            // authorized to perform: sts:AssumeRole on resource: ...</Message>: no secret.
            let detail = match (find("Code"), find("Message")) {
                (Some(code), Some(message)) => hide(format!("{status}: {code}: {message}")),
                (Some(code), None) => format!("{status}: {code}"),
                _ => status.to_string(),
            };
            return Err(failed(detail));
        }
        if document.is_err() {
            return Err(failed("the answer is not XML".to_owned()));
        }
        let field = |name: &str| {
            find(name).ok_or_else(|| failed(format!("the answer has no Credentials/{name}")))
        };
        let id = field("AccessKeyId")?;
        let secret = field("SecretAccessKey")?;
        let token = field("SessionToken")?;
        let expires = parse_time(&field("Expiration")?, "Expiration").map_err(failed)?;
        Expiring::checked(
            AwsCredentials::new(id, secret, Some(token)),
            Some(expires),
            &format!("STS at {endpoint}"),
        )
    }
}

impl AwsCredentialsProvider for AssumedRole {
    fn credentials(&self) -> AwsCredentialsFuture<'_> {
        Box::pin(self.kept.get(self.assume()))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::sync::Arc;
    use std::time::SystemTime;

    use crate::providers::AwsCredentials;
    use crate::providers::aws_reference::{
        LocalServer, Recorded, botocore_credentials, botocore_credentials_off_thread,
        botocore_python, form_fields, ours, script, signed_by,
    };

    /// An `AssumeRole` answer for a role, its keys named after the role (`ASIA-DEPLOY`, ...),
    /// expiring in `lifetime` seconds.
    fn assumed(request: &Recorded, lifetime: u64) -> (u16, &'static str, String) {
        let fields = form_fields(&request.body);
        let arn = fields
            .iter()
            .find(|(k, _)| k == "RoleArn")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        if arn.ends_with("/forbidden") {
            return (
                403,
                "text/xml",
                "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error>\
                 <Type>Sender</Type><Code>AccessDenied</Code><Message>User: arn:aws:iam::123456789012:user/dev \
                 is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::123456789012:role/forbidden</Message>\
                 </Error><RequestId>c6104cbe</RequestId></ErrorResponse>"
                    .to_owned(),
            );
        }
        // AssumeRole or AssumeRoleWithWebIdentity: the answer's elements are named after it.
        let action = fields
            .iter()
            .find(|(k, _)| k == "Action")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let role = arn
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        let expires = aws_smithy_types::DateTime::from(
            SystemTime::now() + std::time::Duration::from_secs(lifetime),
        )
        .fmt(aws_smithy_types::date_time::Format::DateTime)
        .unwrap();
        // Answers that are wrong in one way each.
        match role.as_str() {
            "GARBAGE" => return (200, "text/xml", "<AssumeRoleResponse><unclosed".to_owned()),
            "PARTIAL" => {
                return (
                    200,
                    "text/xml",
                    "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIA-P</AccessKeyId>\
                     <SecretAccessKey>partial-secret</SecretAccessKey><Expiration>2030-01-01T00:00:00Z</Expiration>\
                     </Credentials></AssumeRoleResult></AssumeRoleResponse>"
                        .to_owned(),
                );
            }
            "STALE" => {
                return (
                    200,
                    "text/xml",
                    "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIA-S</AccessKeyId>\
                     <SecretAccessKey>stale-secret</SecretAccessKey><SessionToken>stale-token</SessionToken>\
                     <Expiration>2020-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>"
                        .to_owned(),
                );
            }
            "THROTTLED" => return (500, "text/plain", "busy".to_owned()),
            // STS repeating the token it refuses (it does not, but a proxy might).
            "REJECTED" => {
                let token = fields
                    .iter()
                    .find(|(k, _)| k == "WebIdentityToken")
                    .map(|(_, v)| v.trim().to_owned())
                    .unwrap_or_default();
                return (
                    400,
                    "text/xml",
                    format!(
                        "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>\
                         <Message>Token {token} has expired</Message></Error></ErrorResponse>"
                    ),
                );
            }
            _ => {}
        }
        (
            200,
            "text/xml",
            format!(
                "<{action}Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
                 <{action}Result><AssumedRoleUser><AssumedRoleId>AROA:x</AssumedRoleId>\
                 <Arn>{arn}</Arn></AssumedRoleUser><Credentials>\
                 <AccessKeyId>ASIA-{role}</AccessKeyId><SecretAccessKey>secret/{role}</SecretAccessKey>\
                 <SessionToken>token-{role}</SessionToken><Expiration>{expires}</Expiration>\
                 </Credentials></{action}Result><ResponseMetadata><RequestId>1</RequestId>\
                 </ResponseMetadata></{action}Response>"
            ),
        )
    }

    /// The shared files of the tests: a role from a profile's keys, a role from that role, a
    /// role from the environment's keys, from a `credential_process`, and refusals.
    fn files(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let process = script(
            dir,
            "helper",
            r#"echo '{"Version": 1, "AccessKeyId": "AKIDPROCESS", "SecretAccessKey": "process-secret"}'"#,
        );
        let failing = script(dir, "failing", "echo 'helper: not signed in' >&2\nexit 1");
        let credentials = dir.join("credentials");
        let config = dir.join("config");
        std::fs::write(
            &credentials,
            "[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = base/secret\n\
             [self]\naws_access_key_id = AKIDSELF\naws_secret_access_key = self-secret\n",
        )
        .unwrap();
        std::fs::write(
            &config,
            format!(
                "[profile deploy]\nrole_arn = arn:aws:iam::123456789012:role/deploy\nsource_profile = base\n\
                 role_session_name = pi-test\nexternal_id = ext-1\nduration_seconds = 1800\nregion = eu-north-1\n\
                 [profile chained]\nrole_arn = arn:aws:iam::123456789012:role/second\nsource_profile = deploy\n\
                 role_session_name = second-session\nregion = eu-west-1\n\
                 [profile from_env]\nrole_arn = arn:aws:iam::123456789012:role/envrole\n\
                 credential_source = Environment\nrole_session_name = env-session\nregion = eu-west-1\n\
                 [profile proc]\ncredential_process = {process}\n\
                 [profile from_process]\nrole_arn = arn:aws:iam::123456789012:role/procrole\nsource_profile = proc\n\
                 role_session_name = proc-session\nregion = eu-west-1\n\
                 [profile self]\nrole_arn = arn:aws:iam::123456789012:role/selfrole\nsource_profile = self\n\
                 role_session_name = self-session\nregion = eu-west-1\n\
                 [profile forbidden]\nrole_arn = arn:aws:iam::123456789012:role/forbidden\nsource_profile = base\n\
                 role_session_name = x\nregion = eu-west-1\n\
                 [profile loop_a]\nrole_arn = arn:aws:iam::123456789012:role/a\nsource_profile = loop_b\nregion = eu-west-1\n\
                 [profile loop_b]\nrole_arn = arn:aws:iam::123456789012:role/b\nsource_profile = loop_a\nregion = eu-west-1\n\
                 [profile missing_source]\nrole_arn = arn:aws:iam::123456789012:role/m\nsource_profile = nowhere\n\
                 [profile no_source]\nrole_arn = arn:aws:iam::123456789012:role/n\n\
                 [profile both_sources]\nrole_arn = arn:aws:iam::123456789012:role/n\nsource_profile = base\n\
                 credential_source = Environment\n\
                 [profile mfa]\nrole_arn = arn:aws:iam::123456789012:role/n\nsource_profile = base\nmfa_serial = arn:aws:iam::1:mfa/me\n\
                 [profile metadata]\nrole_arn = arn:aws:iam::123456789012:role/n\ncredential_source = Ec2InstanceMetadata\n\
                 [profile bad_duration]\nrole_arn = arn:aws:iam::123456789012:role/n\nsource_profile = base\nduration_seconds = an hour\n\
                 [profile garbage]\nrole_arn = arn:aws:iam::123456789012:role/garbage\nsource_profile = base\n\
                 [profile partial]\nrole_arn = arn:aws:iam::123456789012:role/partial\nsource_profile = base\n\
                 [profile stale]\nrole_arn = arn:aws:iam::123456789012:role/stale\nsource_profile = base\n\
                 [profile throttled]\nrole_arn = arn:aws:iam::123456789012:role/throttled\nsource_profile = base\n\
                 [profile broken_source]\nrole_arn = arn:aws:iam::123456789012:role/n\nsource_profile = failing\n\
                 [profile failing]\ncredential_process = {failing}\n"
            ),
        )
        .unwrap();
        (credentials, config)
    }

    /// Each role profile resolved by botocore and by us against the same local STS: the same
    /// credentials, the same AssumeRole forms, each request signed for `sts` in the region by
    /// the source credentials.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn roles_are_assumed_as_botocore_assumes_them() {
        let Some(python) = botocore_python() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let (credentials, config) = files(dir.path());
        let server = LocalServer::start(|request| assumed(request, 3600)).await;
        let env = vec![
            ("AWS_CONFIG_FILE", config.display().to_string()),
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                credentials.display().to_string(),
            ),
            ("AWS_ENDPOINT_URL_STS", server.url.clone()),
            ("AWS_ACCESS_KEY_ID", "AKIDENV".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "env-secret".to_owned()),
            ("AWS_SESSION_TOKEN", "env-token".to_owned()),
        ];
        // Each profile, the roles it assumes in order, and the keys each is assumed with.
        let base = AwsCredentials::new("AKIDBASE", "base/secret", None);
        let deploy =
            AwsCredentials::new("ASIA-DEPLOY", "secret/DEPLOY", Some("token-DEPLOY".into()));
        let cases: Vec<(&str, Vec<&AwsCredentials>, &str)> = vec![
            ("deploy", vec![&base], "ASIA-DEPLOY"),
            ("chained", vec![&base, &deploy], "ASIA-SECOND"),
            ("from_env", vec![], "ASIA-ENVROLE"),
            ("from_process", vec![], "ASIA-PROCROLE"),
            ("self", vec![], "ASIA-SELFROLE"),
        ];
        let from_env = AwsCredentials::new("AKIDENV", "env-secret", Some("env-token".into()));
        let process = AwsCredentials::new("AKIDPROCESS", "process-secret", None);
        let own = AwsCredentials::new("AKIDSELF", "self-secret", None);
        for (profile, signers, id) in cases {
            let before = server.seen().len();
            let theirs = botocore_credentials_off_thread(&python, dir.path(), &env, profile).await;
            let middle = server.seen().len();
            let ours = ours(&env, profile).await;
            assert_eq!(ours, theirs, "{profile}");
            assert_eq!(ours.unwrap().0, id, "{profile}");
            let seen = server.seen();
            let (botocore_requests, our_requests) = (&seen[before..middle], &seen[middle..]);
            assert_eq!(botocore_requests.len(), our_requests.len(), "{profile}");
            // Every role of a chain is asked in the region of the profile named (botocore's
            // session region), whatever its own says.
            let region = if profile == "deploy" {
                "eu-north-1"
            } else {
                "eu-west-1"
            };
            let signers: Vec<&AwsCredentials> = match profile {
                "from_env" => vec![&from_env],
                "from_process" => vec![&process],
                "self" => vec![&own],
                _ => signers,
            };
            for ((botocore, ours), signer) in
                botocore_requests.iter().zip(our_requests).zip(signers)
            {
                assert_eq!(
                    (botocore.method.as_str(), ours.method.as_str()),
                    ("POST", "POST")
                );
                assert_eq!(
                    form_fields(&botocore.body),
                    form_fields(&ours.body),
                    "{profile}"
                );
                for request in [botocore, ours] {
                    assert!(
                        request
                            .header("authorization")
                            .unwrap_or_default()
                            .contains(&format!("/{region}/sts/aws4_request")),
                        "{profile}: {request:?}"
                    );
                    assert!(
                        signed_by(request, &server.url, signer, region, "sts"),
                        "{profile}: {request:?}"
                    );
                }
            }
        }
        let deploy_form = form_fields(&server.seen()[0].body);
        let expected: Vec<(String, String)> = [
            ("Action", "AssumeRole"),
            ("DurationSeconds", "1800"),
            ("ExternalId", "ext-1"),
            ("RoleArn", "arn:aws:iam::123456789012:role/deploy"),
            ("RoleSessionName", "pi-test"),
            ("Version", "2011-06-15"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(deploy_form, expected);
    }

    #[tokio::test]
    async fn refusals_and_bad_roles_say_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let (credentials, config) = files(dir.path());
        let server = LocalServer::start(|request| assumed(request, 3600)).await;
        let env = vec![
            ("AWS_CONFIG_FILE", config.display().to_string()),
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                credentials.display().to_string(),
            ),
            ("AWS_ENDPOINT_URL", server.url.clone()),
        ];
        let cases = [
            (
                "forbidden",
                "Could not assume the role arn:aws:iam::123456789012:role/forbidden of AWS profile \"forbidden\" with STS at http://",
            ),
            (
                "forbidden",
                ": 403 Forbidden: AccessDenied: User: arn:aws:iam::123456789012:user/dev is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::123456789012:role/forbidden",
            ),
            (
                "loop_a",
                "The source_profile \"loop_a\" of AWS profile \"loop_b\" leads back to a profile already used (loop_a -> loop_b): the roles go round in a circle",
            ),
            (
                "missing_source",
                "The source_profile \"nowhere\" of AWS profile \"missing_source\" does not exist",
            ),
            (
                "no_source",
                "The AWS profile \"no_source\" has a role_arn but no source_profile or credential_source to assume it with",
            ),
            (
                "both_sources",
                "The AWS profile \"both_sources\" has both source_profile and credential_source: keep one",
            ),
            (
                "mfa",
                "assumes its role with an MFA code (mfa_serial), which pi-runtime cannot ask for",
            ),
            (
                "metadata",
                "credential_source = Ec2InstanceMetadata, which pi-runtime does not run",
            ),
            (
                "from_env",
                "(credential_source = Environment), but AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set",
            ),
            (
                "bad_duration",
                "The duration_seconds \"an hour\" of AWS profile \"bad_duration\" is not a number of seconds",
            ),
        ];
        let answers = [
            ("garbage", ": the answer is not XML"),
            ("partial", ": the answer has no Credentials/SessionToken"),
            ("stale", "STS at http://127.0.0.1:"),
            (
                "stale",
                " returned credentials that had already expired (at 2020-01-01T00:00:00Z)",
            ),
            ("throttled", ": 500 Internal Server Error"),
            (
                "broken_source",
                "Could not get the source credentials of AWS profile \"broken_source\": The credential_process of AWS profile \"failing\"",
            ),
            (
                "broken_source",
                "failed with exit code 1: helper: not signed in",
            ),
        ];
        for (profile, expected) in cases.into_iter().chain(answers) {
            let err = ours(&env, profile).await.unwrap_err();
            assert!(err.contains(expected), "{profile}: {err}");
            for secret in [
                "base/secret",
                "partial-secret",
                "stale-secret",
                "stale-token",
            ] {
                assert!(!err.contains(secret), "{err}");
            }
        }
        // Nothing listening: the connection's failure is said.
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", listener.local_addr().unwrap())
        };
        let mut closed_env = env.clone();
        closed_env.retain(|(k, _)| *k != "AWS_ENDPOINT_URL");
        closed_env.push(("AWS_ENDPOINT_URL_STS", closed.clone()));
        let err = ours(&closed_env, "deploy").await.unwrap_err();
        assert!(
            err.contains(&format!("with STS at {closed}: connection failed")),
            "{err}"
        );
        // botocore refuses the same configurations.
        if let Some(python) = botocore_python() {
            for profile in ["loop_a", "missing_source", "no_source", "both_sources"] {
                let theirs = botocore_credentials(&python, dir.path(), &env, profile);
                assert!(theirs.is_err(), "{profile}: {theirs:?}");
            }
        }
        // AWS_ENDPOINT_URL is STS's too, and the default is the region's.
        assert_eq!(
            super::sts_endpoint(&|_| None, "ap-south-1"),
            "https://sts.ap-south-1.amazonaws.com"
        );
        assert!(server.seen().iter().all(|r| r.method == "POST"));
    }

    const WEB_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.WEB-IDENTITY-TOKEN.c2lnbmF0dXJl";

    /// Web identities, from the variables (which win over the profile's keys) and from a
    /// profile, resolved by botocore and by us against one local STS: the same credentials,
    /// the same `AssumeRoleWithWebIdentity` forms, neither signed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn web_identities_are_assumed_as_botocore_assumes_them() {
        let Some(python) = botocore_python() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let (credentials, config) = files(dir.path());
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, format!("{WEB_TOKEN}\n")).unwrap();
        let server = LocalServer::start(|request| assumed(request, 3600)).await;
        let shared = vec![
            ("AWS_CONFIG_FILE", config.display().to_string()),
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                credentials.display().to_string(),
            ),
            ("AWS_ENDPOINT_URL_STS", server.url.clone()),
            ("AWS_DEFAULT_REGION", "eu-west-1".to_owned()),
        ];
        let mut from_variables = shared.clone();
        from_variables.extend([
            (
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                token_file.display().to_string(),
            ),
            (
                "AWS_ROLE_ARN",
                "arn:aws:iam::123456789012:role/web".to_owned(),
            ),
            ("AWS_ROLE_SESSION_NAME", "web-session".to_owned()),
        ]);
        let from_profile = shared.clone();
        std::fs::write(
            &config,
            std::fs::read_to_string(&config).unwrap()
                + &format!(
                    "[profile eks]\nweb_identity_token_file = {}\nrole_arn = arn:aws:iam::123456789012:role/eksrole\n\
                     role_session_name = eks-session\n",
                    token_file.display()
                ),
        )
        .unwrap();
        // AWS_PROFILE's "base" has keys: the variables' web identity comes first, as in
        // botocore; a profile named in code turns the variables off.
        from_variables.push(("AWS_PROFILE", "base".to_owned()));
        let theirs = botocore_credentials(&python, dir.path(), &from_variables, "base");
        assert_eq!(ours(&from_variables, "base").await, theirs);
        assert_eq!(theirs.unwrap().0, "AKIDBASE");
        assert!(server.seen().is_empty());
        for (profile, env, id) in [
            ("", &from_variables, "ASIA-WEB"),
            ("eks", &from_profile, "ASIA-EKSROLE"),
        ] {
            let before = server.seen().len();
            let theirs = botocore_credentials_off_thread(&python, dir.path(), env, profile).await;
            let ours = ours(env, profile).await;
            assert_eq!(ours, theirs, "{profile}");
            assert_eq!(ours.unwrap().0, id);
            let seen = server.seen();
            let [botocore, ours] = &seen[before..] else {
                panic!("{profile}: {:?}", &seen[before..]);
            };
            assert_eq!(
                form_fields(&botocore.body),
                form_fields(&ours.body),
                "{profile}"
            );
            assert!(
                form_fields(&ours.body)
                    .contains(&("WebIdentityToken".to_owned(), format!("{WEB_TOKEN}\n")))
            );
            for request in [botocore, ours] {
                assert_eq!(request.header("authorization"), None, "{profile}: unsigned");
            }
        }

        // What goes wrong: no role, no file, an empty one, STS refusing the token.
        let mut no_role = shared.clone();
        no_role.push((
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            token_file.display().to_string(),
        ));
        let err = ours(&no_role, "").await.unwrap_err();
        assert_eq!(
            err,
            "A web identity token file is set (AWS_WEB_IDENTITY_TOKEN_FILE) for AWS profile \"default\", \
             but no role to assume with it: set AWS_ROLE_ARN or the profile's role_arn"
        );
        let theirs = botocore_credentials(&python, dir.path(), &no_role, "").unwrap_err();
        assert!(theirs.contains("no role ARN configured"), "{theirs}");
        let with_file = |file: &std::path::Path, role: &str| {
            let mut env = shared.clone();
            env.push(("AWS_WEB_IDENTITY_TOKEN_FILE", file.display().to_string()));
            env.push((
                "AWS_ROLE_ARN",
                format!("arn:aws:iam::123456789012:role/{role}"),
            ));
            env
        };
        let missing = dir.path().join("missing-token");
        let err = ours(&with_file(&missing, "web"), "").await.unwrap_err();
        assert!(
            err.contains(&format!(
                "cannot read the web identity token file {}",
                missing.display()
            )),
            "{err}"
        );
        let empty = dir.path().join("empty-token");
        std::fs::write(&empty, "\n").unwrap();
        let err = ours(&with_file(&empty, "web"), "").await.unwrap_err();
        assert!(err.ends_with("is empty"), "{err}");
        let err = ours(&with_file(&token_file, "rejected"), "")
            .await
            .unwrap_err();
        assert!(
            err.ends_with(": 400 Bad Request: InvalidIdentityToken: Token <redacted> has expired"),
            "{err}"
        );
        assert!(!err.contains("WEB-IDENTITY-TOKEN"), "{err}");
    }

    /// A rotated token is the one sent when the role is assumed again.
    #[tokio::test]
    async fn the_web_identity_token_is_read_again_at_each_refresh() {
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, "first-token").unwrap();
        // Two minutes: inside the margin, so each request assumes the role again.
        let server = LocalServer::start(|request| assumed(request, 120)).await;
        let env = [
            (
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                token_file.display().to_string(),
            ),
            (
                "AWS_ROLE_ARN",
                "arn:aws:iam::123456789012:role/web".to_owned(),
            ),
            ("AWS_ENDPOINT_URL_STS", server.url.clone()),
            ("HOME", dir.path().display().to_string()),
        ];
        let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
        let found = crate::providers::bedrock_auth::find_sign_in(&lookup, None).unwrap();
        let crate::providers::bedrock_auth::FoundSignIn::Profile {
            credentials: settings,
            source,
        } = found
        else {
            panic!("{found:?}");
        };
        assert_eq!(
            source,
            format!(
                "the role arn:aws:iam::123456789012:role/web with the web identity token in {} (AWS_WEB_IDENTITY_TOKEN_FILE)",
                token_file.display()
            )
        );
        assert!(!format!("{settings:?}").contains("first-token"));
        let provider = settings.provider();
        provider.credentials().await.unwrap();
        std::fs::write(&token_file, "second-token").unwrap();
        provider.credentials().await.unwrap();
        let tokens: Vec<String> = server
            .seen()
            .iter()
            .map(|request| {
                form_fields(&request.body)
                    .into_iter()
                    .find(|(k, _)| k == "WebIdentityToken")
                    .map(|(_, v)| v)
                    .unwrap()
            })
            .collect();
        assert_eq!(tokens, ["first-token", "second-token"]);
    }

    #[tokio::test]
    async fn a_role_is_assumed_again_five_minutes_before_it_expires() {
        let dir = tempfile::tempdir().unwrap();
        let (credentials, config) = files(dir.path());
        let lifetime = Arc::new(std::sync::atomic::AtomicU64::new(3600));
        let answer_lifetime = lifetime.clone();
        let server = LocalServer::start(move |request| {
            assumed(
                request,
                answer_lifetime.load(std::sync::atomic::Ordering::SeqCst),
            )
        })
        .await;
        let lookup = |name: &str| match name {
            "AWS_CONFIG_FILE" => Some(config.display().to_string()),
            "AWS_SHARED_CREDENTIALS_FILE" => Some(credentials.display().to_string()),
            "AWS_ENDPOINT_URL_STS" => Some(server.url.clone()),
            _ => None,
        };
        let found = crate::providers::bedrock_auth::find_sign_in(&lookup, Some("deploy")).unwrap();
        let crate::providers::bedrock_auth::FoundSignIn::Profile {
            credentials: settings,
            source,
        } = found
        else {
            panic!("{found:?}");
        };
        assert!(
            source.starts_with(
                "the role arn:aws:iam::123456789012:role/deploy of profile \"deploy\" in "
            ),
            "{source}"
        );
        let provider = settings.provider();
        for _ in 0..3 {
            assert_eq!(
                provider.credentials().await.unwrap().access_key_id(),
                "ASIA-DEPLOY"
            );
        }
        assert_eq!(server.seen().len(), 1, "kept while fresh");
        lifetime.store(120, std::sync::atomic::Ordering::SeqCst);
        let provider = settings.provider();
        for _ in 0..3 {
            provider.credentials().await.unwrap();
        }
        assert_eq!(server.seen().len(), 4, "assumed again inside the margin");
        // The default session name, as botocore's but ours.
        let default_name = super::AssumedRole::new(
            super::RoleRequest {
                session_name: None,
                ..match &settings {
                    crate::providers::bedrock_auth::ProfileCredentials::AssumeRole {
                        request,
                        ..
                    } => request.clone(),
                    other => panic!("{other:?}"),
                }
            },
            Arc::new(AwsCredentials::new("A", "B", None)),
        );
        assert!(
            default_name
                .form(None)
                .contains("RoleSessionName=pi-runtime-session-1"),
            "{}",
            default_name.form(None)
        );
    }
}
