//! Compaction as pi 0.73.1 does it (`core/compaction/compaction.ts` and `utils.ts`): when the
//! context nears the model's window (or the provider refuses it as too long), the older part of
//! the conversation is summarized by the model itself, and the session goes on from the summary
//! plus the most recent turns, kept word for word.
//!
//! - Tokens come from the provider's usage of the last answer, plus an estimate (characters / 4)
//!   of what came after it; with no usage at all, everything is estimated.
//! - The kept tail starts at a user or assistant message, never at a tool result, so every tool
//!   call keeps its result. When the cut falls inside a turn, the start of that turn is
//!   summarized separately (pi's "split turn").
//! - The summary is written into the session as pi writes it: a `compaction` entry with the
//!   summary, the first kept entry's id, the tokens before, and the files read and changed.

use std::sync::Arc;

use futures_util::StreamExt;
use pi_runtime::{
    AssistantContent, AssistantEvent, AssistantMessage, Context, Message, Model, StopReason,
    StreamOptions, ThinkingLevel,
};
use pi_tool::{Content, Usage};
use serde_json::{Value, json};

use crate::pi_session;

/// When to compact and what to keep (`settings.json`'s `compaction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactionSettings {
    /// Compact automatically (default true).
    pub enabled: bool,
    /// Tokens kept free for the answer: compaction starts when the context passes the window
    /// minus this (default 16384).
    pub reserve_tokens: u64,
    /// About this many recent tokens are kept word for word (default 20000).
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

/// Why a compaction ran (pi's `reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionReason {
    /// `/compact` or RPC's `compact`.
    Manual,
    /// The context passed the threshold.
    Threshold,
    /// The provider refused the context as too long; the turn is retried after.
    Overflow,
}

impl CompactionReason {
    /// pi's name: `manual`, `threshold`, `overflow`.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionReason::Manual => "manual",
            CompactionReason::Threshold => "threshold",
            CompactionReason::Overflow => "overflow",
        }
    }
}

/// What a compaction wrote (pi's `CompactionResult`).
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionResult {
    /// The summary the model wrote, with the file lists appended.
    pub summary: String,
    /// The entry the kept tail starts at.
    pub first_kept_entry_id: String,
    /// The context's tokens before compaction.
    pub tokens_before: u64,
    /// `{"readFiles": [...], "modifiedFiles": [...]}`.
    pub details: Value,
}

impl CompactionResult {
    /// pi's JSON for it (RPC's `compact` response, `compaction_end`).
    pub fn to_json(&self) -> Value {
        json!({
            "summary": self.summary,
            "firstKeptEntryId": self.first_kept_entry_id,
            "tokensBefore": self.tokens_before,
            "details": self.details,
        })
    }
}

/// pi's `SUMMARIZATION_SYSTEM_PROMPT`.
pub const SUMMARIZATION_SYSTEM_PROMPT: &str = "You are a context summarization assistant. Your task is to read a conversation between a user and an AI coding assistant, then produce a structured summary following the exact format specified.\n\nDo NOT continue the conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary.";

/// pi's `SUMMARIZATION_PROMPT`.
const SUMMARIZATION_PROMPT: &str = "The messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.\n\nUse this EXACT format:\n\n## Goal\n[What is the user trying to accomplish? Can be multiple items if the session covers different tasks.]\n\n## Constraints & Preferences\n- [Any constraints, preferences, or requirements mentioned by user]\n- [Or \"(none)\" if none were mentioned]\n\n## Progress\n### Done\n- [x] [Completed tasks/changes]\n\n### In Progress\n- [ ] [Current work]\n\n### Blocked\n- [Issues preventing progress, if any]\n\n## Key Decisions\n- **[Decision]**: [Brief rationale]\n\n## Next Steps\n1. [Ordered list of what should happen next]\n\n## Critical Context\n- [Any data, examples, or references needed to continue]\n- [Or \"(none)\" if not applicable]\n\nKeep each section concise. Preserve exact file paths, function names, and error messages.";

