//! Shows a run as it happens: the assistant's text on one stream, tool calls with their
//! streamed output and results on another (stdout and stderr in the `pi` command).

use std::collections::HashMap;
use std::io::Write;

use pi_runtime::{AgentEvent, AssistantEvent, Message, StopReason};
use serde_json::Value;

/// Most lines of a tool result shown when the tool streamed nothing.
const RESULT_PREVIEW_LINES: usize = 8;
/// Most characters of a tool call's argument summary.
const ARGS_PREVIEW_CHARS: usize = 200;

/// Writes a run's events: assistant text to `out`, tool activity and errors to `log`.
pub struct Renderer<'a> {
    out: &'a mut dyn Write,
    log: &'a mut dyn Write,
    streamed_text: bool,
    /// Each running call's streamed text so far, by call id.
    shown: HashMap<String, String>,
    /// Each running call's label (`bash $ cargo test`), by call id.
    labels: HashMap<String, String>,
    /// The call whose header or output was written last: when another call's output follows,
    /// its header is repeated so every line can be told apart.
    last_call: Option<String>,
    /// Whether the log is at the start of a line.
    log_at_line_start: bool,
    /// Time to leave out of a call's duration (waiting for the user's approval), by call id.
    discounts: HashMap<String, u64>,
}

impl std::fmt::Debug for Renderer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("streamed_text", &self.streamed_text)
            .finish()
    }
}

impl<'a> Renderer<'a> {
    /// A renderer writing the assistant's text to `out` and everything else to `log`.
    pub fn new(out: &'a mut dyn Write, log: &'a mut dyn Write) -> Self {
        Renderer {
            out,
            log,
            streamed_text: false,
            shown: HashMap::new(),
            labels: HashMap::new(),
            last_call: None,
            log_at_line_start: true,
            discounts: HashMap::new(),
        }
    }

    /// Leaves `ms` (time the call spent waiting for the user) out of the duration shown when
    /// the call ends, so the duration times only the tool.
    pub fn discount_wait(&mut self, call_id: &str, ms: u64) {
        if ms > 0 {
            self.discounts.insert(call_id.to_owned(), ms);
        }
    }

