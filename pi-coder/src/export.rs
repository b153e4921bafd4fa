//! `--export` and `/export`: a session file as one self-contained HTML page (pi's
//! `export-html`): the conversation of the current branch, the user's prompts, the answers with
//! their reasoning and tool calls, the tools' results, `!` commands and compaction summaries.
//! The file is named as pi names it (`pi-session-<session file name>.html`), and carries the
//! session's entries too, base64 JSON as pi embeds them (`{header, entries, leafId}`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::{Value, json};

use crate::session::Session;

/// Writes the page for `session_file` to `output` (default: `pi-session-<name>.html` in the
/// current directory); returns where it went.
pub fn export_file(session_file: &Path, output: Option<&Path>) -> Result<PathBuf, String> {
    if !session_file.exists() {
        return Err(format!("Error: File not found: {}", session_file.display()));
    }
    let saved = Session::read(session_file).map_err(|err| format!("Error: {err}"))?;
    let text = std::fs::read_to_string(session_file)
        .map_err(|err| format!("Error: {}: {err}", session_file.display()))?;
    let mut lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    crate::pi_session::migrate(&mut lines);
    let header = lines.first().cloned().unwrap_or_default();
    let entries: Vec<Value> = lines.into_iter().skip(1).collect();
    let html = render(&header, &entries, &saved.id);
    let output = match output {
        Some(path) => path.to_path_buf(),
        None => {
            let stem = session_file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "session".into());
            PathBuf::from(format!("pi-session-{stem}.html"))
        }
    };
    std::fs::write(&output, html).map_err(|err| format!("Error: {}: {err}", output.display()))?;
    Ok(output)
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The text blocks of a content value (a string, or blocks).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn render(header: &Value, entries: &[Value], id: &str) -> String {
    let index: std::collections::HashMap<String, usize> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| Some((e["id"].as_str()?.to_owned(), i)))
        .collect();
    let branch = crate::pi_session::branch_indices(entries, &index, None);
    let mut body = String::new();
    for &at in &branch {
        let entry = &entries[at];
        match entry["type"].as_str() {
            Some("message") => message(&mut body, &entry["message"]),
            Some("compaction") => {
                let _ = writeln!(
                    body,
                    "<div class=\"entry compaction\"><div class=\"role\">Compaction ({} tokens summarized)</div><pre>{}</pre></div>",
                    entry["tokensBefore"],
                    escape(entry["summary"].as_str().unwrap_or_default())
                );
            }
            Some("branch_summary") => {
                let _ = writeln!(
                    body,
                    "<div class=\"entry summary\"><div class=\"role\">Branch summary</div><pre>{}</pre></div>",
                    escape(entry["summary"].as_str().unwrap_or_default())
                );
            }
            Some("custom_message") if entry["display"] != false => {
                let _ = writeln!(
                    body,
                    "<div class=\"entry custom\"><div class=\"role\">{}</div><pre>{}</pre></div>",
                    escape(entry["customType"].as_str().unwrap_or("message")),
                    escape(&text_of(&entry["content"]))
                );
            }
            Some("model_change") => {
                let _ = writeln!(
                    body,
                    "<div class=\"entry meta\">Model: {}/{}</div>",
                    escape(entry["provider"].as_str().unwrap_or_default()),
                    escape(entry["modelId"].as_str().unwrap_or_default())
                );
            }
            Some("thinking_level_change") => {
                let _ = writeln!(
                    body,
                    "<div class=\"entry meta\">Thinking: {}</div>",
                    escape(entry["thinkingLevel"].as_str().unwrap_or_default())
                );
            }
            _ => {}
        }
    }
    let data = json!({
        "header": header,
        "entries": entries,
        "leafId": entries.last().and_then(|e| e["id"].as_str()),
    });
    let encoded = base64::engine::general_purpose::STANDARD.encode(data.to_string());
    let title = format!("pi session {id}");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<header><h1>{}</h1><div class=\"meta\">{} · {}</div></header>\n<main>\n{body}</main>\n<script id=\"session-data\" type=\"application/octet-stream\">{encoded}</script>\n</body>\n</html>\n",
        escape(&title),
        escape(&title),
        escape(header["cwd"].as_str().unwrap_or_default()),
        escape(header["timestamp"].as_str().unwrap_or_default()),
    )
}

