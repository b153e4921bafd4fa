//! `#[tool(example = "..")]` (given once per example) answers `input_examples()` with the
//! parsed objects and `eager_input_streaming` answers `true`; an example that does not match
//! the tool's own schema makes `ToolRegistry::discover` fail, naming the tool.

use pi_tool::{AgentTool, ToolRegistry, tool};

/// Weather in a city.
#[tool(
    example = r#"{"city": "Paris"}"#,
    example = r#"{"city": "Oslo", "days": 3}"#,
    eager_input_streaming
)]
async fn weather(city: String, days: Option<u32>) -> String {
    format!("{city} {days:?}")
}

/// Stock of a product.
#[tool(example = r#"{"sku": 12}"#)]
async fn stock(sku: String) -> String {
    sku
}

/// Say hello.
#[tool]
async fn hello() -> String {
    "hello".to_owned()
}

fn main() {
    let examples = WeatherTool.input_examples();
    assert_eq!(examples.len(), 2);
    assert_eq!(examples[1]["city"], "Oslo");
    assert_eq!(examples[1]["days"], 3);
    assert!(WeatherTool.eager_input_streaming());
    assert!(HelloTool.input_examples().is_empty());
    assert!(!HelloTool.eager_input_streaming());
    // `12` for a string would pass only after coercion: refused at registration.
    let err = ToolRegistry::discover().unwrap_err().to_string();
    assert!(err.contains("stock") && err.contains("example 1"), "{err}");
}
