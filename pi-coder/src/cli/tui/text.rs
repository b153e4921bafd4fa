//! Styled text for the terminal: spans with a style, word-wrapped to the terminal's width in
//! display cells (wide characters count two), written as ANSI escape sequences. Every line the
//! interface draws goes through here, so none is wider than the terminal (a wider one would
//! wrap on its own and break the renderer's line count).

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The colours used (the terminal's 16-colour palette, so the user's theme applies).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Color {
    Red,
    Green,
    Yellow,
    Blue,
    Magenta,
    Cyan,
    Gray,
    /// A dark background for the user's messages and tool boxes (256-colour grey).
    DarkBg,
    /// A dark green background (a tool call that succeeded).
    GreenBg,
    /// A dark red background (a tool call that failed).
    RedBg,
}

impl Color {
    fn fg(self) -> &'static str {
        match self {
            Color::Red => "31",
            Color::Green => "32",
            Color::Yellow => "33",
            Color::Blue => "34",
            Color::Magenta => "35",
            Color::Cyan => "36",
            Color::Gray | Color::DarkBg | Color::GreenBg | Color::RedBg => "90",
        }
    }

    fn bg(self) -> &'static str {
        match self {
            Color::GreenBg => "48;5;22",
            Color::RedBg => "48;5;52",
            _ => "48;5;236",
        }
    }
}

/// How a span looks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Style {
    pub(crate) fg: Option<Color>,
    pub(crate) bg: Option<Color>,
    pub(crate) bold: bool,
    pub(crate) italic: bool,
    pub(crate) underline: bool,
    pub(crate) dim: bool,
    pub(crate) reverse: bool,
    pub(crate) strike: bool,
}

impl Style {
    pub(crate) fn fg(color: Color) -> Style {
        Style {
            fg: Some(color),
            ..Style::default()
        }
    }

    pub(crate) fn bold(mut self) -> Style {
        self.bold = true;
        self
    }

    pub(crate) fn italic(mut self) -> Style {
        self.italic = true;
        self
    }

    pub(crate) fn with_bg(mut self, color: Color) -> Style {
        self.bg = Some(color);
        self
    }

    /// The escape sequence that starts this style (empty for the plain style).
    fn sgr(&self) -> String {
        let mut codes: Vec<&str> = Vec::new();
        if self.bold {
            codes.push("1");
        }
        if self.dim {
            codes.push("2");
        }
        if self.italic {
            codes.push("3");
        }
        if self.underline {
            codes.push("4");
        }
        if self.reverse {
            codes.push("7");
        }
        if self.strike {
            codes.push("9");
        }
        if let Some(fg) = self.fg {
            codes.push(fg.fg());
        }
        if let Some(bg) = self.bg {
            codes.push(bg.bg());
        }
        if codes.is_empty() {
            String::new()
        } else {
            format!("\x1b[{}m", codes.join(";"))
        }
    }
}

/// Text in one style.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) style: Style,
    pub(crate) text: String,
}

impl Span {
    pub(crate) fn new(style: Style, text: impl Into<String>) -> Span {
        Span {
            style,
            text: text.into(),
        }
    }

    pub(crate) fn plain(text: impl Into<String>) -> Span {
        Span::new(Style::default(), text)
    }
}

/// Display width of `text` in terminal cells (control characters count nothing).
pub(crate) fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

fn char_width(c: char) -> usize {
    UnicodeWidthChar::width(c).unwrap_or(0)
}

/// One styled line, written out: each span's style, its text, then a reset.
pub(crate) fn to_ansi(spans: &[Span]) -> String {
    let mut out = String::new();
    for span in spans {
        if span.text.is_empty() {
            continue;
        }
        let sgr = span.style.sgr();
        if sgr.is_empty() {
            out.push_str(&span.text);
        } else {
            out.push_str(&sgr);
            out.push_str(&span.text);
            out.push_str("\x1b[0m");
        }
    }
    out
}

/// Cuts a styled line to `max` cells, ending with `…` when something was cut.
pub(crate) fn truncate(spans: &[Span], max: usize) -> Vec<Span> {
    let total: usize = spans.iter().map(|s| width(&s.text)).sum();
    if total <= max {
        return spans.to_vec();
    }
    let mut out = Vec::new();
    let mut used = 0;
    let room = max.saturating_sub(1);
    for span in spans {
        let mut text = String::new();
        for c in span.text.chars() {
            let w = char_width(c);
            if used + w > room {
                break;
            }
            used += w;
            text.push(c);
        }
        if !text.is_empty() {
            out.push(Span::new(span.style, text));
        }
        if used >= room {
            break;
        }
    }
    if max > 0 {
        out.push(Span::plain("…"));
    }
    out
}

/// Pads a styled line with spaces in `style` to exactly `cells` cells (cut first when wider).
pub(crate) fn pad(spans: &[Span], cells: usize, style: Style) -> Vec<Span> {
    let mut out = truncate(spans, cells);
    let used: usize = out.iter().map(|s| width(&s.text)).sum();
    if used < cells {
        out.push(Span::new(style, " ".repeat(cells - used)));
    }
    out
}

