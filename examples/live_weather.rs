//! The weather tools against a real model.
//!
//! ```text
//! OPENAI_API_KEY=sk-...        cargo run -p pi-examples --example live_weather
//! ANTHROPIC_API_KEY=sk-ant-... cargo run -p pi-examples --example live_weather
//! GEMINI_API_KEY=...           cargo run -p pi-examples --example live_weather
//! OPENAI_BASE_URL=http://localhost:11434/v1 PI_MODEL=qwen2.5:7b \
//!                              cargo run -p pi-examples --example live_weather
//! cargo run -p pi-examples --example live_weather -- anthropic/claude-haiku-4-5 "Rain in Oslo?"
//! ```
//!
//! With nothing set it says what to set and exits successfully. The weather itself is made up
//! (no weather service is called); the model, its tool calls and the streaming are real.

use std::io::Write;
use std::sync::Arc;

use futures_util::StreamExt;
use pi_runtime::providers::from_env;
use pi_runtime::{AssistantEvent, Context, Message, StreamOptions, ToolResultMessage};
use pi_tool::{ToolCall, ToolRegistry, tool};

/// A temperature unit.
#[derive(Clone, Copy, Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

/// A made-up but stable temperature for a city, in Celsius.
fn temperature_of(city: &str) -> i32 {
    let sum: u32 = city.to_lowercase().bytes().map(u32::from).sum();
    (sum % 35) as i32 - 5
}

/// Get the current weather for a city.
#[tool(label = "Weather")]
pub async fn get_weather(
    /// City name, e.g. "Paris"
    city: String,
    /// Temperature unit (default: celsius)
    unit: Option<Unit>,
) -> String {
    let celsius = temperature_of(&city);
    match unit.unwrap_or(Unit::Celsius) {
        Unit::Celsius => format!("{city}: {celsius} °C, light wind"),
        Unit::Fahrenheit => format!("{city}: {} °F, light wind", celsius * 9 / 5 + 32),
    }
}

/// Get a daily forecast for a city.
#[tool(label = "Forecast")]
pub async fn get_forecast(
    /// City name
    city: String,
    /// Number of days, 1 to 7 (default 3)
    #[schemars(range(min = 1, max = 7))]
    days: Option<u8>,
) -> String {
    let base = temperature_of(&city);
    (0..days.unwrap_or(3))
        .map(|day| format!("day {}: {} °C", day + 1, base + i32::from(day % 3) - 1))
        .collect::<Vec<_>>()
        .join("\n")
}

const MAX_TURNS: usize = 6;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let model_override = args.next();
    let question = args.next().unwrap_or_else(|| {
        "What's the weather in Paris and Tokyo, and the 3-day forecast for Oslo?".into()
    });
    let model = match from_env(model_override.as_deref()) {
        Ok(model) => model,
        Err(missing) => {
            println!("This example talks to a real model, and none is configured.\n\n{missing}");
            return;
        }
    };
    println!(
        "Model: {} / {} ({})\n> {question}\n",
        model.provider(),
        model.id(),
        model.api()
    );

    let registry = ToolRegistry::new()
        .with(GetWeatherTool)
        .with(GetForecastTool);
    let tools: Vec<_> = registry.specs().cloned().collect();
    let mut transcript = vec![Arc::new(Message::user(question))];
    let options = StreamOptions::default();
    // A minimal loop: stream a response, run its tool calls, send the results, repeat.
    // (pi-runtime's agent loop does this with hooks, parallelism and events.)
    for _ in 0..MAX_TURNS {
        let context = Context {
            system_prompt: "You answer weather questions with the tools. Be brief.",
            messages: &transcript,
            tools: &tools,
        };
        let mut stream = model.stream(context, &options);
        let mut finished = None;
        let mut mid_line = false;
        while let Some(event) = stream.next().await {
            match event {
                AssistantEvent::TextDelta { delta, .. } => {
                    print!("{delta}");
                    let _ = std::io::stdout().flush();
                    mid_line = !delta.ends_with('\n');
                }
                AssistantEvent::ToolCallEnd { tool_call, .. } => {
                    if std::mem::take(&mut mid_line) {
                        println!();
                    }
                    println!(
                        "[call] {}({})",
                        tool_call.call.name, tool_call.call.arguments
                    );
                }
                AssistantEvent::Done { message, .. } => finished = Some(message),
                AssistantEvent::Error { error, .. } => {
                    println!("\n[error] {}", error.error_message.unwrap_or_default());
                    return;
                }
                _ => {}
            }
        }
        drop(stream);
        let Some(message) = finished else { return };
        let calls: Vec<ToolCall> = message
            .tool_calls()
            .map(|block| block.call.clone())
            .collect();
        let usage = message.usage.clone();
        transcript.push(Arc::new(Message::Assistant(message)));
        if calls.is_empty() {
            println!(
                "\n(tokens: {} in, {} out)",
                usage.input + usage.cache_read,
                usage.output
            );
            return;
        }
        for call in calls {
            let result = registry.run(&call).await;
            println!("[result] {}", result.text_content().replace('\n', " | "));
            transcript.push(Arc::new(Message::ToolResult(ToolResultMessage {
                tool_call_id: call.id,
                tool_name: call.name,
                content: result.content,
                details: result.details,
                is_error: result.is_error,
                duration_ms: None,
                timestamp: pi_runtime::now_ms(),
            })));
        }
    }
    println!("\n(stopped after {MAX_TURNS} turns)");
}
