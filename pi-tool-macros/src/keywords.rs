//! The `keywords = ["ticket", "bug report"]` key: words the built-in tool search finds the tool
//! by (`AgentTool::keywords`), never sent to the model. Parsed here from the attribute, checked
//! (non-empty, short, no repeats), and expanded into the `keywords` method.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Expr, ExprLit, Lit, LitStr, Meta};

use crate::attr::ToolArgs;
use crate::ctxt::Ctxt;

/// A keyword longer than this (in characters) is refused: a keyword is a word or a short
/// phrase; a sentence belongs in the description.
const MAX_KEYWORD_CHARS: usize = 60;
/// At most this many keywords.
const MAX_KEYWORDS: usize = 32;

const SHAPE: &str =
    "`keywords` takes a list of strings: write `keywords = [\"ticket\", \"bug report\"]`";

/// The list of string literals of `keywords = [..]`; an error (and `None`) for any other shape.
pub(crate) fn parse(cx: &Ctxt, meta: &Meta) -> Option<Vec<LitStr>> {
    let Meta::NameValue(name_value) = meta else {
        cx.error_spanned_by(meta, SHAPE);
        return None;
    };
    let Expr::Array(array) = &name_value.value else {
        cx.error_spanned_by(&name_value.value, SHAPE);
        return None;
    };
    let mut words = Vec::with_capacity(array.elems.len());
    for element in &array.elems {
        match element {
            Expr::Lit(ExprLit {
                lit: Lit::Str(word),
                ..
            }) => words.push(word.clone()),
            other => {
                cx.error_spanned_by(other, SHAPE);
                return None;
            }
        }
    }
    Some(words)
}

/// Records an error for an empty list, a blank or overlong keyword, a repeated one (ignoring
/// case) and too many.
pub(crate) fn check(cx: &Ctxt, args: &ToolArgs) {
    let Some(words) = &args.keywords else {
        return;
    };
    if words.len() > MAX_KEYWORDS {
        cx.error_spanned_by(
            &words[MAX_KEYWORDS],
            format!("at most {MAX_KEYWORDS} `keywords`: the search needs a few telling words, not a list of every one"),
        );
    }
    let mut seen: Vec<String> = Vec::with_capacity(words.len());
    for word in words {
        let value = word.value();
        let trimmed = value.trim();
        if trimmed.is_empty() {
            cx.error_spanned_by(word, "a keyword must not be empty or blank");
        } else if trimmed.chars().count() > MAX_KEYWORD_CHARS {
            cx.error_spanned_by(
                word,
                format!("a keyword is a word or a short phrase (at most {MAX_KEYWORD_CHARS} characters); put sentences in the description"),
            );
        } else if seen.contains(&trimmed.to_lowercase()) {
            cx.error_spanned_by(word, format!("the keyword \"{trimmed}\" is given twice"));
        } else {
            seen.push(trimmed.to_lowercase());
        }
    }
}

/// The `keywords` method of the generated `AgentTool` impl (nothing when unset).
pub(crate) fn keywords_method(args: &ToolArgs) -> TokenStream {
    let Some(words) = &args.keywords else {
        return TokenStream::new();
    };
    let words: Vec<String> = words.iter().map(|w| w.value().trim().to_owned()).collect();
    quote! {
        fn keywords(&self) -> &[::std::string::String] {
            __PI_TOOL.keywords(&[#(#words),*])
        }
    }
}
