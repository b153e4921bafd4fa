use pi_tool::tool;

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

fn main() {}
