use pi_tool::tool;

/// Takes `value`.
#[tool(prepare_arguments = 5)]
async fn legacy(value: String) -> String {
    value
}

fn main() {}
