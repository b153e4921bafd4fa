use pi_tool::tool;

/// Echo a value.
#[tool]
async fn echo<T: ToString>(value: T) -> String {
    value.to_string()
}

fn main() {}
