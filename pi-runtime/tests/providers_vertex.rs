//! Google Vertex AI against local servers: a token endpoint (a service account's signed JWT and
//! gcloud's refresh token exchanged, tokens kept and refreshed before they expire) and Vertex's
//! wire (Gemini's `:streamGenerateContent`, Claude's `:streamRawPredict` with
//! `anthropic_version` in the body); sign-in failures that say what to set and hide the secret;
//! and the Gemini decoder on the Vertex AI SDK's recorded streams, split at every byte.
#![cfg(feature = "vertex")]

mod stream_end;
use stream_end::{error_text, last};
mod recorded;
mod sdk_types;
mod wire_server;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use pi_runtime::providers::{ApplicationDefaultCredentials, VertexAnthropic, VertexGemini};
use pi_runtime::{AssistantEvent, Context, Message, Model, StopReason, StreamOptions};
use pi_tool::ToolSpec;
use serde_json::{Value, json};
use wire_server::{Reply, Seen, Server};

const ANTHROPIC_TOOLS: &str = include_str!("fixtures/providers/anthropic_tools.sse");
const GOOGLE_TOOLS: &str = include_str!("fixtures/providers/google_tools.sse");
/// A throwaway key made for these tests (see fixtures/providers/README-vertex-test-key.md).
const TEST_KEY: &str = include_str!("fixtures/providers/vertex-test-service-account.key.pem");
const TEST_PUBLIC_KEY: &str =
    include_str!("fixtures/providers/vertex-test-service-account.pub.pem");

fn token_reply(token: &str, expires_in: u64) -> Reply {
    Reply::status(
        200,
        &json!({"access_token": token, "expires_in": expires_in, "token_type": "Bearer"})
            .to_string(),
    )
}

/// A service account's key file whose `token_uri` is the local server.
fn service_account_file(dir: &tempfile::TempDir, server: &Server) -> std::path::PathBuf {
    let path = dir.path().join("key.json");
    let key = json!({
        "type": "service_account",
        "project_id": "acme-from-key",
        "private_key_id": "0123456789abcdef",
        "private_key": TEST_KEY,
        "client_email": "pi-test@acme.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": format!("{}/token", server.url),
    });
    std::fs::write(&path, key.to_string()).unwrap();
    path
}

fn form(seen: &Seen) -> Vec<(String, String)> {
    url_pairs(&String::from_utf8_lossy(&seen.raw))
}

/// `a=b&c=d` decoded (`+` and `%XX`).
fn url_pairs(text: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> &'a str {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {name} in {pairs:?}"))
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Weather in a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"]}),
    }
}

async fn run(model: &dyn Model, options: &StreamOptions) -> Vec<AssistantEvent> {
    let messages = vec![Arc::new(Message::user("Weather in Zürich?"))];
    let tools = [weather_tool()];
    let context = Context {
        system_prompt: "Be brief.",
        messages: &messages,
        tools: &tools,
    };
    tokio::time::timeout(
        Duration::from_secs(20),
        model.stream(context, options).collect::<Vec<_>>(),
    )
    .await
    .expect("the stream ends")
}

