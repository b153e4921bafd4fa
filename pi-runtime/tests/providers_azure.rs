//! Azure OpenAI against a local server speaking its wire: the `v1` and dated `api-version` URLs,
//! deployments, `api-key` and Entra ID bearer tokens, the content filter (in the stream and as
//! an HTTP error), sign-in and endpoint failures; and the decoders on Azure's real recorded
//! streams.
#![cfg(feature = "http")]

mod stream_end;
use stream_end::last;
mod recorded;
mod wire_server;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use pi_runtime::providers::{
    AzureOpenAiCompletions, AzureOpenAiResponses, EntraTokenProvider, OpenAiCompletions,
    OpenAiResponses, TokenFuture,
};
use pi_runtime::{AssistantEvent, Context, Message, Model, StopReason, StreamOptions};
use serde_json::json;
use wire_server::{Reply, Server};

const COMPLETIONS_TEXT: &str = include_str!("fixtures/providers/openai_completions_text.sse");
const RESPONSES_TOOLS: &str = include_str!("fixtures/providers/openai_responses_tools.sse");

/// An Azure Chat Completions stream whose answer the filter stops: Azure's shapes (the prompt's
/// filter results first, each choice's results, `finish_reason: "content_filter"`).
const FILTERED_STREAM: &str = concat!(
    "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\",\"prompt_filter_results\":",
    "[{\"prompt_index\":0,\"content_filter_results\":{\"hate\":{\"filtered\":false,\"severity\":\"safe\"},",
    "\"violence\":{\"filtered\":false,\"severity\":\"safe\"}}}]}\n\n",
    "data: {\"choices\":[{\"content_filter_results\":{\"hate\":{\"filtered\":false,\"severity\":\"safe\"},",
    "\"violence\":{\"filtered\":false,\"severity\":\"safe\"}},\"delta\":{\"content\":\"The duel\",\"role\":\"assistant\"},",
    "\"finish_reason\":null,\"index\":0}],\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\"}\n\n",
    "data: {\"choices\":[{\"content_filter_results\":{\"hate\":{\"filtered\":false,\"severity\":\"safe\"},",
    "\"violence\":{\"filtered\":true,\"severity\":\"medium\"}},\"delta\":{},",
    "\"finish_reason\":\"content_filter\",\"index\":0}],\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\"}\n\n",
    "data: [DONE]\n\n",
);

/// Azure's 400 for a prompt its filter refused.
const FILTERED_PROMPT: &str = r#"{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"high"}}}}}"#;

/// Azure's 404 for a deployment that does not exist.
const NO_DEPLOYMENT: &str = r#"{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}"#;

/// A token provider that counts its calls.
struct CountingTokens {
    calls: AtomicUsize,
    token: Result<String, String>,
}

impl EntraTokenProvider for CountingTokens {
    fn token(&self) -> TokenFuture<'_> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let token = self.token.clone();
        Box::pin(async move { token })
    }
}

