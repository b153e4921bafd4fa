//! The conversation as the interface shows it, built from the agent's events: the user's
//! messages on a dark background, the model's answers as markdown with its thinking (in grey
//! italics, or one `Thinking...` line when hidden with Ctrl+T), and each tool call as pi draws
//! it: a box with the call (`$ command`, `read path`), its output collapsed to a few lines
//! (Ctrl+O shows all of it), and its time; grey while it runs, green when done, red on error.
//! Each item keeps its rendered lines until it changes or the width does.

use pi_runtime::{AgentEvent, AssistantContent, AssistantEvent, Message, StopReason};
use serde_json::Value;

use super::markdown;
use super::text::{Color, Span, Style, pad, sanitize, to_ansi, wrap};

/// Lines of a tool's output shown collapsed: the last ones for `bash` (pi's 5), the first for
/// the others (pi's 10).
const BASH_PREVIEW: usize = 5;
const PREVIEW: usize = 10;
/// Most lines of a tool's output shown expanded.
const EXPANDED_MAX: usize = 2000;

/// How items are drawn: what Ctrl+O and Ctrl+T toggle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Look {
    pub(crate) width: usize,
    pub(crate) expanded: bool,
    pub(crate) show_thinking: bool,
}

/// One thing in the conversation.
#[derive(Debug)]
pub(crate) enum Item {
    User {
        text: String,
        images: usize,
    },
    Assistant {
        /// Thinking (`true`) and text (`false`) blocks, by content index.
        blocks: Vec<(usize, bool, String)>,
        error: Option<String>,
        aborted: bool,
    },
    Tool {
        id: String,
        label: String,
        bash: bool,
        output: String,
        /// Lines starting with `+`/`-` coloured (an edit's diff).
        diff: bool,
        /// `None` while it runs; else whether it failed, and its time.
        done: Option<(bool, u64)>,
    },
    /// A line of the interface's own (a command's output, a notice, an error).
    Note {
        text: String,
        style: Style,
    },
}

/// An item with its rendered lines kept.
struct Entry {
    item: Item,
    cache: Option<(Look, Vec<String>)>,
}

/// The conversation so far.
#[derive(Default)]
pub(crate) struct Conversation {
    entries: Vec<Entry>,
    /// The assistant message streaming now (its entry index).
    streaming: Option<usize>,
    /// Time each call spent waiting for approval, to leave out of its time.
    waits: std::collections::HashMap<String, u64>,
}

impl Conversation {
    pub(crate) fn push(&mut self, item: Item) {
        self.entries.push(Entry { item, cache: None });
    }

    /// A note of the interface's own.
    pub(crate) fn note(&mut self, text: impl Into<String>, style: Style) {
        self.push(Item::Note {
            text: text.into(),
            style,
        });
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.streaming = None;
    }

    fn touch(&mut self, index: usize) -> Option<&mut Item> {
        let entry = self.entries.get_mut(index)?;
        entry.cache = None;
        Some(&mut entry.item)
    }

    /// All the lines of the conversation.
    pub(crate) fn lines(&mut self, look: Look, out: &mut Vec<String>) {
        for entry in &mut self.entries {
            if entry.cache.as_ref().is_none_or(|(l, _)| *l != look) {
                let lines = render(&entry.item, look);
                entry.cache = Some((look, lines));
            }
            if let Some((_, lines)) = &entry.cache {
                out.extend(lines.iter().cloned());
            }
        }
    }

    pub(crate) fn approval_wait(&mut self, call_id: &str, ms: u64) {
        self.waits.insert(call_id.to_owned(), ms);
    }

