//! The model's answers as markdown in the terminal (pulldown-cmark): headings, emphasis,
//! inline code, links, lists, quotes, rules, fenced code blocks with their fences, highlighted
//! by syntect (`highlight.rs`), and tables drawn as boxes, all wrapped
//! to the terminal's width. The text may be a part still streaming: an open code fence or a
//! half-written table render as they are so far.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::highlight::highlight;
use super::text::{Color, Span, Style, truncate, width, wrap};

/// Styled lines of `markdown` for a terminal `cells` wide.
pub(crate) fn render(markdown: &str, cells: usize) -> Vec<Vec<Span>> {
    let mut out = Writer {
        width: cells.max(8),
        lines: Vec::new(),
        inline: Vec::new(),
        styles: vec![Style::default()],
        prefixes: Vec::new(),
        lists: Vec::new(),
        code: None,
        table: None,
        link: None,
    };
    let parser = Parser::new_ext(
        markdown,
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS,
    );
    for event in parser {
        out.event(event);
    }
    if let Some(code) = out.code.take() {
        out.code_block(code);
    }
    out.flush();
    while out.lines.last().is_some_and(Vec::is_empty) {
        out.lines.pop();
    }
    out.lines
}

/// A fenced or indented code block being collected.
struct Code {
    language: String,
    text: String,
    fenced: bool,
}

/// A table being collected: its alignments, its rows of cells (each cell's spans).
struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span>>>,
    head_rows: usize,
    in_head: bool,
}

/// A prefix for the lines of a block: the first line's and the others'.
struct Prefix {
    first: Vec<Span>,
    rest: Vec<Span>,
    used_first: bool,
}

struct Writer {
    width: usize,
    lines: Vec<Vec<Span>>,
    /// The paragraph, heading or item text being collected.
    inline: Vec<Span>,
    styles: Vec<Style>,
    prefixes: Vec<Prefix>,
    /// Each open list's next number (`None` for a bullet list).
    lists: Vec<Option<u64>>,
    code: Option<Code>,
    table: Option<Table>,
    /// The destination of the link being written.
    link: Option<String>,
}

impl Writer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, change: impl FnOnce(&mut Style)) {
        let mut style = self.style();
        change(&mut style);
        self.styles.push(style);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    fn prefix_width(&self) -> usize {
        self.prefixes
            .iter()
            .map(|p| {
                let spans = if p.used_first { &p.rest } else { &p.first };
                spans.iter().map(|s| width(&s.text)).sum::<usize>()
            })
            .sum()
    }

    /// A line with the open blocks' prefixes before it.
    fn emit(&mut self, line: Vec<Span>) {
        let mut full = Vec::new();
        for prefix in &mut self.prefixes {
            if prefix.used_first {
                full.extend(prefix.rest.iter().cloned());
            } else {
                full.extend(prefix.first.iter().cloned());
                prefix.used_first = true;
            }
        }
        full.extend(line);
        self.lines.push(full);
    }

    /// A blank line between blocks (never two, never at the top).
    fn blank(&mut self) {
        if self.lines.last().is_some_and(|l| !l.is_empty()) && self.prefixes.is_empty() {
            self.lines.push(Vec::new());
        }
    }

