//! Workload identity federation (`external_account` credential files) checked against
//! google-auth itself: the subject token read from a file or a URL, exchanged at the STS, then
//! for a service account's token, each request compared with google-auth's on the same local
//! servers; and every refusal and error, none of which shows a secret.
#![cfg(feature = "vertex")]

mod google_reference;
mod wire_server;

use std::path::{Path, PathBuf};

use google_reference::{Reply, Seen, Server, google_auth_python, run_python};
use pi_runtime::providers::ApplicationDefaultCredentials;
use serde_json::{Value, json};

const WORKLOAD_AUDIENCE: &str = "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/ci-pool/providers/github";
const WORKFORCE_AUDIENCE: &str =
    "//iam.googleapis.com/locations/global/workforcePools/staff/providers/okta";
const JWT_TYPE: &str = "urn:ietf:params:oauth:token-type:jwt";
const SUBJECT_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.subject-token-secret.c2lnbmF0dXJl";
const STS_TOKEN: &str = "ya29.sts-token-secret";
const SA_TOKEN: &str = "ya29.impersonated-token-secret";
const CLIENT_SECRET: &str = "client-secret-value";
const IMPERSONATION_PATH: &str =
    "/v1/projects/-/serviceAccounts/ci@acme.iam.gserviceaccount.com:generateAccessToken";

/// An STS, IAM and subject-token server, as Google's and an identity provider's answer.
async fn google_server() -> Server {
    Server::start(
        vec![
            (
                "/sts",
                Reply::json(
                    200,
                    &json!({
                        "access_token": STS_TOKEN,
                        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                        "token_type": "Bearer",
                        "expires_in": 3600,
                    }),
                ),
            ),
            (
                IMPERSONATION_PATH,
                Reply::json(
                    200,
                    &json!({"accessToken": SA_TOKEN, "expireTime": "2099-01-01T00:00:00Z"}),
                ),
            ),
            (
                "/subject.json",
                Reply::json(200, &json!({"value": SUBJECT_TOKEN, "count": 1})),
            ),
        ],
        google_reference::not_found(),
    )
    .await
}

/// The cases: a configuration (given the server's URL and the folder) and the token each ends
/// with.
fn cases(url: &str, dir: &Path) -> Vec<(&'static str, Value, &'static str)> {
    let text_file = dir.join("subject.txt");
    let json_file = dir.join("subject.json");
    std::fs::write(&text_file, SUBJECT_TOKEN).unwrap();
    std::fs::write(
        &json_file,
        json!({"id_token": SUBJECT_TOKEN, "expires": 1}).to_string(),
    )
    .unwrap();
    let base = |audience: &str, source: Value| {
        json!({
            "type": "external_account",
            "audience": audience,
            "subject_token_type": JWT_TYPE,
            "token_url": format!("{url}/sts"),
            "credential_source": source,
        })
    };
    let impersonated = |mut config: Value| {
        config["service_account_impersonation_url"] = json!(format!("{url}{IMPERSONATION_PATH}"));
        config
    };
    let mut url_with_client = impersonated(base(
        WORKLOAD_AUDIENCE,
        json!({
            "url": format!("{url}/subject.json"),
            "headers": {"Metadata": "True", "X-Identity-Header": "from-config"},
            "format": {"type": "json", "subject_token_field_name": "value"},
        }),
    ));
    url_with_client["client_id"] = json!("client-id-1");
    url_with_client["client_secret"] = json!(CLIENT_SECRET);
    let mut lifetime = impersonated(base(
        WORKLOAD_AUDIENCE,
        json!({"file": json_file, "format": {"type": "json", "subject_token_field_name": "id_token"}}),
    ));
    lifetime["service_account_impersonation"] = json!({"token_lifetime_seconds": 1800});
    let mut workforce = base(
        WORKFORCE_AUDIENCE,
        json!({"file": text_file, "format": {"type": "text"}}),
    );
    workforce["workforce_pool_user_project"] = json!("987654");
    workforce["subject_token_type"] = json!("urn:ietf:params:oauth:token-type:id_token");
    vec![
        (
            "file_text",
            base(WORKLOAD_AUDIENCE, json!({"file": text_file})),
            STS_TOKEN,
        ),
        (
            "file_json_impersonated",
            impersonated(base(
                WORKLOAD_AUDIENCE,
                json!({"file": json_file, "format": {"type": "json", "subject_token_field_name": "id_token"}}),
            )),
            SA_TOKEN,
        ),
        ("url_json_client_impersonated", url_with_client, SA_TOKEN),
        ("impersonation_lifetime", lifetime, SA_TOKEN),
        ("workforce_user_project", workforce, STS_TOKEN),
    ]
}