    /// Takes in one of the agent's events.
    pub(crate) fn event(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart { message } if matches!(**message, Message::Assistant(_)) => {
                self.push(Item::Assistant {
                    blocks: Vec::new(),
                    error: None,
                    aborted: false,
                });
                self.streaming = Some(self.entries.len() - 1);
            }
            AgentEvent::MessageUpdate { event } => {
                let Some(index) = self.streaming else { return };
                let (content_index, thinking, delta) = match &**event {
                    AssistantEvent::TextDelta {
                        content_index,
                        delta,
                    } => (*content_index, false, delta.as_str()),
                    AssistantEvent::ThinkingDelta {
                        content_index,
                        delta,
                    } => (*content_index, true, delta.as_str()),
                    _ => return,
                };
                if let Some(Item::Assistant { blocks, .. }) = self.touch(index) {
                    match blocks.iter_mut().find(|(i, _, _)| *i == content_index) {
                        Some(block) => block.2.push_str(delta),
                        None => blocks.push((content_index, thinking, delta.to_owned())),
                    }
                }
            }
            AgentEvent::MessageEnd { message } => self.message_end(message),
            AgentEvent::ToolExecutionStart { call } => {
                let (label, bash) = label(call.name(), call.arguments());
                self.push(Item::Tool {
                    id: call.id().to_owned(),
                    label,
                    bash,
                    output: String::new(),
                    diff: false,
                    done: None,
                });
            }
            AgentEvent::ToolExecutionUpdate {
                call,
                partial_result,
            } => {
                if let Some(index) = self.tool(call.id())
                    && let Some(Item::Tool { output, .. }) = self.touch(index)
                {
                    *output = sanitize(&partial_result.text_content());
                }
            }
            AgentEvent::ToolExecutionEnd {
                call,
                result,
                is_error,
                duration_ms,
                ..
            } => {
                let wait = self.waits.remove(call.id()).unwrap_or(0);
                let Some(index) = self.tool(call.id()) else {
                    return;
                };
                let result = result.as_tool_result();
                let text = result.map(|r| r.text()).unwrap_or_default();
                let edit_diff = result
                    .filter(|r| r.tool_name == "edit" && !r.is_error)
                    .and_then(|r| r.details.get("diff").and_then(Value::as_str))
                    .map(str::to_owned);
                if let Some(Item::Tool {
                    output, done, diff, ..
                }) = self.touch(index)
                {
                    *diff = edit_diff.is_some();
                    *output = sanitize(&edit_diff.unwrap_or(text));
                    *done = Some((*is_error, duration_ms.saturating_sub(wait)));
                }
            }
            _ => {}
        }
    }

    /// A running tool's output so far (the user's `!command`).
    pub(crate) fn tool_output(&mut self, id: &str, text: &str) {
        if let Some(index) = self.tool(id)
            && let Some(Item::Tool { output, .. }) = self.touch(index)
        {
            *output = sanitize(text);
        }
    }

    /// A tool's end: its whole output, whether it failed, its time.
    pub(crate) fn tool_done(&mut self, id: &str, text: &str, failed: bool, ms: u64) {
        if let Some(index) = self.tool(id)
            && let Some(Item::Tool { output, done, .. }) = self.touch(index)
        {
            *output = sanitize(text);
            *done = Some((failed, ms));
        }
    }

    /// Shows a resumed conversation: its messages as they were shown when they came.
    pub(crate) fn replay(&mut self, messages: &[std::sync::Arc<Message>]) {
        for message in messages {
            match &**message {
                Message::Assistant(assistant) => {
                    self.event(&AgentEvent::MessageStart {
                        message: std::sync::Arc::clone(message),
                    });
                    self.message_end(message);
                    for call in assistant.tool_calls() {
                        let (label, bash) = label(&call.call.name, &call.call.arguments);
                        self.push(Item::Tool {
                            id: call.call.id.clone(),
                            label,
                            bash,
                            output: String::new(),
                            diff: false,
                            done: None,
                        });
                    }
                }
                Message::ToolResult(result) => {
                    if let Some(index) = self.tool(&result.tool_call_id)
                        && let Some(Item::Tool { output, done, .. }) = self.touch(index)
                    {
                        *output = sanitize(&result.text());
                        *done = Some((result.is_error, result.duration_ms.unwrap_or(0)));
                    }
                }
                other => self.message_end(other),
            }
        }
    }

    fn tool(&self, id: &str) -> Option<usize> {
        self.entries
            .iter()
            .rposition(|e| matches!(&e.item, Item::Tool { id: i, .. } if i == id))
    }

    fn message_end(&mut self, message: &Message) {
        match message {
            Message::User(user) => {
                let text: Vec<&str> = user.content.iter().filter_map(|c| c.as_text()).collect();
                let images = user.content.len() - text.len();
                self.push(Item::User {
                    text: sanitize(&text.join("\n")),
                    images,
                });
            }
            Message::Assistant(assistant) => {
                let Some(index) = self.streaming.take() else {
                    return;
                };
                let blocks: Vec<(usize, bool, String)> = assistant
                    .content
                    .iter()
                    .enumerate()
                    .filter_map(|(i, block)| match block {
                        AssistantContent::Text { text, .. } if !text.trim().is_empty() => {
                            Some((i, false, sanitize(text)))
                        }
                        AssistantContent::Thinking { thinking, .. }
                            if !thinking.trim().is_empty() =>
                        {
                            Some((i, true, sanitize(thinking)))
                        }
                        _ => None,
                    })
                    .collect();
                let error = (assistant.stop_reason == StopReason::Error).then(|| {
                    sanitize(
                        assistant
                            .error_message
                            .as_deref()
                            .unwrap_or("the model request failed"),
                    )
                });
                let aborted = assistant.stop_reason == StopReason::Aborted;
                if blocks.is_empty() && error.is_none() && !aborted {
                    // Only tool calls: their boxes say it all.
                    self.entries.remove(index);
                    return;
                }
                if let Some(Item::Assistant {
                    blocks: shown,
                    error: e,
                    aborted: a,
                }) = self.touch(index)
                {
                    *shown = blocks;
                    *e = error;
                    *a = aborted;
                }
            }
            Message::Custom(custom) => {
                if let Some((added, removed)) = custom.changed_tools() {
                    let added = added.iter().map(|name| format!("+{name}"));
                    let removed = removed.iter().map(|name| format!("-{name}"));
                    let changes: Vec<String> = added.chain(removed).collect();
                    self.note(
                        format!("tools changed: {}", changes.join(" ")),
                        Style::fg(Color::Gray),
                    );
                }
            }
            Message::ToolResult(_) => {}
        }
    }
}

