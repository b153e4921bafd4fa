//! The prompt editor: multi-line text with a cursor and pi's editing keys (Ctrl+A/E/K/U/W/Y,
//! Alt+B/F/D, Home/End, arrows, Backspace/Delete, Ctrl+J and Shift+Enter for a new line), and
//! the prompt history (Up at the first line, Down at the last). Enter, Tab, Escape and Ctrl+C
//! are the interface's to decide (see `mod.rs`).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::history::History;
use super::text::{Span, Style, width};

/// The editor's text, cursor and history.
pub(crate) struct Editor {
    lines: Vec<String>,
    row: usize,
    /// Byte offset of the cursor in `lines[row]`.
    col: usize,
    /// The last text cut with Ctrl+K, Ctrl+U or Ctrl+W, for Ctrl+Y.
    yanked: String,
    pub(crate) history: History,
    /// Where Up/Down are in the history (`None`: editing a new text), and that new text.
    browsing: Option<(usize, String)>,
}

/// What a key did to the editor.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Edit {
    /// The text or cursor changed.
    Changed,
    /// The key is not an editing key.
    Ignored,
}

impl Editor {
    pub(crate) fn new(history: History) -> Editor {
        Editor {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            yanked: String::new(),
            history,
            browsing: None,
        }
    }

    /// The whole text, lines joined by `\n`.
    pub(crate) fn text(&self) -> String {
        self.lines.join("\n")
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Replaces the text; the cursor goes to its end.
    pub(crate) fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_owned).collect();
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].len();
    }

    /// Empties the editor and returns what it held.
    pub(crate) fn take(&mut self) -> String {
        let text = self.text();
        self.set_text("");
        self.browsing = None;
        text
    }

    /// The text before the cursor on its line.
    pub(crate) fn before_cursor(&self) -> &str {
        &self.lines[self.row][..self.col]
    }

    /// Inserts text at the cursor (`\r\n` and `\r` read as new lines, as a paste brings them).
    pub(crate) fn insert(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let mut parts = text.split('\n');
        let first = parts.next().unwrap_or("");
        let first: String = first
            .chars()
            .map(|c| if c == '\t' { ' ' } else { c })
            .filter(|c| !c.is_control())
            .collect();
        self.lines[self.row].insert_str(self.col, &first);
        self.col += first.len();
        for part in parts {
            let part: String = part
                .chars()
                .map(|c| if c == '\t' { ' ' } else { c })
                .filter(|c| !c.is_control())
                .collect();
            let tail = self.lines[self.row].split_off(self.col);
            self.row += 1;
            self.lines.insert(self.row, format!("{part}{tail}"));
            self.col = part.len();
        }
    }

    /// Replaces the `count` bytes before the cursor with `text`.
    pub(crate) fn replace_before(&mut self, count: usize, text: &str) {
        let start = self.col.saturating_sub(count);
        self.lines[self.row].replace_range(start..self.col, text);
        self.col = start + text.len();
    }

    /// Handles an editing key.
    pub(crate) fn key(&mut self, key: KeyEvent) -> Edit {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Char('j') if ctrl => self.insert("\n"),
            KeyCode::Enter if key.modifiers.contains(KeyModifiers::SHIFT) => self.insert("\n"),
            KeyCode::Char('a') if ctrl => self.col = 0,
            KeyCode::Char('e') if ctrl => self.col = self.lines[self.row].len(),
            KeyCode::Home => self.col = 0,
            KeyCode::End => self.col = self.lines[self.row].len(),
            KeyCode::Char('b') if ctrl => self.left(),
            KeyCode::Char('f') if ctrl => self.right(),
            KeyCode::Char('b') if alt => self.word_left(),
            KeyCode::Char('f') if alt => self.word_right(),
            KeyCode::Left if ctrl || alt => self.word_left(),
            KeyCode::Right if ctrl || alt => self.word_right(),
            KeyCode::Left => self.left(),
            KeyCode::Right => self.right(),
            KeyCode::Char('k') if ctrl => {
                if self.col == self.lines[self.row].len() && self.row + 1 < self.lines.len() {
                    let next = self.lines.remove(self.row + 1);
                    self.lines[self.row].push_str(&next);
                    self.yanked = "\n".into();
                } else {
                    let col = self.col;
                    self.yanked = self.lines[self.row].split_off(col);
                }
            }
            KeyCode::Char('u') if ctrl => {
                let line = &mut self.lines[self.row];
                self.yanked = line[..self.col].to_owned();
                line.replace_range(..self.col, "");
                self.col = 0;
            }
            KeyCode::Char('w') if ctrl => self.delete_word_back(),
            KeyCode::Backspace if alt || ctrl => self.delete_word_back(),
            KeyCode::Char('d') if alt => {
                let start = self.col;
                self.word_right();
                let end = self.col;
                self.yanked = self.lines[self.row][start..end].to_owned();
                self.lines[self.row].replace_range(start..end, "");
                self.col = start;
            }
            KeyCode::Char('y') if ctrl => {
                let yanked = self.yanked.clone();
                self.insert(&yanked);
            }
            KeyCode::Backspace => self.backspace(),
            KeyCode::Char('h') if ctrl => self.backspace(),
            KeyCode::Delete => self.delete(),
            KeyCode::Char('d') if ctrl => self.delete(),
            KeyCode::Up => self.up(),
            KeyCode::Down => self.down(),
            KeyCode::Char(c) if !ctrl && !alt => {
                let mut buffer = [0u8; 4];
                self.insert(c.encode_utf8(&mut buffer));
            }
            _ => return Edit::Ignored,
        }
        Edit::Changed
    }

    fn left(&mut self) {
        if self.col > 0 {
            let line = &self.lines[self.row];
            self.col = line[..self.col]
                .char_indices()
                .next_back()
                .map_or(0, |(i, _)| i);
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.lines[self.row].len();
        }
    }

    fn right(&mut self) {
        let line = &self.lines[self.row];
        if let Some(c) = line[self.col..].chars().next() {
            self.col += c.len_utf8();
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    fn word_left(&mut self) {
        let line = &self.lines[self.row];
        let before: Vec<(usize, char)> = line[..self.col].char_indices().collect();
        let mut i = before.len();
        while i > 0 && !is_word(before[i - 1].1) {
            i -= 1;
        }
        while i > 0 && is_word(before[i - 1].1) {
            i -= 1;
        }
        self.col = before.get(i).map_or(0, |(at, _)| *at);
        if i == 0 {
            self.col = 0;
        }
    }

    fn word_right(&mut self) {
        let line = &self.lines[self.row];
        let mut chars = line[self.col..].char_indices().peekable();
        let mut end = line.len() - self.col;
        while let Some((_, c)) = chars.peek() {
            if is_word(*c) {
                break;
            }
            chars.next();
        }
        for (at, c) in chars {
            if !is_word(c) {
                end = at;
                break;
            }
        }
        self.col += end;
    }

    /// Ctrl+W: the spaces before the cursor, then the word before them.
    fn delete_word_back(&mut self) {
        if self.col == 0 {
            self.backspace();
            return;
        }
        let line = &self.lines[self.row];
        let before = &line[..self.col];
        let trimmed = before.trim_end();
        let start = trimmed
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        self.yanked = line[start..self.col].to_owned();
        self.lines[self.row].replace_range(start..self.col, "");
        self.col = start;
    }

    fn backspace(&mut self) {
        if self.col > 0 {
            let end = self.col;
            self.left();
            self.lines[self.row].replace_range(self.col..end, "");
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].len();
            self.lines[self.row].push_str(&line);
        }
    }

    fn delete(&mut self) {
        let line = &self.lines[self.row];
        if let Some(c) = line[self.col..].chars().next() {
            let end = self.col + c.len_utf8();
            self.lines[self.row].replace_range(self.col..end, "");
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    /// Up: the line above, or at the first line the previous prompt of the history.
    fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.lines[self.row].len());
            self.fix_boundary();
            return;
        }
        let next = match &self.browsing {
            None => self.history.len().checked_sub(1),
            Some((at, _)) => at.checked_sub(1),
        };
        if let Some(at) = next
            && let Some(entry) = self.history.get(at).map(str::to_owned)
        {
            let draft = match self.browsing.take() {
                Some((_, draft)) => draft,
                None => self.text(),
            };
            self.set_text(&entry);
            self.browsing = Some((at, draft));
        }
    }

    /// Down: the line below, or at the last line the next prompt of the history (after the
    /// newest, the text being written before Up was pressed).
    fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.lines[self.row].len());
            self.fix_boundary();
            return;
        }
        if let Some((at, draft)) = self.browsing.take() {
            match self.history.get(at + 1).map(str::to_owned) {
                Some(entry) => {
                    self.set_text(&entry);
                    self.browsing = Some((at + 1, draft));
                }
                None => self.set_text(&draft),
            }
        }
    }

    /// Moves the cursor back onto a character boundary after a move between lines.
    fn fix_boundary(&mut self) {
        let line = &self.lines[self.row];
        while !line.is_char_boundary(self.col) {
            self.col -= 1;
        }
    }

    /// The editor's lines for a terminal `cells` wide: each line wrapped by cells, the cursor
    /// drawn in reverse video (the terminal's own cursor stays hidden, as in pi).
    pub(crate) fn render(&self, cells: usize, show_cursor: bool) -> Vec<Vec<Span>> {
        let room = cells.max(2) - 1;
        let mut out = Vec::new();
        let cursor = Style {
            reverse: true,
            ..Style::default()
        };
        for (r, line) in self.lines.iter().enumerate() {
            let mut rows: Vec<Vec<Span>> = vec![Vec::new()];
            let mut used = 0;
            let mut push = |rows: &mut Vec<Vec<Span>>, style: Style, c: char| {
                let w = width(c.encode_utf8(&mut [0u8; 4]));
                if used + w > room && used > 0 {
                    rows.push(Vec::new());
                    used = 0;
                }
                let row = rows.last_mut().expect("a row");
                match row.last_mut() {
                    Some(span) if span.style == style => span.text.push(c),
                    _ => row.push(Span::new(style, c.to_string())),
                }
                used += w;
            };
            for (at, c) in line.char_indices() {
                let style = if show_cursor && r == self.row && at == self.col {
                    cursor
                } else {
                    Style::default()
                };
                push(&mut rows, style, c);
            }
            if show_cursor && r == self.row && self.col == line.len() {
                push(&mut rows, cursor, ' ');
            }
            out.extend(rows);
        }
        out
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    fn typed(editor: &mut Editor, text: &str) {
        for c in text.chars() {
            editor.key(key(KeyCode::Char(c), KeyModifiers::NONE));
        }
    }

    fn editor() -> Editor {
        Editor::new(History::in_memory(vec![
            "first".into(),
            "second\nline".into(),
        ]))
    }

    #[test]
    fn line_editing_keys() {
        let mut e = editor();
        typed(&mut e, "hello big world");
        e.key(key(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(e.text(), "hello big ");
        e.key(key(KeyCode::Char('b'), KeyModifiers::ALT));
        assert_eq!(e.before_cursor(), "hello ");
        e.key(key(KeyCode::Char('k'), KeyModifiers::CONTROL));
        assert_eq!(e.text(), "hello ");
        e.key(key(KeyCode::Char('y'), KeyModifiers::CONTROL));
        assert_eq!(e.text(), "hello big ");
        e.key(key(KeyCode::Char('a'), KeyModifiers::CONTROL));
        typed(&mut e, ">");
        e.key(key(KeyCode::Char('f'), KeyModifiers::ALT));
        assert_eq!(e.before_cursor(), ">hello");
        e.key(key(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(e.text(), " big ");
        e.key(key(KeyCode::End, KeyModifiers::NONE));
        e.key(key(KeyCode::Backspace, KeyModifiers::NONE));
        e.key(key(KeyCode::Home, KeyModifiers::NONE));
        e.key(key(KeyCode::Delete, KeyModifiers::NONE));
        assert_eq!(e.text(), "big");
        e.key(key(KeyCode::Char('e'), KeyModifiers::CONTROL));
        e.key(key(KeyCode::Left, KeyModifiers::NONE));
        typed(&mut e, "é");
        e.key(key(KeyCode::Right, KeyModifiers::NONE));
        typed(&mut e, "!");
        assert_eq!(e.text(), "biég!");
    }

    #[test]
    fn new_lines_and_history() {
        let mut e = editor();
        typed(&mut e, "a");
        e.key(key(KeyCode::Char('j'), KeyModifiers::CONTROL));
        typed(&mut e, "b");
        e.key(key(KeyCode::Enter, KeyModifiers::SHIFT));
        typed(&mut e, "c");
        assert_eq!(e.text(), "a\nb\nc");
        // Up moves between lines first, then into the history.
        e.key(key(KeyCode::Up, KeyModifiers::NONE));
        e.key(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(e.text(), "a\nb\nc");
        e.key(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(e.text(), "second\nline");
        e.key(key(KeyCode::Up, KeyModifiers::NONE));
        e.key(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(e.text(), "first");
        e.key(key(KeyCode::Down, KeyModifiers::NONE));
        e.key(key(KeyCode::Down, KeyModifiers::NONE));
        e.key(key(KeyCode::Down, KeyModifiers::NONE));
        assert_eq!(e.text(), "a\nb\nc", "the draft comes back");
        e.insert("x\r\ny");
        assert_eq!(e.take(), "a\nb\ncx\ny");
        assert!(e.is_empty());
    }

    #[test]
    fn rendering_wraps_and_draws_the_cursor() {
        let mut e = editor();
        typed(&mut e, "abcdef");
        let lines = e.render(4, true);
        let text: Vec<String> = lines
            .iter()
            .map(|l| l.iter().map(|s| s.text.as_str()).collect())
            .collect();
        assert_eq!(text, ["abc", "def", " "]);
        assert!(lines[2][0].style.reverse);
    }
}
