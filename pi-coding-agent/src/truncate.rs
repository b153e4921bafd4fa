//! pi's output truncation (truncate.ts): keep whole lines from the head or the tail, within a
//! line and a byte budget, and say exactly what was cut.

use serde::Serialize;

/// Most lines a tool returns before truncating (pi's `DEFAULT_MAX_LINES`).
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Most bytes a tool returns before truncating (pi's `DEFAULT_MAX_BYTES`, 50 KB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Most characters of one `grep` output line (pi's `GREP_MAX_LINE_LENGTH`).
pub const GREP_MAX_LINE_LENGTH: usize = 500;

/// Which limit cut the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    /// The line limit.
    Lines,
    /// The byte limit.
    Bytes,
}

/// What a truncation kept, with pi's field names (it is sent as a tool result's `details.truncation`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// The kept text.
    pub content: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which limit cut it, if any.
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the input (`split('\n')`, so `"a\n"` is 2 lines).
    pub total_lines: usize,
    /// Bytes in the input.
    pub total_bytes: usize,
    /// Lines kept.
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// Tail truncation only: the last line alone was too big and only its end was kept.
    pub last_line_partial: bool,
    /// Head truncation only: the first line alone was too big, so nothing was kept.
    pub first_line_exceeds_limit: bool,
    /// The line limit applied.
    pub max_lines: usize,
    /// The byte limit applied.
    pub max_bytes: usize,
}

impl Truncation {
    fn untouched(content: &str, total_lines: usize, max_lines: usize, max_bytes: usize) -> Self {
        Truncation {
            content: content.to_owned(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines,
            max_bytes,
        }
    }
}

/// Keeps whole lines from the start, at most `max_lines` lines and `max_bytes` bytes.
///
/// A `\n` counts one byte for every kept line after the first. If the first line alone is over
/// the byte budget nothing is kept and `first_line_exceeds_limit` is set.
pub fn truncate_head(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines: Vec<&str> = content.split('\n').collect();
    let total_lines = lines.len();
    if total_lines <= max_lines && content.len() <= max_bytes {
        return Truncation::untouched(content, total_lines, max_lines, max_bytes);
    }
    let mut result = Truncation::untouched("", total_lines, max_lines, max_bytes);
    result.total_bytes = content.len();
    result.truncated = true;
    if lines[0].len() > max_bytes {
        result.truncated_by = Some(TruncatedBy::Bytes);
        result.output_lines = 0;
        result.output_bytes = 0;
        result.first_line_exceeds_limit = true;
        return result;
    }
    let mut kept = 0;
    let mut bytes = 0;
    let mut by = TruncatedBy::Lines;
    for (index, line) in lines.iter().enumerate().take(max_lines) {
        let cost = line.len() + usize::from(index > 0);
        if bytes + cost > max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        kept += 1;
        bytes += cost;
    }
    if kept >= max_lines && bytes <= max_bytes {
        by = TruncatedBy::Lines;
    }
    result.content = lines[..kept].join("\n");
    result.truncated_by = Some(by);
    result.output_lines = kept;
    result.output_bytes = result.content.len();
    result
}

/// Keeps whole lines from the end, at most `max_lines` lines and `max_bytes` bytes.
///
/// If the last line alone is over the byte budget, its last `max_bytes` bytes are kept (cut at a
/// UTF-8 boundary) and `last_line_partial` is set.
pub fn truncate_tail(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines: Vec<&str> = content.split('\n').collect();
    let total_lines = lines.len();
    if total_lines <= max_lines && content.len() <= max_bytes {
        return Truncation::untouched(content, total_lines, max_lines, max_bytes);
    }
    let mut result = Truncation::untouched("", total_lines, max_lines, max_bytes);
    result.total_bytes = content.len();
    result.truncated = true;
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0;
    let mut by = TruncatedBy::Lines;
    for line in lines.iter().rev() {
        if kept.len() >= max_lines {
            break;
        }
        let cost = line.len() + usize::from(!kept.is_empty());
        if bytes + cost > max_bytes {
            by = TruncatedBy::Bytes;
            if kept.is_empty() {
                let tail = tail_at_char_boundary(line, max_bytes);
                bytes = tail.len();
                kept.push(tail);
                result.last_line_partial = true;
            }
            break;
        }
        kept.push(line);
        bytes += cost;
    }
    if kept.len() >= max_lines && bytes <= max_bytes {
        by = TruncatedBy::Lines;
    }
    kept.reverse();
    result.content = kept.join("\n");
    result.truncated_by = Some(by);
    result.output_lines = kept.len();
    result.output_bytes = result.content.len();
    result
}

/// The last at most `max_bytes` bytes of `text`, starting on a character boundary.
fn tail_at_char_boundary(text: &str, max_bytes: usize) -> &str {
    let mut start = text.len().saturating_sub(max_bytes);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// pi's `formatSize`: `512B`, `50.0KB`, `1.5MB`.
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// Cuts a line to `max_chars` characters, adding `... [truncated]`; says whether it cut.
pub(crate) fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    match line.char_indices().nth(max_chars) {
        Some((cut, _)) => (format!("{}... [truncated]", &line[..cut]), true),
        None => (line.to_owned(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_keeps_whole_lines_within_both_limits() {
        let t = truncate_head("a\nb\nc", 2, 100);
        assert_eq!(
            (t.content.as_str(), t.truncated_by, t.output_lines),
            ("a\nb", Some(TruncatedBy::Lines), 2)
        );
        let t = truncate_head("aaaa\nbbbb\ncccc", 10, 9);
        assert_eq!(
            (t.content.as_str(), t.truncated_by),
            ("aaaa\nbbbb", Some(TruncatedBy::Bytes))
        );
        let t = truncate_head("aaaaaaaaaa\nb", 10, 5);
        assert!(t.first_line_exceeds_limit && t.content.is_empty());
        let t = truncate_head("a\n", 10, 10);
        assert_eq!((t.truncated, t.total_lines), (false, 2));
    }

    #[test]
    fn tail_keeps_the_end_and_cuts_a_huge_last_line_on_a_char_boundary() {
        let t = truncate_tail("a\nb\nc", 2, 100);
        assert_eq!(t.content, "b\nc");
        let t = truncate_tail("x\néééé", 10, 5);
        assert_eq!((t.content.as_str(), t.last_line_partial), ("éé", true));
    }

    #[test]
    fn sizes_and_line_cuts_read_like_pi() {
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(50 * 1024), "50.0KB");
        assert_eq!(format_size(3 * 1024 * 1024 / 2), "1.5MB");
        assert_eq!(
            truncate_line("héllo", 2),
            ("hé... [truncated]".to_owned(), true)
        );
        assert_eq!(truncate_line("hé", 2), ("hé".to_owned(), false));
    }
}
