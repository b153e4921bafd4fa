//! Application Default Credentials without a key file, checked against google-auth itself:
//! the metadata server of a Google Cloud machine (asked as google-auth asks it, found only
//! when it answers `Metadata-Flavor: Google`, errors that say what to set), all on local
//! servers.
#![cfg(feature = "vertex")]

mod google_reference;
mod stream_end;
mod wire_server;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use google_reference::{Reply, Seen, Server, closed_port, google_auth_python, run_python};
use pi_runtime::providers::{ApplicationDefaultCredentials, VertexGemini};
use pi_runtime::{Context, Message, Model, StopReason, StreamOptions};
use serde_json::json;

const GOOGLE_TOOLS: &str = include_str!("fixtures/providers/google_tools.sse");
const TOKEN_PATH: &str = "/computeMetadata/v1/instance/service-accounts/default/token";
const PROJECT_PATH: &str = "/computeMetadata/v1/project/project-id";
const METADATA_TOKEN: &str = "ya29.c.metadata-server-token";

/// A metadata server as GCE's answers: its token, project and service account, all with
/// `Metadata-Flavor: Google`.
async fn metadata_server(expires_in: u64) -> Server {
    let flavored = |reply: Reply| reply.flavored();
    Server::start(
        vec![
            ("/", flavored(Reply::text(200, ""))),
            (
                TOKEN_PATH,
                flavored(Reply::json(
                    200,
                    &json!({"access_token": METADATA_TOKEN, "expires_in": expires_in, "token_type": "Bearer"}),
                )),
            ),
            (PROJECT_PATH, flavored(Reply::text(200, "acme-metadata"))),
            (
                "/computeMetadata/v1/instance/service-accounts/default/",
                flavored(Reply::json(
                    200,
                    &json!({
                        "aliases": ["default"],
                        "email": "1234-compute@developer.gserviceaccount.com",
                        "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
                    }),
                )),
            ),
        ],
        flavored(google_reference::not_found()),
    )
    .await
}

/// Variables with no credentials file (an empty home) and the metadata server at `host`
/// (then `ip`).
fn no_file_env(home: &tempfile::TempDir, host: &str, ip: &str) -> Vec<(String, String)> {
    vec![
        ("HOME".into(), home.path().display().to_string()),
        (
            "CLOUDSDK_CONFIG".into(),
            home.path().join("gcloud").display().to_string(),
        ),
        ("GCE_METADATA_HOST".into(), host.to_owned()),
        ("GCE_METADATA_IP".into(), ip.to_owned()),
        ("GCE_METADATA_TIMEOUT".into(), "2".to_owned()),
    ]
}

fn lookup(env: &[(String, String)]) -> impl Fn(&str) -> Option<String> + use<> {
    let env = env.to_vec();
    move |name| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
}

