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
use std::sync::atomic::{AtomicBool, Ordering};

use pi_runtime::providers::from_env;
use pi_runtime::{Agent, AgentEvent, AssistantEvent};
use pi_tool::{ToolRegistry, tool};

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

    let tools = ToolRegistry::new()
        .with(GetWeatherTool)
        .with(GetForecastTool);
    let agent = Agent::new(Arc::from(model))
        .with_system_prompt("You answer weather questions with the tools. Be brief.")
        .with_tools(tools);
    let mid_line = Arc::new(AtomicBool::new(false));
    agent.subscribe(move |event, _signal| {
        let mid_line = mid_line.clone();
        async move { show(&event, &mid_line) }
    });
    if let Err(err) = agent.prompt(question).await {
        println!("\n[error] {err}");
        return;
    }
    match agent.error() {
        Some(error) => println!("\n[error] {error}"),
        None => println!(),
    }
}

/// Prints text as it streams, and each tool call with its result.
fn show(event: &AgentEvent, mid_line: &AtomicBool) {
    let end_line = || {
        if mid_line.swap(false, Ordering::Relaxed) {
            println!();
        }
    };
    match event {
        AgentEvent::MessageUpdate { event } => {
            if let AssistantEvent::TextDelta { delta, .. } = event.as_ref() {
                print!("{delta}");
                let _ = std::io::stdout().flush();
                mid_line.store(!delta.ends_with('\n'), Ordering::Relaxed);
            }
        }
        AgentEvent::ToolExecutionStart { call } => {
            end_line();
            println!("[call] {}({})", call.name(), call.arguments());
        }
        AgentEvent::ToolExecutionEnd { result, .. } => {
            if let Some(result) = result.as_tool_result() {
                println!("[result] {}", result.text().replace('\n', " | "));
            }
        }
        AgentEvent::MessageEnd { message } => {
            if let Some(assistant) = message.as_assistant() {
                end_line();
                let usage = &assistant.usage;
                if assistant.tool_calls().next().is_none() && assistant.error_message.is_none() {
                    println!(
                        "(tokens: {} in, {} out)",
                        usage.input + usage.cache_read,
                        usage.output
                    );
                }
            }
        }
        _ => {}
    }
}
