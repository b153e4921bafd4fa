//! Installing a run's tools: at its start, and again when a [`TurnUpdate`](crate::TurnUpdate)
//! swaps them (or the model, which decides whether the API's own tool search is used).
//!
//! A swap keeps the request's tool list cache-friendly: the tools that stay keep their order,
//! new ones come after them. What the model is offered before and after is compared by name,
//! and a difference becomes a [`tools_changed`](crate::CustomMessage::tools_changed) record.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use pi_tool::{AgentTool, ToolRegistry, ToolSpec};

use super::context::ToolSet;
use super::deferred::{self, Deferral};
use crate::message::Message;
use crate::model::{Model, StreamOptions};
use crate::request_tools::RequestTools;

/// A run's tools, ready for its requests.
pub(crate) struct Installed {
    pub(crate) tools: Arc<ToolSet>,
    /// Which schemas requests carry when some tools are deferred or code-only (`None`: all).
    pub(crate) deferral: Option<Deferral>,
    pub(crate) request_tools: RequestTools,
}

/// Builds the run's tool set from `tools`. With the API's own search (`native`) every offered
/// schema is sent (deferred ones marked) and the local `tool_search` is not offered; otherwise
/// deferred schemas wait for the transcript to load them. With the API's own code runner
/// (`native_code`) code-only tools are sent too. `previous` is the cache of lowered schemas to
/// keep entries from; `registry` lends its shared specs when `tools` are exactly its own.
pub(crate) fn install(
    mut tools: Vec<Arc<dyn AgentTool>>,
    transcript: &[Arc<Message>],
    native: bool,
    native_code: bool,
    previous: Option<&RequestTools>,
    registry: &ToolRegistry,
) -> Installed {
    if native {
        Deferral::remove_search(&mut tools);
    } else {
        Deferral::add_search(&mut tools);
    }
    let request_tools = previous.cloned().unwrap_or_default().updated(&tools);
    let needs_view = deferred::needs_view(&tools);
    let tools = Arc::new(ToolSet::new(tools, registry));
    let deferral = needs_view.then(|| Deferral::new(&tools, transcript, native, native_code));
    Installed {
        tools,
        deferral,
        request_tools,
    }
}

/// Which of the API's own features a run's requests use: its tool search (when the options ask
/// for it and the model's API has one) and its code runner (likewise).
pub(crate) fn natives(options: &StreamOptions, model: &dyn Model) -> (bool, bool) {
    (
        options.tool_search.is_native() && model.native_tool_search(),
        options.native_code_calls && model.native_code_calls(),
    )
}

/// `tools` ordered for the prompt cache: those also in `before` in `before`'s order, then the
/// others in their own order.
pub(crate) fn keep_order(
    mut tools: Vec<Arc<dyn AgentTool>>,
    before: &ToolSet,
) -> Vec<Arc<dyn AgentTool>> {
    sort_like(&mut tools, before.names(), |tool| tool.spec().name.as_str());
    tools
}

/// Sorts `items` (stably) so that those `before` names come first, in `before`'s order, and
/// the others keep their relative order after them.
pub(crate) fn sort_like<'a, T>(
    items: &mut [T],
    before: impl IntoIterator<Item = &'a str>,
    name: impl Fn(&T) -> &str,
) {
    let position: HashMap<&str, usize> = before
        .into_iter()
        .enumerate()
        .map(|(i, name)| (name, i))
        .collect();
    items.sort_by_key(|item| position.get(name(item)).copied().unwrap_or(usize::MAX));
}

/// The names the model is offered, from the specs a request carries.
pub(crate) fn offered_names(specs: &[ToolSpec]) -> Vec<String> {
    specs.iter().map(|spec| spec.name.clone()).collect()
}

/// What changed between two offered sets: (added, removed), each in its set's order; `None`
/// when nothing did.
pub(crate) fn difference(
    before: &[String],
    after: &[String],
) -> Option<(Vec<String>, Vec<String>)> {
    let old: HashSet<&str> = before.iter().map(String::as_str).collect();
    let new: HashSet<&str> = after.iter().map(String::as_str).collect();
    let added: Vec<String> = after
        .iter()
        .filter(|name| !old.contains(name.as_str()))
        .cloned()
        .collect();
    let removed: Vec<String> = before
        .iter()
        .filter(|name| !new.contains(name.as_str()))
        .cloned()
        .collect();
    (!added.is_empty() || !removed.is_empty()).then_some((added, removed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_difference_names_what_came_and_went_in_order() {
        assert_eq!(
            difference(&names(&["a", "b", "c"]), &names(&["a", "d", "c", "e"])),
            Some((names(&["d", "e"]), names(&["b"])))
        );
        assert_eq!(difference(&names(&["a", "b"]), &names(&["b", "a"])), None);
    }
}
