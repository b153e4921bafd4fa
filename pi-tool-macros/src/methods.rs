//! `#[tools]` on an `impl` block: each `#[tool]` method becomes a tool bound to a shared
//! `Arc<Self>`, and `Self::tools` hands them out. Methods have no instance at link time, so they
//! are not registered for `ToolRegistry::discover`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ImplItem, ImplItemFn, ItemFn, ItemImpl, Meta, Type};

use crate::ast::Target;
use crate::expand::{allow_signature_lints, analyze, generate, type_idents};

pub(crate) fn tools(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut item: ItemImpl = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            let error = syn::Error::new(
                Span::call_site(),
                "`#[tools]` goes on an `impl` block whose methods are marked `#[tool]`",
            )
            .to_compile_error();
            return quote!(#error #input);
        }
    };
    let mut errors = Vec::new();
    if !args.is_empty() {
        errors.push(syn::Error::new_spanned(
            &args,
            "`#[tools]` takes no arguments",
        ));
    }
    if let Some((_, trait_path, _)) = &item.trait_ {
        errors.push(syn::Error::new_spanned(
            trait_path,
            "`#[tools]` goes on an inherent impl (`impl Db { .. }`), not on a trait impl",
        ));
    }
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        errors.push(syn::Error::new_spanned(
            &item.generics,
            "a `#[tools]` impl cannot be generic: each tool is one concrete type with one schema",
        ));
    }
    if !errors.is_empty() {
        return emit_errors(errors, strip_tool_attrs(item));
    }
    let self_ty = (*item.self_ty).clone();
    let self_name = match &self_ty {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .filter(|segment| segment.arguments.is_empty())
            .map(|segment| segment.ident.clone()),
        _ => None,
    };
    let Some(self_name) = self_name else {
        errors.push(syn::Error::new_spanned(
            &self_ty,
            "`#[tools]` needs a named type without generic arguments, e.g. `impl Db { .. }`",
        ));
        return emit_errors(errors, strip_tool_attrs(item));
    };

    let target = Target::Method {
        self_ty: &self_ty,
        self_name: &self_name,
    };
    let mut generated = Vec::new();
    let mut tool_idents = Vec::new();
    for impl_item in &mut item.items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        let Some(position) = method.attrs.iter().position(is_tool_attr) else {
            continue;
        };
        let attr = method.attrs.remove(position);
        let marker = handled_marker(&attr);
        let args = match attr.meta {
            Meta::Path(_) => TokenStream::new(),
            Meta::List(list) => list.tokens,
            Meta::NameValue(nv) => {
                errors.push(syn::Error::new_spanned(
                    nv,
                    "write `#[tool]` or `#[tool(key = ..)]`",
                ));
                TokenStream::new()
            }
        };
        let as_fn = ItemFn {
            attrs: std::mem::take(&mut method.attrs),
            vis: method.vis.clone(),
            sig: method.sig.clone(),
            block: Box::new(method.block.clone()),
        };
        let (mut tool_fn, checked) = analyze(args, as_fn, target);
        match checked {
            Ok((args, name)) => {
                let code = generate(&tool_fn, &args, &name, target);
                allow_signature_lints(&mut tool_fn.item);
                tool_idents.push(type_idents(&tool_fn.item, target).1);
                generated.push(code);
            }
            Err(err) => errors.push(err),
        }
        put_back(method, tool_fn.item);
        method.attrs.push(marker);
    }

    let errors = errors.into_iter().map(|err| err.to_compile_error());
    let doc = format!(
        " The `#[tool]` methods of this impl as tools bound to one shared `{self_name}`: register them with `ToolRegistry::register_arc` (or `extend`). Methods are not found by `ToolRegistry::discover`: there is no value to bind them to at link time."
    );
    // Spanned on the impl's type: a second `#[tools]` impl of it is reported there, by name.
    let one_per_type = quote_spanned! {self_ty.span()=>
        impl ::pi_tool::__private::OneToolsImplPerType for #self_ty {}
    };
    quote! {
        #(#errors)*
        #item
        #(#generated)*
        #one_per_type

        impl #self_ty {
            #[doc = #doc]
            #[must_use]
            pub fn tools(self: &::pi_tool::__private::Arc<Self>) -> ::pi_tool::__private::Vec<::pi_tool::__private::Arc<dyn ::pi_tool::AgentTool>> {
                ::pi_tool::__private::Vec::from([
                    #(::pi_tool::__private::Arc::new(#tool_idents(::pi_tool::__private::Arc::clone(self))) as ::pi_tool::__private::Arc<dyn ::pi_tool::AgentTool>,)*
                ])
            }
        }
    }
}

/// `#[tool]`, `#[pi_tool::tool]`, `#[::pi_tool::tool]`.
fn is_tool_attr(attr: &syn::Attribute) -> bool {
    let path = attr.path();
    path.segments
        .last()
        .is_some_and(|last| last.ident == "tool")
        && (path.segments.len() == 1
            || (path.segments.len() == 2 && path.segments[0].ident == "pi_tool"))
}

/// `#[tool]` as already handled here: the same path (so the user's import of `tool` counts as
/// used), with an argument that makes `#[tool]` return the method unchanged.
fn handled_marker(attr: &syn::Attribute) -> syn::Attribute {
    let path = attr.path();
    syn::parse_quote!(#[#path(__in_tools_impl)])
}

/// The method as analysis left it: helper attributes stripped, lint allows added.
fn put_back(method: &mut ImplItemFn, item: ItemFn) {
    method.attrs = item.attrs;
    method.vis = item.vis;
    method.sig = item.sig;
    method.block = *item.block;
}

/// On an error that stops the whole impl: the impl with its `#[tool]`s made inert, so they add
/// no errors of their own.
fn strip_tool_attrs(mut item: ItemImpl) -> ItemImpl {
    for impl_item in &mut item.items {
        if let ImplItem::Fn(method) = impl_item {
            for attr in &mut method.attrs {
                if is_tool_attr(attr) {
                    *attr = handled_marker(attr);
                }
            }
        }
    }
    item
}

fn emit_errors(errors: Vec<syn::Error>, item: ItemImpl) -> TokenStream {
    let errors = errors.into_iter().map(|err| err.to_compile_error());
    quote!(#(#errors)* #item)
}
