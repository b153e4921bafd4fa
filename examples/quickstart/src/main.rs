//! Quickstart: define tools with `#[tool]`, discover them, look at what a model sees, and run
//! a few calls the way an agent loop would, including bad ones. No network, no API key.
//!
//! Run: `cargo run -p pi-quickstart` (builds `pi-tool` and what it uses; nothing else)

use std::collections::HashMap;

use pi_tool::{State, ToolCall, ToolContext, ToolRegistry, tool};
use serde_json::json;

/// A temperature unit.
#[derive(Debug, Clone, Copy, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Stand-in for a weather service: today's temperature per city, in Celsius.
struct WeatherDb(HashMap<&'static str, f64>);

#[derive(Debug, thiserror::Error)]
enum WeatherError {
    #[error("no weather data for {0:?}; known cities: Paris, Oslo, Cairo")]
    UnknownCity(String),
}

/// Get the current weather for a city.
#[tool(label = "Weather")]
async fn get_weather(
    /// City name, e.g. "Paris"
    city: String,
    /// Temperature unit (default: celsius)
    unit: Option<Unit>,
    /// Days ahead to forecast, 1-7 (default: today)
    #[schemars(range(min = 1, max = 7))]
    days: Option<u8>,
    db: State<WeatherDb>,
    ctx: ToolContext,
) -> Result<String, WeatherError> {
    let celsius = *db
        .0
        .get(city.as_str())
        .ok_or_else(|| WeatherError::UnknownCity(city.clone()))?;
    let (value, symbol) = match unit.unwrap_or(Unit::Celsius) {
        Unit::Celsius => (celsius, "°C"),
        Unit::Fahrenheit => (celsius * 9.0 / 5.0 + 32.0, "°F"),
    };
    let when = match days {
        Some(days) => format!("in {days} day(s)"),
        None => "today".to_owned(),
    };
    Ok(format!(
        "{city} {when}: {value:.1}{symbol} (call {})",
        ctx.tool_call_id()
    ))
}

/// Save a note for later; notes are kept in order.
#[tool(label = "Note", sequential)]
async fn save_note(
    /// The note's text
    text: String,
) -> String {
    format!("Saved note ({} characters).", text.chars().count())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let db = WeatherDb(HashMap::from([
        ("Paris", 18.5),
        ("Oslo", 4.0),
        ("Cairo", 31.0),
    ]));
    let tools = ToolRegistry::discover()?.with_state(db);

    println!(
        "== {} tools discovered; this is what a model sees:\n",
        tools.len()
    );
    for spec in tools.specs() {
        println!("{}\n", serde_json::to_string_pretty(spec)?);
    }

    let calls = [
        (
            "a valid call",
            ToolCall::new("call_1", "get_weather", json!({"city": "Paris"})),
        ),
        (
            "loosely typed arguments, normalized without loss",
            ToolCall::new(
                "call_2",
                "get_weather",
                json!({"city": "Oslo", "unit": "fahrenheit", "days": "3"}),
            ),
        ),
        (
            "arguments sent as a JSON string",
            ToolCall::new("call_3", "save_note", json!("{\"text\": \"buy milk\"}")),
        ),
        (
            "invalid arguments: the model is told what to fix",
            ToolCall::new(
                "call_4",
                "get_weather",
                json!({"unit": "kelvin", "days": 9, "cty": "Rome"}),
            ),
        ),
        (
            "the tool fails: its error becomes the result",
            ToolCall::new("call_5", "get_weather", json!({"city": "Rome"})),
        ),
        (
            "a misspelled tool",
            ToolCall::new("call_6", "get_wether", json!({"city": "Paris"})),
        ),
    ];
    for (what, call) in &calls {
        println!("== {what}\n-> {} {}", call.name, call.arguments);
        let result = tools.run(call).await;
        let tag = if result.is_error { "error" } else { "ok" };
        println!("<- [{tag}] {}\n", result.text_content());
    }
    Ok(())
}