/// pi's `UPDATE_SUMMARIZATION_PROMPT`.
const UPDATE_SUMMARIZATION_PROMPT: &str = "The messages above are NEW conversation messages to incorporate into the existing summary provided in <previous-summary> tags.\n\nUpdate the existing structured summary with new information. RULES:\n- PRESERVE all existing information from the previous summary\n- ADD new progress, decisions, and context from the new messages\n- UPDATE the Progress section: move items from \"In Progress\" to \"Done\" when completed\n- UPDATE \"Next Steps\" based on what was accomplished\n- PRESERVE exact file paths, function names, and error messages\n- If something is no longer relevant, you may remove it\n\nUse this EXACT format:\n\n## Goal\n[Preserve existing goals, add new ones if the task expanded]\n\n## Constraints & Preferences\n- [Preserve existing, add new ones discovered]\n\n## Progress\n### Done\n- [x] [Include previously done items AND newly completed items]\n\n### In Progress\n- [ ] [Current work - update based on progress]\n\n### Blocked\n- [Current blockers - remove if resolved]\n\n## Key Decisions\n- **[Decision]**: [Brief rationale] (preserve all previous, add new)\n\n## Next Steps\n1. [Update based on current state]\n\n## Critical Context\n- [Preserve important context, add new if needed]\n\nKeep each section concise. Preserve exact file paths, function names, and error messages.";

/// pi's `TURN_PREFIX_SUMMARIZATION_PROMPT`.
const TURN_PREFIX_SUMMARIZATION_PROMPT: &str = "This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent work) is retained.\n\nSummarize the prefix to provide context for the retained suffix:\n\n## Original Request\n[What did the user ask for in this turn?]\n\n## Early Progress\n- [Key decisions and work done in the prefix]\n\n## Context for Suffix\n- [Information needed to understand the retained recent work]\n\nBe concise. Focus on what's needed to understand the kept suffix.";

/// pi's `TOOL_RESULT_MAX_CHARS`: tool results are cut to this many characters for the summary.
const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// pi's `calculateContextTokens`: the provider's total, else the sum of the parts.
pub fn context_tokens(usage: &Usage) -> u64 {
    if usage.total_tokens > 0 {
        usage.total_tokens
    } else {
        usage.input + usage.output + usage.cache_read + usage.cache_write
    }
}

/// pi's `estimateTokens` on a message of the transcript: characters / 4, rounded up (images
/// count 4800 characters).
pub fn estimate_tokens(message: &Message) -> u64 {
    let text_chars = |content: &[Content]| -> usize {
        content
            .iter()
            .map(|c| match c {
                Content::Text { text } => text.chars().count(),
                Content::Image { .. } => 4800,
            })
            .sum()
    };
    let chars = match message {
        Message::User(user) => user
            .content
            .iter()
            .map(|c| c.as_text().map_or(0, |t| t.chars().count()))
            .sum(),
        Message::Assistant(assistant) => assistant
            .content
            .iter()
            .map(|block| match block {
                AssistantContent::Text { text, .. } => text.chars().count(),
                AssistantContent::Thinking { thinking, .. } => thinking.chars().count(),
                AssistantContent::ToolCall(call) => {
                    call.call.name.chars().count() + call.call.arguments.to_string().chars().count()
                }
                // A hosted search's call or result, replayed as it came.
                AssistantContent::Provider(block) => block.block.to_string().chars().count(),
                // A kind of block pi does not have: its JSON, as it would be sent.
                other => serde_json::to_string(other).map_or(0, |json| json.chars().count()),
            })
            .sum(),
        Message::ToolResult(result) => text_chars(&result.content),
        Message::Custom(_) => 0,
    };
    (chars as u64).div_ceil(4)
}

