//! What a model argument's `#[serde(..)]` and `#[schemars(..)]` attributes say about the schema
//! property it becomes: its name (`rename`), whether it is a property of its own (`flatten` and
//! `skip` are not), and what is refused (`alias`, a `rename` that only schemars sees).
//!
//! Attributes serde or schemars cannot parse are left to their derives, which report them.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Expr, Ident, LitStr, Token};

use crate::ctxt::Ctxt;

/// The property a model argument is, as far as names go.
pub(crate) struct Property {
    /// The name in the schema and in the arguments: `rename`'s (for deserializing), else the
    /// parameter's own (unraw: `r#type` is `type`).
    pub(crate) name: String,
    /// Where to point an error about the name: the `rename` literal, else the parameter.
    pub(crate) span: Span,
    /// `false` for `flatten` (its fields are properties of the parent) and `skip`: such a
    /// parameter has no name of its own in the schema.
    pub(crate) named: bool,
}

/// Reads the name-related keys of `attrs` (a parameter's `#[serde]`/`#[schemars]`), reporting
/// `#[serde(alias)]` and `#[schemars(rename)]` in `cx`.
pub(crate) fn read(cx: &Ctxt, ident: &Ident, attrs: &[Attribute]) -> Property {
    let mut property = Property {
        name: ident.unraw().to_string(),
        span: ident.span(),
        named: true,
    };
    for attr in attrs {
        let in_serde = attr.path().is_ident("serde");
        if !in_serde && !attr.path().is_ident("schemars") {
            continue;
        }
        // A malformed attribute is serde's or schemars' to report: stop reading it quietly.
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("alias") && in_serde {
                cx.error_spanned_by(
                    &meta.path,
                    "`#[serde(alias)]` is not supported on a `#[tool]` parameter: the schema a model sees has one name per property, so the alias would be refused; use `#[serde(rename = \"..\")]` to change the name",
                );
            } else if meta.path.is_ident("rename") && !in_serde {
                cx.error_spanned_by(
                    &meta.path,
                    "`#[schemars(rename)]` renames the property in the schema only, so serde would not read it under that name; write `#[serde(rename = \"..\")]`, which both follow",
                );
            } else if meta.path.is_ident("rename") {
                if let Some(lit) = deserialize_name(&meta)? {
                    property.name = lit.value();
                    property.span = lit.span();
                }
                return Ok(());
            } else if meta.path.is_ident("flatten")
                || meta.path.is_ident("skip")
                || meta.path.is_ident("skip_deserializing")
            {
                property.named = false;
            }
            skip_value(&meta)
        });
    }
    property
}

/// `rename = "x"` or `rename(deserialize = "x", serialize = "y")`: the name serde reads (and
/// schemars, whose default contract is deserialization, puts in the schema).
fn deserialize_name(meta: &ParseNestedMeta<'_>) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(Token![=]) {
        return meta.value()?.parse().map(Some);
    }
    let mut name = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("deserialize") {
            name = Some(inner.value()?.parse()?);
            Ok(())
        } else {
            skip_value(&inner)
        }
    })?;
    Ok(name)
}

/// Consumes the value of a key this module does not read: `= expr`, `(..)`, or nothing.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<proc_macro2::TokenStream>()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::read;
    use crate::ctxt::Ctxt;
    use syn::parse_quote;

    fn name_of(attrs: Vec<syn::Attribute>) -> (String, bool) {
        let cx = Ctxt::new();
        let property = read(&cx, &parse_quote!(r#type), &attrs);
        cx.check().expect("no errors");
        (property.name, property.named)
    }

    #[test]
    fn the_name_is_the_deserialize_rename_or_the_unraw_ident() {
        assert_eq!(name_of(vec![]), ("type".into(), true));
        assert_eq!(
            name_of(vec![parse_quote!(#[serde(default, rename = "kind")])]),
            ("kind".into(), true)
        );
        assert_eq!(
            name_of(vec![
                parse_quote!(#[serde(rename(serialize = "out", deserialize = "in"))])
            ]),
            ("in".into(), true)
        );
        assert_eq!(
            name_of(vec![
                parse_quote!(#[schemars(range(min = 1, max = 7), extend("x" = 1))]),
                parse_quote!(#[serde(default = "some::path", with = "m")]),
            ]),
            ("type".into(), true)
        );
        assert_eq!(
            name_of(vec![parse_quote!(#[serde(flatten)])]),
            ("type".into(), false)
        );
    }

    #[test]
    fn alias_and_a_schemars_only_rename_are_errors() {
        let cx = Ctxt::new();
        read(
            &cx,
            &parse_quote!(path),
            &[
                parse_quote!(#[serde(alias = "file")]),
                parse_quote!(#[schemars(rename = "file")]),
            ],
        );
        let message = cx.check().unwrap_err().into_iter().count();
        assert_eq!(message, 2);
    }
}