/// The call as pi titles it: `$ command` for bash, `read path`, `grep pattern in path`, else
/// the name and the arguments as JSON.
fn label(name: &str, args: &Value) -> (String, bool) {
    let field = |key: &str| args.get(key).and_then(Value::as_str);
    let text = match name {
        "bash" => field("command").map(|c| format!("$ {c}")),
        "read" | "write" | "edit" | "ls" => field("path").map(|p| format!("{name} {p}")),
        "grep" | "find" => field("pattern").map(|p| match field("path") {
            Some(path) => format!("{name} {p} in {path}"),
            None => format!("{name} {p}"),
        }),
        _ => None,
    }
    .unwrap_or_else(|| format!("{name} {args}"));
    (sanitize(&text).replace('\n', " "), name == "bash")
}

/// An item's lines, each no wider than `look.width`.
fn render(item: &Item, look: Look) -> Vec<String> {
    let width = look.width.max(4);
    let mut out = vec![String::new()];
    match item {
        Item::User { text, images } => {
            let bg = Style::default().with_bg(Color::DarkBg);
            let mut text = text.clone();
            if *images > 0 {
                text.push_str(&format!("\n[{images} image(s) attached]"));
            }
            for line in wrap(&[Span::new(bg, text)], width - 2) {
                let mut spans = vec![Span::new(bg, " ")];
                spans.extend(line);
                out.push(to_ansi(&pad(&spans, width, bg)));
            }
        }
        Item::Assistant {
            blocks,
            error,
            aborted,
        } => {
            for (_, thinking, text) in blocks {
                if *thinking {
                    let style = Style::fg(Color::Gray).italic();
                    if look.show_thinking {
                        for line in wrap(&[Span::new(style, text.trim())], width) {
                            out.push(to_ansi(&line));
                        }
                    } else {
                        out.push(to_ansi(&[Span::new(style, "Thinking...")]));
                    }
                    out.push(String::new());
                } else {
                    for line in markdown::render(text, width) {
                        out.push(to_ansi(&line));
                    }
                }
            }
            if let Some(error) = error {
                for line in wrap(
                    &[Span::new(Style::fg(Color::Red), format!("Error: {error}"))],
                    width,
                ) {
                    out.push(to_ansi(&line));
                }
            } else if *aborted {
                out.push(to_ansi(&[Span::new(
                    Style::fg(Color::Red),
                    "Operation aborted",
                )]));
            }
            while out.len() > 1 && out.last().is_some_and(String::is_empty) {
                out.pop();
            }
        }
        Item::Tool {
            label,
            bash,
            output,
            diff,
            done,
            ..
        } => {
            let bg = match done {
                None => Color::DarkBg,
                Some((false, _)) => Color::GreenBg,
                Some((true, _)) => Color::RedBg,
            };
            let base = Style::default().with_bg(bg);
            let boxed = |spans: Vec<Span>| to_ansi(&pad(&spans, width, base));
            out.push(boxed(Vec::new()));
            for line in wrap(&[Span::new(base.bold(), label.clone())], width - 2) {
                let mut spans = vec![Span::new(base, " ")];
                spans.extend(line);
                out.push(boxed(spans));
            }
            let lines: Vec<&str> = output.trim_end_matches('\n').lines().collect();
            if !lines.is_empty() {
                out.push(boxed(Vec::new()));
            }
            let (shown, hidden_note): (Vec<&str>, Option<String>) = if look.expanded {
                let shown: Vec<&str> = lines.iter().take(EXPANDED_MAX).copied().collect();
                let rest = lines.len() - shown.len();
                (
                    shown,
                    (rest > 0).then(|| format!("... ({rest} more lines)")),
                )
            } else if *bash && lines.len() > BASH_PREVIEW {
                let skipped = lines.len() - BASH_PREVIEW;
                (
                    lines[skipped..].to_vec(),
                    Some(format!("... ({skipped} earlier lines, ctrl+o to expand)")),
                )
            } else if !*bash && lines.len() > PREVIEW {
                let rest = lines.len() - PREVIEW;
                (
                    lines[..PREVIEW].to_vec(),
                    Some(format!("... ({rest} more lines, ctrl+o to expand)")),
                )
            } else {
                (lines.clone(), None)
            };
            let note = hidden_note.map(|note| {
                boxed(vec![
                    Span::new(base, " "),
                    Span::new(
                        Style {
                            fg: Some(Color::Gray),
                            ..base
                        },
                        note,
                    ),
                ])
            });
            let earlier = *bash && !look.expanded;
            if earlier && let Some(note) = &note {
                out.push(note.clone());
            }
            for line in shown {
                let style = match (*diff, line.chars().next()) {
                    (true, Some('+')) => Style {
                        fg: Some(Color::Green),
                        ..base
                    },
                    (true, Some('-')) => Style {
                        fg: Some(Color::Red),
                        ..base
                    },
                    _ => Style {
                        fg: Some(Color::Gray),
                        ..base
                    },
                };
                for wrapped in wrap(&[Span::new(style, line)], width - 2) {
                    let mut spans = vec![Span::new(base, " ")];
                    spans.extend(wrapped);
                    out.push(boxed(spans));
                }
            }
            if !earlier && let Some(note) = note {
                out.push(note);
            }
            if let Some((_, ms)) = done {
                out.push(boxed(Vec::new()));
                let took = format!(" Took {:.1}s", *ms as f64 / 1000.0);
                out.push(boxed(vec![Span::new(
                    Style {
                        fg: Some(Color::Gray),
                        ..base
                    },
                    took,
                )]));
            }
            out.push(boxed(Vec::new()));
        }
        Item::Note { text, style } => {
            for line in wrap(&[Span::new(*style, text.clone())], width) {
                out.push(to_ansi(&line));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pi_runtime::{AssistantMessage, ToolCallRef};

    use super::*;

    fn plain(lines: &[String]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                let mut out = String::new();
                let mut chars = l.chars();
                while let Some(c) = chars.next() {
                    if c == '\x1b' {
                        for c in chars.by_ref() {
                            if c == 'm' {
                                break;
                            }
                        }
                    } else {
                        out.push(c);
                    }
                }
                out.trim_end().to_owned()
            })
            .collect()
    }

    #[test]
    fn tool_output_is_collapsed_until_expanded() {
        let assistant = Arc::new(Message::Assistant(AssistantMessage::new(
            vec![AssistantContent::tool_call(
                "c1",
                "bash",
                serde_json::json!({"command": "seq 8"}),
            )],
            StopReason::ToolUse,
        )));
        let call = ToolCallRef::new(Arc::clone(&assistant), 0).unwrap();
        let mut conversation = Conversation::default();
        conversation.event(&AgentEvent::ToolExecutionStart { call: call.clone() });
        conversation.event(&AgentEvent::ToolExecutionEnd {
            call,
            result: Arc::new(
                serde_json::from_value(serde_json::json!({"role": "toolResult",
                    "toolCallId": "c1", "toolName": "bash",
                    "content": [{"type": "text", "text": "1\n2\n3\n4\n5\n6\n7\n8\n"}]}))
                .unwrap(),
            ),
            is_error: false,
            terminate: false,
            usage: None,
            duration_ms: 1200,
        });
        let mut look = Look {
            width: 40,
            expanded: false,
            show_thinking: true,
        };
        let mut lines = Vec::new();
        conversation.lines(look, &mut lines);
        let text = plain(&lines).join("\n");
        assert!(text.contains(" $ seq 8"), "{text}");
        assert!(
            text.contains("... (3 earlier lines, ctrl+o to expand)\n 4\n 5\n 6\n 7\n 8"),
            "{text}"
        );
        assert!(text.contains("Took 1.2s"), "{text}");
        look.expanded = true;
        let mut lines = Vec::new();
        conversation.lines(look, &mut lines);
        let text = plain(&lines).join("\n");
        assert!(text.contains(" 1\n 2\n 3\n"), "{text}");
        assert!(!text.contains("ctrl+o"), "{text}");
    }

    #[test]
    fn thinking_is_shown_or_a_label() {
        let mut conversation = Conversation::default();
        let message = Message::Assistant(AssistantMessage::new(
            vec![
                AssistantContent::thinking("pondering deeply"),
                AssistantContent::text("**Answer**"),
            ],
            StopReason::Stop,
        ));
        conversation.event(&AgentEvent::MessageStart {
            message: Arc::new(message.clone()),
        });
        conversation.event(&AgentEvent::MessageEnd {
            message: Arc::new(message),
        });
        let mut look = Look {
            width: 40,
            expanded: false,
            show_thinking: true,
        };
        let mut lines = Vec::new();
        conversation.lines(look, &mut lines);
        assert_eq!(plain(&lines), ["", "pondering deeply", "", "Answer"]);
        look.show_thinking = false;
        let mut lines = Vec::new();
        conversation.lines(look, &mut lines);
        assert_eq!(plain(&lines), ["", "Thinking...", "", "Answer"]);
    }
}
