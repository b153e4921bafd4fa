//! The differential renderer, in pi's manner (`pi-tui`'s `TUI.doRender`): the whole
//! conversation plus the editor and footer is a list of lines; each frame is compared with the
//! last one and only the lines from the first difference down are written again. Lines that
//! have scrolled off the top are the terminal's scrollback, kept as they are (no alternate
//! screen), so the user scrolls back with the terminal as usual. When a line above the visible
//! part changes (tool output expanded with Ctrl+O, a new width after a resize), the screen and
//! scrollback are cleared and everything is drawn again, as pi does.
//!
//! Each frame is one write, wrapped in synchronized-output marks so terminals that know them
//! show it at once, without flicker.

use std::io::Write;

/// What was drawn last.
#[derive(Default)]
pub(crate) struct Screen {
    lines: Vec<String>,
    /// The terminal's height when it was drawn.
    height: usize,
    width: usize,
    /// Bytes written, for the tests' and the bench's accounting.
    pub(crate) written: usize,
}

impl Screen {
    /// The next frame's output for `lines` (each already no wider than `width` cells), for a
    /// terminal `width` x `height`. After it the cursor is at the start of the last line.
    pub(crate) fn frame(&mut self, lines: Vec<String>, width: usize, height: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let resized = self.width != 0 && self.width != width;
        let first_changed = self
            .lines
            .iter()
            .zip(&lines)
            .position(|(old, new)| old != new)
            .unwrap_or(self.lines.len().min(lines.len()));
        if !resized && first_changed == self.lines.len() && lines.len() == self.lines.len() {
            return out;
        }
        // The first line still on the screen (the ones above are in the scrollback).
        let top = self.lines.len().saturating_sub(self.height.max(1));
        out.extend_from_slice(b"\x1b[?2026h");
        if resized || (first_changed < top && !self.lines.is_empty()) {
            // Clear the screen and the scrollback, then draw everything.
            out.extend_from_slice(b"\x1b[H\x1b[2J\x1b[3J");
            write_lines(&mut out, &lines, 0);
        } else if self.lines.is_empty() {
            write_lines(&mut out, &lines, 0);
        } else {
            // From the last line, where the cursor is, up to the first changed one (at least
            // the new last line, when lines were only taken away).
            let start = first_changed.min(lines.len().saturating_sub(1));
            let up = (self.lines.len() - 1).saturating_sub(start);
            if start >= self.lines.len() {
                // Only lines added: a new line after the last one.
                out.extend_from_slice(b"\r\n");
            } else if up > 0 {
                out.extend_from_slice(format!("\x1b[{up}A").as_bytes());
            }
            out.extend_from_slice(b"\r\x1b[J");
            write_lines(&mut out, &lines, start);
        }
        out.extend_from_slice(b"\x1b[?2026l");
        self.lines = lines;
        self.height = height;
        self.width = width;
        self.written += out.len();
        out
    }

    /// Draws the frame on the terminal.
    pub(crate) fn draw(&mut self, lines: Vec<String>, width: usize, height: usize) {
        let out = self.frame(lines, width, height);
        if !out.is_empty() {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(&out);
            let _ = stdout.flush();
        }
    }
}

/// Writes `lines[from..]`, each line cleared first, joined by `\r\n` (none after the last).
fn write_lines(out: &mut Vec<u8>, lines: &[String], from: usize) {
    for (i, line) in lines.iter().enumerate().skip(from) {
        if i > from {
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\x1b[2K");
        out.extend_from_slice(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| (*s).to_owned()).collect()
    }

    fn shown(out: &[u8]) -> String {
        String::from_utf8_lossy(out)
            .replace("\x1b[?2026h", "")
            .replace("\x1b[?2026l", "")
    }

    #[test]
    fn only_changed_lines_are_written() {
        let mut screen = Screen::default();
        let first = shown(&screen.frame(lines(&["a", "b", "c"]), 10, 10));
        assert_eq!(first, "\x1b[2Ka\r\n\x1b[2Kb\r\n\x1b[2Kc");
        // The same frame writes nothing.
        assert!(screen.frame(lines(&["a", "b", "c"]), 10, 10).is_empty());
        // A change on the last line but one: up one line, rewrite from there.
        let next = shown(&screen.frame(lines(&["a", "B", "c"]), 10, 10));
        assert_eq!(next, "\x1b[1A\r\x1b[J\x1b[2KB\r\n\x1b[2Kc");
        // A line added.
        let added = shown(&screen.frame(lines(&["a", "B", "c", "d"]), 10, 10));
        assert_eq!(added, "\r\n\r\x1b[J\x1b[2Kd");
        // Shorter: the rest is cleared.
        let shorter = shown(&screen.frame(lines(&["a", "B"]), 10, 10));
        assert_eq!(shorter, "\x1b[2A\r\x1b[J\x1b[2KB");
    }

    #[test]
    fn a_change_above_the_screen_or_a_new_width_redraws_everything() {
        let mut screen = Screen::default();
        screen.frame(lines(&["1", "2", "3", "4", "5"]), 10, 3);
        // Lines 1 and 2 are in the scrollback: changing one redraws all.
        let all = shown(&screen.frame(lines(&["x", "2", "3", "4", "5"]), 10, 3));
        assert!(all.starts_with("\x1b[H\x1b[2J\x1b[3J"), "{all:?}");
        // A change on the screen does not.
        let part = shown(&screen.frame(lines(&["x", "2", "3", "y", "5"]), 10, 3));
        assert!(part.starts_with("\x1b[1A"), "{part:?}");
        let resized = shown(&screen.frame(lines(&["x", "2", "3", "y", "5"]), 8, 3));
        assert!(resized.starts_with("\x1b[H\x1b[2J\x1b[3J"), "{resized:?}");
    }
}
