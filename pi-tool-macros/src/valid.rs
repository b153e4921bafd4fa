//! Rules on the whole fn: what `#[tool]` can turn into a tool, and the tool's name and text.

use proc_macro2::Span;
use quote::ToTokens;
use syn::{FnArg, Type};

use crate::ast::{ParamKind, Target, ToolFn};
use crate::attr::ToolArgs;
use crate::ctxt::Ctxt;

/// The longest tool name every provider accepts.
pub(crate) const MAX_NAME_LEN: usize = 64;

impl ToolFn {
    pub(crate) fn validate(
        &self,
        cx: &Ctxt,
        args: &ToolArgs,
        name: &str,
        name_span: Span,
        target: Target<'_>,
    ) {
        let sig = &self.item.sig;
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
        self.validate_receiver(cx, target);
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

    /// A free fn has no `self`; a method of a `#[tools]` impl takes `&self`, because its tool
    /// holds `Arc<Self>` and calls may run at the same time.
    fn validate_receiver(&self, cx: &Ctxt, target: Target<'_>) {
        let receiver = self.item.sig.inputs.iter().find_map(|input| match input {
            FnArg::Receiver(receiver) => Some(receiver),
            FnArg::Typed(_) => None,
        });
        match (target, receiver) {
            (Target::Free, None) => {}
            (Target::Free, Some(receiver)) => cx.error_spanned_by(
                receiver,
                "`#[tool]` on a method needs `#[pi_tool::tools]` on its `impl` block (the tools then share `&self`); or use a free fn and pass shared data with `State<T>`",
            ),
            (Target::Method { .. }, None) => cx.error_spanned_by(
                &self.item.sig.ident,
                "a `#[tool]` method of a `#[tools]` impl takes `&self`; a fn without `self` can be a free `#[tool]` fn",
            ),
            (Target::Method { .. }, Some(receiver)) => {
                let by_shared_ref = receiver.reference.is_some()
                    && receiver.mutability.is_none()
                    && receiver.colon_token.is_none();
                if receiver.mutability.is_some() && receiver.reference.is_some() {
                    cx.error_spanned_by(
                        receiver,
                        "a `#[tool]` method takes `&self`, not `&mut self`: calls may run at the same time, so mutable state needs interior mutability (`Mutex`, `RwLock`, atomics)",
                    );
                } else if !by_shared_ref {
                    cx.error_spanned_by(
                        receiver,
                        "a `#[tool]` method takes `&self`: its tool holds the value in an `Arc<Self>` shared by every call, so it cannot give `self` away",
                    );
                }
            }
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
                ParamKind::State(_) | ParamKind::Marked => {}
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
