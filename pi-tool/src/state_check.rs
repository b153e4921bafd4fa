//! Which shared state a tool takes, so a host can report a missing `State<T>` before the first
//! call (naming the tool and the type) instead of the model reading it in a failed result.

use std::any::{TypeId, type_name};
use std::fmt;
use std::sync::Arc;

use crate::{AgentTool, RegistryError, StateMap};

/// A type a tool takes as [`State<T>`](crate::State): `#[tool]` lists each `State<T>`
/// parameter in [`AgentTool::state_types`]. A [`StateMap`] provides it when it holds a `T` or
/// an `Arc<T>` (what `State<T>` looks up).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct StateType {
    id: TypeId,
    arc_id: TypeId,
    name: &'static str,
}

impl StateType {
    /// The state type `T` (as in `State<T>`).
    pub fn of<T: ?Sized + 'static>() -> Self {
        StateType {
            id: TypeId::of::<T>(),
            arc_id: TypeId::of::<Arc<T>>(),
            name: type_name::<T>(),
        }
    }

    /// The type's name, as [`std::any::type_name`] gives it.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether `state` holds a value for it.
    pub fn is_in(&self, state: &StateMap) -> bool {
        state.contains_type(self.id) || state.contains_type(self.arc_id)
    }
}

impl fmt::Debug for StateType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StateType").field(&self.name).finish()
    }
}

/// A `State<T>` parameter of a tool whose `T` the state does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MissingState {
    /// The tool's name.
    pub tool: String,
    /// The state type it takes and nobody gave.
    pub state_type: StateType,
}

impl MissingState {
    /// The error a host reports for it.
    pub fn into_error(self) -> RegistryError {
        RegistryError::MissingState {
            tool: self.tool,
            type_name: self.state_type.name().to_owned(),
        }
    }
}

/// Every `State<T>` that one of `tools` takes and `state` does not hold, in tool order: what a
/// host checks before the first call (the agent loop before each request to the model,
/// [`ToolRegistry::check_state`](crate::ToolRegistry::check_state) on demand).
pub fn missing_state<'a, I>(tools: I, state: &StateMap) -> Vec<MissingState>
where
    I: IntoIterator<Item = &'a Arc<dyn AgentTool>>,
{
    let mut missing = Vec::new();
    for tool in tools {
        for state_type in tool.state_types() {
            if !state_type.is_in(state) {
                missing.push(MissingState {
                    tool: tool.spec().name.clone(),
                    state_type,
                });
            }
        }
    }
    missing
}