    /// Writes the collected inline text, wrapped.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        let room = self.width.saturating_sub(self.prefix_width()).max(4);
        for line in wrap(&spans, room) {
            self.emit(line);
        }
    }

    fn text(&mut self, text: &str) {
        if let Some(code) = &mut self.code {
            code.text.push_str(text);
            return;
        }
        let style = self.style();
        if let Some(table) = &mut self.table {
            if let Some(cell) = table.rows.last_mut().and_then(|r| r.last_mut()) {
                cell.push(Span::new(style, text.replace('\n', " ")));
            }
            return;
        }
        self.inline.push(Span::new(style, text));
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                let style = Style {
                    fg: Some(Color::Cyan),
                    ..self.style()
                };
                if let Some(table) = &mut self.table
                    && let Some(cell) = table.rows.last_mut().and_then(|r| r.last_mut())
                {
                    cell.push(Span::new(style, code.to_string()));
                    return;
                }
                self.inline.push(Span::new(style, code.to_string()));
            }
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.text("\n"),
            Event::Rule => {
                self.flush();
                self.blank();
                let room = self.width.saturating_sub(self.prefix_width());
                self.emit(vec![Span::new(Style::fg(Color::Gray), "─".repeat(room))]);
            }
            Event::TaskListMarker(done) => {
                self.text(if done { "[x] " } else { "[ ] " });
            }
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]")),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        if self.table.is_some() {
            self.table_start(tag);
            return;
        }
        match tag {
            Tag::Paragraph if self.lists.is_empty() => self.blank(),
            Tag::Heading { level, .. } => {
                self.flush();
                self.blank();
                self.push_style(|s| {
                    s.bold = true;
                    s.fg = Some(Color::Yellow);
                    s.underline = level == HeadingLevel::H1;
                });
                if level > HeadingLevel::H2 {
                    let hashes = "#".repeat(level as usize);
                    self.text(&format!("{hashes} "));
                }
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.blank();
                let bar = vec![Span::new(Style::fg(Color::Gray), "│ ")];
                self.prefixes.push(Prefix {
                    first: bar.clone(),
                    rest: bar,
                    used_first: false,
                });
                self.push_style(|s| {
                    s.italic = true;
                    s.fg = Some(Color::Gray);
                });
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.blank();
                let (language, fenced) = match kind {
                    CodeBlockKind::Fenced(info) => (
                        info.split_whitespace().next().unwrap_or("").to_owned(),
                        true,
                    ),
                    CodeBlockKind::Indented => (String::new(), false),
                };
                self.code = Some(Code {
                    language,
                    text: String::new(),
                    fenced,
                });
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    _ => "- ".to_owned(),
                };
                let _ = depth;
                let rest = " ".repeat(width(&marker));
                self.prefixes.push(Prefix {
                    first: vec![Span::new(Style::fg(Color::Cyan), marker)],
                    rest: vec![Span::plain(rest)],
                    used_first: false,
                });
            }
            Tag::Emphasis => self.push_style(|s| s.italic = true),
            Tag::Strong => self.push_style(|s| s.bold = true),
            Tag::Strikethrough => self.push_style(|s| s.strike = true),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.push_style(|s| {
                    s.underline = true;
                    s.fg = Some(Color::Blue);
                });
            }
            Tag::Image { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.push_style(|s| s.fg = Some(Color::Blue));
                self.text("[image: ");
            }
            Tag::Table(alignments) => {
                self.flush();
                self.blank();
                self.table = Some(Table {
                    alignments,
                    rows: Vec::new(),
                    head_rows: 0,
                    in_head: false,
                });
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        if self.table.is_some() {
            self.table_end(tag);
            return;
        }
        match tag {
            TagEnd::Paragraph => self.flush(),
            TagEnd::Heading(_) => {
                self.flush();
                self.pop_style();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.prefixes.pop();
                self.pop_style();
            }
            TagEnd::CodeBlock => {
                if let Some(code) = self.code.take() {
                    self.code_block(code);
                }
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
            }
            TagEnd::Item => {
                self.flush();
                self.prefixes.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link => {
                self.pop_style();
                if let Some(url) = self.link.take() {
                    let shown: String = self
                        .inline
                        .iter()
                        .rev()
                        .take(1)
                        .map(|s| s.text.clone())
                        .collect();
                    if !url.is_empty() && shown != url && !url.starts_with('#') {
                        let style = Style::fg(Color::Gray);
                        self.inline.push(Span::new(style, format!(" ({url})")));
                    }
                }
            }
            TagEnd::Image => {
                self.text("]");
                self.pop_style();
                self.link = None;
            }
            _ => {}
        }
    }

    /// A code block: the fences (dimmed, as pi shows them), the lines highlighted, wrapped.
    fn code_block(&mut self, code: Code) {
        let fence = Style::fg(Color::Gray);
        if code.fenced {
            self.emit(vec![Span::new(fence, format!("```{}", code.language))]);
        }
        let room = self.width.saturating_sub(self.prefix_width() + 2).max(4);
        let text = code.text.strip_suffix('\n').unwrap_or(&code.text);
        for spans in highlight(text, &code.language) {
            for wrapped in wrap_code(&spans, room) {
                let mut out = vec![Span::plain("  ")];
                out.extend(wrapped);
                self.emit(out);
            }
        }
        if code.fenced {
            self.emit(vec![Span::new(fence, "```")]);
        }
    }

    fn table_start(&mut self, tag: Tag<'_>) {
        let Some(table) = &mut self.table else { return };
        match tag {
            Tag::TableHead => {
                table.in_head = true;
                table.rows.push(Vec::new());
            }
            Tag::TableRow => table.rows.push(Vec::new()),
            Tag::TableCell => {
                if let Some(row) = table.rows.last_mut() {
                    row.push(Vec::new());
                }
            }
            Tag::Emphasis => self.push_style(|s| s.italic = true),
            Tag::Strong => self.push_style(|s| s.bold = true),
            _ => {}
        }
    }

    fn table_end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.draw_table(table);
                }
            }
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.in_head = false;
                    table.head_rows = table.rows.len();
                }
            }
            TagEnd::Emphasis | TagEnd::Strong => self.pop_style(),
            _ => {}
        }
    }

    /// A table as a box (`┌─┬─┐`), columns as wide as their widest cell, narrowed (cells cut
    /// with `…`) when the terminal is too narrow.
    fn draw_table(&mut self, table: Table) {
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return;
        }
        let cell_width = |cell: &Vec<Span>| cell.iter().map(|s| width(&s.text)).sum::<usize>();
        let mut widths = vec![1usize; columns];
        for row in &table.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(cell_width(cell));
            }
        }
        // Borders take 3 cells per column plus 1.
        let room = self
            .width
            .saturating_sub(self.prefix_width() + 3 * columns + 1)
            .max(columns);
        while widths.iter().sum::<usize>() > room {
            let widest = (0..columns).max_by_key(|&i| widths[i]).unwrap_or(0);
            if widths[widest] <= 1 {
                break;
            }
            widths[widest] -= 1;
        }
        let border = Style::fg(Color::Gray);
        let rule = |left: &str, mid: &str, right: &str| {
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            vec![Span::new(
                border,
                format!("{left}{}{right}", parts.join(mid)),
            )]
        };
        self.emit(rule("┌", "┬", "┐"));
        for (r, row) in table.rows.iter().enumerate() {
            let mut line = vec![Span::new(border, "│")];
            for (i, w) in widths.iter().enumerate() {
                let empty = Vec::new();
                let mut cell = row.get(i).unwrap_or(&empty).clone();
                if r < table.head_rows {
                    for span in &mut cell {
                        span.style.bold = true;
                    }
                }
                let cell = truncate(&cell, *w);
                let used = cell_width(&cell);
                let gap = w - used.min(*w);
                let (before, after) = match table.alignments.get(i) {
                    Some(Alignment::Right) => (gap, 0),
                    Some(Alignment::Center) => (gap / 2, gap - gap / 2),
                    _ => (0, gap),
                };
                line.push(Span::plain(" ".repeat(before + 1)));
                line.extend(cell);
                line.push(Span::plain(" ".repeat(after + 1)));
                line.push(Span::new(border, "│"));
            }
            self.emit(line);
            if r + 1 == table.head_rows && table.rows.len() > table.head_rows {
                self.emit(rule("├", "┼", "┤"));
            }
        }
        self.emit(rule("└", "┴", "┘"));
    }
}

