use pi_tool::tool;

/// Greet someone.
#[tool(label = 5, name = greet)]
async fn greet(name: String) -> String {
    name
}

fn main() {}
