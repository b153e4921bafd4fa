//! pi's session format (pi 0.73.1's `session-manager.ts`, version 3), which is also ours: the
//! entries of a file, their migration from older versions, and the conversation they hold.
//!
//! A file is a `session` header, then entries (`message`, `compaction`, `branch_summary`,
//! `custom_message`, `model_change`, `thinking_level_change`, `label`, `session_info`, ...) that
//! each name their `parentId`: a tree. The conversation is the path from the leaf (the last
//! entry) up to the root, turned into model messages as pi's `buildSessionContext` and
//! `convertToLlm` do: a compaction's summary replaces what it summarised, `!` commands,
//! extension messages and branch summaries become user messages with pi's texts.
//!
//! Older files are brought to version 3 as pi's `migrateToCurrentVersion` does (version 1 had no
//! ids: its entries are one straight path); so are files of this crate's own earlier format
//! (`"format":"pi-tool"`, versions 1 and 2), and files pi appended to without ids of ours to
//! point at.

use std::collections::{HashMap, HashSet};

use pi_runtime::{Message, UserMessage};
use pi_tool::Content;
use serde_json::{Value, json};

/// The format version pi 0.73.1 writes, and so do we.
pub(crate) const CURRENT_VERSION: u64 = 3;

/// pi's `COMPACTION_SUMMARY_PREFIX` and `_SUFFIX` (`core/messages.ts`).
pub(crate) const COMPACTION_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
pub(crate) const COMPACTION_SUFFIX: &str = "\n</summary>";
/// pi's `BRANCH_SUMMARY_PREFIX` and `_SUFFIX`.
const BRANCH_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const BRANCH_SUFFIX: &str = "</summary>";

/// The `format` field of this crate's earlier headers (versions 1 and 2).
const OLD_FORMAT_NAME: &str = "pi-tool";

/// What the entries on a branch give a model: the messages, and the model and thinking level
/// last set on it (pi's `SessionContext`).
#[derive(Clone, Debug, Default)]
pub(crate) struct BranchContext {
    /// The model messages, oldest first.
    pub(crate) messages: Vec<Message>,
    /// The last `thinking_level_change` on the branch, if any.
    pub(crate) thinking_level: Option<String>,
    /// The last `model_change` or assistant message's provider and model id.
    pub(crate) model: Option<(String, String)>,
}

/// A new entry id: 8 hex characters not yet used in the file (pi's `generateId`).
pub(crate) fn new_entry_id(taken: &impl Fn(&str) -> bool) -> String {
    for _ in 0..100 {
        let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
        if !taken(&id) {
            return id;
        }
    }
    uuid::Uuid::new_v4().to_string()
}