/// pi's `estimateTokens` on a message entry as it is in the file (any pi role).
fn estimate_entry_tokens(message: &Value) -> u64 {
    let text = |content: &Value, images: bool| -> usize {
        match content {
            Value::String(text) => text.chars().count(),
            Value::Array(blocks) => blocks
                .iter()
                .map(|b| match b["type"].as_str() {
                    Some("text") => b["text"].as_str().map_or(0, |t| t.chars().count()),
                    Some("image") if images => 4800,
                    _ => 0,
                })
                .sum(),
            _ => 0,
        }
    };
    let len = |field: &Value| field.as_str().map_or(0, |t| t.chars().count());
    let chars = match message["role"].as_str() {
        Some("user") => text(&message["content"], false),
        Some("assistant") => message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| match b["type"].as_str() {
                Some("text") => len(&b["text"]),
                Some("thinking") => len(&b["thinking"]),
                Some("toolCall") => len(&b["name"]) + b["arguments"].to_string().chars().count(),
                _ => 0,
            })
            .sum(),
        Some("custom" | "toolResult") => text(&message["content"], true),
        Some("bashExecution") => len(&message["command"]) + len(&message["output"]),
        Some("branchSummary" | "compactionSummary") => len(&message["summary"]),
        _ => 0,
    };
    (chars as u64).div_ceil(4)
}

/// The context's size as pi's `estimateContextTokens` finds it: the last answer's usage plus an
/// estimate of every message after it; `last_usage` is that answer's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextEstimate {
    /// The estimated tokens of the whole context.
    pub tokens: u64,
    /// The index of the assistant message whose usage counted, if any.
    pub last_usage: Option<usize>,
}

/// pi's `estimateContextTokens`.
pub fn estimate_context_tokens(messages: &[Arc<Message>]) -> ContextEstimate {
    let last = messages.iter().enumerate().rev().find_map(|(i, m)| {
        let assistant = m.as_assistant()?;
        usable_usage(assistant).map(|usage| (i, usage))
    });
    match last {
        None => ContextEstimate {
            tokens: messages.iter().map(|m| estimate_tokens(m)).sum(),
            last_usage: None,
        },
        Some((index, usage)) => ContextEstimate {
            tokens: context_tokens(usage)
                + messages[index + 1..]
                    .iter()
                    .map(|m| estimate_tokens(m))
                    .sum::<u64>(),
            last_usage: Some(index),
        },
    }
}

/// An answer's usage, unless it was aborted or failed (pi's `getAssistantUsage`).
fn usable_usage(message: &AssistantMessage) -> Option<&Usage> {
    matches!(
        message.stop_reason,
        StopReason::Stop | StopReason::Length | StopReason::ToolUse
    )
    .then_some(&message.usage)
}

/// pi's `shouldCompact`: past the window minus the reserve.
pub fn should_compact(tokens: u64, context_window: u64, settings: &CompactionSettings) -> bool {
    settings.enabled && tokens > context_window.saturating_sub(settings.reserve_tokens)
}

/// pi's `isContextOverflow`: the provider's error says the input was too long, or a successful
/// answer's input exceeded the window (servers that accept too much and say nothing), or the
/// server truncated the input to fill the window and had no room to answer.
pub fn is_context_overflow(message: &AssistantMessage, context_window: u64) -> bool {
    static PATTERNS: std::sync::OnceLock<(regex::RegexSet, regex::RegexSet)> =
        std::sync::OnceLock::new();
    let (overflow, not_overflow) = PATTERNS.get_or_init(|| {
        let overflow = regex::RegexSet::new([
            r"(?i)prompt is too long",
            r"(?i)request_too_large",
            r"(?i)input is too long for requested model",
            r"(?i)exceeds the context window",
            r"(?i)input token count.*exceeds the maximum",
            r"(?i)maximum prompt length is \d+",
            r"(?i)reduce the length of the messages",
            r"(?i)maximum context length is \d+ tokens",
            r"(?i)exceeds the limit of \d+",
            r"(?i)exceeds the available context size",
            r"(?i)greater than the context length",
            r"(?i)context window exceeds limit",
            r"(?i)exceeded model token limit",
            r"(?i)too large for model with \d+ maximum context length",
            r"(?i)model_context_window_exceeded",
            r"(?i)prompt too long; exceeded (?:max )?context length",
            r"(?i)context[_ ]length[_ ]exceeded",
            r"(?i)too many tokens",
            r"(?i)token limit exceeded",
            r"(?i)^4(?:00|13)\s*(?:status code)?\s*\(no body\)",
        ])
        .unwrap_or_else(|_| regex::RegexSet::empty());
        let not_overflow = regex::RegexSet::new([
            r"(?i)^(Throttling error|Service unavailable):",
            r"(?i)rate limit",
            r"(?i)too many requests",
        ])
        .unwrap_or_else(|_| regex::RegexSet::empty());
        (overflow, not_overflow)
    });
    if message.stop_reason == StopReason::Error
        && let Some(error) = &message.error_message
        && !not_overflow.is_match(error)
        && overflow.is_match(error)
    {
        return true;
    }
    let input = message.usage.input + message.usage.cache_read;
    if context_window > 0 && message.stop_reason == StopReason::Stop && input > context_window {
        return true;
    }
    context_window > 0
        && message.stop_reason == StopReason::Length
        && message.usage.output == 0
        && input as f64 >= context_window as f64 * 0.99
}

