//! `#[tool(keywords = [..])]` on a free fn and on a `#[tools]` method makes `keywords()` answer
//! them (trimmed), and the tool search finds the tool by them; a tool without it has none.

use std::sync::Arc;

use pi_tool::{AgentTool, ToolSearch, tool, tools};

/// Open an issue in a repository.
#[tool(keywords = ["ticket", " bug report "])]
async fn create_issue(title: String) -> String {
    title
}

/// Say hello.
#[tool]
async fn hello() -> String {
    "hello".to_owned()
}

struct Tracker;

#[tools]
impl Tracker {
    /// Close an issue.
    #[tool(keywords = ["resolve"])]
    async fn close_issue(&self, id: String) -> String {
        id
    }
}

fn main() {
    assert_eq!(CreateIssueTool.keywords(), ["ticket", "bug report"]);
    assert!(HelloTool.keywords().is_empty());
    let tracker = Arc::new(Tracker).tools();
    let close = tracker.iter().find(|t| t.spec().name == "close_issue").unwrap();
    assert_eq!(close.keywords(), ["resolve"]);
    let all: Vec<Arc<dyn AgentTool>> = vec![Arc::new(CreateIssueTool), Arc::new(HelloTool)];
    assert_eq!(ToolSearch::new(&all).search("file a ticket", 5)[0].name, "create_issue");
}
