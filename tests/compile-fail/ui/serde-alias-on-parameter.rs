use pi_tool::tool;

/// Reads a file.
#[tool]
async fn read(
    /// The file to read
    #[serde(alias = "path")]
    file_path: String,
    #[serde(default, alias = "max", alias = "count")] limit: Option<u32>,
) -> String {
    format!("{file_path} {limit:?}")
}

fn main() {}
