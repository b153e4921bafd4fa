//! Doc comments as data: the fn's `///` becomes the tool description.

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

/// The docs of an item: one leading space per line stripped, blank lines at either end dropped
/// (clap's `extract_doc_comment`), lines joined with `\n`.
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
    while lines.first().is_some_and(|l| l.trim().is_empty()) {
        lines.remove(0);
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    Doc::Text(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::{Doc, extract};
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
