//! A model request that stalls ends in the provider's error event with a message naming the
//! timeout, never a hang: a server on 127.0.0.1 that accepts and says nothing (first byte),
//! that sends headers and then nothing (still the first byte of the body), or that stops in
//! the middle of a stream (idle between chunks). Every HTTP provider shares this code; each
//! is tried.
#![cfg(feature = "http")]

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use pi_runtime::providers::{
    AnthropicMessages, GoogleGenerativeAi, OpenAiCompletions, OpenAiResponses,
};
use pi_runtime::{AssistantEvent, Context, Message, Model, StopReason, StreamOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How far the server gets before it goes silent.
#[derive(Clone, Copy, Debug)]
enum Stall {
    /// Reads the request, sends nothing.
    BeforeHeaders,
    /// Sends the response headers, then nothing.
    AfterHeaders,
    /// Sends headers and one SSE comment chunk, then nothing.
    MidStream,
}

/// Serves every connection with `stall`; the silent sockets stay open for the test's life.
async fn stalling_server(stall: Stall) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                // Enough of the request to know it arrived (its head).
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                match stall {
                    Stall::BeforeHeaders => {}
                    Stall::AfterHeaders => {
                        let _ = socket.write_all(head.as_bytes()).await;
                    }
                    Stall::MidStream => {
                        let comment = b": keep-alive\n\n";
                        let chunk = [
                            format!("{:x}\r\n", comment.len()).as_bytes(),
                            comment,
                            b"\r\n",
                        ]
                        .concat();
                        let _ = socket.write_all(head.as_bytes()).await;
                        let _ = socket.write_all(&chunk).await;
                    }
                }
                let _ = socket.flush().await;
                // Silent, bounded so a broken test ends.
                tokio::time::sleep(Duration::from_secs(60)).await;
            });
        }
    });
    url
}

/// The four providers pointed at `url`, with short timeouts and no retries.
fn providers(url: &str, first_byte: Duration, idle: Duration) -> Vec<Arc<dyn Model>> {
    vec![
        Arc::new(
            OpenAiCompletions::new("m")
                .base_url(url)
                .api_key("k")
                .first_byte_timeout(first_byte)
                .idle_timeout(idle)
                .max_retries(0),
        ),
        Arc::new(
            OpenAiResponses::new("m")
                .base_url(url)
                .api_key("k")
                .first_byte_timeout(first_byte)
                .idle_timeout(idle)
                .max_retries(0),
        ),
        Arc::new(
            AnthropicMessages::new("m")
                .base_url(url)
                .api_key("k")
                .first_byte_timeout(first_byte)
                .idle_timeout(idle)
                .max_retries(0),
        ),
        Arc::new(
            GoogleGenerativeAi::new("m")
                .base_url(url)
                .api_key("k")
                .first_byte_timeout(first_byte)
                .idle_timeout(idle)
                .max_retries(0),
        ),
    ]
}

/// Streams one request to the end; returns the final event's error message.
async fn error_message(model: &dyn Model) -> String {
    let messages = vec![Arc::new(Message::user("hi"))];
    let context = Context {
        system_prompt: "",
        messages: &messages,
        tools: &[],
    };
    let options = StreamOptions::default();
    let mut stream = model.stream(context, &options);
    let mut last = None;
    while let Some(event) = stream.next().await {
        last = Some(event);
    }
    match last {
        Some(AssistantEvent::Error { reason, error }) => {
            assert_eq!(reason, StopReason::Error);
            error.error_message.unwrap_or_default()
        }
        other => panic!("{}: expected an error event, got {other:?}", model.api()),
    }
}

/// Every provider, against a server stalling at `stall`, ends in an error event saying `expected`.
async fn every_provider_ends_with(
    stall: Stall,
    first_byte: Duration,
    idle: Duration,
    expected: &str,
) {
    let url = stalling_server(stall).await;
    for model in providers(&url, first_byte, idle) {
        assert_eq!(
            error_message(model.as_ref()).await,
            expected,
            "{}",
            model.api()
        );
    }
}

// In each test one timeout is long, so only the other can end the request.

#[tokio::test]
async fn no_response_at_all_hits_the_first_byte_timeout() {
    every_provider_ends_with(
        Stall::BeforeHeaders,
        Duration::from_millis(300),
        Duration::from_secs(60),
        "No response from the provider within 300ms (first_byte_timeout)",
    )
    .await;
}

#[tokio::test]
async fn headers_without_a_body_hit_the_first_byte_timeout() {
    every_provider_ends_with(
        Stall::AfterHeaders,
        Duration::from_millis(300),
        Duration::from_secs(60),
        "No response from the provider within 300ms (first_byte_timeout)",
    )
    .await;
}

#[tokio::test]
async fn a_stream_that_stops_hits_the_idle_timeout() {
    every_provider_ends_with(
        Stall::MidStream,
        Duration::from_secs(60),
        Duration::from_millis(300),
        "No data from the provider for 300ms (idle_timeout)",
    )
    .await;
}
