use pi_tool::tool;

/// Read a file.
#[tool]
async fn read(#[schemars(rename = "path")] file_path: String) -> String {
    file_path
}

fn main() {}
