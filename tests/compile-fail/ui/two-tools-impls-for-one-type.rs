use pi_tool::{tool, tools};

struct Desk;

#[tools]
impl Desk {
    /// Open a ticket.
    #[tool]
    fn open(&self, subject: String) -> String {
        subject
    }
}

#[tools]
impl Desk {
    /// Close a ticket.
    #[tool]
    fn close(&self, id: u32) -> String {
        id.to_string()
    }
}

fn main() {}