/// Where the kept tail starts (pi's `CutPointResult`), as indices into the branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CutPoint {
    first_kept: usize,
    /// The user message the cut turn started at, when the cut splits a turn.
    turn_start: Option<usize>,
}

fn message_role(entry: &Value) -> Option<&str> {
    (entry["type"] == "message")
        .then(|| entry["message"]["role"].as_str())
        .flatten()
}

/// pi's `findValidCutPoints`: messages of any role but a tool result, branch summaries and
/// extension messages.
fn valid_cut_points(branch: &[&Value], start: usize, end: usize) -> Vec<usize> {
    (start..end)
        .filter(|&i| {
            let entry = branch[i];
            match message_role(entry) {
                Some("toolResult") => false,
                Some(_) => true,
                None => matches!(
                    entry["type"].as_str(),
                    Some("branch_summary" | "custom_message")
                ),
            }
        })
        .collect()
}

/// pi's `findTurnStartIndex`: the user message (or `!` command, branch summary, extension
/// message) that starts the turn holding `index`.
fn turn_start(branch: &[&Value], index: usize, start: usize) -> Option<usize> {
    (start..=index).rev().find(|&i| {
        let entry = branch[i];
        matches!(
            entry["type"].as_str(),
            Some("branch_summary" | "custom_message")
        ) || matches!(message_role(entry), Some("user" | "bashExecution"))
    })
}

/// pi's `findCutPoint`: walking back from the newest message, the first valid cut at or after
/// the message where `keep_recent` tokens are reached; settings entries just before it are kept
/// with it.
fn find_cut_point(branch: &[&Value], start: usize, end: usize, keep_recent: u64) -> CutPoint {
    let cuts = valid_cut_points(branch, start, end);
    let Some(&first) = cuts.first() else {
        return CutPoint {
            first_kept: start,
            turn_start: None,
        };
    };
    let mut cut = first;
    let mut accumulated = 0;
    for i in (start..end).rev() {
        if branch[i]["type"] != "message" {
            continue;
        }
        accumulated += estimate_entry_tokens(&branch[i]["message"]);
        if accumulated >= keep_recent {
            if let Some(&at) = cuts.iter().find(|&&c| c >= i) {
                cut = at;
            }
            break;
        }
    }
    while cut > start {
        let previous = branch[cut - 1];
        if previous["type"] == "compaction" || previous["type"] == "message" {
            break;
        }
        cut -= 1;
    }
    let is_user = message_role(branch[cut]) == Some("user");
    let turn_start = if is_user {
        None
    } else {
        turn_start(branch, cut, start)
    };
    CutPoint {
        first_kept: cut,
        turn_start,
    }
}

