//! `#[tool(approval)]` makes every call need approval; `#[tool(approval = path)]` asks `path`,
//! with the tool's parameter struct or with the raw arguments; a tool without the key needs
//! none.

use pi_tool::serde_json::{self, json};
use pi_tool::{AgentTool, ToolContext, tool};

/// Refund an order.
#[tool(approval)]
async fn refund(cents: u64) -> String {
    cents.to_string()
}

fn over_a_hundred(args: &TransferParams, _ctx: &ToolContext) -> bool {
    args.cents > 10_000
}

/// Transfer money.
#[tool(approval = over_a_hundred)]
async fn transfer(cents: u64) -> String {
    cents.to_string()
}

fn to_outsiders(args: &serde_json::Value, _ctx: &ToolContext) -> bool {
    !args["to"]
        .as_str()
        .unwrap_or_default()
        .ends_with("@example.com")
}

/// Send an email.
#[tool(approval = to_outsiders)]
async fn email(to: String) -> String {
    to
}

/// Say hello.
#[tool]
async fn hello() -> String {
    "hello".to_owned()
}

fn main() {
    let ctx = ToolContext::new("c1");
    assert!(RefundTool.needs_approval(&json!({"cents": 1}), &ctx));
    assert!(TransferTool.needs_approval(&json!({"cents": 20_000}), &ctx));
    assert!(!TransferTool.needs_approval(&json!({"cents": 500}), &ctx));
    assert!(EmailTool.needs_approval(&json!({"to": "x@elsewhere.org"}), &ctx));
    assert!(!EmailTool.needs_approval(&json!({"to": "me@example.com"}), &ctx));
    assert!(!HelloTool.needs_approval(&json!({}), &ctx));
    assert!(!RefundTool.external());
}
