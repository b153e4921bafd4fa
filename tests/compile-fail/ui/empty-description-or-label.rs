use pi_tool::tool;

/// Has docs, but the explicit description is empty.
#[tool(description = "", label = " ")]
async fn blank(x: String) -> String {
    x
}

fn main() {}
