use pi_tool::tool;

/// pi's values are `never` and `safe`; `once` is neither.
#[tool(replay = "once")]
async fn pay() -> String {
    String::new()
}

fn main() {}
