use pi_tool::tool;

/// Write a file.
#[tool(sequential = true)]
async fn write(path: String) -> String {
    path
}

/// Write another file.
#[tool(label)]
async fn write_again(path: String) -> String {
    path
}

fn main() {}