#[tokio::test]
async fn gemini_on_vertex_signs_in_with_a_service_account_and_keeps_its_token() {
    let server = Server::start(vec![
        token_reply("ya29.first-token", 3599),
        Reply::stream(GOOGLE_TOOLS, 11),
        Reply::stream(GOOGLE_TOOLS, 11),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let credentials = ApplicationDefaultCredentials::from_file(service_account_file(&dir, &server))
        .expect("the key file reads");
    assert_eq!(credentials.project(), Some("acme-from-key"));
    let model = VertexGemini::new("gemini-2.5-flash")
        .base_url(&server.url)
        .project("acme")
        .max_retries(0)
        .token_provider(Arc::new(credentials));

    for _ in 0..2 {
        let events = run(&model, &StreamOptions::default()).await;
        let (message, reason) = last(&events);
        assert_eq!(reason, Some(StopReason::ToolUse), "{message:?}");
        assert_eq!(
            (message.api.as_str(), message.provider.as_str()),
            ("google-vertex", "google-vertex")
        );
    }
    let seen = server.seen();
    assert_eq!(seen.len(), 3, "one token for both requests");

    // The token request: a JWT signed with the key, for Vertex's scope, at the token URI.
    assert_eq!(seen[0].target, "/token");
    let pairs = form(&seen[0]);
    assert_eq!(
        field(&pairs, "grant_type"),
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    let assertion = field(&pairs, "assertion");
    let header = jsonwebtoken::decode_header(assertion).unwrap();
    assert_eq!(header.alg, jsonwebtoken::Algorithm::RS256);
    assert_eq!(header.kid.as_deref(), Some("0123456789abcdef"));
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.set_audience(&[format!("{}/token", server.url)]);
    validation.set_issuer(&["pi-test@acme.iam.gserviceaccount.com"]);
    let claims = jsonwebtoken::decode::<Value>(
        assertion,
        &jsonwebtoken::DecodingKey::from_rsa_pem(TEST_PUBLIC_KEY.as_bytes()).unwrap(),
        &validation,
    )
    .expect("signed with the service account's key")
    .claims;
    assert_eq!(
        claims["scope"],
        "https://www.googleapis.com/auth/cloud-platform"
    );
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        3600
    );

    // The model requests: Vertex's URL, the token as bearer, Gemini's body.
    for request in &seen[1..] {
        assert_eq!(
            request.target,
            "/v1/projects/acme/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            request.header("authorization"),
            Some("Bearer ya29.first-token")
        );
        assert!(request.body["contents"].is_array());
        assert_eq!(
            request.body["tools"][0]["functionDeclarations"][0]["name"],
            "get_weather"
        );
    }
}

#[tokio::test]
async fn a_token_near_its_expiry_is_refreshed_before_the_next_request() {
    // 200 s left is inside the five-minute margin: the next request gets a new token.
    let server = Server::start(vec![
        token_reply("ya29.short-lived", 200),
        Reply::stream(GOOGLE_TOOLS, 64),
        token_reply("ya29.fresh", 3599),
        Reply::stream(GOOGLE_TOOLS, 64),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let credentials =
        ApplicationDefaultCredentials::from_file(service_account_file(&dir, &server)).unwrap();
    let model = VertexGemini::new("gemini-2.5-flash")
        .base_url(&server.url)
        .project("acme")
        .location("europe-west4")
        .max_retries(0)
        .token_provider(Arc::new(credentials));
    run(&model, &StreamOptions::default()).await;
    run(&model, &StreamOptions::default()).await;
    let seen = server.seen();
    assert_eq!(seen.len(), 4);
    assert_eq!(seen[2].target, "/token");
    assert_eq!(
        seen[1].header("authorization"),
        Some("Bearer ya29.short-lived")
    );
    assert_eq!(seen[3].header("authorization"), Some("Bearer ya29.fresh"));
    assert!(
        seen[3]
            .target
            .starts_with("/v1/projects/acme/locations/europe-west4/publishers/google/models/")
    );
}

#[tokio::test]
async fn claude_on_vertex_uses_raw_predict_with_the_vertex_version_and_gcloud_user_credentials() {
    let server = Server::start(vec![
        token_reply("ya29.user-token", 3599),
        Reply::stream(ANTHROPIC_TOOLS, 13),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("application_default_credentials.json");
    std::fs::write(
        &path,
        json!({
            "type": "authorized_user",
            "client_id": "764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.googleusercontent.com",
            "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty",
            "refresh_token": "1//0g-test-refresh-token",
            "quota_project_id": "acme-quota",
            "token_uri": format!("{}/token", server.url),
        })
        .to_string(),
    )
    .unwrap();
    let credentials = ApplicationDefaultCredentials::from_file(&path).unwrap();
    let model = VertexAnthropic::new("claude-sonnet-4-5@20250929")
        .base_url(&server.url)
        .project("acme")
        .location("us-east5")
        .max_retries(0)
        .token_provider(Arc::new(credentials));
    let events = run(&model, &StreamOptions::default()).await;
    let (message, reason) = last(&events);
    assert_eq!(reason, Some(StopReason::ToolUse), "{message:?}");
    assert_eq!(
        (message.api.as_str(), message.provider.as_str()),
        ("anthropic-messages", "google-vertex-anthropic")
    );
    let seen = server.seen();
    let pairs = form(&seen[0]);
    assert_eq!(field(&pairs, "grant_type"), "refresh_token");
    assert_eq!(field(&pairs, "refresh_token"), "1//0g-test-refresh-token");
    assert_eq!(field(&pairs, "client_secret"), "d-FL95Q19q7MQmFpd7hHD0Ty");

    let request = &seen[1];
    assert_eq!(
        request.target,
        "/v1/projects/acme/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    );
    assert_eq!(
        request.header("authorization"),
        Some("Bearer ya29.user-token")
    );
    assert!(request.header("x-api-key").is_none());
    assert_eq!(request.body["anthropic_version"], "vertex-2023-10-16");
    assert!(
        request.body.get("model").is_none(),
        "the model is in the URL"
    );
    assert_eq!(request.body["stream"], true);
    assert_eq!(request.body["tools"][0]["name"], "get_weather");
}

#[tokio::test]
async fn sign_in_failures_say_what_to_set_and_never_show_the_secret() {
    // The token endpoint refuses a revoked refresh token.
    let server = Server::start(vec![Reply::status(
        400,
        r#"{"error": "invalid_grant", "error_description": "Token has been expired or revoked."}"#,
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("adc.json");
    std::fs::write(
        &path,
        json!({"type": "authorized_user", "client_id": "id", "client_secret": "secret-of-client",
               "refresh_token": "1//revoked-refresh-token",
               "token_uri": format!("{}/token", server.url)})
        .to_string(),
    )
    .unwrap();
    let model = VertexGemini::new("gemini-2.5-flash")
        .base_url(&server.url)
        .project("acme")
        .max_retries(0)
        .token_provider(Arc::new(
            ApplicationDefaultCredentials::from_file(&path).unwrap(),
        ));
    let text = error_text(&run(&model, &StreamOptions::default()).await);
    assert!(
        text.contains("400 Bad Request: invalid_grant: Token has been expired or revoked."),
        "{text}"
    );
    assert!(
        text.contains("gcloud auth application-default login"),
        "{text}"
    );
    assert!(!text.contains("revoked-refresh-token") && !text.contains("secret-of-client"));

    // Vertex refuses the token and echoes it: redacted, with advice.
    let server = Server::start(vec![Reply::status(
        401,
        r#"{"error": {"code": 401, "message": "Request had invalid authentication credentials: ya29.expired-token-value", "status": "UNAUTHENTICATED"}}"#,
    )])
    .await;
    let model = VertexGemini::new("gemini-2.5-flash")
        .base_url(&server.url)
        .project("acme")
        .max_retries(0)
        .access_token("ya29.expired-token-value");
    let text = error_text(&run(&model, &StreamOptions::default()).await);
    assert!(!text.contains("ya29.expired-token-value"), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
    assert!(text.contains("Vertex AI User role"), "{text}");

    // A model or location that is wrong: what to check.
    let server = Server::start(vec![Reply::status(
        404,
        r#"{"error": {"code": 404, "message": "Publisher Model `projects/acme/locations/mars/publishers/anthropic/models/claude-x` not found.", "status": "NOT_FOUND"}}"#,
    )])
    .await;
    let model = VertexAnthropic::new("claude-x")
        .base_url(&server.url)
        .project("acme")
        .location("mars")
        .max_retries(0)
        .access_token("ya29.valid-token");
    let text = error_text(&run(&model, &StreamOptions::default()).await);
    assert!(text.starts_with("404 Not Found: Publisher Model"), "{text}");
    assert!(
        text.contains("check the model id \"claude-x\", the project and the location"),
        "{text}"
    );
    assert!(text.contains("GOOGLE_CLOUD_LOCATION"), "{text}");
}

#[tokio::test]
async fn a_gemini_api_key_is_sent_as_vertex_express_mode_takes_it() {
    let server = Server::start(vec![Reply::stream(GOOGLE_TOOLS, 64)]).await;
    let model = VertexGemini::new("gemini-2.5-flash")
        .base_url(&server.url)
        .project("acme")
        .api_key("AQ.express-key-1234")
        .max_retries(0);
    run(&model, &StreamOptions::default()).await;
    let seen = server.seen();
    assert_eq!(
        seen[0].header("x-goog-api-key"),
        Some("AQ.express-key-1234")
    );
    assert!(seen[0].header("authorization").is_none());
}

/// Claude on Vertex's bodies as Anthropic's SDK types them for Vertex (`@anthropic-ai/sdk`
/// 1.10.0's `MessageCreateParamsStreaming` without `model`, which is in the URL, and with
/// `anthropic_version`, as `@anthropic-ai/vertex-sdk` builds them), under `tsc --strict`.
#[test]
fn claude_on_vertex_bodies_are_anthropics_without_the_model() {
    let Some(deps) = sdk_types::with_sdk(&sdk_types::ANTHROPIC_MESSAGES) else {
        return;
    };
    let messages = vec![Arc::new(Message::user("Weather in Zürich?"))];
    let tools = [weather_tool()];
    let context = Context {
        system_prompt: "Be brief.",
        messages: &messages,
        tools: &tools,
    };
    let mut thinking = StreamOptions::default();
    thinking.thinking = Some(pi_runtime::ThinkingLevel::Medium);
    let bodies: Vec<String> = [StreamOptions::default(), thinking]
        .iter()
        .map(|options| {
            VertexAnthropic::new("claude-sonnet-4-5@20250929")
                .strict(true)
                .request_body(context, options)
                .to_string()
        })
        .collect();
    let import = format!(
        "import type {{ {} }} from \"{}\";",
        sdk_types::ANTHROPIC_MESSAGES.name,
        sdk_types::ANTHROPIC_MESSAGES.module
    );
    let vertex_type = "Omit<MessageCreateParamsStreaming, \"model\"> & { anthropic_version: \"vertex-2023-10-16\" }";
    if let Err(report) =
        sdk_types::type_check_literals(&deps, "vertex-claude", &import, vertex_type, &bodies)
    {
        panic!("Anthropic's SDK refuses a body:\n{report}");
    }
    // A body with the model (Anthropic's own) is not Vertex's.
    let with_model = anthropic_body_with_model(context);
    assert!(
        sdk_types::type_check_literals(
            &deps,
            "vertex-claude-wrong",
            &import,
            "Omit<MessageCreateParamsStreaming, \"model\"> & { anthropic_version: \"vertex-2023-10-16\"; model?: never }",
            &[with_model],
        )
        .is_err()
    );
}

/// Anthropic's own body (with `model`), for the negative check.
fn anthropic_body_with_model(context: Context<'_>) -> String {
    let mut body = pi_runtime::providers::AnthropicMessages::new("claude-sonnet-4-5")
        .request_body(context, &StreamOptions::default());
    body["anthropic_version"] = json!("vertex-2023-10-16");
    body.to_string()
}

/// The Vertex AI SDK test data (FirebaseExtended/vertexai-sdk-test-data, origin in the
/// recordings' README): every stream through the Vertex Gemini decoder, whole, one byte at a
/// time, and cut in two (at every byte of the first and last KiB, every 11th between) decodes
/// alike and ends once.
#[test]
fn vertex_recordings_decode_alike_split_at_every_byte() {
    if !recorded::present() {
        return;
    }
    let root = recorded::root().join("providers/vertexai-sdk-test-data/google");
    let mut names: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|err| panic!("{}: {err}", root.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{} recordings", names.len());
    let decode = |pieces: &[&[u8]]| {
        let mut decoder = VertexGemini::new("recorded").decoder();
        let mut events = Vec::new();
        for piece in pieces {
            events.extend(decoder.push(piece));
        }
        events.extend(decoder.finish());
        events
            .into_iter()
            .map(recorded::normalize)
            .collect::<Vec<_>>()
    };
    for path in names {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let body = std::fs::read(&path).unwrap();
        let whole = decode(&[&body]);
        recorded::check_event_grammar(&name, &whole);
        let message = recorded::final_message(&whole);
        assert_eq!(message.api, "google-vertex", "{name}");
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode(&bytes), whole, "{name}: one byte at a time");
        // Every byte near the ends (where the first and last events are), every 11th between:
        // the debug build decodes each cut whole, so all of them would take half a minute.
        let cuts =
            (0..=body.len()).filter(|&cut| cut < 1024 || body.len() - cut < 1024 || cut % 11 == 0);
        for cut in cuts {
            let (a, b) = body.split_at(cut);
            assert_eq!(decode(&[a, b]), whole, "{name}: cut at byte {cut}");
        }
    }
}