/// A session id: a UUID v7, so ids sort by creation time (pi's `createSessionId`).
pub(crate) fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Unix milliseconds as pi's ISO timestamp: `2026-12-01T12:31:57.049Z`.
pub(crate) fn iso_time(ms: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// An entry's ISO timestamp in Unix milliseconds (0 when absent or unreadable).
pub(crate) fn entry_time(entry: &Value) -> i64 {
    entry["timestamp"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(0, |t| t.timestamp_millis())
}

/// Whether a parsed header is one of this crate's earlier format (`"format":"pi-tool"`).
pub(crate) fn is_old_format(header: &Value) -> bool {
    header["format"] == OLD_FORMAT_NAME
}

/// Brings a file's lines (`lines[0]` is the header) to version 3 in place; `true` when anything
/// changed, so the file is rewritten as pi rewrites a file it migrates.
///
/// - pi's version 1 (no ids): ids and parents in file order, `firstKeptEntryIndex` to
///   `firstKeptEntryId`; version 2: the `hookMessage` role renamed `custom` (pi's migrations).
/// - Ours, versions 1 and 2: a numeric header timestamp and `message` lines without ids; the
///   header becomes pi's, each message an entry with an id, a parent and an ISO timestamp.
/// - Entries without an id (ours, in a file pi then appended to) get one, and an entry that
///   names no parent at all follows the entry before it.
pub(crate) fn migrate(lines: &mut [Value]) -> bool {
    let Some((header, entries)) = lines.split_first_mut() else {
        return false;
    };
    let mut changed = false;
    let old_format = is_old_format(header);
    let version = header["version"].as_u64().unwrap_or(1);
    if old_format || version < CURRENT_VERSION {
        changed = true;
        if let Value::Object(map) = header {
            map.remove("format");
            map.insert("version".into(), json!(CURRENT_VERSION));
            if let Some(ms) = map.get("timestamp").and_then(Value::as_i64) {
                map.insert("timestamp".into(), json!(iso_time(ms)));
            }
        }
    }
    // Ids for entries that have none, parents for entries that name none (`null` is a root and
    // stays one), as pi's v1 migration does for a whole file.
    let mut taken: HashSet<String> = entries
        .iter()
        .filter_map(|e| e["id"].as_str().map(str::to_owned))
        .collect();
    let mut previous: Option<String> = None;
    let mut by_old_index: HashMap<usize, String> = HashMap::new();
    for (index, entry) in entries.iter_mut().enumerate() {
        let Value::Object(map) = entry else { continue };
        if !map.get("id").is_some_and(Value::is_string) {
            let id = new_entry_id(&|id| taken.contains(id));
            taken.insert(id.clone());
            map.insert("id".into(), json!(id));
            changed = true;
        }
        if !map.contains_key("parentId") {
            map.insert("parentId".into(), json!(previous));
            changed = true;
        }
        if !map.get("timestamp").is_some_and(Value::is_string) {
            let ms = map
                .get("message")
                .and_then(|m| m["timestamp"].as_i64())
                .or_else(|| map.get("timestamp").and_then(Value::as_i64))
                .unwrap_or_default();
            map.insert("timestamp".into(), json!(iso_time(ms)));
            changed = true;
        }
        if let Some(Value::Object(message)) = map.get_mut("message")
            && message.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            message.insert("role".into(), json!("custom"));
            changed = true;
        }
        let id = map["id"].as_str().unwrap_or_default().to_owned();
        // `firstKeptEntryIndex` counts the header as entry 0.
        by_old_index.insert(index + 1, id.clone());
        previous = Some(id);
    }
    for entry in entries.iter_mut() {
        let Value::Object(map) = entry else { continue };
        if let Some(index) = map.get("firstKeptEntryIndex").and_then(Value::as_u64) {
            if let Some(id) = usize::try_from(index)
                .ok()
                .and_then(|i| by_old_index.get(&i))
            {
                map.insert("firstKeptEntryId".into(), json!(id));
            }
            map.remove("firstKeptEntryIndex");
            changed = true;
        }
    }
    changed
}

/// The indices of the entries from the root to `leaf` (`entries` holds no header), following
/// `parentId`; `None` for the leaf means the last entry.
pub(crate) fn branch_indices(
    entries: &[Value],
    index: &HashMap<String, usize>,
    leaf: Option<&str>,
) -> Vec<usize> {
    let mut path = Vec::new();
    let mut current = match leaf {
        Some(id) => index.get(id).copied(),
        None => entries.len().checked_sub(1),
    };
    while let Some(at) = current {
        // A cycle cannot come from pi, but must not hang us.
        if path.len() > entries.len() {
            break;
        }
        path.push(at);
        current = entries[at]["parentId"]
            .as_str()
            .and_then(|id| index.get(id).copied())
            .filter(|parent| *parent != at);
    }
    path.reverse();
    path
}

/// The conversation, model and thinking level of a branch (pi's `buildSessionContext` followed
/// by `convertToLlm`). An entry that cannot be a message of the conversation is an error naming
/// it.
pub(crate) fn branch_context(path: &[&Value]) -> Result<BranchContext, String> {
    let mut context = BranchContext::default();
    let mut compaction = None;
    for (at, entry) in path.iter().enumerate() {
        match entry["type"].as_str() {
            Some("thinking_level_change") => {
                context.thinking_level = entry["thinkingLevel"].as_str().map(str::to_owned);
            }
            Some("model_change") => {
                if let (Some(provider), Some(model)) =
                    (entry["provider"].as_str(), entry["modelId"].as_str())
                {
                    context.model = Some((provider.to_owned(), model.to_owned()));
                }
            }
            Some("message") if entry["message"]["role"] == "assistant" => {
                let message = &entry["message"];
                if let (Some(provider), Some(model)) =
                    (message["provider"].as_str(), message["model"].as_str())
                {
                    context.model = Some((provider.to_owned(), model.to_owned()));
                }
            }
            Some("compaction") => compaction = Some(at),
            _ => {}
        }
    }
    let messages = &mut context.messages;
    match compaction {
        None => {
            for entry in path {
                append(entry, messages)?;
            }
        }
        Some(at) => {
            let summary = path[at];
            messages.push(compaction_summary(
                summary["summary"].as_str().unwrap_or_default(),
                entry_time(summary),
            ));
            let first_kept = summary["firstKeptEntryId"].as_str();
            let mut keeping = false;
            for entry in &path[..at] {
                if first_kept.is_some() && entry["id"].as_str() == first_kept {
                    keeping = true;
                }
                if keeping {
                    append(entry, messages)?;
                }
            }
            for entry in &path[at + 1..] {
                append(entry, messages)?;
            }
        }
    }
    Ok(context)
}

/// The branch's messages as pi keeps them in the agent's state (`buildSessionContext`'s
/// `messages`, before `convertToLlm`): `bashExecution`, `custom`, `compactionSummary` and
/// `branchSummary` messages as they are, for RPC's `get_messages`.
pub(crate) fn branch_agent_messages(path: &[&Value]) -> Vec<Value> {
    let message_of = |entry: &Value| -> Option<Value> {
        match entry["type"].as_str()? {
            "message" => Some(entry["message"].clone()),
            "custom_message" => Some(json!({
                "role": "custom",
                "customType": entry["customType"],
                "content": entry["content"],
                "display": entry["display"],
                "details": entry["details"],
                "timestamp": entry_time(entry),
            })),
            "branch_summary" if entry["summary"].as_str().is_some_and(|s| !s.is_empty()) => {
                Some(json!({
                    "role": "branchSummary",
                    "summary": entry["summary"],
                    "fromId": entry["fromId"],
                    "timestamp": entry_time(entry),
                }))
            }
            _ => None,
        }
    };
    let mut messages = Vec::new();
    match path.iter().rposition(|e| e["type"] == "compaction") {
        None => messages.extend(path.iter().filter_map(|e| message_of(e))),
        Some(at) => {
            let compaction = path[at];
            messages.push(json!({
                "role": "compactionSummary",
                "summary": compaction["summary"],
                "tokensBefore": compaction["tokensBefore"],
                "timestamp": entry_time(compaction),
            }));
            let first_kept = compaction["firstKeptEntryId"].as_str();
            let kept_from = path[..at]
                .iter()
                .position(|e| first_kept.is_some() && e["id"].as_str() == first_kept)
                .unwrap_or(at);
            messages.extend(path[kept_from..at].iter().filter_map(|e| message_of(e)));
            messages.extend(path[at + 1..].iter().filter_map(|e| message_of(e)));
        }
    }
    messages
}

/// The user message a compaction summary becomes (pi's `compactionSummary` through
/// `convertToLlm`).
pub(crate) fn compaction_summary(summary: &str, timestamp: i64) -> Message {
    user_text(
        &format!("{COMPACTION_PREFIX}{summary}{COMPACTION_SUFFIX}"),
        timestamp,
    )
}

/// The message one entry gives the model, if any (pi's `getMessageFromEntry` + `convertToLlm`;
/// a compaction entry gives its summary).
pub(crate) fn entry_message(entry: &Value) -> Result<Option<Message>, String> {
    if entry["type"] == "compaction" {
        return Ok(Some(compaction_summary(
            entry["summary"].as_str().unwrap_or_default(),
            entry_time(entry),
        )));
    }
    let mut messages = Vec::new();
    append(entry, &mut messages)?;
    Ok(messages.pop())
}

/// Adds what one entry contributes to the model's context (most entries add nothing).
fn append(entry: &Value, messages: &mut Vec<Message>) -> Result<(), String> {
    match entry["type"].as_str() {
        Some("message") => {
            let message = &entry["message"];
            match message["role"].as_str() {
                Some("user" | "assistant" | "toolResult") => {
                    let parsed =
                        serde_json::from_value::<Message>(message.clone()).map_err(|err| {
                            format!("entry {}: not a message: {err}", describe(entry))
                        })?;
                    messages.push(parsed);
                }
                Some("bashExecution") if message["excludeFromContext"] != true => {
                    let timestamp = message["timestamp"].as_i64().unwrap_or_default();
                    messages.push(user_text(&bash_execution_text(message), timestamp));
                }
                Some("custom" | "hookMessage") => {
                    messages.push(user_content(
                        &message["content"],
                        message["timestamp"].as_i64().unwrap_or_default(),
                    )?);
                }
                Some("compactionSummary") => messages.push(compaction_summary(
                    message["summary"].as_str().unwrap_or_default(),
                    message["timestamp"].as_i64().unwrap_or_default(),
                )),
                Some("branchSummary") => messages.push(user_text(
                    &format!(
                        "{BRANCH_PREFIX}{}{BRANCH_SUFFIX}",
                        message["summary"].as_str().unwrap_or_default()
                    ),
                    message["timestamp"].as_i64().unwrap_or_default(),
                )),
                _ => {}
            }
        }
        Some("custom_message") => {
            messages.push(user_content(&entry["content"], entry_time(entry))?);
        }
        Some("branch_summary") => {
            if let Some(summary) = entry["summary"].as_str().filter(|s| !s.is_empty()) {
                messages.push(user_text(
                    &format!("{BRANCH_PREFIX}{summary}{BRANCH_SUFFIX}"),
                    entry_time(entry),
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// pi's `bashExecutionToText`: what a `!command` the user ran looks like to the model.
pub(crate) fn bash_execution_text(message: &Value) -> String {
    let command = message["command"].as_str().unwrap_or_default();
    let mut text = format!("Ran `{command}`\n");
    match message["output"].as_str().filter(|o| !o.is_empty()) {
        Some(output) => text.push_str(&format!("```\n{output}\n```")),
        None => text.push_str("(no output)"),
    }
    if message["cancelled"] == true {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = message["exitCode"].as_i64().filter(|c| *c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if message["truncated"] == true
        && let Some(path) = message["fullOutputPath"].as_str().filter(|p| !p.is_empty())
    {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

pub(crate) fn user_text(text: &str, timestamp: i64) -> Message {
    Message::User(UserMessage::text(text).with_timestamp(timestamp))
}

/// A user message from pi's `string | (TextContent | ImageContent)[]` content.
fn user_content(content: &Value, timestamp: i64) -> Result<Message, String> {
    let content = match content {
        Value::String(text) => vec![Content::text(text.clone())],
        blocks => serde_json::from_value::<Vec<Content>>(blocks.clone())
            .map_err(|err| format!("message content: {err}"))?,
    };
    Ok(Message::User(
        UserMessage::new(content).with_timestamp(timestamp),
    ))
}

fn describe(entry: &Value) -> String {
    entry["id"]
        .as_str()
        .map_or_else(|| "without id".to_owned(), |id| format!("\"{id}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_files_of_ours_become_version_3_with_a_chain_of_ids() {
        let mut lines = vec![
            json!({"type":"session","format":"pi-tool","version":2,"id":"abc","timestamp":1796128317055_i64,"cwd":"/p"}),
            json!({"type":"message","message":{"role":"user","content":"hi","timestamp":1796128317055_i64}}),
            json!({"type":"message","message":{"role":"user","content":"again","timestamp":1796128317056_i64}}),
        ];
        assert!(migrate(&mut lines));
        assert_eq!(
            lines[0],
            json!({"type":"session","version":3,"id":"abc","timestamp":"2026-12-01T12:31:57.055Z","cwd":"/p"})
        );
        assert_eq!(lines[1]["parentId"], Value::Null);
        assert_eq!(lines[2]["parentId"], lines[1]["id"]);
        assert_eq!(lines[2]["timestamp"], "2026-12-01T12:31:57.056Z");
        assert!(!migrate(&mut lines), "a second pass changes nothing");
    }

    #[test]
    fn pi_version_1_compactions_point_at_their_kept_entry_by_id() {
        let mut lines = vec![
            json!({"type":"session","id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}),
            json!({"type":"message","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"a","timestamp":0}}),
            json!({"type":"message","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"b","timestamp":0}}),
            json!({"type":"compaction","timestamp":"2026-01-01T00:00:00.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":1}),
        ];
        assert!(migrate(&mut lines));
        assert_eq!(lines[3]["firstKeptEntryId"], lines[2]["id"]);
        assert!(lines[3].get("firstKeptEntryIndex").is_none());
        assert_eq!(lines[0]["version"], 3);
    }
}
