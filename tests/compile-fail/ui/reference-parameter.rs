use pi_tool::tool;

/// Greet someone.
#[tool]
async fn greet(name: &'static str, tags: &'static [String]) -> String {
    format!("{name} {}", tags.len())
}

fn main() {}
