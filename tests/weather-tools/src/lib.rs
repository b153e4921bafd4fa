//! A crate that only defines tools, as a user's tool library would. A binary that never names
//! this crate does not link it, so its tools are not discovered: write `use pi_tests_weather_tools as _;`.

use pi_tool::tool;

/// Get the current temperature for a city.
#[tool(label = "Temperature")]
pub async fn temperature(
    /// City name
    city: String,
) -> String {
    format!("21°C in {city}")
}

/// Get the wind speed for a city.
#[tool]
pub async fn wind(
    /// City name
    city: String,
) -> String {
    format!("12 km/h in {city}")
}
