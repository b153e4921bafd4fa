use pi_tool::tool;

/// Greet someone.
#[tool]
async fn greet(#[validate(length(min = 1))] name: String) -> String {
    name
}

fn main() {}
