use pi_tool::tool;

/// Write a file.
#[tool(sequential, parallel)]
async fn write(path: String) -> String {
    path
}

fn main() {}
