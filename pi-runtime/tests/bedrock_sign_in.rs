//! Bedrock signed in through the shared AWS files as companies set them up, end to end against
//! a local server: a profile's `credential_process` asked at each request (run again once its
//! credentials near their expiration), a failing one said without a secret, and an
//! application's own `AwsCredentialsProvider` asked at each request. The credential
//! sources themselves are checked against botocore in the crate's unit tests.
//!
//! The model reads the AWS variables of its process: the test runs this binary's
//! `signed_in_child` again as a child process with them set.
#![cfg(all(feature = "bedrock", unix))]

mod stream_end;
mod wire_server;

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use pi_runtime::providers::BedrockConverse;
use pi_runtime::{Context, Message, Model, StreamOptions, UserMessage};
use stream_end::error_text;
use wire_server::{Reply, Server};

fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

async fn errors_of(model: &BedrockConverse) -> String {
    use futures_util::StreamExt;
    let messages = vec![Arc::new(Message::User(UserMessage::text("hi")))];
    let options = StreamOptions::default();
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &[],
    };
    let events = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        model.stream(context, &options).collect::<Vec<_>>(),
    )
    .await
    .expect("the stream ends");
    error_text(&events)
}

#[test]
fn a_credential_process_signs_each_request_with_its_current_keys() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    // Each run gives new keys, expiring in two minutes: inside the five-minute margin, so
    // each request runs the process again.
    let expires = "$(date -u -d '+2 minutes' +%Y-%m-%dT%H:%M:%SZ)";
    let helper = script(
        dir.path(),
        "helper",
        &format!(
            r#"echo x >> {count}
n=$(wc -l < {count} | tr -d ' ')
printf '{{"Version": 1, "AccessKeyId": "AKIDRUN%s", "SecretAccessKey": "secret", "SessionToken": "SESSIONTOKEN-FROM-RUN-%s", "Expiration": "%s"}}' "$n" "$n" "{expires}""#,
            count = count.display()
        ),
    );
    let fails = script(
        dir.path(),
        "fails",
        "echo 'the sign-in expired: run helper login' >&2\nexit 2",
    );
    let config = dir.path().join("config");
    std::fs::write(
        &config,
        format!(
            "[profile corp]\ncredential_process = {helper}\nregion = eu-west-3\n\
             [profile broken]\ncredential_process = {fails} --secret-arg\n"
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([
            "--exact",
            "signed_in_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env("AWS_CONFIG_FILE", &config)
        .env("AWS_SHARED_CREDENTIALS_FILE", dir.path().join("none"));
    for name in [
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
    ] {
        child.env_remove(name);
    }
    // The child's streams end within a minute each (their own timeouts).
    let output = child.output().unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && printed.contains("1 passed"),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Set for the child process that runs [`signed_in_child`].
const CHILD: &str = "PI_BEDROCK_SIGN_IN_CHILD";

/// The requests, in the child process (it does nothing in an ordinary run).
#[tokio::test]
async fn signed_in_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }

    let server = Server::start(vec![
        Reply::status(
            403,
            r#"{"message":"The security token SESSIONTOKEN-FROM-RUN-1 is invalid"}"#,
        ),
        Reply::status(403, r#"{"message":"refused"}"#),
    ])
    .await;
    let model = BedrockConverse::new("anthropic.claude-3-haiku-20240307-v1:0")
        .base_url(&server.url)
        .profile("corp")
        .max_retries(0);
    let first = errors_of(&model).await;
    assert!(
        first.starts_with("403 Forbidden: The security token <redacted> is invalid"),
        "{first}"
    );
    assert!(
        first.contains("check the credentials from the credential_process of profile \"corp\""),
        "{first}"
    );
    let second = errors_of(&model).await;
    assert!(second.starts_with("403 Forbidden: refused"), "{second}");
    let seen = server.seen();
    for (request, n) in seen.iter().zip(1..) {
        let authorization = request.header("authorization").unwrap();
        assert!(
            authorization.starts_with(&format!("AWS4-HMAC-SHA256 Credential=AKIDRUN{n}/"))
                && authorization.contains("/eu-west-3/bedrock/aws4_request"),
            "{authorization}"
        );
        assert_eq!(
            request.header("x-amz-security-token"),
            Some(format!("SESSIONTOKEN-FROM-RUN-{n}").as_str())
        );
    }
    assert_eq!(seen.len(), 2);

    let broken = BedrockConverse::new("anthropic.claude-3-haiku-20240307-v1:0")
        .base_url(&server.url)
        .profile("broken")
        .max_retries(0);
    let text = errors_of(&broken).await;
    assert!(
        text.starts_with("Could not get AWS credentials for Bedrock from the credential_process of profile \"broken\""),
        "{text}"
    );
    assert!(
        text.ends_with("failed with exit code 2: the sign-in expired: run helper login"),
        "{text}"
    );
    assert!(!text.contains("--secret-arg"), "{text}");
    assert_eq!(server.seen().len(), 2, "nothing sent without credentials");
}

/// Temporary keys from a source of the application's own: new ones at each request.
struct Rotating(std::sync::atomic::AtomicUsize);

impl pi_runtime::providers::AwsCredentialsProvider for Rotating {
    fn credentials(&self) -> pi_runtime::providers::AwsCredentialsFuture<'_> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            if n == 2 {
                return Err("the vault is sealed".to_owned());
            }
            Ok(pi_runtime::providers::AwsCredentials::new(
                format!("AKIDOWN{n}"),
                "own-secret",
                Some(format!("OWN-SESSION-TOKEN-{n}")),
            ))
        })
    }
}