/// What a compaction will summarize and keep (pi's `CompactionPreparation`).
#[derive(Clone, Debug)]
pub struct Preparation {
    /// The entry the kept tail starts at.
    pub first_kept_entry_id: String,
    /// The messages summarized and dropped.
    pub to_summarize: Vec<Message>,
    /// The start of a turn the cut splits, summarized on its own.
    pub turn_prefix: Vec<Message>,
    /// The context's tokens before.
    pub tokens_before: u64,
    /// The summary of the compaction before, updated rather than rewritten.
    pub previous_summary: Option<String>,
    read_files: Vec<String>,
    modified_files: Vec<String>,
}

/// pi's `prepareCompaction` on the entries of the current branch: `None` when the branch ends
/// with a compaction, has nothing to keep from, or would keep everything.
pub fn prepare(branch: &[&Value], settings: &CompactionSettings) -> Option<Preparation> {
    if branch.last().is_some_and(|e| e["type"] == "compaction") {
        return None;
    }
    let previous = branch.iter().rposition(|e| e["type"] == "compaction");
    let mut previous_summary = None;
    let mut start = 0;
    let mut files = FileOps::default();
    if let Some(at) = previous {
        let compaction = branch[at];
        previous_summary = compaction["summary"].as_str().map(str::to_owned);
        start = branch
            .iter()
            .position(|e| e["id"] == compaction["firstKeptEntryId"])
            .unwrap_or(at + 1);
        if compaction["fromHook"] != true {
            for file in compaction["details"]["readFiles"]
                .as_array()
                .into_iter()
                .flatten()
            {
                files.add("read", file.as_str());
            }
            for file in compaction["details"]["modifiedFiles"]
                .as_array()
                .into_iter()
                .flatten()
            {
                files.add("edit", file.as_str());
            }
        }
    }
    let context = pi_session::branch_context(branch).ok()?;
    let messages: Vec<Arc<Message>> = context.messages.into_iter().map(Arc::new).collect();
    let tokens_before = estimate_context_tokens(&messages).tokens;
    let cut = find_cut_point(branch, start, branch.len(), settings.keep_recent_tokens);
    let first_kept_entry_id = branch.get(cut.first_kept)?["id"].as_str()?.to_owned();
    let history_end = cut.turn_start.unwrap_or(cut.first_kept);
    let messages_of = |range: std::ops::Range<usize>| -> Vec<Message> {
        branch[range]
            .iter()
            .filter(|e| e["type"] != "compaction")
            .filter_map(|e| pi_session::entry_message(e).ok().flatten())
            .collect()
    };
    let to_summarize = messages_of(start..history_end.max(start));
    let turn_prefix = match cut.turn_start {
        Some(turn) => messages_of(turn..cut.first_kept),
        None => Vec::new(),
    };
    if to_summarize.is_empty() && turn_prefix.is_empty() {
        // Everything would be kept: nothing to summarize (pi would ask the model anyway).
        return None;
    }
    for message in to_summarize.iter().chain(&turn_prefix) {
        files.extract(message);
    }
    let (read_files, modified_files) = files.lists();
    Some(Preparation {
        first_kept_entry_id,
        to_summarize,
        turn_prefix,
        tokens_before,
        previous_summary,
        read_files,
        modified_files,
    })
}

/// The files the summarized part read, wrote and edited (pi's `FileOperations`).
#[derive(Default)]
struct FileOps {
    read: std::collections::BTreeSet<String>,
    written: std::collections::BTreeSet<String>,
    edited: std::collections::BTreeSet<String>,
}

impl FileOps {
    fn add(&mut self, kind: &str, path: Option<&str>) {
        let Some(path) = path else { return };
        let set = match kind {
            "read" => &mut self.read,
            "write" => &mut self.written,
            "edit" => &mut self.edited,
            _ => return,
        };
        set.insert(path.to_owned());
    }

    /// pi's `extractFileOpsFromMessage`.
    fn extract(&mut self, message: &Message) {
        let Some(assistant) = message.as_assistant() else {
            return;
        };
        for call in assistant.tool_calls() {
            self.add(&call.call.name, call.call.arguments["path"].as_str());
        }
    }