fn message(body: &mut String, message: &Value) {
    match message["role"].as_str() {
        Some("user") => {
            let _ = writeln!(
                body,
                "<div class=\"entry user\"><div class=\"role\">User</div><pre>{}</pre></div>",
                escape(&text_of(&message["content"]))
            );
        }
        Some("assistant") => {
            let mut html = String::new();
            for block in message["content"].as_array().into_iter().flatten() {
                match block["type"].as_str() {
                    Some("text") => {
                        let _ = write!(
                            html,
                            "<pre>{}</pre>",
                            escape(block["text"].as_str().unwrap_or_default())
                        );
                    }
                    Some("thinking") => {
                        let _ = write!(
                            html,
                            "<details class=\"thinking\"><summary>Thinking</summary><pre>{}</pre></details>",
                            escape(block["thinking"].as_str().unwrap_or_default())
                        );
                    }
                    Some("toolCall") => {
                        let _ = write!(
                            html,
                            "<div class=\"call\"><span class=\"tool\">{}</span> <code>{}</code></div>",
                            escape(block["name"].as_str().unwrap_or_default()),
                            escape(&block["arguments"].to_string())
                        );
                    }
                    _ => {}
                }
            }
            if let Some(error) = message["errorMessage"].as_str() {
                let _ = write!(html, "<div class=\"error\">{}</div>", escape(error));
            }
            let _ = writeln!(
                body,
                "<div class=\"entry assistant\"><div class=\"role\">Assistant <span class=\"model\">{}</span></div>{html}</div>",
                escape(message["model"].as_str().unwrap_or_default())
            );
        }
        Some("toolResult") => {
            let class = if message["isError"] == true {
                "entry result error"
            } else {
                "entry result"
            };
            let _ = writeln!(
                body,
                "<div class=\"{class}\"><div class=\"role\">{} result</div><pre>{}</pre></div>",
                escape(message["toolName"].as_str().unwrap_or("tool")),
                escape(&text_of(&message["content"]))
            );
        }
        Some("bashExecution") => {
            let _ = writeln!(
                body,
                "<div class=\"entry bash\"><div class=\"role\">$ {}</div><pre>{}</pre></div>",
                escape(message["command"].as_str().unwrap_or_default()),
                escape(message["output"].as_str().unwrap_or_default())
            );
        }
        Some("custom") => {
            let _ = writeln!(
                body,
                "<div class=\"entry custom\"><div class=\"role\">{}</div><pre>{}</pre></div>",
                escape(message["customType"].as_str().unwrap_or("message")),
                escape(&text_of(&message["content"]))
            );
        }
        _ => {}
    }
}

const CSS: &str = "body { font-family: ui-sans-serif, system-ui, sans-serif; background: #18181e; color: #ddd; margin: 0; }
header { padding: 1em 2em; border-bottom: 1px solid #333; }
h1 { font-size: 1.2em; margin: 0; }
.meta { color: #888; font-size: 0.85em; }
main { max-width: 60em; margin: 0 auto; padding: 1em 2em; }
.entry { background: #1e1e24; border-radius: 6px; margin: 0.8em 0; padding: 0.6em 1em; }
.entry.meta { background: none; padding: 0 1em; }
.role { font-weight: bold; color: #8ab4f8; margin-bottom: 0.3em; }
.user .role { color: #f8c38a; }
.result .role, .bash .role { color: #9ad29a; }
.error, .result.error .role { color: #f28b82; }
.compaction .role, .summary .role { color: #c58af9; }
.model { color: #888; font-weight: normal; font-size: 0.85em; }
pre { white-space: pre-wrap; word-wrap: break-word; margin: 0.3em 0; font-family: ui-monospace, monospace; }
.call code { color: #aaa; }
.tool { color: #fdd663; font-weight: bold; }
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_becomes_a_page_with_its_conversation_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(
            &path,
            "{\"type\":\"session\",\"version\":3,\"id\":\"abc\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n\
             {\"type\":\"message\",\"id\":\"u1\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"fix <b>this</b>\",\"timestamp\":0}}\n",
        )
        .unwrap();
        let out = dir.path().join("out.html");
        assert_eq!(export_file(&path, Some(&out)).unwrap(), out);
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.contains("fix &lt;b&gt;this&lt;/b&gt;"), "{html}");
        assert!(html.contains("<title>pi session abc</title>"));
        assert!(html.contains("id=\"session-data\""));
        let err = export_file(&dir.path().join("none.jsonl"), None).unwrap_err();
        assert!(err.starts_with("Error: File not found: "), "{err}");
    }
}
