//! Deferred tools in a run: which schemas a request carries, and when a deferred tool is loaded.
//!
//! A deferred tool ([`AgentTool::deferred`]) is in the run's tool set from the start, so a call
//! to it is validated and run like any other; only its schema is held back. When the run has
//! deferred tools, the built-in `tool_search` ([`ToolSearch`], over the deferred tools) is
//! offered as well. A tool of the run's own that is called `tool_search` keeps its name and is
//! searched like any other; the built-in search is then offered as `pi_tool_search`
//! ([`ToolSearch::FALLBACK_NAME`], or `pi_tool_search_2`, ... when that is taken too).
//!
//! **Loaded tools are transcript state.** A deferred tool is loaded from the first message on
//! that is either a result of the built-in search naming it (its details, read by
//! [`loaded_by_search`]), an assistant message calling it (the model named it), or an API's own
//! search block of an earlier turn that loaded it (Anthropic's `tool_reference`, OpenAI's
//! `tool_search_output`: a conversation that used the API's search and goes on with the local
//! one replays those blocks, and the API refuses a reference to a tool the request does not
//! define). The loaded set is derived from the
//! transcript when a run starts and kept up to date as messages are added, so a session resumed
//! from its messages (a session file, a durable log) loads the same tools with no extra state.
//! A transcript rewritten by compaction loses the loads whose messages it drops, as the model
//! loses the search results themselves.
//!
//! A tool only code may call ([`ToolCallers::Code`](pi_tool::ToolCallers::Code)) is in the tool
//! set too (tools' nested calls and the `code` tool's scripts reach it) but never in a request,
//! loaded or not, and `tool_search` does not find it.
//!
//! **With the API's own search** ([`ToolSearchMode::Native`](crate::ToolSearchMode), on an API
//! that has one) none of this applies: every schema is sent, the deferred ones marked
//! `defer_loading`, the built-in search is not offered (a user's tool named `tool_search` is),
//! and what the API's search loaded is in its own blocks of the transcript.
//!
//! **Order keeps the prompt cache.** The request's tool list only grows at its end: the
//! non-deferred tools in the context's order, then `tool_search`, then each tool in the order it
//! was loaded (or activated by a result's `added_tool_names`). A resumed run derives the same
//! order from the same transcript, so its first request repeats the last one's tool prefix.

use std::collections::HashSet;
use std::sync::Arc;

use pi_tool::{AgentTool, TOOL_SEARCH_NAME, ToolSearch, ToolSpec, loaded_by_search};

use super::context::ToolSet;
use crate::message::{AssistantContent, Message};
use crate::providers::native_search;

/// The request-side view of a run's deferred tools.
pub(crate) struct Deferral {
    /// Names of the deferred tools in the tool set.
    deferred: HashSet<String>,
    /// Names whose spec is in `specs` (sent, loaded or not deferred).
    visible: HashSet<String>,
    /// What each request carries, in the order the tools became visible.
    specs: Vec<ToolSpec>,
    /// The API runs the model's own code: code-only tools are sent too (for its programs).
    code_native: bool,
    /// The name the built-in search has in this tool set (its results load tools).
    search_name: Option<String>,
}

impl Deferral {
    /// Adds the built-in search to `tools` when some of them are deferred (and it is not there
    /// yet), under a name no tool of `tools` holds; returns whether any is deferred. Without deferred tools nothing changes
    /// and the run keeps no deferral state. The index is built here: an [`Agent`](crate::Agent)
    /// calls this when its tools are set, so its runs find `tool_search` in place and build
    /// nothing; a direct `agent_loop` call over deferred tools builds it for that run.
    pub(crate) fn add_search(tools: &mut Vec<Arc<dyn AgentTool>>) -> bool {
        if !tools.iter().any(|t| t.deferred() && offered(t.as_ref())) {
            return false;
        }
        if !tools.iter().any(|t| ToolSearch::of(t.as_ref()).is_some()) {
            let deferred: Vec<Arc<dyn AgentTool>> = tools
                .iter()
                .filter(|t| t.deferred() && offered(t.as_ref()))
                .cloned()
                .collect();
            let name = free_search_name(tools);
            tools.push(Arc::new(ToolSearch::new(&deferred).named(name)));
        }
        true
    }

    /// Takes out the built-in search that [`Deferral::add_search`] adds (a run with the API's
    /// own search offers that one instead). A tool of the user's that is only named
    /// `tool_search` stays.
    pub(crate) fn remove_search(tools: &mut Vec<Arc<dyn AgentTool>>) {
        tools.retain(|t| ToolSearch::of(t.as_ref()).is_none());
    }

    /// The state at the start of a run: the non-deferred tools of `tools` in their order, then
    /// what `transcript` loaded, in the order it loaded them. With the API's own search
    /// (`native`) every offered tool is sent from the start (the provider marks the deferred ones).
    /// With the API's own code runner (`code_native`) code-only tools are sent as well.
    pub(crate) fn new(
        tools: &ToolSet,
        transcript: &[Arc<Message>],
        native: bool,
        code_native: bool,
    ) -> Deferral {
        let mut deferral = Deferral {
            deferred: HashSet::new(),
            visible: HashSet::new(),
            specs: Vec::new(),
            code_native,
            search_name: None,
        };
        for tool in tools.tools() {
            if let Some(search) = ToolSearch::of(tool.as_ref()) {
                deferral.search_name = Some(search.name().to_owned());
            }
            if !sent(tool.as_ref(), code_native) {
                continue;
            }
            if tool.deferred() && !native {
                deferral.deferred.insert(tool.spec().name.clone());
            } else {
                deferral.show(tool.spec());
            }
        }
        for message in transcript {
            deferral.observe(message, tools);
        }
        deferral
    }