async fn run(model: &dyn Model) -> Vec<AssistantEvent> {
    let messages = vec![Arc::new(Message::user("What is the weather in Zürich?"))];
    let context = Context {
        system_prompt: "You are terse.",
        messages: &messages,
        tools: &[],
    };
    let options = StreamOptions::default();
    let stream = model.stream(context, &options);
    tokio::time::timeout(Duration::from_secs(20), stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends")
}

fn error_of(events: &[AssistantEvent]) -> String {
    let (message, reason) = last(events);
    assert_eq!(reason, None, "{message:?}");
    message.error_message.clone().unwrap()
}

#[tokio::test]
async fn responses_go_to_the_v1_api_with_an_api_key_and_the_deployment() {
    let server = Server::start(vec![Reply::stream(RESPONSES_TOOLS, 9)]).await;
    let model = AzureOpenAiResponses::new("gpt-5")
        .base_url(format!("{}/openai/v1", server.url))
        .deployment("prod-gpt5")
        .api_key("azure-test-key");
    let events = run(&model).await;
    let (message, reason) = last(&events);
    assert_eq!(
        reason,
        Some(StopReason::ToolUse),
        "{:?}",
        message.error_message
    );
    assert_eq!(
        (
            message.api.as_str(),
            message.provider.as_str(),
            message.model.as_str()
        ),
        ("azure-openai-responses", "azure-openai-responses", "gpt-5")
    );
    let seen = server.seen();
    assert_eq!(seen[0].target, "/openai/v1/responses");
    assert_eq!(seen[0].header("api-key"), Some("azure-test-key"));
    assert_eq!(seen[0].header("authorization"), None);
    assert_eq!(seen[0].body["model"], "prod-gpt5");
    assert_eq!(seen[0].body["store"], false);
}

#[tokio::test]
async fn completions_go_to_the_dated_deployment_url_with_an_entra_token() {
    let server = Server::start(vec![
        Reply::stream(COMPLETIONS_TEXT, 5),
        Reply::stream(COMPLETIONS_TEXT, 64),
    ])
    .await;
    let tokens = Arc::new(CountingTokens {
        calls: AtomicUsize::new(0),
        token: Ok("entra-token-abc".into()),
    });
    let model = AzureOpenAiCompletions::new("gpt-4o")
        .base_url(&server.url)
        .api_version("2024-10-21")
        .deployment("prod-4o")
        .token_provider(tokens.clone());
    for _ in 0..2 {
        let events = run(&model).await;
        let (message, reason) = last(&events);
        assert_eq!(
            reason,
            Some(StopReason::Stop),
            "{:?}",
            message.error_message
        );
        assert_eq!(message.text(), "Hello, wörld!");
        assert_eq!(message.api, "azure-openai-completions");
    }
    assert_eq!(
        tokens.calls.load(Ordering::SeqCst),
        2,
        "a token per request"
    );
    let seen = server.seen();
    assert_eq!(
        seen[0].target,
        "/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(
        seen[0].header("authorization"),
        Some("Bearer entra-token-abc")
    );
    assert_eq!(seen[0].header("api-key"), None);
    assert_eq!(seen[0].body["model"], "prod-4o");
    // OpenAI's flags: Azure serves OpenAI's models.
    assert_eq!(
        seen[0].body["stream_options"],
        json!({"include_usage": true})
    );
}

#[tokio::test]
async fn the_content_filter_ending_a_stream_names_what_it_flagged() {
    let server = Server::start(vec![Reply::stream(FILTERED_STREAM, 11)]).await;
    let model = AzureOpenAiCompletions::new("gpt-4o")
        .base_url(&server.url)
        .api_key("azure-test-key");
    let events = run(&model).await;
    assert_eq!(
        error_of(&events),
        "Azure's content filter stopped the response: violence (medium)"
    );
    assert_eq!(
        last(&events).0.text(),
        "The duel",
        "what came before is kept"
    );
    // OpenAI's decoder alone knows only the finish reason.
    let mut plain = OpenAiCompletions::new("gpt-4o").decoder();
    let mut events = plain.push(FILTERED_STREAM.as_bytes());
    events.extend(plain.finish());
    assert_eq!(error_of(&events), "Provider finish_reason: content_filter");
}

#[tokio::test]
async fn azure_errors_say_what_to_check() {
    let secret = "azure-secret-key-0123456789";
    let echo = format!(
        r#"{{"error":{{"code":"401","message":"Access denied due to invalid subscription key {secret}. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}}}"#
    );
    let server = Server::start(vec![
        Reply::status(400, FILTERED_PROMPT),
        Reply::status(404, NO_DEPLOYMENT),
        Reply::status(401, &echo),
    ])
    .await;
    let model = AzureOpenAiCompletions::new("gpt-4o")
        .base_url(&server.url)
        .deployment("gpt4o-prod")
        .api_key(secret)
        .max_retries(0);
    let filtered = error_of(&run(&model).await);
    assert!(
        filtered.starts_with("400 Bad Request: The response was filtered due to the prompt triggering Azure OpenAI's content management policy."),
        "{filtered}"
    );
    let missing = error_of(&run(&model).await);
    assert!(
        missing.starts_with("404 Not Found: The API deployment for this resource does not exist."),
        "{missing}"
    );
    assert!(
        missing.contains(&format!(
            "(check the deployment \"gpt4o-prod\" (.deployment(..) or AZURE_OPENAI_DEPLOYMENT_NAME_MAP) and the endpoint {}/chat/completions",
            server.url
        )),
        "{missing}"
    );
    let refused = error_of(&run(&model).await);
    assert!(!refused.contains(secret), "{refused}");
    assert!(
        refused.contains("invalid subscription key <redacted>."),
        "{refused}"
    );
    assert!(
        refused.ends_with(
            "(sign-in refused: check AZURE_OPENAI_API_KEY (or the key passed with .api_key(..)))"
        ),
        "{refused}"
    );
    assert!(!format!("{model:?}").contains(secret));
}

#[tokio::test]
async fn sign_in_failures_say_what_to_set() {
    let model = AzureOpenAiResponses::new("gpt-5")
        .resource("acme")
        .api_key_env("PI_TEST_NO_SUCH_AZURE_KEY");
    assert_eq!(
        error_of(&run(&model).await),
        "No API key for provider \"azure-openai-responses\": set PI_TEST_NO_SUCH_AZURE_KEY (or pass one with .api_key(..)), or sign in with Microsoft Entra ID through .token_provider(..)"
    );
    let failing = Arc::new(CountingTokens {
        calls: AtomicUsize::new(0),
        token: Err("AADSTS700024: client assertion is not within its valid time range".into()),
    });
    let model = AzureOpenAiResponses::new("gpt-5")
        .resource("acme")
        .token_provider(failing);
    assert_eq!(
        error_of(&run(&model).await),
        "Could not get a Microsoft Entra ID token: AADSTS700024: client assertion is not within its valid time range"
    );
    // A refused token: the advice is about the token, and the token is not shown.
    let token = "eyJ0eXAiOiJKV1QiLCJhbGciOi.secret-part";
    let server = Server::start(vec![Reply::status(
        401,
        &format!(r#"{{"error":{{"code":"PermissionDenied","message":"Token {token} lacks the permission"}}}}"#),
    )])
    .await;
    let model = AzureOpenAiResponses::new("gpt-5")
        .base_url(&server.url)
        .bearer_token(token);
    let refused = error_of(&run(&model).await);
    assert!(!refused.contains(token), "{refused}");
    assert!(
        refused.contains("audience must be https://cognitiveservices.azure.com"),
        "{refused}"
    );
    assert!(!format!("{model:?}").contains(token));
}

/// Azure's own streams as the Vercel AI SDK recorded them (`packages/azure` and
/// `packages/openai` fixtures at vercel/ai `ed857f50f112`, origins in the recordings'
/// `SOURCES.md`): the Azure decoders read them as OpenAI's do, split at every size up to 64.
#[test]
fn recorded_azure_streams_decode_as_openais() {
    if !recorded::present() {
        return;
    }
    let completions = [
        "providers-more/openai-completions/vercel_azure_model_router.sse",
        "providers-more/openai-completions/vercel_azure_deepseek_reasoning.sse",
    ];
    let responses = [
        "providers-more/openai-responses/vercel_azure_text.sse",
        "providers-more/openai-responses/vercel_azure_tool_call.sse",
        "providers-more/openai-responses/vercel_azure_reasoning_call_1.sse",
    ];
    let decode =
        |mut decoder: pi_runtime::providers::ResponseDecoder, body: &[u8], piece: usize| {
            let mut events = Vec::new();
            for chunk in body.chunks(piece) {
                events.extend(decoder.push(chunk));
            }
            events.extend(decoder.finish());
            events
        };
    let azure_decoder = |completions: bool| {
        if completions {
            AzureOpenAiCompletions::new("recorded").decoder()
        } else {
            AzureOpenAiResponses::new("recorded").decoder()
        }
    };
    for (paths, completions) in [(&completions[..], true), (&responses[..], false)] {
        for path in paths {
            let recording = recorded::Recording::open(path);
            let openai = if completions {
                OpenAiCompletions::new("recorded").decoder()
            } else {
                OpenAiResponses::new("recorded").decoder()
            };
            let expected = decode(openai, &recording.body, recording.body.len());
            let (expected, reason) = last(&expected);
            assert!(reason.is_some(), "{path}: {:?}", expected.error_message);
            assert!(!expected.content.is_empty(), "{path}");
            let whole = decode(
                azure_decoder(completions),
                &recording.body,
                recording.body.len(),
            );
            recorded::check_event_grammar(path, &whole);
            for piece in 1..=64 {
                let events = decode(azure_decoder(completions), &recording.body, piece);
                let (message, got) = last(&events);
                assert_eq!(
                    (&message.content, got),
                    (&expected.content, reason),
                    "{path} in {piece}"
                );
                assert_eq!(message.usage, expected.usage, "{path}");
            }
        }
    }
}
