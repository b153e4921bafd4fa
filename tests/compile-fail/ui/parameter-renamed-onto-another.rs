use pi_tool::tool;

/// Merge two tickets.
#[tool]
async fn merge(id: u32, #[serde(rename = "id")] ticket_id: u32) -> String {
    format!("{id} {ticket_id}")
}

/// Assign a ticket.
#[tool]
async fn assign(
    #[serde(rename(serialize = "who", deserialize = "agent"))] assignee: String,
    agent: String,
) -> String {
    format!("{assignee} {agent}")
}

/// Tag a ticket.
#[tool]
async fn tag(r#type: String, #[serde(default, rename = "type")] kind: Option<String>) -> String {
    format!("{type} {kind:?}", type = r#type)
}

fn main() {}
