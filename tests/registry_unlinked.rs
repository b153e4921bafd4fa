//! The linking caveat, tested: this binary depends on `pi-tests-weather-tools` (it is a
//! dev-dependency of this package) but never names it, so the linker drops it and its tools
//! are not discovered. `registry.rs` shows the fix: `use pi_tests_weather_tools as _;`.
//! `discover_nonempty()` turns the silent empty registry into an error that says so.

use pi_tool::{RegistryError, ToolCall, ToolRegistry};

#[test]
fn a_crate_never_named_contributes_no_tools() {
    let tools = ToolRegistry::discover().expect("unique names");
    assert_eq!(tools.names().collect::<Vec<_>>(), Vec::<&str>::new());
}

#[test]
fn discover_nonempty_says_how_to_link_the_crate() {
    let err = ToolRegistry::discover_nonempty().expect_err("no tool is linked");
    assert_eq!(err, RegistryError::NoToolsLinked);
    let message = err.to_string();
    assert!(message.contains("no `#[tool]` is linked"), "{message}");
    assert!(message.contains("add `use my_tools as _;`"), "{message}");
    assert!(message.contains("`register`"), "{message}");
}

#[tokio::test]
async fn calling_a_tool_of_the_unlinked_crate_names_no_known_tool() {
    // What the model sees when the registry came up empty.
    let tools = ToolRegistry::discover().expect("unique names");
    let result = tools
        .run(&ToolCall::new(
            "c1",
            "wind",
            pi_tool::serde_json::json!({"city": "Oslo"}),
        ))
        .await;
    assert!(result.is_error);
    assert_eq!(result.text_content(), "Tool wind not found");
}
