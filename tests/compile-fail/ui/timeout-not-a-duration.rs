use pi_tool::tool;

/// A number without a unit.
#[tool(timeout = "30")]
async fn no_unit() -> String {
    String::new()
}

/// A unit that is not one of `ms`, `s`, `m`, `h`.
#[tool(timeout = "30 seconds")]
async fn spelled_out() -> String {
    String::new()
}

/// Zero never lets a call finish.
#[tool(timeout = "0s")]
async fn zero() -> String {
    String::new()
}

/// Not a string literal.
#[tool(timeout = 30)]
async fn bare_number() -> String {
    String::new()
}

fn main() {}
