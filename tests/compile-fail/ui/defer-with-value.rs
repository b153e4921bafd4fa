use pi_tool::tool;

/// Search the archive.
#[tool(defer = true)]
async fn search_archive(query: String) -> String {
    query
}

fn main() {}
