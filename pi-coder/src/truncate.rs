//! pi's output truncation (truncate.ts): keep whole lines from the head or the tail, within a
//! line and a byte budget, and say exactly what was cut.

use serde::Serialize;

/// Most lines a tool returns before truncating (pi's `DEFAULT_MAX_LINES`).
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Most bytes a tool returns before truncating (pi's `DEFAULT_MAX_BYTES`, 50 KB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Most UTF-16 code units (JavaScript string length) of one `grep` output line (pi's
/// `GREP_MAX_LINE_LENGTH`; pi calls them chars).
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

/// pi's `formatSize` (truncate.ts:50): `512B`, `50.0KB`, `1.3KB` for 1280 bytes, `1.5MB`.
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{}KB", js_to_fixed(bytes as f64 / 1024.0, 1))
    } else {
        format!("{}MB", js_to_fixed(bytes as f64 / (1024.0 * 1024.0), 1))
    }
}

/// JavaScript's `Number.prototype.toFixed` for numbers below 1e21 (JavaScript switches to
/// exponent notation there): like `{:.digits$}`, but an exact half rounds away from zero
/// (`(1.25).toFixed(1)` is `1.3`), where Rust rounds it to even (`1.2`).
pub(crate) fn js_to_fixed(value: f64, digits: usize) -> String {
    if !value.is_finite() || value == 0.0 {
        return format!("{value:.digits$}");
    }
    // A tie has at most `digits + 1` decimals, so `value * 2^(digits + 1)` is an integer
    // (an exact product: only the exponent changes).
    let scaled = value * 2f64.powi(i32::try_from(digits + 1).unwrap_or(i32::MAX));
    let tie = scaled.fract() == 0.0 && format!("{value:.0$}", digits + 1).ends_with('5');
    if tie {
        // One step away from zero is past the tie and nowhere near the next rounding boundary.
        let past = if value > 0.0 {
            value.next_up()
        } else {
            value.next_down()
        };
        format!("{past:.digits$}")
    } else {
        format!("{value:.digits$}")
    }
}

/// pi's `truncateLine` (truncate.ts:257): cuts a line longer than `max_units` UTF-16 code units
/// (JavaScript's `length`), adding `... [truncated]`; says whether it cut. When the cut splits a
/// surrogate pair pi keeps the high half, which no Rust string can hold: it becomes U+FFFD, as it
/// does whenever JavaScript encodes such a string as UTF-8.
pub(crate) fn truncate_line(line: &str, max_units: usize) -> (String, bool) {
    let mut units = 0;
    for (index, c) in line.char_indices() {
        let before = units;
        units += c.len_utf16();
        if units > max_units {
            let half = if before < max_units { "\u{FFFD}" } else { "" };
            return (format!("{}{half}... [truncated]", &line[..index]), true);
        }
    }
    (line.to_owned(), false)
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
        // (1280 / 1024).toFixed(1) === "1.3": an exact half rounds up in JavaScript.
        assert_eq!(format_size(1280), "1.3KB");
        assert_eq!(format_size(5 * 1024 * 1024 / 4), "1.3MB");
        assert_eq!(format_size(1331), "1.3KB");
        assert_eq!(format_size(1126), "1.1KB");
        assert_eq!(
            truncate_line("héllo", 2),
            ("hé... [truncated]".to_owned(), true)
        );
        assert_eq!(truncate_line("hé", 2), ("hé".to_owned(), false));
    }

    #[test]
    fn to_fixed_rounds_exact_halves_away_from_zero_like_javascript() {
        // Each expected text is what Node 20 prints for `x.toFixed(d)`.
        let cases = [
            (1.25, 1, "1.3"),
            (1.125, 2, "1.13"),
            (0.5, 0, "1"),
            (2.5, 0, "3"),
            (-1.25, 1, "-1.3"),
            (1.005, 2, "1.00"), // 1.005 is 1.00499999999999989... as a double
            (0.15, 1, "0.1"),   // 0.1499999999999999944...
            (2.0, 2, "2.00"),
            (1.0 / 3.0, 2, "0.33"),
            (0.5, 40, "0.5000000000000000000000000000000000000000"),
        ];
        for (value, digits, expected) in cases {
            assert_eq!(
                js_to_fixed(value, digits),
                expected,
                "{value}.toFixed({digits})"
            );
        }
    }

    #[test]
    fn grep_line_cut_counts_utf16_units_like_javascript() {
        let emoji = "\u{1F600}".repeat(300);
        let (cut, truncated) = truncate_line(&emoji, 500);
        assert!(truncated);
        assert_eq!(cut, format!("{}... [truncated]", "\u{1F600}".repeat(250)));
        // 250 emoji are exactly 500 units: not cut.
        assert!(!truncate_line(&"\u{1F600}".repeat(250), 500).1);
        // A cut through a surrogate pair keeps pi's half character as U+FFFD.
        let odd = format!("a{}", "\u{1F600}".repeat(300));
        assert_eq!(
            truncate_line(&odd, 500).0,
            format!("a{}\u{FFFD}... [truncated]", "\u{1F600}".repeat(249))
        );
    }
}