#[tokio::test]
async fn a_provider_of_your_own_is_asked_at_each_request() {
    let server = Server::start(vec![
        Reply::status(403, r#"{"message":"no"}"#),
        Reply::status(403, r#"{"message":"no"}"#),
    ])
    .await;
    let model = BedrockConverse::new("anthropic.claude-3-haiku-20240307-v1:0")
        .base_url(&server.url)
        .region("us-east-1")
        .credentials_provider(Arc::new(Rotating(Default::default())))
        .max_retries(0);
    for _ in 0..2 {
        let text = errors_of(&model).await;
        assert!(
            text.contains("check the credentials from .credentials_provider(..)"),
            "{text}"
        );
    }
    let text = errors_of(&model).await;
    assert_eq!(
        text,
        "Could not get AWS credentials for Bedrock from .credentials_provider(..): the vault is sealed"
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    for (request, n) in seen.iter().zip(0..) {
        assert!(
            request
                .header("authorization")
                .unwrap()
                .starts_with(&format!("AWS4-HMAC-SHA256 Credential=AKIDOWN{n}/")),
            "{request:?}"
        );
        assert_eq!(
            request.header("x-amz-security-token"),
            Some(format!("OWN-SESSION-TOKEN-{n}").as_str())
        );
    }
}

/// A source that never answers.
struct Silent;

impl pi_runtime::providers::AwsCredentialsProvider for Silent {
    fn credentials(&self) -> pi_runtime::providers::AwsCredentialsFuture<'_> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn an_abort_while_the_credentials_are_fetched_ends_the_request() {
    use futures_util::StreamExt;
    let server = Server::start(vec![]).await;
    let model = BedrockConverse::new("anthropic.claude-3-haiku-20240307-v1:0")
        .base_url(&server.url)
        .credentials_provider(Arc::new(Silent))
        .max_retries(0);
    let signal = pi_tool::CancellationToken::new();
    let options = StreamOptions::with_signal(signal.clone());
    let messages = vec![Arc::new(Message::User(UserMessage::text("hi")))];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &[],
    };
    let abort = async {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        signal.cancel();
    };
    let (events, ()) = tokio::join!(
        tokio::time::timeout(
            std::time::Duration::from_secs(60),
            model.stream(context, &options).collect::<Vec<_>>(),
        ),
        abort
    );
    let events = events.expect("the abort ends the request");
    match events.last() {
        Some(pi_runtime::AssistantEvent::Error { reason, error }) => {
            assert_eq!(*reason, pi_runtime::StopReason::Aborted);
            assert_eq!(error.error_message.as_deref(), Some("Request was aborted"));
        }
        other => panic!("{other:?}"),
    }
    assert!(server.seen().is_empty());
}
