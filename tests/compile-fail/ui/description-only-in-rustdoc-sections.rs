use pi_tool::tool;

/// # Errors
///
/// When the ticket is unknown.
#[tool]
async fn close(id: u32) -> Result<String, std::io::Error> {
    Ok(id.to_string())
}

fn main() {}
