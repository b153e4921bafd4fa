//! A support desk's tools, written as a user writes them and linted with `clippy::pedantic`
//! (`#![warn]` here is `cargo clippy -- -W clippy::pedantic`; CI's clippy step denies warnings).
//! There is no `allow` in this crate: what `#[tool]` makes clippy say, the macro allows itself.
//!
//! The shapes that used to need one: a plain `fn` tool taking an owned `String` and a
//! `State<T>` (`needless_pass_by_value`, since `#[tool]` refuses borrowed parameters) and
//! returning a value (`must_use_candidate`); an `async fn` without `.await` (`unused_async`);
//! eight parameters (`too_many_arguments`); a `Result` tool, whose `# Errors` section clippy
//! asks for and which stays out of the description the model reads; `#[tools]` methods.

#![warn(clippy::pedantic)]

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

use pi_tool::{Json, State, ToolContext, tool, tools};

/// The desk's tickets, shared by every tool.
#[derive(Default)]
pub struct Desk {
    tickets: Mutex<BTreeMap<u32, Ticket>>,
}

/// One ticket.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Ticket {
    /// Its number.
    pub id: u32,
    /// What the customer wrote.
    pub subject: String,
    /// `open` or `closed`.
    pub status: String,
}

/// A ticket number nobody filed.
#[derive(Debug)]
pub struct UnknownTicket(pub u32);

impl fmt::Display for UnknownTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no ticket #{}", self.0)
    }
}

impl std::error::Error for UnknownTicket {}

impl Desk {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, Ticket>> {
        self.tickets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Open a ticket for a customer's request.
#[tool(label = "Open ticket")]
pub fn open_ticket(
    /// What the customer asks for, in their words
    subject: String,
    desk: State<Desk>,
) -> String {
    let mut tickets = desk.lock();
    let id = tickets.keys().next_back().map_or(1, |last| last + 1);
    let status = "open".to_owned();
    tickets.insert(
        id,
        Ticket {
            id,
            subject,
            status,
        },
    );
    format!("opened ticket #{id}")
}

/// Show one ticket.
///
/// # Errors
///
/// [`UnknownTicket`] when no ticket has the number.
///
/// # Examples
///
/// ```
/// use pi_tests_pedantic_user::{Desk, ShowTicketTool};
/// let tools = pi_tool::ToolRegistry::new().with(ShowTicketTool).with_state(Desk::default());
/// assert_eq!(tools.len(), 1);
/// ```
#[tool(read_only)]
pub async fn show_ticket(
    /// The ticket's number
    id: u32,
    desk: State<Desk>,
    ctx: ToolContext,
) -> Result<Json<Ticket>, UnknownTicket> {
    let _ = ctx.tool_call_id();
    desk.lock()
        .get(&id)
        .cloned()
        .map(Json)
        .ok_or(UnknownTicket(id))
}

/// Find open tickets whose subject contains every given word.
#[tool]
pub async fn search_tickets(
    first: String,
    second: Option<String>,
    third: Option<String>,
    fourth: Option<String>,
    fifth: Option<String>,
    sixth: Option<String>,
    seventh: Option<String>,
    desk: State<Desk>,
) -> String {
    let words: Vec<String> = [Some(first), second, third, fourth, fifth, sixth, seventh]
        .into_iter()
        .flatten()
        .collect();
    let tickets = desk.lock();
    let found: Vec<String> = tickets
        .values()
        .filter(|ticket| ticket.status == "open")
        .filter(|ticket| {
            words
                .iter()
                .all(|word| ticket.subject.contains(word.as_str()))
        })
        .map(|ticket| format!("#{}", ticket.id))
        .collect();
    found.join(" ")
}

/// Canned answers, as tools bound to one shared value.
pub struct Replies {
    signature: String,
}

impl Replies {
    /// Replies signed with `signature`.
    #[must_use]
    pub fn new(signature: String) -> Self {
        Replies { signature }
    }
}

#[tools]
impl Replies {
    /// Write a polite reply to a customer.
    #[tool]
    fn reply(&self, name: String, answer: String) -> String {
        format!("Dear {name},\n\n{answer}\n\n{}", self.signature)
    }

    /// Say which signature replies carry.
    #[tool]
    async fn signature(&self) -> String {
        self.signature.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pi_tool::serde_json::json;
    use pi_tool::{ToolCall, ToolRegistry};

    use super::{Desk, Replies};

    #[tokio::test]
    async fn the_tools_work_and_rustdoc_sections_stay_out_of_the_description() {
        let mut tools = ToolRegistry::new()
            .with(super::OpenTicketTool)
            .with(super::ShowTicketTool)
            .with(super::SearchTicketsTool)
            .with_state(Desk::default());
        tools.extend(Arc::new(Replies::new("The desk".to_owned())).tools());
        let opened = tools
            .run(&ToolCall::new(
                "1",
                "open_ticket",
                json!({"subject": "printer on fire"}),
            ))
            .await;
        assert_eq!(opened.text_content(), "opened ticket #1");
        let shown = tools
            .run(&ToolCall::new("2", "show_ticket", json!({"id": 1})))
            .await;
        assert_eq!(shown.details["status"], "open");
        let found = tools
            .run(&ToolCall::new(
                "3",
                "search_tickets",
                json!({"first": "printer"}),
            ))
            .await;
        assert_eq!(found.text_content(), "#1");

        let show = tools.get("show_ticket").expect("registered");
        assert_eq!(show.spec().description, "Show one ticket.");
        assert!(show.output_schema().is_some());
    }
}
