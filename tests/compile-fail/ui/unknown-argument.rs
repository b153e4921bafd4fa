use pi_tool::tool;

/// Greet someone.
#[tool(lable = "Greeter")]
async fn greet(name: String) -> String {
    name
}

/// Greet someone else.
#[tool(retries = 3)]
async fn greet_again(name: String) -> String {
    name
}

fn main() {}
