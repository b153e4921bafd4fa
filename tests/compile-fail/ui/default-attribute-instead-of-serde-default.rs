use pi_tool::tool;

/// List the newest entries.
#[tool]
async fn list(#[default(50)] limit: u32) -> String {
    limit.to_string()
}

/// The same with a name-value default.
#[tool]
async fn page(#[default = 1] page: u32) -> String {
    page.to_string()
}

fn main() {}
