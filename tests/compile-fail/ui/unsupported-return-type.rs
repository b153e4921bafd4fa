use pi_tool::tool;

/// Returns a number.
#[tool]
async fn number() -> i32 {
    42
}

/// Returns nothing.
#[tool]
async fn nothing() {}

fn main() {}
