use pi_tool::tool;

/// Read a file.
#[tool(name = "read file")]
async fn read(path: String) -> String {
    path
}

/// Read a file again.
#[tool(name = "")]
async fn read_again(path: String) -> String {
    path
}

fn main() {}