    /// pi's `computeFileLists`: files only read, and files changed, each sorted.
    fn lists(&self) -> (Vec<String>, Vec<String>) {
        let modified: std::collections::BTreeSet<String> =
            self.edited.union(&self.written).cloned().collect();
        let read = self
            .read
            .iter()
            .filter(|f| !modified.contains(*f))
            .cloned()
            .collect();
        (read, modified.into_iter().collect())
    }
}

/// pi's `formatFileOperations`.
fn format_file_operations(read: &[String], modified: &[String]) -> String {
    let mut sections = Vec::new();
    if !read.is_empty() {
        sections.push(format!("<read-files>\n{}\n</read-files>", read.join("\n")));
    }
    if !modified.is_empty() {
        sections.push(format!(
            "<modified-files>\n{}\n</modified-files>",
            modified.join("\n")
        ));
    }
    if sections.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", sections.join("\n\n"))
    }
}

/// pi's `serializeConversation`: the messages as text, so the summarizer does not take them as
/// a conversation to continue. Tool results are cut to 2000 characters.
pub fn serialize_conversation(messages: &[Message]) -> String {
    let mut parts = Vec::new();
    for message in messages {
        match message {
            Message::User(user) => {
                let text: String = user.content.iter().filter_map(Content::as_text).collect();
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            Message::Assistant(assistant) => {
                let mut texts = Vec::new();
                let mut thinking = Vec::new();
                let mut calls = Vec::new();
                for block in &assistant.content {
                    match block {
                        AssistantContent::Text { text, .. } => texts.push(text.as_str()),
                        AssistantContent::Thinking { thinking: t, .. } => thinking.push(t.as_str()),
                        AssistantContent::ToolCall(call) => {
                            let args: Vec<String> = call
                                .call
                                .arguments
                                .as_object()
                                .into_iter()
                                .flatten()
                                .map(|(k, v)| format!("{k}={v}"))
                                .collect();
                            calls.push(format!("{}({})", call.call.name, args.join(", ")));
                        }
                        // The API's own bookkeeping (a search it ran), or a kind of block pi
                        // does not have: nothing to summarize.
                        _ => {}
                    }
                }
                if !thinking.is_empty() {
                    parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
                }
                if !texts.is_empty() {
                    parts.push(format!("[Assistant]: {}", texts.join("\n")));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            Message::ToolResult(result) => {
                let text: String = result.content.iter().filter_map(Content::as_text).collect();
                if !text.is_empty() {
                    parts.push(format!("[Tool result]: {}", truncate_for_summary(&text)));
                }
            }
            Message::Custom(_) => {}
        }
    }
    parts.join("\n\n")
}

/// pi's `truncateForSummary` (JavaScript counts UTF-16 units; characters are close enough and
/// never split one).
fn truncate_for_summary(text: &str) -> String {
    let count = text.chars().count();
    if count <= TOOL_RESULT_MAX_CHARS {
        return text.to_owned();
    }
    let kept: String = text.chars().take(TOOL_RESULT_MAX_CHARS).collect();
    format!(
        "{kept}\n\n[... {} more characters truncated]",
        count - TOOL_RESULT_MAX_CHARS
    )
}

/// How the summarizer is asked: the model, the request options (key, headers), and the
/// thinking level (used only when the model reasons).
pub struct Summarizer<'a> {
    /// The session's model.
    pub model: &'a dyn Model,
    /// The session's request options (its signal aborts the summary).
    pub options: StreamOptions,
    /// The thinking level; `None` when the model does not reason.
    pub thinking: Option<ThinkingLevel>,
}

impl Summarizer<'_> {
    /// One summary request (pi's `completeSimple`): the text of the answer, or why it failed.
    async fn ask(&self, prompt: String, max_tokens: u64) -> Result<String, String> {
        let messages = vec![Arc::new(Message::user(prompt))];
        let mut options = self.options.clone();
        options.max_tokens = Some(u32::try_from(max_tokens).unwrap_or(u32::MAX));
        options.thinking = self.thinking;
        options.tool_choice = None;
        let context = Context {
            system_prompt: SUMMARIZATION_SYSTEM_PROMPT,
            messages: &messages,
            tools: &[],
        };
        let mut stream = self.model.stream(context, &options);
        let mut last = None;
        while let Some(event) = stream.next().await {
            match event {
                AssistantEvent::Done { message, .. } => last = Some(message),
                AssistantEvent::Error { reason, error } => {
                    if reason == StopReason::Aborted {
                        return Err("Compaction cancelled".into());
                    }
                    return Err(error
                        .error_message
                        .unwrap_or_else(|| "Unknown error".into()));
                }
                _ => {}
            }
        }
        let message = last.ok_or("the model ended its answer without a result")?;
        Ok(message.text())
    }

    /// pi's `generateSummary`.
    async fn summary(
        &self,
        messages: &[Message],
        reserve_tokens: u64,
        instructions: Option<&str>,
        previous: Option<&str>,
    ) -> Result<String, String> {
        let mut base = if previous.is_some() {
            UPDATE_SUMMARIZATION_PROMPT.to_owned()
        } else {
            SUMMARIZATION_PROMPT.to_owned()
        };
        if let Some(instructions) = instructions.filter(|i| !i.is_empty()) {
            base.push_str(&format!("\n\nAdditional focus: {instructions}"));
        }
        let mut prompt = format!(
            "<conversation>\n{}\n</conversation>\n\n",
            serialize_conversation(messages)
        );
        if let Some(previous) = previous {
            prompt.push_str(&format!(
                "<previous-summary>\n{previous}\n</previous-summary>\n\n"
            ));
        }
        prompt.push_str(&base);
        self.ask(prompt, reserve_tokens * 8 / 10)
            .await
            .map_err(|err| summarization_error("Summarization failed", err))
    }

    /// pi's `generateTurnPrefixSummary`.
    async fn turn_prefix(
        &self,
        messages: &[Message],
        reserve_tokens: u64,
    ) -> Result<String, String> {
        let prompt = format!(
            "<conversation>\n{}\n</conversation>\n\n{TURN_PREFIX_SUMMARIZATION_PROMPT}",
            serialize_conversation(messages)
        );
        self.ask(prompt, reserve_tokens / 2)
            .await
            .map_err(|err| summarization_error("Turn prefix summarization failed", err))
    }

    /// pi's `compact`: the summary (both halves of a split turn, asked at once), with the file
    /// lists appended.
    pub async fn compact(
        &self,
        preparation: &Preparation,
        settings: &CompactionSettings,
        instructions: Option<&str>,
    ) -> Result<CompactionResult, String> {
        let previous = preparation.previous_summary.as_deref();
        let mut summary = if preparation.turn_prefix.is_empty() {
            self.summary(
                &preparation.to_summarize,
                settings.reserve_tokens,
                instructions,
                previous,
            )
            .await?
        } else {
            let history = async {
                if preparation.to_summarize.is_empty() {
                    Ok("No prior history.".to_owned())
                } else {
                    self.summary(
                        &preparation.to_summarize,
                        settings.reserve_tokens,
                        instructions,
                        previous,
                    )
                    .await
                }
            };
            let prefix = self.turn_prefix(&preparation.turn_prefix, settings.reserve_tokens);
            let (history, prefix) = futures_util::join!(history, prefix);
            format!(
                "{}\n\n---\n\n**Turn Context (split turn):**\n\n{}",
                history?, prefix?
            )
        };
        summary.push_str(&format_file_operations(
            &preparation.read_files,
            &preparation.modified_files,
        ));
        Ok(CompactionResult {
            summary,
            first_kept_entry_id: preparation.first_kept_entry_id.clone(),
            tokens_before: preparation.tokens_before,
            details: json!({
                "readFiles": preparation.read_files,
                "modifiedFiles": preparation.modified_files,
            }),
        })
    }
}

/// `Summarization failed: <why>`, but an abort stays `Compaction cancelled`.
fn summarization_error(what: &str, err: String) -> String {
    if err == "Compaction cancelled" {
        err
    } else {
        format!("{what}: {err}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, parent: Option<&str>, message: Value) -> Value {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z", "message": message})
    }

    fn text(role: &str, text: &str) -> Value {
        json!({"role": role, "content": [{"type": "text", "text": text}], "stopReason": "stop", "timestamp": 0})
    }

    #[test]
    fn the_cut_never_separates_a_tool_call_from_its_result() {
        let big = "x".repeat(400);
        let call = json!({"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.txt"}}], "stopReason": "toolUse", "timestamp": 0});
        let result = json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": big}], "isError": false, "timestamp": 0});
        let entries = [
            entry("u1", None, text("user", &big)),
            entry("a1", Some("u1"), text("assistant", &big)),
            entry("u2", Some("a1"), text("user", "read a.txt")),
            entry("a2", Some("u2"), call),
            entry("t2", Some("a2"), result),
            entry("a3", Some("t2"), text("assistant", "done")),
        ];
        let branch: Vec<&Value> = entries.iter().collect();
        // 100 tokens from the end is inside the tool result: the cut moves to the next valid
        // point after it, never onto the result itself.
        let cut = find_cut_point(&branch, 0, branch.len(), 100);
        assert_eq!(branch[cut.first_kept]["id"], "a3");
        assert_eq!(cut.turn_start, Some(2), "a split turn: it started at u2");
        let settings = CompactionSettings {
            keep_recent_tokens: 100,
            ..CompactionSettings::default()
        };
        let prepared = prepare(&branch, &settings).unwrap();
        assert_eq!(prepared.first_kept_entry_id, "a3");
        assert_eq!(prepared.to_summarize.len(), 2);
        assert_eq!(prepared.turn_prefix.len(), 3, "u2, the call and its result");
        assert_eq!(prepared.read_files, ["a.txt"]);
        // A budget reached at the user message keeps from it: no split.
        let cut = find_cut_point(&branch, 0, branch.len(), 108);
        assert_eq!(branch[cut.first_kept]["id"], "u2");
        assert_eq!(cut.turn_start, None);
    }

    #[test]
    fn overflow_errors_are_recognized_as_pi_recognizes_them() {
        let mut failed = AssistantMessage::failed(
            StopReason::Error,
            "400 Bad Request: This model's maximum context length is 8192 tokens. However, you requested about 9000 tokens",
        );
        assert!(is_context_overflow(&failed, 8192));
        failed.error_message = Some("429 Too Many Requests: rate limit: too many tokens".into());
        assert!(!is_context_overflow(&failed, 8192));
        let mut silent = AssistantMessage::new(vec![], StopReason::Stop);
        silent.usage.input = 9000;
        assert!(is_context_overflow(&silent, 8192));
        assert!(!is_context_overflow(&silent, 0));
    }

    #[test]
    fn the_conversation_is_serialized_for_the_summarizer() {
        let call = AssistantMessage::new(
            vec![
                AssistantContent::text("Let me look."),
                AssistantContent::tool_call("c1", "read", json!({"path": "a.txt"})),
            ],
            StopReason::ToolUse,
        );
        let long = "y".repeat(2005);
        let result: Message = serde_json::from_value(json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": long}], "isError": false, "timestamp": 0})).unwrap();
        let text = serialize_conversation(&[Message::user("hi"), Message::Assistant(call), result]);
        assert!(text.starts_with("[User]: hi\n\n[Assistant]: Let me look.\n\n[Assistant tool calls]: read(path=\"a.txt\")\n\n[Tool result]: yyy"), "{text}");
        assert!(
            text.ends_with("\n\n[... 5 more characters truncated]"),
            "{text}"
        );
        assert_eq!(
            format_file_operations(&["a".into()], &["b".into(), "c".into()]),
            "\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nb\nc\n</modified-files>"
        );
    }
}
