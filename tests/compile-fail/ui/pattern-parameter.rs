use pi_tool::tool;

/// Add a pair.
#[tool]
async fn add((a, b): (i64, i64)) -> String {
    (a + b).to_string()
}

/// Ignore the argument.
#[tool]
async fn ignore(_: String) -> String {
    String::new()
}

fn main() {}
