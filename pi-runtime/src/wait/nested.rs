//! A call that waits because a call it made from code waits ([`NestedWait`]): the nested call
//! that needs a decision, and the journal that lets the outer call run again on resume without
//! running its completed nested calls twice.

use std::collections::BTreeMap;

use pi_tool::ToolResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wait::WaitingCall;

/// Why a waiting call of the run waits when it is a call that made a nested call
/// ([`ToolContext::call_tool`](pi_tool::ToolContext::call_tool), a `pi-codemode` script) that
/// needs a decision: that nested call, and what the outer call did before it.
///
/// The outer call's [`WaitingCall`] (in [`RunState::waiting`](crate::RunState::waiting)) is
/// decided like any other, and the decision settles the nested call: approved, it runs (once);
/// denied, the outer call's code gets the error result with the reason; answered, it gets the
/// answer. Either way the outer call runs again on resume: its nested calls that completed are
/// answered from [`journal`](Self::journal) in order, without running again, and values it
/// recorded for its replay ([`ToolContext::replayable_value`](pi_tool::ToolContext::replayable_value):
/// a script's random seed and clock readings) read the same.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NestedWait {
    /// The nested call that waits (its id is the outer call's, `/` and its number, e.g.
    /// `c1/3`; deeper calls add a number each).
    pub call: WaitingCall,
    /// The arguments the code passed to it, before `prepare_arguments` (the replay's call at
    /// the same place must pass the same).
    pub requested: Value,
    /// The nested calls that completed before the pause, in the order they completed.
    pub journal: Vec<NestedCallRecord>,
    /// The values the calls recorded for their replay: by call id, then by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, BTreeMap<String, Value>>,
}

/// One completed nested call in a [`NestedWait`]'s journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NestedCallRecord {
    /// The call's id (`c1/1`, `c1/2/1`, ...): its place in the order the code made its calls.
    pub id: String,
    /// The called tool.
    pub tool: String,
    /// The arguments as the code passed them.
    pub arguments: Value,
    /// Its result, as the code got it.
    pub result: ToolResult,
}

impl NestedCallRecord {
    /// A completed nested call.
    pub fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        arguments: Value,
        result: ToolResult,
    ) -> Self {
        NestedCallRecord {
            id: id.into(),
            tool: tool.into(),
            arguments,
            result,
        }
    }
}

impl NestedWait {
    /// The nested call `call` (made with `requested`) waits; `journal` completed before it.
    pub fn new(call: WaitingCall, requested: Value, journal: Vec<NestedCallRecord>) -> Self {
        NestedWait {
            call,
            requested,
            journal,
            values: BTreeMap::new(),
        }
    }
}

/// The error of a replayed nested call that is not the call the journal recorded at its place.
pub(crate) fn diverged_message(
    id: &str,
    recorded_tool: &str,
    recorded_arguments: &Value,
    tool: &str,
    arguments: &Value,
) -> String {
    format!(
        "The call made from code could not be replayed: its nested call {id} was {recorded_tool} \
         with {recorded_arguments} when the run paused, and is {tool} with {arguments} now (the \
         code did not make the same calls in the same order). Its recorded result would be \
         wrong, so no recorded result was given and no later call was run."
    )
}