/// Code lines are wrapped by cells, not words (spaces matter in code).
fn wrap_code(spans: &[Span], room: usize) -> Vec<Vec<Span>> {
    let mut lines = vec![Vec::new()];
    let mut used = 0;
    for span in spans {
        for c in span.text.chars() {
            let c = if c == '\t' { ' ' } else { c };
            let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + w > room && used > 0 {
                lines.push(Vec::new());
                used = 0;
            }
            let line = lines.last_mut().expect("a line");
            match line.last_mut() {
                Some(Span { style, text }) if *style == span.style => text.push(c),
                _ => line.push(Span::new(span.style, c.to_string())),
            }
            used += w;
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(markdown: &str, width: usize) -> Vec<String> {
        render(markdown, width)
            .iter()
            .map(|l| l.iter().map(|s| s.text.as_str()).collect())
            .collect()
    }

    #[test]
    fn headings_lists_code_and_tables() {
        let text = "# Heading One\n\nSome **bold** and `code`.\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 22 |\n";
        assert_eq!(
            plain(text, 40),
            [
                "Heading One",
                "",
                "Some bold and code.",
                "",
                "- one",
                "- two",
                "",
                "```rust",
                "  fn main() {}",
                "```",
                "",
                "┌───┬────┐",
                "│ a │ b  │",
                "├───┼────┤",
                "│ 1 │ 22 │",
                "└───┴────┘",
            ]
        );
        let lines = render("# H\n\n**b**", 40);
        assert!(lines[0][0].style.bold && lines[0][0].style.underline);
        assert!(lines[2][0].style.bold);
    }

    #[test]
    fn narrow_terminals_wrap_and_cut_tables() {
        for line in plain(
            "| column one | column two |\n|---|---|\n| a long cell | another long cell |",
            20,
        ) {
            assert!(width(&line) <= 20, "{line}");
        }
        assert_eq!(
            plain("- a list item that wraps", 12),
            ["- a list", "  item that", "  wraps"]
        );
    }

    #[test]
    fn an_open_fence_while_streaming_renders_as_code() {
        assert_eq!(plain("```\nlet x", 40), ["```", "  let x", "```"]);
    }

    #[test]
    fn code_blocks_are_highlighted_by_their_language_and_wrap_by_cells() {
        let rendered = render("```rust\nlet s = \"text\";\n```", 40);
        let code = &rendered[1];
        let colour = |text: &str| {
            code.iter()
                .find(|s| s.text.contains(text))
                .unwrap()
                .style
                .fg
        };
        assert!(colour("let").is_some() && colour("text").is_some());
        assert_ne!(colour("let"), colour("text"));
        // An unknown language: the text as it is, uncoloured.
        let rendered = render("```nosuchlanguage\nlet s = \"text\";\n```", 40);
        assert_eq!(
            rendered[1],
            [Span::plain("  "), Span::plain("let s = \"text\";")]
        );
        // A narrow terminal: code wraps by cells, every line within the width (the styles'
        // escape codes are not text, so they do not count).
        let long = "```rust\nlet answer = \"a string long enough to wrap\"; // and a comment\n```";
        let lines = plain(long, 16);
        assert!(lines.len() > 5, "{lines:?}");
        for line in &lines {
            assert!(width(line) <= 16, "{line}");
        }
        assert_eq!(
            lines[1..lines.len() - 1]
                .iter()
                .map(|l| l.strip_prefix("  ").unwrap())
                .collect::<String>(),
            "let answer = \"a string long enough to wrap\"; // and a comment"
        );
    }
}