/// What of a request google-auth and we must agree on: method, target, the headers that
/// matter, and the body (a form's pairs sorted; JSON without null fields).
fn essentials(seen: &Seen) -> Value {
    let headers: Vec<(String, String)> = seen
        .headers
        .iter()
        .filter(|(name, _)| {
            !matches!(
                name.as_str(),
                "user-agent"
                    | "x-goog-api-client"
                    | "accept"
                    | "accept-encoding"
                    | "connection"
                    | "host"
                    | "content-length"
            )
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect();
    let body = if seen.body.is_empty() {
        Value::Null
    } else if seen.header("content-type") == Some("application/json") {
        let mut body = seen.json();
        if let Some(object) = body.as_object_mut() {
            object.retain(|_, value| !value.is_null());
        }
        body
    } else {
        json!(seen.form())
    };
    json!({
        "method": seen.method,
        "target": seen.target,
        "headers": headers,
        "body": body,
    })
}

fn write_config(dir: &Path, name: &str, config: &Value) -> PathBuf {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

fn adc_with(path: &Path) -> Result<ApplicationDefaultCredentials, String> {
    let path = path.display().to_string();
    ApplicationDefaultCredentials::find(move |name| {
        (name == "GOOGLE_APPLICATION_CREDENTIALS").then(|| path.clone())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_accounts_are_exchanged_as_google_auth_exchanges_them() {
    let Some(python) = google_auth_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut theirs = Vec::new();
    let mut configs = serde_json::Map::new();
    for case in 0..cases("", dir.path()).len() {
        let server = google_server().await;
        let (name, config, _) = cases(&server.url, dir.path()).swap_remove(case);
        let path = write_config(dir.path(), &format!("theirs-{name}"), &config);
        configs.insert(name.to_owned(), json!(path));
        theirs.push(server);
    }
    // identity_pool's own class: google.auth.default() would also ask Cloud Resource Manager
    // for the project, which is not on this machine.
    let printed = run_python(
        python,
        r#"
import json, os, google.auth.transport.requests
from google.auth import identity_pool
tokens = {}
for name, path in json.loads(os.environ["CONFIGS"]).items():
    credentials = identity_pool.Credentials.from_file(path, scopes=["https://www.googleapis.com/auth/cloud-platform"])
    credentials.refresh(google.auth.transport.requests.Request())
    tokens[name] = credentials.token
print(json.dumps(tokens))
"#,
        vec![("CONFIGS".into(), Value::Object(configs).to_string())],
    )
    .await;
    let google_auth: Value = serde_json::from_str(printed.trim()).unwrap();

    for (case, their_server) in theirs.iter().enumerate() {
        let server = google_server().await;
        let (name, config, expected) = cases(&server.url, dir.path()).swap_remove(case);
        let credentials = adc_with(&write_config(dir.path(), name, &config)).unwrap();
        let token = credentials.access_token().await.unwrap();
        assert_eq!(token, expected, "{name}");
        assert_eq!(google_auth[name], expected, "{name}: google-auth");

        let ours: Vec<Value> = server.seen().iter().map(essentials).collect();
        let theirs: Vec<Value> = their_server.seen().iter().map(essentials).collect();
        // The servers' URLs differ by port: compare with it left out.
        let ours = serde_json::to_string_pretty(&ours)
            .unwrap()
            .replace(&server.host, "HOST");
        let theirs = serde_json::to_string_pretty(&theirs)
            .unwrap()
            .replace(&their_server.host, "HOST");
        assert_eq!(ours, theirs, "{name}: our requests, then google-auth's");

        // Kept: asked again, the same token without a request.
        let requests = server.seen().len();
        assert_eq!(credentials.access_token().await.unwrap(), expected);
        assert_eq!(server.seen().len(), requests, "{name}");
    }
}

#[tokio::test]
async fn the_requests_carry_what_aip_4117_says() {
    let dir = tempfile::tempdir().unwrap();
    let server = google_server().await;
    let (_, config, _) = cases(&server.url, dir.path()).swap_remove(2);
    let credentials = adc_with(&write_config(dir.path(), "url", &config)).unwrap();
    assert_eq!(credentials.access_token().await.unwrap(), SA_TOKEN);
    let seen = server.seen();
    let paths: Vec<&str> = seen.iter().map(Seen::path).collect();
    assert_eq!(paths, ["/subject.json", "/sts", IMPERSONATION_PATH]);
    assert_eq!(seen[0].header("x-identity-header"), Some("from-config"));
    let form = seen[1].form();
    let field = |name: &str| {
        form.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(
        field("grant_type"),
        Some("urn:ietf:params:oauth:grant-type:token-exchange")
    );
    assert_eq!(field("audience"), Some(WORKLOAD_AUDIENCE));
    // google-auth's: the STS token only asks IAM for the service account's.
    assert_eq!(field("scope"), Some("https://www.googleapis.com/auth/iam"));
    assert_eq!(
        field("requested_token_type"),
        Some("urn:ietf:params:oauth:token-type:access_token")
    );
    assert_eq!(field("subject_token_type"), Some(JWT_TYPE));
    assert_eq!(field("subject_token"), Some(SUBJECT_TOKEN));
    assert_eq!(
        seen[1].header("authorization"),
        Some("Basic Y2xpZW50LWlkLTE6Y2xpZW50LXNlY3JldC12YWx1ZQ==")
    );
    assert_eq!(
        seen[2].header("authorization"),
        Some(format!("Bearer {STS_TOKEN}").as_str())
    );
    assert_eq!(
        seen[2].json(),
        json!({"scope": ["https://www.googleapis.com/auth/cloud-platform"], "lifetime": "3600s"})
    );
}

/// Every message a test makes, checked for the secrets.
fn assert_no_secret(err: &str) {
    for secret in [
        SUBJECT_TOKEN,
        STS_TOKEN,
        SA_TOKEN,
        CLIENT_SECRET,
        "subject-token-secret",
    ] {
        assert!(!err.contains(secret), "{secret} in {err}");
    }
}

#[test]
fn configurations_that_cannot_be_used_are_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let valid = json!({
        "type": "external_account",
        "audience": WORKLOAD_AUDIENCE,
        "subject_token_type": JWT_TYPE,
        "token_url": "http://127.0.0.1:9/sts",
        "client_id": "client-id-1",
        "client_secret": CLIENT_SECRET,
        "credential_source": {"file": "/var/run/token"},
    });
    let with = |change: &dyn Fn(&mut Value)| {
        let mut config = valid.clone();
        change(&mut config);
        config
    };
    let refusals: Vec<(Value, &str)> = vec![
        (
            with(&|c| {
                c["credential_source"] = json!({"executable": {"command": "/bin/print-token"}})
            }),
            "its credential_source is an executable source (a program that prints the token), which is not supported (file and url sources are)",
        ),
        (
            with(&|c| {
                c["credential_source"] = json!({
                    "environment_id": "aws1",
                    "region_url": "http://169.254.169.254/latest/meta-data/placement/availability-zone",
                    "regional_cred_verification_url": "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15",
                })
            }),
            "its credential_source is an aws source (AWS's instance metadata and a signed GetCallerIdentity request), which is not supported",
        ),
        (
            with(&|c| {
                c["credential_source"] =
                    json!({"certificate": {"use_default_certificate_config": true}})
            }),
            "its credential_source is a certificate source",
        ),
        (
            with(&|c| c["credential_source"] = json!({})),
            "its credential_source has no \"file\" or \"url\"",
        ),
        (
            with(&|c| {
                c["credential_source"] = json!({"file": "/a", "url": "http://127.0.0.1:9/t"})
            }),
            "its credential_source has both \"file\" and \"url\"",
        ),
        (
            with(&|c| {
                c.as_object_mut().unwrap().remove("credential_source");
            }),
            "it has no \"credential_source\" object",
        ),
        (
            with(&|c| {
                c.as_object_mut().unwrap().remove("audience");
            }),
            "it has no \"audience\"",
        ),
        (
            with(&|c| {
                c.as_object_mut().unwrap().remove("subject_token_type");
            }),
            "it has no \"subject_token_type\"",
        ),
        (
            with(&|c| c["credential_source"]["format"] = json!({"type": "json"})),
            "it has no credential_source format \"subject_token_field_name\" (a json format names its field)",
        ),
        (
            with(&|c| c["credential_source"]["format"] = json!({"type": "yaml"})),
            "its credential_source format \"yaml\" is not text or json",
        ),
        (
            with(&|c| c["workforce_pool_user_project"] = json!("987654")),
            "it sets \"workforce_pool_user_project\", which only a workforce pool's audience",
        ),
        (
            with(&|c| c["audience"] = json!(12)),
            "its \"audience\" is not a string",
        ),
    ];
    for (config, reason) in refusals {
        let path = write_config(dir.path(), "refused", &config);
        let err = adc_with(&path).unwrap_err();
        assert!(
            err.starts_with(&format!(
                "The Google Cloud credentials file {} (external_account) cannot be used: ",
                path.display()
            )),
            "{err}"
        );
        assert!(err.contains(reason), "{reason} not in: {err}");
        assert!(err.contains("create-cred-config"), "{err}");
        assert_no_secret(&err);
    }
    // A file that is not JSON is not mistaken for an external account, nor quoted.
    let path = dir.path().join("broken.json");
    std::fs::write(
        &path,
        format!("{{\"type\": \"external_account\", \"client_secret\": \"{CLIENT_SECRET}\""),
    )
    .unwrap();
    let err = adc_with(&path).unwrap_err();
    assert!(err.contains("the JSON is invalid"), "{err}");
    assert_no_secret(&err);
}

#[tokio::test]
async fn exchange_failures_say_where_and_why_without_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let refused = Server::start(
        vec![
            (
                "/sts",
                Reply::json(
                    400,
                    &json!({"error": "invalid_grant", "error_description": "The audience in ID Token [https://github.com/acme] does not match the expected audience."}),
                ),
            ),
            (
                IMPERSONATION_PATH,
                Reply::json(
                    403,
                    &json!({"error": {"code": 403, "message": "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).", "status": "PERMISSION_DENIED"}}),
                ),
            ),
            ("/subject.json", Reply::text(401, SUBJECT_TOKEN)),
        ],
        google_reference::not_found(),
    )
    .await;
    let good = google_server().await;
    let text_file = dir.path().join("subject.txt");
    std::fs::write(&text_file, SUBJECT_TOKEN).unwrap();
    let empty_file = dir.path().join("empty.txt");
    std::fs::write(&empty_file, "  \n").unwrap();
    let json_file = dir.path().join("subject.json");
    std::fs::write(&json_file, json!({"other": SUBJECT_TOKEN}).to_string()).unwrap();
    let config = |token_url: String, source: Value, impersonation: Option<String>| {
        let mut config = json!({
            "type": "external_account",
            "audience": WORKLOAD_AUDIENCE,
            "subject_token_type": JWT_TYPE,
            "token_url": token_url,
            "client_id": "client-id-1",
            "client_secret": CLIENT_SECRET,
            "credential_source": source,
        });
        if let Some(url) = impersonation {
            config["service_account_impersonation_url"] = json!(url);
        }
        config
    };
    let cases: Vec<(Value, String)> = vec![
        (
            config(
                format!("{}/sts", refused.url),
                json!({"file": text_file}),
                None,
            ),
            format!(
                "Google's STS at {}/sts refused the subject token: 400 Bad Request: invalid_grant: The audience in ID Token [https://github.com/acme] does not match the expected audience.",
                refused.url
            ),
        ),
        (
            config(
                format!("{}/sts", good.url),
                json!({"file": text_file}),
                Some(format!("{}{IMPERSONATION_PATH}", refused.url)),
            ),
            format!(
                "Could not impersonate the service account at {}{IMPERSONATION_PATH}: 403 Forbidden: Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).",
                refused.url
            ),
        ),
        (
            config(
                format!("{}/sts", good.url),
                json!({"url": format!("{}/subject.json", refused.url)}),
                None,
            ),
            format!(
                "Could not get the subject token from {}/subject.json (the credential_source url): 401 Unauthorized",
                refused.url
            ),
        ),
        (
            config(
                format!("{}/sts", good.url),
                json!({"file": dir.path().join("missing.txt")}),
                None,
            ),
            format!(
                "Cannot read the subject token file {} of the credential_source: ",
                dir.path().join("missing.txt").display()
            ),
        ),
        (
            config(
                format!("{}/sts", good.url),
                json!({"file": empty_file}),
                None,
            ),
            format!(
                "The subject token in the file {} is empty",
                empty_file.display()
            ),
        ),
        (
            config(
                format!("{}/sts", good.url),
                json!({"file": json_file, "format": {"type": "json", "subject_token_field_name": "id_token"}}),
                None,
            ),
            format!(
                "The subject token in the file {} is not JSON with the string field \"id_token\" (credential_source format)",
                json_file.display()
            ),
        ),
        (
            config(
                format!("http://{}/sts", google_reference::closed_port().await),
                json!({"file": text_file}),
                None,
            ),
            "connection failed".to_owned(),
        ),
    ];
    for (config, expected) in cases {
        let path = write_config(dir.path(), "failing", &config);
        let credentials = adc_with(&path).unwrap();
        let err = credentials.access_token().await.unwrap_err();
        assert!(
            err.starts_with(&format!(
                "Could not get a Google Cloud access token with the credentials in {}: ",
                path.display()
            )),
            "{err}"
        );
        assert!(err.contains(&expected), "{expected}\nnot in: {err}");
        assert!(err.contains("create-cred-config"), "{err}");
        assert_no_secret(&err);
        assert_no_secret(&format!("{credentials:?}"));
    }
}
