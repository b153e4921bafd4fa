use pi_tool::tool;

/// A caller that is not `model`, `code` or `both`.
#[tool(callers = "script")]
async fn scripted() -> String {
    String::new()
}

/// Not a string literal.
#[tool(callers = code)]
async fn bare() -> String {
    String::new()
}

fn main() {}