/// What of a request google-auth and we must agree on.
fn essentials(seen: &Seen) -> (String, String, Option<String>, Option<String>) {
    (
        seen.method.clone(),
        seen.target.clone(),
        seen.header("metadata-flavor").map(str::to_owned),
        seen.header("authorization").map(str::to_owned),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_server_is_asked_as_google_auth_asks_it() {
    let Some(python) = google_auth_python() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();

    let theirs = metadata_server(3599).await;
    let env = no_file_env(&home, &theirs.host, &theirs.host);
    let printed = run_python(
        python,
        r#"
import json, google.auth, google.auth.transport.requests
credentials, project = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
credentials.refresh(google.auth.transport.requests.Request())
print(json.dumps({"token": credentials.token, "project": project}))
"#,
        env,
    )
    .await;
    let google_auth: serde_json::Value = serde_json::from_str(printed.trim()).unwrap();

    let ours = metadata_server(3599).await;
    let credentials =
        ApplicationDefaultCredentials::find(lookup(&no_file_env(&home, &ours.host, &ours.host)))
            .unwrap();
    let token = credentials.access_token().await.unwrap();
    let project = credentials.project_id().await;

    assert_eq!(google_auth["token"], METADATA_TOKEN);
    assert_eq!(token, METADATA_TOKEN);
    assert_eq!(google_auth["project"], "acme-metadata");
    assert_eq!(project.as_deref(), Some("acme-metadata"));
    for path in [TOKEN_PATH, PROJECT_PATH] {
        let theirs = theirs.seen_at(path);
        let ours = ours.seen_at(path);
        assert_eq!(theirs.len(), 1, "google-auth asked {path} once: {theirs:?}");
        assert_eq!(ours.len(), 1, "we asked {path} once: {ours:?}");
        assert_eq!(essentials(&ours[0]), essentials(&theirs[0]), "{path}");
        assert_eq!(ours[0].body, theirs[0].body, "{path}");
    }
    assert_eq!(
        ours.seen_at(TOKEN_PATH)[0].target,
        format!("{TOKEN_PATH}?scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform")
    );
    assert_eq!(
        ours.seen_at(TOKEN_PATH)[0].header("metadata-flavor"),
        Some("Google")
    );
    // We ask nothing google-auth does not.
    for seen in ours.seen() {
        assert!(
            theirs.seen().iter().any(|t| t.target == seen.target),
            "{seen:?}"
        );
    }
    assert_eq!(
        credentials.source(),
        format!(
            "the metadata server at http://{}/computeMetadata/v1",
            ours.host
        )
    );

    // Kept: the next token is the same, without asking again; the project too.
    assert_eq!(credentials.access_token().await.unwrap(), METADATA_TOKEN);
    assert_eq!(
        credentials.project_id().await.as_deref(),
        Some("acme-metadata")
    );
    assert_eq!(ours.seen().len(), 2);
}

#[tokio::test]
async fn a_metadata_token_near_its_expiry_is_asked_again() {
    let home = tempfile::tempdir().unwrap();
    // 60 s left: under the five minutes' margin, so every token is a new one.
    let server = metadata_server(60).await;
    let credentials = ApplicationDefaultCredentials::find(lookup(&no_file_env(
        &home,
        &server.host,
        &server.host,
    )))
    .unwrap();
    for _ in 0..2 {
        assert_eq!(credentials.access_token().await.unwrap(), METADATA_TOKEN);
    }
    assert_eq!(server.seen_at(TOKEN_PATH).len(), 2);
}

#[tokio::test]
async fn the_second_address_is_used_when_the_host_does_not_answer() {
    let home = tempfile::tempdir().unwrap();
    let server = metadata_server(3599).await;
    let nothing = closed_port().await;
    let credentials =
        ApplicationDefaultCredentials::find(lookup(&no_file_env(&home, &nothing, &server.host)))
            .unwrap();
    assert_eq!(credentials.access_token().await.unwrap(), METADATA_TOKEN);
    assert_eq!(
        credentials.source(),
        format!(
            "the metadata server at http://{}/computeMetadata/v1",
            server.host
        )
    );
    assert_eq!(
        credentials.project_id().await.as_deref(),
        Some("acme-metadata")
    );
}

#[tokio::test]
async fn a_server_without_the_metadata_flavor_is_not_the_metadata_server() {
    let home = tempfile::tempdir().unwrap();
    // Answers as the metadata server would, but without `Metadata-Flavor: Google`.
    let impostor = Server::start(
        vec![(
            TOKEN_PATH,
            Reply::json(
                200,
                &json!({"access_token": "ya29.impostor-token", "expires_in": 3599}),
            ),
        )],
        Reply::text(200, "acme-impostor"),
    )
    .await;
    let credentials = ApplicationDefaultCredentials::find(lookup(&no_file_env(
        &home,
        &impostor.host,
        &impostor.host,
    )))
    .unwrap();
    let err = credentials.access_token().await.unwrap_err();
    assert!(
        err.starts_with(
            "No Google Cloud credentials (GOOGLE_APPLICATION_CREDENTIALS is not set and"
        ),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "http://{}/computeMetadata/v1 answered without `Metadata-Flavor: Google`, so it is not the metadata server",
            impostor.host
        )),
        "{err}"
    );
    assert!(
        err.contains("gcloud auth application-default login"),
        "{err}"
    );
    assert!(!err.contains("impostor-token"), "{err}");
    assert_eq!(credentials.project_id().await, None);
    // It was asked as the metadata server is, and refused.
    assert_eq!(
        impostor.seen_at(TOKEN_PATH)[0].header("metadata-flavor"),
        Some("Google")
    );
}

