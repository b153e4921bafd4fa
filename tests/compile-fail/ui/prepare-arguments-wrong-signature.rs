use pi_tool::tool;

fn upgrade(args: String) -> String {
    args
}

/// Takes `value`.
#[tool(prepare_arguments = upgrade)]
async fn legacy(value: String) -> String {
    value
}

fn main() {}
