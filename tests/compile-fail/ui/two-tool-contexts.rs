use pi_tool::{tool, ToolContext};

/// Takes the context twice.
#[tool]
async fn twice(a: ToolContext, b: ToolContext) -> String {
    format!("{} {}", a.tool_call_id(), b.tool_call_id())
}

fn main() {}
