//! The agent loop's OpenTelemetry traces: one `invoke_agent` span per run, a `chat {model}`
//! span per model request and an `execute_tool {name}` span per tool call (GenAI semantic
//! conventions), exported through `tracing-opentelemetry`.
//!
//! With `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, the spans go
//! to that OpenTelemetry collector over OTLP/HTTP (protobuf); without it they are printed to
//! stdout. No other network: `ScriptedModel` plays the model.
//!
//! ```text
//! cargo run -p pi-examples --example otlp_traces                  # spans on stdout
//! docker run --rm -p 4318:4318 -p 16686:16686 jaegertracing/all-in-one   # a collector + UI
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 cargo run -p pi-examples --example otlp_traces
//! ```
//!
//! Set `PI_TRACE_CONTENT=1` to also record the tools' arguments and results (opt-in: they may
//! hold sensitive data).

use std::sync::Arc;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use pi_runtime::{
    AgentContext, AgentLoopConfig, AssistantContent, AssistantMessage, Message, ScriptedModel,
    StopReason, agent_loop,
};
use pi_tool::{CancellationToken, tool};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

/// Get the current weather for a city.
#[tool]
async fn get_weather(
    /// City name, e.g. "Paris"
    city: String,
) -> String {
    // A span of the tool's own: it nests under the call's `execute_tool` span.
    let _lookup = tracing::info_span!("weather_lookup", city = %city).entered();
    format!("{city}: 18°C, light rain")
}

/// Book a table. This example has no network, so it always fails.
#[tool]
async fn book_table(
    /// Restaurant name
    restaurant: String,
) -> Result<String, std::io::Error> {
    Err(std::io::Error::other(format!(
        "cannot reach {restaurant}: this example runs offline"
    )))
}

/// Where the spans go: an OTLP collector named by the standard environment variables, or stdout.
fn tracer_provider() -> Result<SdkTracerProvider, Box<dyn std::error::Error>> {
    let resource = Resource::builder()
        .with_service_name("pi-examples-otlp-traces")
        .build();
    let builder = SdkTracerProvider::builder().with_resource(resource);
    let endpoint = [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .into_iter()
    .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()));
    match endpoint {
        Some(endpoint) => {
            println!("exporting spans over OTLP/HTTP to {endpoint}");
            // The exporter reads the endpoint (and headers, timeout) from the same variables.
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .build()?;
            Ok(builder.with_batch_exporter(exporter).build())
        }
        None => {
            println!(
                "OTEL_EXPORTER_OTLP_ENDPOINT is not set: printing the spans to stdout.\n\
                 To send them to a collector instead, run one (for example \
                 `docker run --rm -p 4318:4318 -p 16686:16686 jaegertracing/all-in-one`) and set \
                 OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318\n"
            );
            let exporter = opentelemetry_stdout::SpanExporter::default();
            Ok(builder.with_simple_exporter(exporter).build())
        }
    }
}

fn script() -> Vec<AssistantMessage> {
    vec![
        AssistantMessage::new(
            vec![
                AssistantContent::tool_call("c1", "get_weather", json!({"city": "Paris"})),
                AssistantContent::tool_call("c2", "book_table", json!({"restaurant": "Chez Lou"})),
            ],
            StopReason::ToolUse,
        ),
        AssistantMessage::new(
            vec![AssistantContent::text(
                "It is 18°C with light rain in Paris; I could not book the table.",
            )],
            StopReason::Stop,
        ),
    ]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let provider = tracer_provider()?;
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("pi-runtime")));
    tracing::subscriber::set_global_default(subscriber)?;

    let content = std::env::var("PI_TRACE_CONTENT").is_ok_and(|value| value == "1");
    let model = Arc::new(ScriptedModel::new(script()).with_identity(
        "openai-completions",
        "openai",
        "gpt-4o",
    ));
    let context = AgentContext::new("You plan evenings out.")
        .with_tool(GetWeatherTool)
        .with_tool(BookTableTool);
    let config = AgentLoopConfig::new().trace_tool_content(content);
    let messages = agent_loop(
        vec![Message::user("Weather in Paris, and book Chez Lou?")],
        context,
        config,
        model,
        CancellationToken::new(),
    )
    .messages()
    .await;
    println!("the run added {} messages", messages.len());

    // Exports what is still buffered (the batch exporter) before the process exits.
    provider.shutdown()?;
    Ok(())
}
