// Without `#[tool]`, rustc itself rejects doc comments on parameters: `#[tool]` is what
// turns them into schema descriptions.
pub async fn get_weather(
    /// City name
    city: String,
) -> String {
    city
}

fn main() {}
