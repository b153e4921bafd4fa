use pi_tool::tool;

/// Read a file.
#[tool(read_only = 1)]
async fn read(path: String) -> String {
    path
}

/// Delete a file.
#[tool(destructive = "yes", idempotent(true))]
async fn delete(path: String) -> String {
    path
}

fn main() {}
