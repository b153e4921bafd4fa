use pi_tool::tool;

/// `approval` is a flag or the path of a fn; a string is neither.
#[tool(approval = "always")]
async fn refund(cents: u64) -> String {
    cents.to_string()
}

fn main() {}
