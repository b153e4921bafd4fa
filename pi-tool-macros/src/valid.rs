//! Rules on the whole fn: what `#[tool]` can turn into a tool, and the tool's name and text.

use proc_macro2::Span;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{FnArg, GenericArgument, PathArguments, Type};

use crate::ast::{Param, ParamKind, Target, ToolFn};
use crate::attr::ToolArgs;
use crate::ctxt::Ctxt;
use crate::property::Property;

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
        let lifetimes = self.validate_generics(cx);
        self.validate_receiver(cx, target);
        self.validate_params(cx, &lifetimes);
        validate_name(cx, name, name_span);
        match &args.description {
            Some(description) if description.value().trim().is_empty() => {
                cx.error_spanned_by(description, "`description` cannot be empty: a model needs it to know when to call the tool");
            }
            Some(_) => {}
            None if self.docs.is_empty() && crate::docs::has_text(&self.item.attrs) => cx.error_spanned_by(
                &sig.ident,
                "`#[tool]` needs a description: the model reads the doc comment up to its first heading (`# Errors`, `# Examples`, ..), and this one has no text before it; write one above, or `description = \"...\"`",
            ),
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
        if let Some(aborted) = &args.aborted
            && aborted.value().trim().is_empty()
        {
            cx.error_spanned_by(
                aborted,
                "`aborted` cannot be empty: it is what the model reads when the call is aborted",
            );
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

    /// Type parameters have no schema. Lifetime parameters are reported apart, naming the owned
    /// type each borrowed argument should have; returns them, so the argument checks do not
    /// report the same borrow twice.
    fn validate_generics(&self, cx: &Ctxt) -> Vec<&syn::Lifetime> {
        let generics = &self.item.sig.generics;
        let lifetimes: Vec<&syn::Lifetime> =
            generics.lifetimes().map(|def| &def.lifetime).collect();
        let only_lifetimes = lifetimes.len() == generics.params.len()
            && generics.where_clause.as_ref().is_none_or(|clause| {
                clause
                    .predicates
                    .iter()
                    .all(|predicate| matches!(predicate, syn::WherePredicate::Lifetime(_)))
            });
        if !only_lifetimes {
            cx.error_spanned_by(
                generics,
                "`#[tool]` fns cannot be generic: the schema is built from concrete parameter types",
            );
            return lifetimes;
        }
        for lifetime in &lifetimes {
            let borrowed: Vec<String> = self
                .params
                .iter()
                .filter(|param| {
                    matches!(param.kind, ParamKind::Argument) && mentions(&param.ty, lifetime)
                })
                .map(|param| {
                    format!(
                        "`{}: {}` instead of `{}`",
                        param.ident,
                        type_text(&owned(&param.ty)),
                        type_text(&param.ty)
                    )
                })
                .collect();
            let fix = if borrowed.is_empty() {
                format!("remove `{lifetime}`")
            } else {
                format!("write {}", borrowed.join(", "))
            };
            cx.error_spanned_by(
                lifetime,
                format!("`#[tool]` fns take no lifetime parameters: arguments are deserialized into owned values; {fix}"),
            );
        }
        lifetimes
    }

    fn validate_params(&self, cx: &Ctxt, lifetimes: &[&syn::Lifetime]) {
        let mut context_seen = false;
        let mut named: Vec<(&Property, &Param)> = Vec::new();
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
                ParamKind::Argument => {
                    if !lifetimes
                        .iter()
                        .any(|lifetime| mentions(&param.ty, lifetime))
                    {
                        check_argument_type(cx, &param.ty);
                    }
                    let Some(property) = param.property.as_ref().filter(|p| p.named) else {
                        continue;
                    };
                    match named.iter().find(|(seen, _)| seen.name == property.name) {
                        Some((_, first)) => cx.error_at(
                            property.span,
                            format!(
                                "`#[tool]` argument name `{}` is used twice (by `{}` and by `{}`): each argument is one property of the schema, so their names must differ",
                                property.name,
                                first.ident.unraw(),
                                param.ident.unraw()
                            ),
                        ),
                        None => named.push((property, param)),
                    }
                }
            }
        }
    }
}

/// Whether `ty` names `lifetime` anywhere (`&'a str`, `Cow<'a, str>`).
fn mentions(ty: &Type, lifetime: &syn::Lifetime) -> bool {
    ty.to_token_stream()
        .into_iter()
        .collect::<Vec<_>>()
        .windows(2)
        .any(|pair| {
            matches!(&pair[0], proc_macro2::TokenTree::Punct(p) if p.as_char() == '\'')
                && matches!(&pair[1], proc_macro2::TokenTree::Ident(i) if *i == lifetime.ident)
        })
}

