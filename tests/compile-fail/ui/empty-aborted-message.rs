use pi_tool::tool;

/// Runs a command.
#[tool(aborted = "  ")]
async fn run(command: String) -> String {
    command
}

fn main() {}
