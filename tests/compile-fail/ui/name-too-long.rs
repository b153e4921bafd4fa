use pi_tool::tool;

/// A tool whose name no provider accepts.
#[tool]
async fn this_tool_name_is_far_too_long_for_any_provider_to_accept_it_at_all(x: String) -> String {
    x
}

fn main() {}