    /// Writes to the log, remembering whether it ends a line.
    fn log_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let _ = self.log.write_all(text.as_bytes());
        self.log_at_line_start = text.ends_with('\n');
    }

    /// Starts a new line on the log unless it is at one.
    fn log_line_start(&mut self) {
        if !self.log_at_line_start {
            self.log_text("\n");
        }
    }

    /// The call's header line: `● bash $ cargo test`.
    fn header(&mut self, id: &str) {
        self.log_line_start();
        let label = self.labels.get(id).cloned().unwrap_or_default();
        self.log_text(&format!("● {label}\n"));
        self.last_call = Some(id.to_owned());
    }

    /// Prints a warning to the log.
    pub fn warn(&mut self, text: &str) {
        self.log_line_start();
        self.log_text(&format!("warning: {text}\n"));
    }

    /// Renders one event. Write errors (a closed pipe) are ignored: showing the run must never
    /// stop it.
    pub fn event(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart { message } if matches!(**message, Message::Assistant(_)) => {
                self.streamed_text = false;
            }
            AgentEvent::MessageUpdate { event } => {
                if let AssistantEvent::TextDelta { delta, .. } = &**event {
                    self.streamed_text = true;
                    let _ = self.out.write_all(delta.as_bytes());
                    let _ = self.out.flush();
                }
            }
            AgentEvent::MessageEnd { message } => self.message_end(message),
            AgentEvent::ToolExecutionStart { call } => {
                let label = format!(
                    "{} {}",
                    call.name(),
                    summarize_args(call.name(), call.arguments())
                );
                self.labels
                    .insert(call.id().to_owned(), label.trim_end().to_owned());
                self.header(call.id());
                let _ = self.log.flush();
            }
            AgentEvent::ToolExecutionUpdate {
                call,
                partial_result,
            } => {
                let text = partial_result.text_content();
                let shown = self.shown.remove(call.id()).unwrap_or_default();
                if let Some(new) = text.strip_prefix(shown.as_str())
                    && !new.is_empty()
                {
                    if self.last_call.as_deref() != Some(call.id()) {
                        self.header(call.id());
                    }
                    let at_line_start = shown.is_empty() || shown.ends_with('\n');
                    self.log_text(&indent_from(new, at_line_start));
                    let _ = self.log.flush();
                }
                self.shown.insert(call.id().to_owned(), text);
            }
            AgentEvent::ToolExecutionEnd {
                call,
                result,
                is_error,
                duration_ms,
                ..
            } => {
                let streamed = self.shown.remove(call.id()).is_some_and(|s| !s.is_empty());
                let duration_ms =
                    duration_ms.saturating_sub(self.discounts.remove(call.id()).unwrap_or(0));
                let label = self
                    .labels
                    .remove(call.id())
                    .unwrap_or_else(|| call.name().to_owned());
                let text = result
                    .as_tool_result()
                    .map(|r| r.text())
                    .unwrap_or_default();
                // A preview comes before the `✓` line that names the call: after another call's
                // lines, it needs the header.
                let previews_first = !*is_error && !streamed;
                if previews_first
                    && !text.is_empty()
                    && self.last_call.as_deref() != Some(call.id())
                {
                    self.labels.insert(call.id().to_owned(), label.clone());
                    self.header(call.id());
                    self.labels.remove(call.id());
                }
                self.log_line_start();
                if *is_error {
                    self.log_text(&format!("  ✗ {label} failed ({duration_ms} ms):\n"));
                    self.log_text(&preview(&text));
                } else {
                    if !streamed {
                        self.log_text(&preview(&text));
                    }
                    self.log_text(&format!("  ✓ {label} ({duration_ms} ms)\n"));
                }
                self.last_call = None;
                let _ = self.log.flush();
            }
            _ => {}
        }
    }

    fn message_end(&mut self, message: &Message) {
        if let Some(line) = tool_set_line(message) {
            self.log_line_start();
            self.log_text(&line);
            let _ = self.log.flush();
            return;
        }
        let Some(assistant) = message.as_assistant() else {
            return;
        };
        let text = assistant.text();
        if !self.streamed_text && !text.is_empty() {
            let _ = self.out.write_all(text.as_bytes());
        }
        if !text.is_empty() && !text.ends_with('\n') {
            let _ = self.out.write_all(b"\n");
        }
        let _ = self.out.flush();
        match assistant.stop_reason {
            StopReason::Error => {
                let error = assistant
                    .error_message
                    .as_deref()
                    .unwrap_or("the model request failed");
                self.log_line_start();
                self.log_text(&format!("error: {error}\n"));
            }
            StopReason::Aborted => {
                self.log_line_start();
                self.log_text("(aborted)\n");
            }
            _ => {}
        }
        let _ = self.log.flush();
    }
}

/// The line that tells the user the model's tools changed: the tools a `tool_search` result
/// loaded, or a `tools_changed` record's additions and removals; `None` for other messages.
fn tool_set_line(message: &Message) -> Option<String> {
    match message {
        Message::ToolResult(result) if is_search_name(&result.tool_name) && !result.is_error => {
            let loaded: Vec<&str> = pi_tool::loaded_by_search(&result.details).collect();
            (!loaded.is_empty()).then(|| format!("  loaded: {}\n", loaded.join(", ")))
        }
        Message::Custom(custom) => {
            let (added, removed) = custom.changed_tools()?;
            let added = added.iter().map(|name| format!("+{name}"));
            let removed = removed.iter().map(|name| format!("-{name}"));
            let changes: Vec<String> = added.chain(removed).collect();
            Some(format!("  tools changed: {}\n", changes.join(" ")))
        }
        _ => None,
    }
}

