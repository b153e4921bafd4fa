//! Code blocks highlighted by syntect with its bundled grammars (Sublime Text's, with the
//! pure-Rust fancy-regex engine) in pi's dark theme colours. The grammars are loaded on the
//! first code block, not at start-up (about 20 ms: see the README's "The terminal interface").

use std::sync::OnceLock;

use syntect::easy::HighlightLines;
use syntect::highlighting::{
    Color as SyntectColor, FontStyle, ScopeSelectors, StyleModifier, Theme, ThemeItem,
    ThemeSettings,
};
use syntect::parsing::{SyntaxReference, SyntaxSet};

use super::text::{Color, Span, Style};

/// The colour syntect gives text no scope of the theme matches: drawn in the terminal's own
/// colour (alpha 0 never comes from a theme item, all of which are opaque).
const TERMINAL_DEFAULT: SyntectColor = SyntectColor {
    r: 0,
    g: 0,
    b: 0,
    a: 0,
};

/// syntect's bundled grammars, loaded once, on the first code block.
pub(crate) fn syntaxes() -> &'static SyntaxSet {
    static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();
    SYNTAXES.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// pi's dark theme (`syntaxComment`, `syntaxKeyword`, ... of pi's `dark.json`, the colours of
/// VS Code's Dark+), as syntect scope selectors. Operators, punctuation and plain names keep
/// the terminal's colour, so code stays readable on a light background too.
fn theme() -> &'static Theme {
    static THEME: OnceLock<Theme> = OnceLock::new();
    THEME.get_or_init(|| {
        // `None`: the scopes match (so a more general item does not) in the terminal's colour.
        let item = |scopes: &str, rgb: Option<u32>, font_style: FontStyle| ThemeItem {
            scope: scopes
                .parse::<ScopeSelectors>()
                .expect("the theme's scope selectors are valid"),
            style: StyleModifier {
                foreground: Some(rgb.map_or(TERMINAL_DEFAULT, |rgb| SyntectColor {
                    r: (rgb >> 16) as u8,
                    g: (rgb >> 8) as u8,
                    b: rgb as u8,
                    a: 0xff,
                })),
                background: None,
                font_style: Some(font_style),
            },
        };
        Theme {
            name: Some("pi dark".to_owned()),
            settings: ThemeSettings {
                foreground: Some(TERMINAL_DEFAULT),
                ..ThemeSettings::default()
            },
            scopes: vec![
                item(
                    "comment, punctuation.definition.comment",
                    Some(0x6a9955),
                    FontStyle::ITALIC,
                ),
                item(
                    "string, constant.character, punctuation.definition.string",
                    Some(0xce9178),
                    FontStyle::empty(),
                ),
                item("constant.numeric", Some(0xb5cea8), FontStyle::empty()),
                item(
                    "keyword, storage, constant.language, variable.language, \
                     support.constant.language",
                    Some(0x569cd6),
                    FontStyle::empty(),
                ),
                item(
                    "keyword.operator, punctuation.separator, punctuation.terminator",
                    None,
                    FontStyle::empty(),
                ),
                item(
                    "entity.name.function, support.function, meta.function-call.identifier, \
                     variable.function",
                    Some(0xdcdcaa),
                    FontStyle::empty(),
                ),
                item(
                    "entity.name.type, entity.name.class, entity.name.struct, entity.name.enum, \
                     entity.name.trait, entity.name.impl, entity.other.inherited-class, \
                     support.type, support.class, storage.type.primitive, storage.type.numeric",
                    Some(0x4ec9b0),
                    FontStyle::empty(),
                ),
                item(
                    "variable.parameter, meta.mapping.key string, support.type.property-name, \
                     entity.name.tag, entity.other.attribute-name",
                    Some(0x9cdcfe),
                    FontStyle::empty(),
                ),
            ],
            ..Theme::default()
        }
    })
}

/// The grammar for a fence's language: by name or file extension as syntect knows them
/// (`rust`, `rs`, `python`, `go`, `json`, `yaml`, `c`, `cpp`, ...), with the names models
/// write that syntect lacks mapped to the nearest grammar it has. `None`: plain text.
fn syntax_for(language: &str) -> Option<&'static SyntaxReference> {
    let language = language.trim().to_ascii_lowercase();
    if language.is_empty() {
        return None;
    }
    let token = match language.as_str() {
        // No TypeScript grammar is bundled; JavaScript's covers all but the type syntax.
        "ts" | "typescript" | "tsx" | "jsx" | "mjs" | "cjs" | "node" => "js",
        "shell" | "zsh" | "console" | "shellscript" | "sh-session" => "bash",
        "c++" | "cxx" | "hpp" => "cpp",
        "py3" | "python3" => "python",
        "golang" => "go",
        "yml" => "yaml",
        other => other,
    };
    syntaxes().find_syntax_by_token(token)
}

