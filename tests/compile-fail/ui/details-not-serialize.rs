use pi_tool::{tool, ToolResult};

struct Details;

/// Returns details that cannot be serialized.
#[tool]
async fn detailed() -> ToolResult<Details> {
    ToolResult::new(Vec::new(), Details)
}

fn main() {}
