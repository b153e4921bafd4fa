//! The linking caveat, tested: this binary depends on `pi-tests-weather-tools` (it is a
//! dev-dependency of this package) but never names it, so the linker drops it and its tools
//! are not discovered. `registry.rs` shows the fix: `use pi_tests_weather_tools as _;`.

use pi_tool::ToolRegistry;

#[test]
fn a_crate_never_named_contributes_no_tools() {
    let tools = ToolRegistry::discover().expect("unique names");
    assert_eq!(tools.names().collect::<Vec<_>>(), Vec::<&str>::new());
}