/// Whether a result comes from the loop's own search: `tool_search`, or the name it takes when a
/// tool of the user's holds that one (`pi_tool_search`, then `pi_tool_search_2`, ...).
fn is_search_name(name: &str) -> bool {
    let fallback = pi_tool::ToolSearch::FALLBACK_NAME;
    name == pi_tool::TOOL_SEARCH_NAME
        || name == fallback
        || name
            .strip_prefix(fallback)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The one thing to show about a call: the command, the path, the pattern; else compact JSON.
fn summarize_args(tool: &str, args: &Value) -> String {
    let field = |name: &str| args.get(name).and_then(Value::as_str);
    let summary = match tool {
        "bash" => field("command").map(|c| format!("$ {c}")),
        "read" | "write" | "edit" | "ls" => field("path").map(str::to_owned),
        "grep" | "find" => field("pattern").map(|p| match field("path") {
            Some(path) => format!("{p} in {path}"),
            None => p.to_owned(),
        }),
        _ => None,
    };
    let summary = summary.unwrap_or_else(|| args.to_string());
    match summary.char_indices().nth(ARGS_PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &summary[..cut]),
        None => summary,
    }
}

/// The first lines of a result, indented, with a count of the rest.
fn preview(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = indent(
        &lines
            .iter()
            .take(RESULT_PREVIEW_LINES)
            .copied()
            .collect::<Vec<_>>()
            .join("\n"),
    );
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if lines.len() > RESULT_PREVIEW_LINES {
        out.push_str(&format!(
            "  … {} more lines\n",
            lines.len() - RESULT_PREVIEW_LINES
        ));
    }
    out
}

/// Indents every line start by two spaces.
fn indent(text: &str) -> String {
    indent_from(text, true)
}

/// Indents every line start by two spaces; `at_line_start` says whether `text` starts a line.
fn indent_from(text: &str, mut at_line_start: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if at_line_start && c != '\n' {
            out.push_str("  ");
        }
        out.push(c);
        at_line_start = c == '\n';
    }
    out
}

