//! The APIs' own tool-search blocks in a transcript: which tools they loaded, and what a request
//! that replays them must define. A conversation may change search mode between turns (the
//! configuration changed, a saved session resumed with the default one): the blocks of the
//! earlier mode are replayed as they came, and each API refuses a block that refers to a tool
//! the request does not define.

use std::collections::HashSet;

use serde_json::{Value, json};

/// The names of the tools an API's own search block loaded: the `tool_reference`s of an
/// Anthropic `tool_search_tool_result`, the tools (and a namespace's tools) of an OpenAI
/// `tool_search_output`. Nothing for any other block.
pub(crate) fn loaded_by(block: &Value) -> Vec<&str> {
    match block["type"].as_str() {
        Some("tool_search_tool_result") => block
            .pointer("/content/tool_references")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|reference| reference["tool_name"].as_str())
            .collect(),
        Some("tool_search_output") => {
            let mut names = Vec::new();
            for tool in block["tools"].as_array().into_iter().flatten() {
                match tool["tools"].as_array() {
                    Some(inner) => names.extend(inner.iter().filter_map(|t| t["name"].as_str())),
                    None => names.extend(tool["name"].as_str()),
                }
            }
            names
        }
        _ => Vec::new(),
    }
}

/// Makes an Anthropic request's replayed search blocks refer only to defined tools: a search
/// tool (of `searches`, (type, name) pairs) that a replayed `server_tool_use` ran is defined
/// when it is not (a conversation that searched with BM25 goes on with the regex search, or
/// with the local one), and a `tool_reference` to a tool the request does not define (one no
/// longer in the tool set) is left out of its block.
pub(crate) fn define_anthropic_references(
    messages: &mut [Value],
    tools: &mut Vec<Value>,
    searches: &[(&str, &str)],
) {
    let mut defined: HashSet<String> = tools
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect();
    for block in assistant_blocks(messages) {
        if block["type"] != "server_tool_use" {
            continue;
        }
        let ran = block["name"].as_str().unwrap_or_default();
        if let Some((kind, name)) = searches.iter().find(|(_, name)| *name == ran)
            && defined.insert((*name).to_owned())
        {
            tools.push(json!({"type": kind, "name": name}));
        }
    }
    for block in assistant_blocks(messages) {
        if block["type"] != "tool_search_tool_result" {
            continue;
        }
        if let Some(references) = block
            .pointer_mut("/content/tool_references")
            .and_then(Value::as_array_mut)
        {
            references.retain(|reference| {
                reference["tool_name"]
                    .as_str()
                    .is_some_and(|name| defined.contains(name))
            });
        }
    }
}

/// The content blocks of a request's assistant messages.
fn assistant_blocks(messages: &mut [Value]) -> impl Iterator<Item = &mut Value> {
    messages
        .iter_mut()
        .filter(|message| message["role"] == "assistant")
        .filter_map(|message| message.get_mut("content").and_then(Value::as_array_mut))
        .flatten()
}

/// Makes an OpenAI Responses request define the hosted `tool_search` when its input replays an
/// item that search ran (`tool_search_call` executed by the server) and the request does not
/// offer it (the conversation goes on with the local search).
pub(crate) fn define_openai_search(input: &[Value], tools: &mut Vec<Value>) {
    let replayed = input.iter().any(|item| {
        item["type"] == "tool_search_call" && item["execution"].as_str() != Some("client")
    });
    if replayed && !tools.iter().any(|tool| tool["type"] == "tool_search") {
        tools.push(json!({"type": "tool_search"}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_a_block_loaded() {
        let anthropic = json!({"type": "tool_search_tool_result", "tool_use_id": "s", "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "a"}, {"type": "tool_reference", "tool_name": "b"}]}});
        assert_eq!(loaded_by(&anthropic), ["a", "b"]);
        let openai = json!({"type": "tool_search_output", "tools": [
            {"type": "function", "name": "c"},
            {"type": "namespace", "name": "crm", "tools": [{"type": "function", "name": "d"}]}]});
        assert_eq!(loaded_by(&openai), ["c", "d"]);
        assert!(loaded_by(&json!({"type": "server_tool_use", "name": "x"})).is_empty());
        assert!(loaded_by(&json!({"type": "tool_search_tool_result", "content": 3})).is_empty());
    }

    #[test]
    fn anthropic_references_to_undefined_tools_are_defined_or_left_out() {
        let mut messages = vec![json!({"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "s", "name": "tool_search_tool_regex", "input": {}},
            {"type": "tool_search_tool_result", "tool_use_id": "s", "content": {
                "type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": "kept"},
                                    {"type": "tool_reference", "tool_name": "gone"}]}}]})];
        let mut tools = vec![json!({"name": "kept"})];
        let searches = [
            ("tool_search_tool_bm25_20251119", "tool_search_tool_bm25"),
            ("tool_search_tool_regex_20251119", "tool_search_tool_regex"),
        ];
        define_anthropic_references(&mut messages, &mut tools, &searches);
        assert_eq!(
            tools[1],
            json!({"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"})
        );
        assert_eq!(tools.len(), 2);
        assert_eq!(
            messages[0].pointer("/content/1/content/tool_references"),
            Some(&json!([{"type": "tool_reference", "tool_name": "kept"}]))
        );
    }
}
