//! A bounded scan of a text file for `read`: counts every line, but keeps only the lines that
//! can be shown (at most one line past 2000 lines or 50 KB), so a multi-gigabyte log costs
//! a few hundred kilobytes of memory, not its size.

use std::io::{BufRead, BufReader, Read};

use pi_tool::CancellationToken;

use crate::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES};

/// Most bytes kept of one line: one more than can ever be shown, enough to know it is too long.
const KEEP_LINE_BYTES: usize = DEFAULT_MAX_BYTES + 1;

/// What a scan found.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    /// Lines in the file, pi's way (`split('\n')`, so a trailing newline ends with an empty line).
    pub(crate) total_lines: usize,
    /// The first selected lines, decoded (lossy UTF-8), each cut to [`KEEP_LINE_BYTES`].
    pub(crate) kept: Vec<String>,
    /// Lines in the selection (`offset`..`offset + limit`), all of them.
    pub(crate) selected_lines: usize,
    /// Bytes of the whole selection joined with `\n`.
    pub(crate) selected_bytes: usize,
    /// Real length of the first selected line.
    pub(crate) first_line_bytes: usize,
}

/// Scans `reader`, selecting `take` lines from line index `start` (0-based). `None` when
/// `signal` fires.
pub(crate) fn scan<R: Read>(
    reader: R,
    start: usize,
    take: usize,
    signal: &CancellationToken,
) -> std::io::Result<Option<Scanned>> {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut scan = Scanner {
        start,
        end: start.saturating_add(take),
        line: 0,
        current: Vec::new(),
        current_len: 0,
        kept_bytes: 0,
        keeping: true,
        out: Scanned::default(),
    };
    loop {
        if signal.is_cancelled() {
            return Ok(None);
        }
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            scan.end_line();
            break;
        }
        let used = match chunk.iter().position(|&b| b == b'\n') {
            Some(newline) => {
                scan.feed(&chunk[..newline]);
                scan.end_line();
                newline + 1
            }
            None => {
                scan.feed(chunk);
                chunk.len()
            }
        };
        reader.consume(used);
    }
    scan.out.total_lines = scan.line;
    Ok(Some(scan.out))
}

struct Scanner {
    start: usize,
    end: usize,
    line: usize,
    current: Vec<u8>,
    current_len: usize,
    kept_bytes: usize,
    keeping: bool,
    out: Scanned,
}

impl Scanner {
    fn selected(&self) -> bool {
        self.line >= self.start && self.line < self.end
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.current_len += bytes.len();
        if self.keeping && self.selected() && self.current.len() < KEEP_LINE_BYTES {
            let room = KEEP_LINE_BYTES - self.current.len();
            self.current
                .extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }

    fn end_line(&mut self) {
        if self.selected() {
            let separator = usize::from(self.out.selected_lines > 0);
            if self.out.selected_lines == 0 {
                self.out.first_line_bytes = self.current_len;
            }
            self.out.selected_lines += 1;
            self.out.selected_bytes += self.current_len + separator;
            if self.keeping {
                self.out
                    .kept
                    .push(String::from_utf8_lossy(&self.current).into_owned());
                self.kept_bytes += self.current.len() + separator;
                // One line past a limit is enough for head truncation to see the limit.
                self.keeping = self.out.kept.len() <= DEFAULT_MAX_LINES
                    && self.kept_bytes <= DEFAULT_MAX_BYTES;
            }
        }
        self.line += 1;
        self.current.clear();
        self.current_len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, start: usize, take: usize) -> Scanned {
        scan(text.as_bytes(), start, take, &CancellationToken::new())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn counts_lines_like_split() {
        assert_eq!(run("", 0, usize::MAX).total_lines, 1);
        assert_eq!(run("a\n", 0, usize::MAX).total_lines, 2);
        let s = run("line1\nline2\nline3\n", 1, 1);
        assert_eq!(
            (s.total_lines, s.kept.clone(), s.selected_lines),
            (4, vec!["line2".to_owned()], 1)
        );
    }

    #[test]
    fn keeps_only_what_can_be_shown() {
        let text: String = (0..10_000).map(|i| format!("{i}\n")).collect();
        let s = run(&text, 0, usize::MAX);
        assert_eq!(
            (s.total_lines, s.kept.len(), s.selected_lines),
            (10_001, DEFAULT_MAX_LINES + 1, 10_001)
        );
        let huge = format!("{}\nnext", "x".repeat(200_000));
        let s = run(&huge, 0, usize::MAX);
        assert_eq!(
            (s.first_line_bytes, s.kept[0].len(), s.kept.len()),
            (200_000, KEEP_LINE_BYTES, 1)
        );
    }

    #[test]
    fn stops_when_aborted() {
        let signal = CancellationToken::new();
        signal.cancel();
        assert!(scan(&b"a\nb"[..], 0, 1, &signal).unwrap().is_none());
    }
}
