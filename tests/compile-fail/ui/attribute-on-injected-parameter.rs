use pi_tool::{tool, ToolContext};

/// Knows its call id.
#[tool]
async fn who(#[serde(default)] ctx: ToolContext) -> String {
    ctx.tool_call_id().to_owned()
}

fn main() {}