/// Word-wraps styled text to `width` cells: breaks at spaces where it can, inside a word
/// longer than a line where it must; `\n` starts a new line. Spaces at a break are dropped.
pub(crate) fn wrap(spans: &[Span], width: usize) -> Vec<Vec<Span>> {
    let mut wrapper = Wrapper {
        width: width.max(1),
        lines: Vec::new(),
        line: Vec::new(),
        used: 0,
        word: Vec::new(),
        word_width: 0,
        spaces: Vec::new(),
        spaces_width: 0,
    };
    for span in spans {
        for c in span.text.chars() {
            match c {
                '\n' => {
                    wrapper.flush_word();
                    wrapper.break_line();
                }
                ' ' | '\t' => {
                    wrapper.flush_word();
                    push_char(&mut wrapper.spaces, span.style, ' ');
                    wrapper.spaces_width += 1;
                }
                c if c.is_control() => {}
                c => {
                    push_char(&mut wrapper.word, span.style, c);
                    wrapper.word_width += char_width(c);
                }
            }
        }
    }
    wrapper.flush_word();
    if wrapper.used + wrapper.spaces_width <= wrapper.width
        && !wrapper.spaces.is_empty()
        && !wrapper.line.is_empty()
    {
        let mut spaces = std::mem::take(&mut wrapper.spaces);
        wrapper.line.append(&mut spaces);
    }
    wrapper.lines.push(wrapper.line);
    wrapper.lines
}

/// Appends a character to the last piece when it has the same style, else as a new piece.
fn push_char(pieces: &mut Vec<Span>, style: Style, c: char) {
    match pieces.last_mut() {
        Some(last) if last.style == style => last.text.push(c),
        _ => pieces.push(Span::new(style, c.to_string())),
    }
}

/// The state of [`wrap`]: the lines done, the line being filled, the word being collected
/// and the spaces before it.
struct Wrapper {
    width: usize,
    lines: Vec<Vec<Span>>,
    line: Vec<Span>,
    used: usize,
    word: Vec<Span>,
    word_width: usize,
    spaces: Vec<Span>,
    spaces_width: usize,
}

impl Wrapper {
    fn break_line(&mut self) {
        self.lines.push(std::mem::take(&mut self.line));
        self.used = 0;
        self.spaces.clear();
        self.spaces_width = 0;
    }

    /// Puts the collected word on the line, or on a new one when it does not fit.
    fn flush_word(&mut self) {
        if self.word.is_empty() {
            return;
        }
        if self.used > 0 && self.used + self.spaces_width + self.word_width > self.width {
            self.break_line();
        }
        if self.used > 0 || !self.spaces.is_empty() {
            let mut spaces = std::mem::take(&mut self.spaces);
            self.line.append(&mut spaces);
            self.used += self.spaces_width;
            self.spaces_width = 0;
        }
        // A word longer than the room left is broken where it must be.
        for piece in std::mem::take(&mut self.word) {
            for c in piece.text.chars() {
                let w = char_width(c);
                if self.used + w > self.width && self.used > 0 {
                    self.lines.push(std::mem::take(&mut self.line));
                    self.used = 0;
                }
                push_char(&mut self.line, piece.style, c);
                self.used += w;
            }
        }
        self.word_width = 0;
    }
}

/// Strips escape sequences and control characters from text that came from outside (a model,
/// a tool, a file name), so it cannot move the cursor or change the terminal.
pub(crate) fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                // CSI: ESC [ params final; OSC: ESC ] ... BEL or ESC \; else ESC + one char.
                match chars.peek() {
                    Some('[') => {
                        chars.next();
                        for c in chars.by_ref() {
                            if ('@'..='~').contains(&c) {
                                break;
                            }
                        }
                    }
                    Some(']') => {
                        chars.next();
                        while let Some(c) = chars.next() {
                            if c == '\x07' {
                                break;
                            }
                            if c == '\x1b' {
                                chars.next();
                                break;
                            }
                        }
                    }
                    Some(_) => {
                        chars.next();
                    }
                    None => {}
                }
            }
            '\n' | '\t' => out.push(c),
            '\r' => {}
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Vec<Span>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.iter().map(|s| s.text.as_str()).collect())
            .collect()
    }

    #[test]
    fn wraps_at_spaces_and_breaks_long_words() {
        let lines = wrap(&[Span::plain("hello big world")], 9);
        assert_eq!(plain(&lines), ["hello big", "world"]);
        let lines = wrap(&[Span::plain("abcdefghij k")], 4);
        assert_eq!(plain(&lines), ["abcd", "efgh", "ij k"]);
        let lines = wrap(&[Span::plain("a\n\nb")], 10);
        assert_eq!(plain(&lines), ["a", "", "b"]);
        // Wide characters take two cells.
        let lines = wrap(&[Span::plain("日本語の")], 5);
        assert_eq!(plain(&lines), ["日本", "語の"]);
        for line in wrap(&[Span::plain("x ".repeat(50))], 7) {
            assert!(line.iter().map(|s| width(&s.text)).sum::<usize>() <= 7);
        }
    }

    #[test]
    fn styles_survive_wrapping_and_truncation() {
        let bold = Style::default().bold();
        let lines = wrap(&[Span::plain("one "), Span::new(bold, "two three")], 7);
        assert_eq!(plain(&lines), ["one two", "three"]);
        assert_eq!(lines[1][0].style, bold);
        assert_eq!(
            to_ansi(&lines[1]),
            "\x1b[1mthree\x1b[0m",
            "a styled span is reset at its end"
        );
        let cut = truncate(&[Span::plain("abcdef")], 4);
        assert_eq!(plain(&[cut]), ["abc…"]);
    }

    #[test]
    fn escape_sequences_from_outside_are_removed() {
        assert_eq!(
            sanitize("a\x1b[2Jb\x1b]0;title\x07c\rd\x07"),
            "abcd",
            "clear screen, title, CR and bell go"
        );
    }
}