    /// The specs the next request carries.
    pub(crate) fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// Loads what `message` loads: the tools a result of the built-in search names, the
    /// deferred tools an assistant message calls, and those an API's own search block of it
    /// refers to.
    pub(crate) fn observe(&mut self, message: &Message, tools: &ToolSet) {
        match message {
            Message::Assistant(assistant) => {
                for block in assistant.tool_calls() {
                    self.load(&block.call.name, tools);
                }
                for block in &assistant.content {
                    if let AssistantContent::Provider(block) = block {
                        for name in native_search::loaded_by(&block.block) {
                            self.load(name, tools);
                        }
                    }
                }
            }
            Message::ToolResult(result)
                if !result.is_error
                    && self.search_name.as_deref() == Some(result.tool_name.as_str()) =>
            {
                for name in loaded_by_search(&result.details) {
                    self.load(name, tools);
                }
            }
            _ => {}
        }
    }

    /// A tool a result's `added_tool_names` brought into the tool set: sent from now on,
    /// deferred or not (the result asked for it by name).
    pub(crate) fn activated(&mut self, tool: &dyn AgentTool) {
        if !sent(tool, self.code_native) {
            return;
        }
        if tool.deferred() {
            self.deferred.insert(tool.spec().name.clone());
        }
        self.show(tool.spec());
    }

    /// Puts the specs that `before` named (a previous request's tools, in order) first, in
    /// that order, and the others after them in their own order: a tool set swapped during a
    /// run keeps the request's unchanged prefix.
    pub(crate) fn keep_order(&mut self, before: &[String]) {
        let before = before.iter().map(String::as_str);
        super::tool_change::sort_like(&mut self.specs, before, |spec| spec.name.as_str());
    }

    fn load(&mut self, name: &str, tools: &ToolSet) {
        if !self.deferred.contains(name) || self.visible.contains(name) {
            return;
        }
        if let Some(tool) = tools.get(name) {
            self.show(tool.spec());
        }
    }

    fn show(&mut self, spec: &ToolSpec) {
        if self.visible.insert(spec.name.clone()) {
            self.specs.push(spec.clone());
        }
    }
}

/// The name the built-in search gets in `tools`: [`TOOL_SEARCH_NAME`], or, when a tool holds
/// it, [`ToolSearch::FALLBACK_NAME`], then `pi_tool_search_2`, `_3`, ...: the first no tool holds.
fn free_search_name(tools: &[Arc<dyn AgentTool>]) -> String {
    let taken = |name: &str| tools.iter().any(|t| t.spec().name == name);
    if !taken(TOOL_SEARCH_NAME) {
        return TOOL_SEARCH_NAME.to_owned();
    }
    let mut name = ToolSearch::FALLBACK_NAME.to_owned();
    let mut n = 1;
    while taken(&name) {
        n += 1;
        name = format!("{}_{n}", ToolSearch::FALLBACK_NAME);
    }
    name
}

/// Whether requests carry `tool`'s schema at all: when the model is offered it, or the API's
/// own code runner may call it (`code_native`).
fn sent(tool: &dyn AgentTool, code_native: bool) -> bool {
    offered(tool) || code_native
}

/// Whether the model is offered `tool` at all: not when only code may call it
/// ([`ToolCallers::Code`](pi_tool::ToolCallers::Code)).
pub(crate) fn offered(tool: &dyn AgentTool) -> bool {
    tool.callers().allows_model()
}

/// Whether a run over `tools` needs a request-side view of them: some are deferred, or some are
/// not offered to the model.
pub(crate) fn needs_view(tools: &[Arc<dyn AgentTool>]) -> bool {
    tools.iter().any(|t| t.deferred() || !offered(t.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, deferred: bool) -> Arc<dyn AgentTool> {
        let builder = pi_tool::FnTool::builder(name, "A tool.", json!({"type": "object"}));
        let builder = if deferred {
            builder.deferred()
        } else {
            builder
        };
        Arc::new(builder.build(|_, _| async { "ok" }).unwrap())
    }

    #[test]
    fn the_search_is_added_once_and_kept_after() {
        let mut tools = vec![tool("plain", false)];
        assert!(!Deferral::add_search(&mut tools));
        assert_eq!(tools.len(), 1, "no deferred tool: nothing added");

        let mut tools = vec![tool("plain", false), tool("hidden", true)];
        assert!(Deferral::add_search(&mut tools));
        assert_eq!(tools.len(), 3);
        assert_eq!(tools[2].spec().name, TOOL_SEARCH_NAME);
        let search = Arc::clone(&tools[2]);
        // What an Agent's runs do with the list it prepared: the same search, no second index.
        assert!(Deferral::add_search(&mut tools));
        assert_eq!(tools.len(), 3);
        assert!(Arc::ptr_eq(&tools[2], &search));
    }

    #[test]
    fn the_search_takes_a_name_no_tool_holds_and_only_it_is_removed() {
        let mut tools = vec![
            tool(TOOL_SEARCH_NAME, false),
            tool(ToolSearch::FALLBACK_NAME, true),
            tool("hidden", true),
        ];
        assert!(Deferral::add_search(&mut tools));
        assert_eq!(tools.len(), 4);
        assert_eq!(tools[3].spec().name, "pi_tool_search_2");
        assert!(ToolSearch::of(tools[3].as_ref()).is_some_and(|s| s.len() == 2));
        assert!(ToolSearch::of(tools[0].as_ref()).is_none());
        // The API's own search in use: the built-in one goes, the user's `tool_search` stays.
        Deferral::remove_search(&mut tools);
        let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
        assert_eq!(names, [TOOL_SEARCH_NAME, "pi_tool_search", "hidden"]);
    }
}
