//! Reading pi's own session files (pi 0.73.1's `session-manager.ts`, format versions 1 to 3), so
//! a conversation started in pi can be resumed here.
//!
//! pi's file is a tree: a `session` header, then entries (`message`, `compaction`,
//! `branch_summary`, `custom_message`, `model_change`, `label`, ...) that each name their
//! `parentId`. The conversation is the path from the last entry (the leaf) up to the root, turned
//! into model messages as pi's `buildSessionContext` and `convertToLlm` do: a compaction's summary
//! replaces what it summarised, `!` commands, extension messages and branch summaries become user
//! messages with pi's texts. Version 1 files have no ids: their entries are one straight path.

use std::collections::HashMap;

use pi_runtime::{Message, UserMessage};
use pi_tool::Content;
use serde_json::Value;

/// pi's `COMPACTION_SUMMARY_PREFIX` and `_SUFFIX` (`core/messages.ts`).
const COMPACTION_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
const COMPACTION_SUFFIX: &str = "\n</summary>";
/// pi's `BRANCH_SUMMARY_PREFIX` and `_SUFFIX`.
const BRANCH_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const BRANCH_SUFFIX: &str = "</summary>";

/// The conversation a pi session file holds.
#[derive(Debug)]
pub(crate) struct PiSession {
    /// The header's format version (1 when absent, as pi reads it).
    pub(crate) version: u64,
    /// The session id from the header.
    pub(crate) id: String,
    /// The model messages of the current branch, oldest first.
    pub(crate) messages: Vec<Message>,
}

/// Whether a parsed header line is pi's (its timestamp is an ISO string; ours are numbers).
pub(crate) fn is_pi_header(header: &Value) -> bool {
    header["type"] == "session" && header["timestamp"].is_string() && header.get("format").is_none()
}

/// Builds the conversation from a pi file's parsed lines (`entries[0]` is the header). An entry
/// that cannot be a message of the conversation is an error naming it.
pub(crate) fn conversation(entries: &[Value]) -> Result<PiSession, String> {
    let header = entries.first().ok_or("the file is empty")?;
    let id = header["id"]
        .as_str()
        .ok_or("the session header has no id")?
        .to_owned();
    let version = header["version"].as_u64().unwrap_or(1);
    let body = &entries[1..];
    let path: Vec<&Value> = if version < 2 {
        body.iter().collect()
    } else {
        branch_path(body)
    };
    let mut messages = Vec::new();
    let compaction = path.iter().rposition(|e| e["type"] == "compaction");
    match compaction {
        None => {
            for entry in &path {
                append(entry, &mut messages)?;
            }
        }
        Some(at) => {
            let summary = &path[at];
            messages.push(user_text(
                &format!(
                    "{COMPACTION_PREFIX}{}{COMPACTION_SUFFIX}",
                    summary["summary"].as_str().unwrap_or_default()
                ),
                entry_time(summary),
            ));
            let first_kept = first_kept(summary, version, entries);
            let mut keeping = false;
            for entry in &path[..at] {
                if first_kept.is_some_and(|kept| std::ptr::eq(kept, *entry)) {
                    keeping = true;
                }
                if keeping {
                    append(entry, &mut messages)?;
                }
            }
            for entry in &path[at + 1..] {
                append(entry, &mut messages)?;
            }
        }
    }
    Ok(PiSession {
        version,
        id,
        messages,
    })
}

/// The entries from the root to the leaf (the last entry), following `parentId`.
fn branch_path(body: &[Value]) -> Vec<&Value> {
    let by_id: HashMap<&str, &Value> = body
        .iter()
        .filter_map(|e| Some((e["id"].as_str()?, e)))
        .collect();
    let mut path = Vec::new();
    let mut current = body.last();
    while let Some(entry) = current {
        // A cycle cannot come from pi, but must not hang us.
        if path.len() > body.len() {
            break;
        }
        path.push(entry);
        current = entry["parentId"]
            .as_str()
            .and_then(|id| by_id.get(id).copied());
    }
    path.reverse();
    path
}

/// The entry a compaction keeps from: `firstKeptEntryId` (v2+), or v1's `firstKeptEntryIndex`
/// into the whole file (header included), as pi's migration reads it.
fn first_kept<'a>(summary: &Value, version: u64, entries: &'a [Value]) -> Option<&'a Value> {
    if version < 2 {
        let index = usize::try_from(summary["firstKeptEntryIndex"].as_u64()?).ok()?;
        return entries.get(index).filter(|e| e["type"] != "session");
    }
    let id = summary["firstKeptEntryId"].as_str()?;
    entries.iter().find(|e| e["id"] == id)
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
fn bash_execution_text(message: &Value) -> String {
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

fn user_text(text: &str, timestamp: i64) -> Message {
    Message::User(UserMessage {
        content: vec![Content::text(text)],
        timestamp,
    })
}

/// A user message from pi's `string | (TextContent | ImageContent)[]` content.
fn user_content(content: &Value, timestamp: i64) -> Result<Message, String> {
    let content = match content {
        Value::String(text) => vec![Content::text(text.clone())],
        blocks => serde_json::from_value::<Vec<Content>>(blocks.clone())
            .map_err(|err| format!("message content: {err}"))?,
    };
    Ok(Message::User(UserMessage { content, timestamp }))
}

/// An entry's ISO timestamp in Unix milliseconds (0 when absent or unreadable).
fn entry_time(entry: &Value) -> i64 {
    entry["timestamp"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(0, |t| t.timestamp_millis())
}

fn describe(entry: &Value) -> String {
    entry["id"]
        .as_str()
        .map_or_else(|| "without id".to_owned(), |id| format!("\"{id}\""))
}
