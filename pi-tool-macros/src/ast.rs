//! The annotated fn as `#[tool]` sees it: its docs and its parameters, each classified as a
//! model argument, the `ToolContext`, a `State<T>`, or an `#[inject]` parameter of any spelling.

use syn::{Attribute, FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, Type};

use crate::ctxt::Ctxt;
use crate::docs::{self, Doc};
use crate::property::{self, Property};

/// What a parameter receives.
pub(crate) enum ParamKind {
    /// A model argument: a field of the generated params struct.
    Argument,
    /// The call's `ToolContext`, injected.
    Context,
    /// Shared state `State<T>`, injected; holds `T`.
    State(Box<Type>),
    /// Marked `#[inject]`: filled by `pi_tool::__private::Inject`, dispatched on the type, so an
    /// alias (`Ctx`, `type Db = State<MyDb>`) works where the name says nothing.
    Marked,
}

pub(crate) struct Param {
    /// The binding (raw identifiers kept: `r#type`).
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) kind: ParamKind,
    /// `#[doc]`, `#[serde]` and `#[schemars]` attributes, moved onto the generated field.
    pub(crate) field_attrs: Vec<Attribute>,
    pub(crate) has_docs: bool,
    /// A model argument's schema property (its name), read from `field_attrs`.
    pub(crate) property: Option<Property>,
}

pub(crate) struct ToolFn {
    pub(crate) item: ItemFn,
    pub(crate) docs: Doc,
    pub(crate) params: Vec<Param>,
    /// `self`, `&self`, `&mut self`, ... when the fn is a method.
    pub(crate) receiver: Option<syn::Receiver>,
}

impl ToolFn {
    /// Takes the fn apart. Helper attributes are removed from `item`'s parameters here, on every
    /// path, because rustc rejects them on parameters once the macro has run.
    pub(crate) fn from_syn(cx: &Ctxt, mut item: ItemFn) -> ToolFn {
        let docs = docs::extract(&item.attrs);
        let mut params = Vec::new();
        let mut receiver = None;
        for input in item.sig.inputs.iter_mut() {
            let pat_type = match input {
                FnArg::Typed(pat_type) => pat_type,
                FnArg::Receiver(r) => {
                    receiver = Some(r.clone());
                    continue;
                }
            };
            let (field_attrs, kept, marked) = split_attrs(cx, std::mem::take(&mut pat_type.attrs));
            pat_type.attrs = kept;
            let kind = if marked {
                ParamKind::Marked
            } else {
                classify(&pat_type.ty)
            };
            if !matches!(kind, ParamKind::Argument)
                && let Some(attr) = field_attrs.iter().find(|a| !docs::is_doc(a))
            {
                cx.error_spanned_by(attr, "injected parameters (`ToolContext`, `State<T>`) are not part of the schema and take no `#[serde]` or `#[schemars]` attributes");
            }
            let Pat::Ident(pat_ident) = &*pat_type.pat else {
                cx.error_spanned_by(&pat_type.pat, "`#[tool]` parameters must be plain names, e.g. `city: String`; destructure inside the body instead");
                continue;
            };
            if let Some((_, sub)) = &pat_ident.subpat {
                cx.error_spanned_by(
                    sub,
                    "`#[tool]` parameters must be plain names, e.g. `city: String`",
                );
                continue;
            }
            if pat_ident.by_ref.is_some() {
                cx.error_spanned_by(
                    pat_ident.by_ref,
                    "`#[tool]` parameters must be plain names, e.g. `city: String`",
                );
                continue;
            }
            let has_docs = field_attrs.iter().any(docs::is_doc);
            let property = matches!(kind, ParamKind::Argument)
                .then(|| property::read(cx, &pat_ident.ident, &field_attrs));
            params.push(Param {
                ident: pat_ident.ident.clone(),
                ty: (*pat_type.ty).clone(),
                kind,
                field_attrs,
                has_docs,
                property,
            });
        }
        ToolFn {
            item,
            docs,
            params,
            receiver,
        }
    }
}

/// Splits a parameter's attributes into those that move to the generated field, those that
/// stay on the fn (lint attributes), and the `#[inject]` marker (whether it was there). Any other
/// attribute is an error, and is dropped.
fn split_attrs(cx: &Ctxt, attrs: Vec<Attribute>) -> (Vec<Attribute>, Vec<Attribute>, bool) {
    let mut moved = Vec::new();
    let mut kept = Vec::new();
    let mut marked = false;
    for attr in attrs {
        let path = attr.path();
        if path.is_ident("inject") {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                cx.error_spanned_by(
                    &attr.meta,
                    "`inject` takes no arguments: write `#[inject] ctx: Ctx`",
                );
            }
            if marked {
                cx.error_spanned_by(path, "duplicate `#[inject]`");
            }
            marked = true;
        } else if path.is_ident("doc") || path.is_ident("serde") || path.is_ident("schemars") {
            moved.push(attr);
        } else if ["allow", "warn", "deny", "expect", "forbid"]
            .iter()
            .any(|lint| path.is_ident(lint))
        {
            kept.push(attr);
        } else if path.is_ident("default") {
            cx.error_spanned_by(
                path,
                "`#[default(..)]` is not an attribute of `#[tool]` parameters; give a default with `#[serde(default = \"default_limit\")]` (a fn returning it), `#[serde(default)]` (the type's `Default`), or take an `Option<T>` and write `limit.unwrap_or(50)`; the parameter is then not required",
            );
        } else {
            cx.error_spanned_by(
                path,
                "unsupported attribute on a `#[tool]` parameter; expected `///` docs, `#[serde(..)]`, `#[schemars(..)]` or `#[inject]`",
            );
        }
    }
    (moved, kept, marked)
}

/// Injected parameters are recognized by type name: `ToolContext` and `State<T>`, with or
/// without a path (`pi_tool::ToolContext`). Other spellings are marked `#[inject]`; an unmarked
/// one is caught by type in the expansion (`__private::ArgumentProbe`), with that fix.
fn classify(ty: &Type) -> ParamKind {
    let Type::Path(type_path) = ty else {
        return ParamKind::Argument;
    };
    if type_path.qself.is_some() {
        return ParamKind::Argument;
    }
    let Some(last) = type_path.path.segments.last() else {
        return ParamKind::Argument;
    };
    if last.ident == "ToolContext" && last.arguments.is_empty() {
        return ParamKind::Context;
    }
    if last.ident == "State"
        && let PathArguments::AngleBracketed(args) = &last.arguments
        && let [GenericArgument::Type(inner)] = args.args.iter().collect::<Vec<_>>().as_slice()
    {
        return ParamKind::State(Box::new(inner.clone()));
    }
    ParamKind::Argument
}

/// Where the fn sits: free (a unit tool type, registered for `discover`), or a method of a
/// `#[tools]` impl (a tool type holding `Arc<Self>`, handed out by `Self::tools`).
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    Free,
    Method {
        /// The impl's self type, e.g. `Db`.
        self_ty: &'a Type,
        /// Its last path segment, the prefix of the generated type names (`DbGetTool`).
        self_name: &'a Ident,
    },
}
