//! What a durable host does with a call whose start was recorded but whose outcome was not (the
//! process died while it ran): run it again, or not.

/// A tool's recovery policy for durable runs ([`AgentTool::replay`](crate::AgentTool::replay);
/// `#[tool(replay = "never" | "safe")]`), as pi 1.x's `replay`.
///
/// Without one (`None`, the default) a durable host runs an interrupted call again: the call
/// runs at least once, and its [`idempotency_key`](crate::ToolContext::idempotency_key) lets a
/// side-effecting tool deduplicate. `pi-restate` honours it.
///
/// ```
/// use pi_tool::Replay;
///
/// assert_eq!("never".parse::<Replay>(), Ok(Replay::Never));
/// assert_eq!(Replay::Safe.as_str(), "safe");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Replay {
    /// Running the call again is harmless (a read, an idempotent write): an interrupted call is
    /// run again.
    Safe,
    /// The call must not run twice (a payment, an email): an interrupted call is not run again
    /// but answered with an error saying its outcome is unknown, with its idempotency key, so
    /// the model (or a person) can find out what happened.
    Never,
}

impl Replay {
    /// The name `#[tool(replay = "..")]` takes.
    pub const fn as_str(self) -> &'static str {
        match self {
            Replay::Safe => "safe",
            Replay::Never => "never",
        }
    }
}

impl std::str::FromStr for Replay {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "safe" => Ok(Replay::Safe),
            "never" => Ok(Replay::Never),
            other => Err(format!(
                "unknown replay policy `{other}`: expected `safe` or `never`"
            )),
        }
    }
}

/// The result of a [`Replay::Never`] call that a durable host found interrupted: its outcome is
/// unknown, and it was not run again.
pub fn outcome_unknown_message(tool_name: &str, idempotency_key: &str) -> String {
    format!(
        "Tool {tool_name} was interrupted before its result was recorded, and it must not run twice \
         (replay = \"never\"): whether it took effect is unknown. It was not run again. Check its \
         effect before retrying; its idempotency key is {idempotency_key}"
    )
}