impl crate::events::Observer for Renderer<'_> {
    fn agent_event(&mut self, event: &AgentEvent) {
        self.event(event);
    }

    fn approval_wait(&mut self, call_id: &str, ms: u64) {
        self.discount_wait(call_id, ms);
    }

    fn compaction_start(&mut self, reason: crate::compaction::CompactionReason) {
        use crate::compaction::CompactionReason;
        let why = match reason {
            CompactionReason::Manual => "",
            CompactionReason::Threshold => " (the context is nearly full)",
            CompactionReason::Overflow => " (the model refused the context as too long)",
        };
        self.log_line_start();
        self.log_text(&format!("Compacting the conversation{why}...\n"));
        let _ = self.log.flush();
    }

    fn compaction_end(&mut self, end: &crate::events::CompactionEnd) {
        self.log_line_start();
        let line = match (&end.result, &end.error_message) {
            (_, Some(error)) => format!("error: {error}\n"),
            (Some(result), None) => format!(
                "Compacted: {} tokens summarized{}\n",
                result.tokens_before,
                if end.will_retry { "; retrying" } else { "" }
            ),
            (None, None) if end.aborted => "Compaction cancelled\n".to_owned(),
            (None, None) => "Nothing to compact\n".to_owned(),
        };
        self.log_text(&line);
        let _ = self.log.flush();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pi_runtime::{AssistantContent, AssistantMessage, ToolCallRef};
    use pi_tool::ToolResult;

    use super::*;

    /// Two parallel `bash` calls whose output interleaves and which end in the other order.
    #[test]
    fn parallel_calls_are_told_apart_and_the_approval_wait_is_left_out() {
        let assistant = Arc::new(Message::Assistant(AssistantMessage::new(
            vec![
                AssistantContent::tool_call("c1", "bash", serde_json::json!({"command": "make a"})),
                AssistantContent::tool_call("c2", "read", serde_json::json!({"path": "b.txt"})),
            ],
            StopReason::ToolUse,
        )));
        let call = |i| ToolCallRef::new(Arc::clone(&assistant), i).unwrap();
        let update = |i, text: &str| AgentEvent::ToolExecutionUpdate {
            call: call(i),
            partial_result: Box::new(ToolResult::text(text)),
        };
        let end = |i, id: &str, name: &str, text: &str, ms| {
            AgentEvent::ToolExecutionEnd {
            call: call(i),
            result: Arc::new(
                serde_json::from_value(serde_json::json!({"role": "toolResult",
                    "toolCallId": id, "toolName": name, "content": [{"type": "text", "text": text}]}))
                .unwrap(),
            ),
            is_error: false,
            terminate: false,
            usage: None,
            duration_ms: ms,
        }
        };
        let (mut out, mut log) = (Vec::new(), Vec::new());
        let mut renderer = Renderer::new(&mut out, &mut log);
        renderer.event(&AgentEvent::ToolExecutionStart { call: call(0) });
        renderer.event(&AgentEvent::ToolExecutionStart { call: call(1) });
        renderer.event(&update(0, "a1\n"));
        renderer.event(&end(1, "c2", "read", "b", 3));
        renderer.event(&update(0, "a1\na2"));
        renderer.discount_wait("c1", 2000);
        renderer.event(&end(0, "c1", "bash", "a1\na2", 2050));
        drop(renderer);
        assert_eq!(
            String::from_utf8(log).unwrap(),
            "● bash $ make a\n● read b.txt\n● bash $ make a\n  a1\n● read b.txt\n  b\n  ✓ read b.txt (3 ms)\n● bash $ make a\n  a2\n  ✓ bash $ make a (50 ms)\n"
        );
    }

    /// When a user's tool holds the name `tool_search`, the loop's search is offered under
    /// another name: what it loads is shown all the same.
    #[test]
    fn tools_loaded_by_the_search_under_its_fallback_name_are_shown() {
        for name in ["pi_tool_search", "pi_tool_search_2"] {
            let search: Message = serde_json::from_value(serde_json::json!({"role": "toolResult",
                "toolCallId": "c1", "toolName": name,
                "content": [{"type": "text", "text": "1 tool"}],
                "details": {"tools": ["slack_post"]}}))
            .unwrap();
            assert_eq!(
                tool_set_line(&search).as_deref(),
                Some("  loaded: slack_post\n"),
                "{name}"
            );
        }
        for name in ["pi_tool_search_", "pi_tool_search_x", "my_tool_search"] {
            assert!(!is_search_name(name), "{name}");
        }
    }

    #[test]
    fn loaded_and_changed_tools_are_shown() {
        let search: Message = serde_json::from_value(serde_json::json!({"role": "toolResult",
            "toolCallId": "c1", "toolName": "tool_search",
            "content": [{"type": "text", "text": "2 tools"}],
            "details": {"tools": ["github_create_issue", "slack_post"]}}))
        .unwrap();
        let changed = Message::Custom(pi_runtime::CustomMessage::tools_changed(
            vec!["b".into()],
            vec!["a".into()],
        ));
        let (mut out, mut log) = (Vec::new(), Vec::new());
        let mut renderer = Renderer::new(&mut out, &mut log);
        renderer.event(&AgentEvent::MessageEnd {
            message: Arc::new(search),
        });
        renderer.event(&AgentEvent::MessageEnd {
            message: Arc::new(changed),
        });
        drop(renderer);
        assert_eq!(
            String::from_utf8(log).unwrap(),
            "  loaded: github_create_issue, slack_post\n  tools changed: +b -a\n"
        );
    }

    #[test]
    fn summaries_and_previews() {
        assert_eq!(
            summarize_args("bash", &serde_json::json!({"command": "ls -la"})),
            "$ ls -la"
        );
        assert_eq!(
            summarize_args("grep", &serde_json::json!({"pattern": "fn", "path": "src"})),
            "fn in src"
        );
        assert_eq!(
            summarize_args("other", &serde_json::json!({"a": 1})),
            "{\"a\":1}"
        );
        let text: Vec<String> = (1..=10).map(|i| i.to_string()).collect();
        assert_eq!(
            preview(&text.join("\n")),
            "  1\n  2\n  3\n  4\n  5\n  6\n  7\n  8\n  … 2 more lines\n"
        );
        assert_eq!(indent("a\n\nb"), "  a\n\n  b");
    }
}
