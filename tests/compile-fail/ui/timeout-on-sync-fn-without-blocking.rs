use pi_tool::tool;

/// Count the lines of a text (a sync fn that blocks its thread while it works).
#[tool(timeout = "1s")]
fn count_lines(text: String) -> String {
    std::thread::sleep(std::time::Duration::from_secs(3));
    text.lines().count().to_string()
}

fn main() {}
