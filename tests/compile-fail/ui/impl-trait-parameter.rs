use pi_tool::tool;

/// Greet someone.
#[tool]
async fn greet(name: impl ToString) -> String {
    name.to_string()
}

fn main() {}
