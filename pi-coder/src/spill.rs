//! One contract for every tool's oversized output (`bash`'s own, MCP tools', anyone's): past
//! pi's limits (2000 lines or 50 KB), the whole text goes to `pi-<tool>-<16 hex>.log` in the
//! output folder, and the model gets its head, its tail and the path, which `read` can open
//! (`details.fullOutputPath`, as pi's `bash` sets it). Tools that already cut their output to
//! these limits (pi's seven, with their own notices) pass unchanged.

use std::path::{Path, PathBuf};

use pi_tool::{Content, ToolResult};
use serde_json::{Map, Value};

use crate::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_head, truncate_tail,
};

/// Room over the limits for a tool's own notice (`[Showing lines ...]`): a result within it was
/// already cut by its tool.
const NOTICE_ROOM_BYTES: usize = 1024;
const NOTICE_ROOM_LINES: usize = 8;

/// The head and the tail shown of a spilled output: half the limits each.
const SHOWN_LINES: usize = DEFAULT_MAX_LINES / 2;
const SHOWN_BYTES: usize = DEFAULT_MAX_BYTES / 2;

/// The content and details to send instead of `result`'s, when its text is over pi's limits
/// (the full text then written to a log file in `dir`); `None` when it is within them, or
/// already has a full output file.
pub(crate) async fn spill_oversized(
    tool: &str,
    result: &ToolResult,
    dir: &Path,
) -> Option<(Vec<Content>, Value)> {
    if result.details.get("fullOutputPath").is_some() {
        return None;
    }
    let texts: Vec<&str> = result.content.iter().filter_map(Content::as_text).collect();
    let bytes: usize = texts.iter().map(|text| text.len()).sum();
    let lines: usize = texts
        .iter()
        .map(|text| text.matches('\n').count())
        .sum::<usize>()
        + 1;
    if bytes <= DEFAULT_MAX_BYTES + NOTICE_ROOM_BYTES
        && lines <= DEFAULT_MAX_LINES + NOTICE_ROOM_LINES
    {
        return None;
    }
    let full = texts.join("\n");
    let path = log_path(dir, tool);
    let saved = tokio::fs::write(&path, full.as_bytes()).await;
    let head = truncate_head(&full, SHOWN_LINES, SHOWN_BYTES);
    let tail = truncate_tail(&full, SHOWN_LINES, SHOWN_BYTES);
    let total_lines = full.split('\n').count();
    let where_ = match &saved {
        Ok(()) => format!("Full output: {}", path.display()),
        Err(err) => format!(
            "The full output could not be saved ({}: {err})",
            path.display()
        ),
    };
    let notice = format!(
        "[Output too long: {total_lines} lines, {}. Showing the first {} and the last {} lines. {where_}]",
        format_size(full.len()),
        head.output_lines,
        tail.output_lines,
    );
    let text = format!("{}\n\n{notice}\n\n{}", head.content, tail.content);
    let mut content = vec![Content::text(text)];
    content.extend(
        result
            .content
            .iter()
            .filter(|block| block.as_text().is_none())
            .cloned(),
    );
    let mut details = match &result.details {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        other => Map::from_iter([("toolDetails".to_owned(), other.clone())]),
    };
    if saved.is_ok() {
        details.insert(
            "fullOutputPath".into(),
            Value::String(path.display().to_string()),
        );
    }
    Some((content, Value::Object(details)))
}

/// `<dir>/pi-<tool>-<16 hex>.log`, the tool's name kept to what is safe in a file name.
fn log_path(dir: &Path, tool: &str) -> PathBuf {
    let name: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    dir.join(format!("pi-{name}-{:016x}.log", fastrand::u64(..)))
}

/// Whether `path` is one of these log files (or `bash`'s) in `dir`: what a confined `read` may
/// open outside the working directory.
pub(crate) fn is_output_log(path: &Path, dir: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
        return false;
    };
    let Some(stem) = name
        .strip_prefix("pi-")
        .and_then(|rest| rest.strip_suffix(".log"))
    else {
        return false;
    };
    let hex_ok = stem
        .rsplit_once('-')
        .is_some_and(|(_, hex)| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    hex_ok && path.parent() == Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_oversized_result_is_saved_and_shown_as_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
        let result = ToolResult::new(
            vec![Content::text(text.clone())],
            serde_json::json!({"k": 1}),
        );
        let (content, details) = spill_oversized("mcp__srv__dump", &result, dir.path())
            .await
            .expect("spilled");
        let shown = content[0].as_text().unwrap();
        assert!(shown.starts_with("line 1\nline 2\n"), "{}", &shown[..40]);
        assert!(
            shown.ends_with("line 5000\n"),
            "{}",
            &shown[shown.len() - 40..]
        );
        assert!(shown.len() <= DEFAULT_MAX_BYTES + 300);
        let path = details["fullOutputPath"].as_str().unwrap();
        assert!(shown.contains(&format!("Full output: {path}]")), "{shown}");
        assert!(shown.contains("[Output too long: 5001 lines"), "{shown}");
        assert_eq!(details["k"], 1);
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
        assert!(is_output_log(Path::new(path), dir.path()));
        assert!(
            Path::new(path)
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("pi-mcp__srv__dump-")
        );
    }

    #[tokio::test]
    async fn results_within_the_limits_or_already_saved_pass() {
        let dir = tempfile::tempdir().unwrap();
        let small = ToolResult::new(
            vec![Content::text("x".repeat(DEFAULT_MAX_BYTES))],
            Value::Null,
        );
        assert!(spill_oversized("t", &small, dir.path()).await.is_none());
        let saved = ToolResult::new(
            vec![Content::text("x\n".repeat(10_000))],
            serde_json::json!({"fullOutputPath": "/tmp/pi-bash-0000000000000000.log"}),
        );
        assert!(spill_oversized("bash", &saved, dir.path()).await.is_none());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn only_output_logs_in_the_folder_are_recognized() {
        let dir = Path::new("/tmp/x");
        assert!(is_output_log(
            Path::new("/tmp/x/pi-bash-0123456789abcdef.log"),
            dir
        ));
        assert!(!is_output_log(Path::new("/tmp/x/pi-bash-0123.log"), dir));
        assert!(!is_output_log(
            Path::new("/tmp/x/sub/pi-bash-0123456789abcdef.log"),
            dir
        ));
        assert!(!is_output_log(Path::new("/tmp/x/secret.log"), dir));
    }
}