/// The owned type a borrowed argument should have: `String` for `&str` and `Cow<str>`,
/// `Vec<T>` for `&[T]` and `Cow<[T]>`, `T` for `&T`, with lifetimes dropped inside (`Option<&'a
/// str>` -> `Option<String>`).
fn owned(ty: &Type) -> Type {
    match ty {
        Type::Reference(reference) => owned_of_borrowed(&reference.elem),
        Type::Paren(paren) => owned(&paren.elem),
        Type::Group(group) => owned(&group.elem),
        Type::Slice(slice) => {
            let elem = owned(&slice.elem);
            syn::parse_quote!([#elem])
        }
        Type::Array(array) => {
            let mut array = array.clone();
            *array.elem = owned(&array.elem);
            Type::Array(array)
        }
        Type::Tuple(tuple) => {
            let mut tuple = tuple.clone();
            for elem in &mut tuple.elems {
                *elem = owned(elem);
            }
            Type::Tuple(tuple)
        }
        Type::Path(path) if path.qself.is_none() => {
            let mut path = path.clone();
            let Some(last) = path.path.segments.last_mut() else {
                return Type::Path(path);
            };
            if last.ident == "Cow"
                && let PathArguments::AngleBracketed(args) = &last.arguments
                && let Some(GenericArgument::Type(inner)) = args
                    .args
                    .iter()
                    .find(|arg| matches!(arg, GenericArgument::Type(_)))
            {
                return owned_of_borrowed(inner);
            }
            if let PathArguments::AngleBracketed(args) = &mut last.arguments {
                args.args = std::mem::take(&mut args.args)
                    .into_iter()
                    .filter(|arg| !matches!(arg, GenericArgument::Lifetime(_)))
                    .map(|arg| match arg {
                        GenericArgument::Type(inner) => GenericArgument::Type(owned(&inner)),
                        other => other,
                    })
                    .collect();
                if args.args.is_empty() {
                    last.arguments = PathArguments::None;
                }
            }
            Type::Path(path)
        }
        other => other.clone(),
    }
}

/// What owns the data `&T` borrows: `str` -> `String`, `[T]` -> `Vec<T>`, else `T`.
fn owned_of_borrowed(elem: &Type) -> Type {
    match elem {
        Type::Path(path) if path.path.is_ident("str") => syn::parse_quote!(String),
        Type::Slice(slice) => {
            let elem = owned(&slice.elem);
            syn::parse_quote!(Vec<#elem>)
        }
        other => owned(other),
    }
}

/// A type as a user writes it (`Vec<String>`, not `Vec < String >`), for messages.
pub(crate) fn type_text(ty: &Type) -> String {
    let spaced = ty.to_token_stream().to_string();
    let mut text = String::with_capacity(spaced.len());
    let mut chars = spaced.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let previous = text.chars().last();
        let glue_after = matches!(previous, Some('<' | '&' | ':' | '(' | '['));
        let glue_before = matches!(next, Some('<' | '>' | ',' | ':' | ';' | ')' | ']'));
        if c == ' ' && (glue_after || glue_before) {
            continue;
        }
        text.push(c);
    }
    text
}

/// Argument types become fields of a deserialized struct: they must be owned and nameable.
fn check_argument_type(cx: &Ctxt, ty: &Type) {
    match ty {
        Type::Reference(reference) => cx.error_spanned_by(
            reference,
            format!(
                "`#[tool]` arguments are deserialized and must be owned: use `{}` instead",
                type_text(&owned_of_borrowed(&reference.elem))
            ),
        ),
        Type::ImplTrait(_) => cx.error_spanned_by(ty, "`impl Trait` cannot be a `#[tool]` argument: use a concrete type"),
        Type::Infer(_) => cx.error_spanned_by(ty, "`#[tool]` arguments need a concrete type"),
        Type::Never(_) => cx.error_spanned_by(ty, "`!` cannot be a `#[tool]` argument"),
        Type::BareFn(_) | Type::TraitObject(_) => {
            cx.error_spanned_by(ty, "`#[tool]` arguments must be data a model can send: a fn or trait object cannot be deserialized")
        }
        Type::Path(path) => {
            if let Some(inner) = shared_pointer(path) {
                cx.error_spanned_by(
                    ty,
                    format!(
                        "`{}` would be an argument from the model: use `State<{}>` for shared state (the value given with `with_state`)",
                        type_text(ty),
                        type_text(inner)
                    ),
                );
            }
        }
        _ => {}
    }
}

/// `Arc<T>` or `Rc<T>` (any path): what shared state looks like when `State<T>` was forgotten.
fn shared_pointer(path: &syn::TypePath) -> Option<&Type> {
    if path.qself.is_some() {
        return None;
    }
    let last = path.path.segments.last()?;
    if last.ident != "Arc" && last.ident != "Rc" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => Some(inner),
        _ => None,
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
