use pi_tool::tool;

/// Greet someone.
#[tool(label = "Greeter", label = "Hello")]
async fn greet(name: String) -> String {
    name
}

/// Greet twice.
#[tool(sequential, sequential)]
async fn greet_twice(name: String) -> String {
    name
}

fn main() {}
