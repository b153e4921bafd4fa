use std::borrow::Cow;

use pi_tool::tool;

/// Greet someone.
#[tool]
async fn greet<'a>(name: &'a str, tags: Option<Vec<&'a str>>, note: Cow<'a, str>) -> String {
    format!("{name} {tags:?} {note}")
}

/// Echo.
#[tool]
async fn echo<'a>(text: String) -> String {
    text
}

fn main() {}
