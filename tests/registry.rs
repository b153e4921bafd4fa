//! Discovery across crates: a tools-only crate named with `use .. as _;` contributes its tools.

use pi_tool::{RegistryError, ToolCall, ToolRegistry, tool};
// The caveat, tested: without this line the linker drops the crate and its tools
// (see registry_unlinked.rs).
use pi_tests_weather_tools as _;

/// Get the humidity for a city.
#[tool]
async fn humidity(
    /// City name
    city: String,
) -> String {
    format!("40% in {city}")
}

#[test]
fn discover_finds_tools_of_every_linked_crate_sorted_by_name() {
    let tools = ToolRegistry::discover().expect("unique names");
    assert_eq!(
        tools.names().collect::<Vec<_>>(),
        ["humidity", "temperature", "wind"]
    );
    assert_eq!(tools.len(), 3);
    assert_eq!(
        tools.get("temperature").expect("linked").label(),
        "Temperature"
    );
    let specs: Vec<&str> = tools
        .specs()
        .map(|spec| spec.description.as_str())
        .collect();
    assert_eq!(
        specs,
        [
            "Get the humidity for a city.",
            "Get the current temperature for a city.",
            "Get the wind speed for a city."
        ]
    );
}

#[test]
fn discover_nonempty_finds_the_same_tools_when_the_crate_is_linked() {
    let tools = ToolRegistry::discover_nonempty().expect("tools are linked");
    assert_eq!(
        tools.names().collect::<Vec<_>>(),
        ["humidity", "temperature", "wind"]
    );
}

#[test]
fn subset_keeps_the_named_tools_and_suggests_on_typos() {
    let tools = ToolRegistry::discover().expect("unique names");
    let weather = tools.subset(["wind", "temperature"]).expect("known names");
    assert_eq!(weather.names().collect::<Vec<_>>(), ["temperature", "wind"]);
    assert_eq!(
        tools.subset(["temprature"]).expect_err("unknown"),
        RegistryError::UnknownTool {
            name: "temprature".into(),
            suggestion: " (did you mean \"temperature\"?)".into()
        }
    );
    assert_eq!(
        tools.subset(["rain"]).expect_err("unknown").to_string(),
        "no tool named `rain` is registered"
    );
}

#[test]
fn register_replaces_a_tool_of_the_same_name() {
    let mut tools = ToolRegistry::new();
    assert!(tools.register(HumidityTool).is_none());
    assert!(tools.register(HumidityTool).is_some());
    assert_eq!(tools.len(), 1);
    assert!(tools.remove("humidity").is_some() && tools.is_empty());
}

#[tokio::test]
async fn a_discovered_tool_from_another_crate_runs() {
    let tools = ToolRegistry::discover().expect("unique names");
    let result = tools
        .run(&ToolCall::new(
            "c1",
            "wind",
            pi_tool::serde_json::json!({"city": "Oslo"}),
        ))
        .await;
    assert_eq!(result.text_content(), "12 km/h in Oslo");
}
