//! Styled text for the terminal: spans with a style, word-wrapped to the terminal's width in
//! display cells (wide characters count two), written as ANSI escape sequences. Every line the
//! interface draws goes through here, so none is wider than the terminal (a wider one would
//! wrap on its own and break the renderer's line count).

use std::borrow::Cow;
use std::sync::OnceLock;

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The colours used (the terminal's 16-colour palette, so the user's theme applies; only
/// highlighted code has exact colours, pi's).
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
    /// An exact colour (highlighted code, in pi's theme colours): 24-bit where the terminal
    /// says it has them (`COLORTERM=truecolor` or `24bit`, as pi checks), else the nearest
    /// of the 256-colour palette.
    Rgb(u8, u8, u8),
}

impl Color {
    fn fg(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Color::Red => "31",
            Color::Green => "32",
            Color::Yellow => "33",
            Color::Blue => "34",
            Color::Magenta => "35",
            Color::Cyan => "36",
            Color::Gray | Color::DarkBg | Color::GreenBg | Color::RedBg => "90",
            Color::Rgb(r, g, b) => return Cow::Owned(rgb_code(r, g, b, truecolor())),
        })
    }

    fn bg(self) -> &'static str {
        match self {
            Color::GreenBg => "48;5;22",
            Color::RedBg => "48;5;52",
            _ => "48;5;236",
        }
    }
}

/// Whether the terminal shows 24-bit colours (read once).
fn truecolor() -> bool {
    static TRUECOLOR: OnceLock<bool> = OnceLock::new();
    *TRUECOLOR
        .get_or_init(|| std::env::var("COLORTERM").is_ok_and(|v| v == "truecolor" || v == "24bit"))
}

/// The foreground code of an exact colour: `38;2;r;g;b`, or the nearest colour of the
/// 256-colour palette's 6x6x6 cube or grey ramp (`38;5;n`).
fn rgb_code(r: u8, g: u8, b: u8, truecolor: bool) -> String {
    if truecolor {
        return format!("38;2;{r};{g};{b}");
    }
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    let level = |c: u8| {
        (0..6)
            .min_by_key(|&i| (i32::from(LEVELS[i]) - i32::from(c)).abs())
            .unwrap_or(0)
    };
    let (ri, gi, bi) = (level(r), level(g), level(b));
    let cube = (LEVELS[ri], LEVELS[gi], LEVELS[bi]);
    let grey_index =
        (((u32::from(r) + u32::from(g) + u32::from(b)) / 3).saturating_sub(3) / 10).min(23) as u8;
    let grey = 8 + 10 * grey_index;
    let distance = |(x, y, z): (u8, u8, u8)| {
        let d = |p: u8, q: u8| (i32::from(p) - i32::from(q)).pow(2);
        d(x, r) + d(y, g) + d(z, b)
    };
    let index = if distance((grey, grey, grey)) < distance(cube) {
        232 + u32::from(grey_index)
    } else {
        16 + 36 * ri as u32 + 6 * gi as u32 + bi as u32
    };
    format!("38;5;{index}")
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
        let mut codes: Vec<Cow<'static, str>> = Vec::new();
        if self.bold {
            codes.push(Cow::Borrowed("1"));
        }
        if self.dim {
            codes.push(Cow::Borrowed("2"));
        }
        if self.italic {
            codes.push(Cow::Borrowed("3"));
        }
        if self.underline {
            codes.push(Cow::Borrowed("4"));
        }
        if self.reverse {
            codes.push(Cow::Borrowed("7"));
        }
        if self.strike {
            codes.push(Cow::Borrowed("9"));
        }
        if let Some(fg) = self.fg {
            codes.push(fg.fg());
        }
        if let Some(bg) = self.bg {
            codes.push(Cow::Borrowed(bg.bg()));
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

    #[test]
    fn exact_colours_are_24_bit_or_the_nearest_of_256() {
        assert_eq!(rgb_code(0x56, 0x9c, 0xd6, true), "38;2;86;156;214");
        // pi's keyword blue: the cube's (1, 3, 4); its comment green (1, 2, 1).
        assert_eq!(rgb_code(0x56, 0x9c, 0xd6, false), "38;5;74");
        assert_eq!(rgb_code(0x6a, 0x99, 0x55, false), "38;5;65");
        // Greys take the grey ramp; the cube's corners stay corners.
        assert_eq!(rgb_code(0x80, 0x80, 0x80, false), "38;5;244");
        assert_eq!(rgb_code(255, 0, 0, false), "38;5;196");
        let style = Style::fg(Color::Rgb(1, 2, 3));
        assert!(style.sgr().starts_with("\x1b[38;"), "{:?}", style.sgr());
    }

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