/// The lines of a code block, each a list of spans, highlighted for `language`, or plain
/// when no bundled grammar knows it.
pub(crate) fn highlight(code: &str, language: &str) -> Vec<Vec<Span>> {
    let Some(syntax) = syntax_for(language) else {
        return code
            .split('\n')
            .map(|line| vec![Span::plain(line)])
            .collect();
    };
    let mut highlighter = HighlightLines::new(syntax, theme());
    code.split('\n')
        .map(|line| {
            let with_end = format!("{line}\n");
            match highlighter.highlight_line(&with_end, syntaxes()) {
                Ok(ranges) => spans_of(&ranges),
                // A grammar's regex that fails on this text: the line as it is.
                Err(_) => vec![Span::plain(line)],
            }
        })
        .collect()
}

/// syntect's styled ranges as our spans, without the line's end.
fn spans_of(ranges: &[(syntect::highlighting::Style, &str)]) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    for (style, text) in ranges {
        let text = text.trim_end_matches(['\n', '\r']);
        if text.is_empty() {
            continue;
        }
        let fg = style.foreground;
        let ours = Style {
            fg: (fg.a != 0).then_some(Color::Rgb(fg.r, fg.g, fg.b)),
            italic: style.font_style.contains(FontStyle::ITALIC),
            bold: style.font_style.contains(FontStyle::BOLD),
            ..Style::default()
        };
        match spans.last_mut() {
            Some(last) if last.style == ours => last.text.push_str(text),
            _ => spans.push(Span::new(ours, text)),
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn colour_of(spans: &[Span], text: &str) -> Option<Color> {
        spans
            .iter()
            .find(|s| s.text.contains(text))
            .unwrap_or_else(|| panic!("{text:?} in {spans:?}"))
            .style
            .fg
    }

    #[test]
    fn a_keyword_a_string_and_a_comment_get_their_own_colours() {
        let lines = highlight("let s = \"text\"; // note", "rust");
        let keyword = colour_of(&lines[0], "let");
        let string = colour_of(&lines[0], "text");
        let comment = colour_of(&lines[0], "note");
        assert_eq!(keyword, Some(Color::Rgb(0x56, 0x9c, 0xd6)));
        assert_eq!(string, Some(Color::Rgb(0xce, 0x91, 0x78)));
        assert_eq!(comment, Some(Color::Rgb(0x6a, 0x99, 0x55)));
        assert!(
            lines[0]
                .iter()
                .any(|s| s.text.contains("note") && s.style.italic)
        );
        // The text is kept as it was, every character once.
        let text: String = lines[0].iter().map(|s| s.text.as_str()).collect();
        assert_eq!(text, "let s = \"text\"; // note");
    }

    #[test]
    fn the_common_fence_names_have_a_grammar() {
        for language in [
            "rust",
            "rs",
            "python",
            "py",
            "js",
            "javascript",
            "ts",
            "typescript",
            "sh",
            "bash",
            "shell",
            "json",
            "yaml",
            "yml",
            "go",
            "c",
            "cpp",
            "c++",
            "java",
            "ruby",
            "html",
            "css",
            "sql",
            "diff",
            "Rust",
        ] {
            assert!(syntax_for(language).is_some(), "{language}");
        }
    }

    #[test]
    fn an_unknown_language_is_plain_text() {
        let lines = highlight("let s = \"x\";\nfn y", "no-such-language");
        assert_eq!(
            lines,
            [
                vec![Span::plain("let s = \"x\";")],
                vec![Span::plain("fn y")]
            ]
        );
        assert_eq!(highlight("let s", ""), [vec![Span::plain("let s")]]);
    }

    #[test]
    fn state_carries_across_lines() {
        // The second line is inside the block comment the first opened.
        let lines = highlight("/* start\nfn inside */ let after = 1;", "rust");
        assert_eq!(
            colour_of(&lines[1], "inside"),
            Some(Color::Rgb(0x6a, 0x99, 0x55))
        );
        assert_eq!(
            colour_of(&lines[1], "let"),
            Some(Color::Rgb(0x56, 0x9c, 0xd6))
        );
    }
}
