//! `#[tool(callers = "..")]` and `#[tool(replay = "..")]` on a free fn and on a `#[tools]`
//! method make `callers()` and `replay()` answer as written; a tool without them answers the
//! defaults (`Both`, `None`).

use std::sync::Arc;

use pi_tool::{AgentTool, Replay, ToolCallers, tool, tools};

/// Charge a card.
#[tool(replay = "never", callers = "model")]
async fn charge(cents: u64) -> String {
    cents.to_string()
}

/// Look a word up.
#[tool(callers = "code", replay = "safe")]
async fn lookup(word: String) -> String {
    word
}

/// Say hello.
#[tool]
async fn hello() -> String {
    "hello".to_owned()
}

struct Mailer;

#[tools]
impl Mailer {
    /// Send an email.
    #[tool(replay = "never", callers = "both")]
    async fn send(&self, to: String) -> String {
        to
    }
}

fn main() {
    assert_eq!(ChargeTool.callers(), ToolCallers::Model);
    assert_eq!(ChargeTool.replay(), Some(Replay::Never));
    assert_eq!(LookupTool.callers(), ToolCallers::Code);
    assert_eq!(LookupTool.replay(), Some(Replay::Safe));
    assert_eq!(HelloTool.callers(), ToolCallers::Both);
    assert_eq!(HelloTool.replay(), None);
    let mail = Arc::new(Mailer).tools();
    let send = mail.iter().find(|t| t.spec().name == "send").unwrap();
    assert_eq!(send.replay(), Some(Replay::Never));
    assert_eq!(send.callers(), ToolCallers::Both);
}
