use pi_tool::{tool, ToolContext};

// One item, several mistakes: every one is reported in the same compile.
#[tool(lable = "x", sequential, parallel)]
fn broken<T>(&self, (a, b): (i64, i64), c: ToolContext, d: ToolContext) -> String {
    String::new()
}

fn main() {}
