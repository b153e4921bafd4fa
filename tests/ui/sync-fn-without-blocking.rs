use pi_tool::tool;

/// Count the lines of a text (sync: needs `blocking`).
#[tool]
fn count_lines(text: String) -> String {
    text.lines().count().to_string()
}

/// `blocking` is a flag.
#[tool(blocking = true)]
fn flagged_with_value(text: String) -> String {
    text
}

fn main() {}
