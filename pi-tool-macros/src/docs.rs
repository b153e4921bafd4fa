//! Doc comments as data: the fn's `///` becomes the tool description.
//!
//! The model reads the docs up to their first Markdown heading, without fenced code blocks:
//! rustdoc's sections (`# Errors`, `# Panics`, `# Safety`, `# Examples`) and doctests are for
//! the humans reading the fn's documentation, and clippy asks for some of them.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The text of `#[doc]` attributes: literal lines, or expressions such as `include_str!(..)`.
pub(crate) enum Doc {
    /// Cleaned literal text (may be empty when there are no docs).
    Text(String),
    /// At least one non-literal part: joined at compile time with `concat!`.
    Concat(Vec<TokenStream>),
}

impl Doc {
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Doc::Text(text) if text.trim().is_empty())
    }

    pub(crate) fn to_tokens(&self) -> TokenStream {
        match self {
            Doc::Text(text) => quote!(#text),
            Doc::Concat(parts) => quote!(::core::concat!(#(#parts),*)),
        }
    }
}

pub(crate) fn is_doc(attr: &Attribute) -> bool {
    attr.path().is_ident("doc")
}

/// Whether the item has any `#[doc]` attribute with text (even if none of it is for the model).
pub(crate) fn has_text(attrs: &[Attribute]) -> bool {
    attrs.iter().filter(|attr| is_doc(attr)).any(|attr| match &attr.meta {
        Meta::NameValue(nv) => !matches!(&nv.value, Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) if s.value().trim().is_empty()),
        _ => false,
    })
}

/// The description a model reads from an item's docs: one leading space per line stripped
/// (clap's `extract_doc_comment`), cut at the first heading, fenced code blocks left out, runs
/// of blank lines made one and blank lines at either end dropped, lines joined with `\n`.
/// Docs with a non-literal part (`#[doc = include_str!(..)]`) are joined whole, at compile time.
pub(crate) fn extract(attrs: &[Attribute]) -> Doc {
    let mut lines = Vec::new();
    let mut exprs = Vec::new();
    let mut all_literal = true;
    for attr in attrs.iter().filter(|attr| is_doc(attr)) {
        let Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => {
                let value = s.value();
                for line in value.split('\n') {
                    lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
                }
                exprs.push(quote!(#s));
            }
            other => {
                all_literal = false;
                exprs.push(quote!(#other));
            }
        }
    }
    if !all_literal {
        let mut parts = Vec::new();
        for (i, expr) in exprs.into_iter().enumerate() {
            if i > 0 {
                parts.push(quote!("\n"));
            }
            parts.push(expr);
        }
        return Doc::Concat(parts);
    }
    let mut kept: Vec<String> = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    for line in lines {
        let trimmed = line.trim_start();
        if let Some((fence_char, fence_len)) = fence {
            let run = trimmed.chars().take_while(|c| *c == fence_char).count();
            if run >= fence_len && trimmed[run..].trim().is_empty() {
                fence = None;
            }
            continue;
        }
        if let Some(opening) = fence_opening(trimmed) {
            fence = Some(opening);
            continue;
        }
        if is_heading(trimmed) {
            break;
        }
        let blank = line.trim().is_empty();
        if blank && kept.last().is_none_or(|last| last.is_empty()) {
            continue;
        }
        kept.push(if blank { String::new() } else { line });
    }
    while kept.last().is_some_and(String::is_empty) {
        kept.pop();
    }
    Doc::Text(kept.join("\n"))
}

/// "```rust" or "~~~": the fence character and how many of it open the block.
fn fence_opening(line: &str) -> Option<(char, usize)> {
    let first = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = line.chars().take_while(|c| *c == first).count();
    (run >= 3).then_some((first, run))
}

/// An ATX heading: one to six `#` followed by a space or the end of the line (`# Errors`).
fn is_heading(line: &str) -> bool {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    (1..=6).contains(&hashes)
        && line[hashes..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::{Doc, extract, has_text};
    use syn::parse_quote;

    fn text(attrs: Vec<syn::Attribute>) -> String {
        match extract(&attrs) {
            Doc::Text(text) => text,
            Doc::Concat(_) => panic!("expected literal docs"),
        }
    }

    #[test]
    fn one_leading_space_is_stripped_and_blank_edges_dropped() {
        let attrs: Vec<syn::Attribute> = vec![
            parse_quote!(#[doc = ""]),
            parse_quote!(#[doc = " Get the weather."]),
            parse_quote!(#[doc = ""]),
            parse_quote!(#[doc = "   Indented stays indented by two."]),
            parse_quote!(#[doc = " "]),
        ];
        assert_eq!(
            text(attrs),
            "Get the weather.\n\n  Indented stays indented by two."
        );
    }

    fn doc_lines(text: &str) -> Vec<syn::Attribute> {
        text.split('\n')
            .map(|line| {
                let line = format!(" {line}");
                parse_quote!(#[doc = #line])
            })
            .collect()
    }

    #[test]
    fn rustdoc_sections_and_code_blocks_stay_out_of_the_description() {
        let docs = doc_lines(
            "Look up a ticket.\n\nReturns its status.\n\n```\n# use x;\nlet t = ticket(1);\n```\n\nMore for the model.\n\n# Errors\n\nWhen the ticket is unknown.\n\n# Examples\n\n```\nticket(1);\n```",
        );
        assert_eq!(
            text(docs),
            "Look up a ticket.\n\nReturns its status.\n\nMore for the model."
        );
    }

    #[test]
    fn every_heading_level_ends_the_description_and_fences_nest_by_length() {
        assert_eq!(text(doc_lines("Search.\n## Panics\nNever.")), "Search.");
        assert_eq!(
            text(doc_lines("Search.\n#hashtag is text\n####### seven")),
            "Search.\n#hashtag is text\n####### seven"
        );
        assert_eq!(
            text(doc_lines("Run.\n~~~~\n```\n# not a heading\n~~~~\nAfter.")),
            "Run.\nAfter."
        );
        assert!(extract(&doc_lines("# Errors\nAlways.")).is_empty());
        assert!(has_text(&doc_lines("# Errors\nAlways.")));
    }

    #[test]
    fn no_docs_is_empty_and_other_attributes_are_ignored() {
        let attrs: Vec<syn::Attribute> = vec![parse_quote!(#[inline])];
        assert!(extract(&attrs).is_empty());
    }

    #[test]
    fn non_literal_docs_are_joined_at_compile_time() {
        let attrs: Vec<syn::Attribute> = vec![
            parse_quote!(#[doc = " First."]),
            parse_quote!(#[doc = include_str!("x.md")]),
        ];
        let doc = extract(&attrs);
        assert!(!doc.is_empty());
        let tokens = doc.to_tokens().to_string();
        assert!(tokens.starts_with(":: core :: concat !"), "{tokens}");
        assert!(tokens.contains("include_str !"), "{tokens}");
    }
}
