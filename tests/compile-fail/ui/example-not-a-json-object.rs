use pi_tool::tool;

/// Weather in a city.
#[tool(example = r#"{"city": "Paris""#, example = r#"["Paris"]"#)]
async fn weather(city: String) -> String {
    city
}

fn main() {}
