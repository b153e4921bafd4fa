//! Rules on the whole fn: what `#[tool]` can turn into a tool, and the tool's name and text.

use proc_macro2::Span;
use quote::ToTokens;
use syn::{FnArg, Type};

use crate::ast::{ParamKind, ToolFn};
use crate::attr::ToolArgs;
use crate::ctxt::Ctxt;

/// The longest tool name every provider accepts.
pub(crate) const MAX_NAME_LEN: usize = 64;

impl ToolFn {
    pub(crate) fn validate(&self, cx: &Ctxt, args: &ToolArgs, name: &str, name_span: Span) {
        let sig = &self.item.sig;
        // A sync fn is allowed when it runs on the blocking pool (`blocking`).
        if sig.asyncness.is_none() && args.blocking.is_none() {
            cx.error_spanned_by(
                sig.fn_token,
                "`#[tool]` requires an `async fn` (or a sync `fn` with `#[tool(blocking)]`)",
            );
        }
        if let Some(constness) = &sig.constness {
            cx.error_spanned_by(constness, "`#[tool]` cannot be used on a `const fn`");
        }
        if let Some(unsafety) = &sig.unsafety {
            cx.error_spanned_by(
                unsafety,
                "`#[tool]` cannot be used on an `unsafe fn`: a model decides the arguments",
            );
        }
        if let Some(abi) = &sig.abi {
            cx.error_spanned_by(abi, "`#[tool]` cannot be used on an `extern fn`");
        }
        if let Some(variadic) = &sig.variadic {
            cx.error_spanned_by(variadic, "`#[tool]` fns cannot be variadic");
        }
        if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
            cx.error_spanned_by(
                &sig.generics,
                "`#[tool]` fns cannot be generic: the schema is built from concrete parameter types",
            );
        }
        for input in &sig.inputs {
            if let FnArg::Receiver(receiver) = input {
                cx.error_spanned_by(
                    receiver,
                    "`#[tool]` cannot take `self`; use a free `async fn` and pass shared data with `State<T>`",
                );
            }
        }
        self.validate_params(cx);
        validate_name(cx, name, name_span);
        match &args.description {
            Some(description) if description.value().trim().is_empty() => {
                cx.error_spanned_by(description, "`description` cannot be empty: a model needs it to know when to call the tool");
            }
            Some(_) => {}
            None if self.docs.is_empty() => cx.error_spanned_by(
                &sig.ident,
                "`#[tool]` needs a description: add a `///` doc comment to the fn, or `description = \"...\"`",
            ),
            None => {}
        }
        if let Some(label) = &args.label
            && label.value().trim().is_empty()
        {
            cx.error_spanned_by(label, "`label` cannot be empty");
        }
    }

    fn validate_params(&self, cx: &Ctxt) {
        let mut context_seen = false;
        for param in &self.params {
            match &param.kind {
                ParamKind::Context => {
                    if context_seen {
                        cx.error_spanned_by(
                            &param.ty,
                            "a `#[tool]` fn takes at most one `ToolContext` parameter",
                        );
                    }
                    context_seen = true;
                }
                ParamKind::State(_) => {}
                ParamKind::Argument => check_argument_type(cx, &param.ty),
            }
        }
    }
}

/// Argument types become fields of a deserialized struct: they must be owned and nameable.
fn check_argument_type(cx: &Ctxt, ty: &Type) {
    match ty {
        Type::Reference(reference) => cx.error_spanned_by(
            reference,
            format!(
                "`#[tool]` arguments are deserialized and must be owned: use `{}` instead",
                owned_suggestion(&reference.elem)
            ),
        ),
        Type::ImplTrait(_) => cx.error_spanned_by(ty, "`impl Trait` cannot be a `#[tool]` argument: use a concrete type"),
        Type::Infer(_) => cx.error_spanned_by(ty, "`#[tool]` arguments need a concrete type"),
        Type::Never(_) => cx.error_spanned_by(ty, "`!` cannot be a `#[tool]` argument"),
        Type::BareFn(_) | Type::TraitObject(_) => {
            cx.error_spanned_by(ty, "`#[tool]` arguments must be data a model can send: a fn or trait object cannot be deserialized")
        }
        _ => {}
    }
}

fn owned_suggestion(elem: &Type) -> String {
    let text = elem.to_token_stream().to_string();
    match text.as_str() {
        "str" => "String".into(),
        _ if text.starts_with('[') => format!(
            "Vec<{}>",
            text.trim_start_matches('[').trim_end_matches(']').trim()
        ),
        _ => text,
    }
}

fn validate_name(cx: &Ctxt, name: &str, span: Span) {
    let length = name.chars().count();
    if length == 0 {
        cx.error_at(span, "tool name cannot be empty");
    } else if length > MAX_NAME_LEN {
        cx.error_at(
            span,
            format!("tool name `{name}` is {length} characters long; providers accept at most {MAX_NAME_LEN}"),
        );
    } else if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        cx.error_at(
            span,
            format!("tool name `{name}` contains `{bad}`; names may only use ASCII letters, digits, `_` and `-`"),
        );
    }
}