#[tokio::test]
async fn when_no_metadata_server_answers_the_error_says_what_to_set_and_what_was_tried() {
    let home = tempfile::tempdir().unwrap();
    let nothing = closed_port().await;
    let silent = google_reference::silent_server().await;
    let mut env = no_file_env(&home, &nothing, &silent);
    env.retain(|(name, _)| name != "GCE_METADATA_TIMEOUT");
    env.push(("GCE_METADATA_TIMEOUT".into(), "1".into()));
    let credentials = ApplicationDefaultCredentials::find(lookup(&env)).unwrap();
    let err = tokio::time::timeout(Duration::from_secs(20), credentials.access_token())
        .await
        .expect("bounded by GCE_METADATA_TIMEOUT")
        .unwrap_err();
    let gcloud_file = home
        .path()
        .join("gcloud/application_default_credentials.json");
    assert!(
        err.starts_with(&format!(
            "No Google Cloud credentials (GOOGLE_APPLICATION_CREDENTIALS is not set and {} does not exist, and no metadata server answered: http://{nothing}/computeMetadata/v1: connection failed",
            gcloud_file.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "http://{silent}/computeMetadata/v1: no answer within 1s"
        )),
        "{err}"
    );
    assert!(err.contains("set GOOGLE_APPLICATION_CREDENTIALS"), "{err}");
    assert!(err.contains("GCE_METADATA_HOST"), "{err}");
}

#[tokio::test]
async fn a_metadata_server_that_refuses_says_so() {
    let home = tempfile::tempdir().unwrap();
    let server = Server::start(
        vec![(
            TOKEN_PATH,
            Reply::text(404, "Service account not enabled on this instance").flavored(),
        )],
        google_reference::not_found().flavored(),
    )
    .await;
    let credentials = ApplicationDefaultCredentials::find(lookup(&no_file_env(
        &home,
        &server.host,
        &server.host,
    )))
    .unwrap();
    let err = credentials.access_token().await.unwrap_err();
    assert!(
        err.starts_with(&format!(
            "The metadata server at http://{}/computeMetadata/v1 did not give /instance/service-accounts/default/token?scopes=",
            server.host
        )),
        "{err}"
    );
    assert!(
        err.ends_with("404 Not Found: Service account not enabled on this instance"),
        "{err}"
    );
}

#[tokio::test]
async fn gemini_on_vertex_signs_in_with_the_metadata_server_and_takes_its_project() {
    if std::env::var_os("GOOGLE_CLOUD_PROJECT").is_some()
        || std::env::var_os("GCLOUD_PROJECT").is_some()
        || std::env::var_os("CLOUDSDK_CORE_PROJECT").is_some()
    {
        eprintln!("skipped: a project variable is set, which comes before the credentials'");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let metadata = metadata_server(3599).await;
    let vertex = Server::start(
        vec![(
            "/v1/projects/acme-metadata/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent",
            Reply::text(200, GOOGLE_TOOLS).header("content-type", "text/event-stream"),
        )],
        google_reference::not_found(),
    )
    .await;
    let credentials = ApplicationDefaultCredentials::find(lookup(&no_file_env(
        &home,
        &metadata.host,
        &metadata.host,
    )))
    .unwrap();
    let model = VertexGemini::new("gemini-2.5-flash")
        .base_url(&vertex.url)
        .location("global")
        .max_retries(0)
        .token_provider(Arc::new(credentials));
    let messages = vec![Arc::new(Message::user("Weather in Zürich?"))];
    let context = Context {
        system_prompt: "Be brief.",
        messages: &messages,
        tools: &[],
    };
    let events = tokio::time::timeout(
        Duration::from_secs(20),
        model
            .stream(context, &StreamOptions::default())
            .collect::<Vec<_>>(),
    )
    .await
    .expect("the stream ends");
    let (message, reason) = stream_end::last(&events);
    assert_eq!(reason, Some(StopReason::ToolUse), "{message:?}");
    let seen = vertex.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {METADATA_TOKEN}").as_str())
    );
}

#[tokio::test]
async fn a_project_the_metadata_server_did_not_give_is_asked_again() {
    let home = tempfile::tempdir().unwrap();
    let server = metadata_server(3599).await;
    server.answer(PROJECT_PATH, Reply::text(503, "try later").flavored());
    let credentials = ApplicationDefaultCredentials::find(lookup(&no_file_env(
        &home,
        &server.host,
        &server.host,
    )))
    .unwrap();
    assert_eq!(credentials.project_id().await, None);
    server.answer(PROJECT_PATH, Reply::text(200, "acme-metadata\n").flavored());
    assert_eq!(
        credentials.project_id().await.as_deref(),
        Some("acme-metadata")
    );
    assert_eq!(
        credentials.project_id().await.as_deref(),
        Some("acme-metadata")
    );
    assert_eq!(server.seen_at(PROJECT_PATH).len(), 2, "kept once given");
}
