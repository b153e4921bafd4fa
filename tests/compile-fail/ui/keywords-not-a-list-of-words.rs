use pi_tool::tool;

/// `keywords` is a list of strings: one string alone is not a list.
#[tool(keywords = "ticket")]
async fn create_issue(title: String) -> String {
    title
}

/// A number in the list is not a word.
#[tool(keywords = ["ticket", 7])]
async fn close_issue(id: String) -> String {
    id
}

/// A blank keyword and one given twice (whatever its case).
#[tool(keywords = ["ticket", " ", "Ticket"])]
async fn reopen_issue(id: String) -> String {
    id
}

fn main() {}
