//! The `approval` key: `#[tool(approval)]` (every call waits for a decision) or
//! `#[tool(approval = path)]` (a `fn(&XxxParams or &Value, &ToolContext) -> bool` decides per
//! call). Parsed here from the attribute, expanded into `AgentTool::needs_approval`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprPath, Meta, Path};

use crate::ctxt::Ctxt;

/// What `approval` said.
pub(crate) enum Approval {
    /// `approval`: every call.
    Always,
    /// `approval = path`: the calls `path` picks.
    Rule(Path),
}

const EXPECTED: &str = "`approval` is a flag or the path of a fn deciding per call: write `#[tool(approval)]` or `#[tool(approval = needs_approval)]` with `fn needs_approval(args: &XxxParams, ctx: &ToolContext) -> bool`";

/// Parses `approval` or `approval = path`; anything else is an error on the value.
pub(crate) fn approval_value(cx: &Ctxt, meta: &Meta) -> Option<Approval> {
    match meta {
        Meta::Path(_) => Some(Approval::Always),
        Meta::NameValue(nv) => match &nv.value {
            Expr::Path(ExprPath {
                path, qself: None, ..
            }) => Some(Approval::Rule(path.clone())),
            other => {
                cx.error_spanned_by(other, EXPECTED);
                None
            }
        },
        Meta::List(_) => {
            cx.error_spanned_by(meta, EXPECTED);
            None
        }
    }
}

/// The `needs_approval` method of the generated `AgentTool` impl; without `approval`,
/// `may_need_approval` answering `false` instead (so hosts need not ask).
pub(crate) fn approval_method(approval: Option<&Approval>, params: &syn::Ident) -> TokenStream {
    match approval {
        None => quote! {
            fn may_need_approval(&self) -> bool {
                false
            }
        },
        Some(Approval::Always) => quote! {
            fn needs_approval(
                &self,
                _args: &::pi_tool::serde_json::Value,
                _ctx: &::pi_tool::ToolContext,
            ) -> bool {
                true
            }
        },
        Some(Approval::Rule(path)) => {
            // Spanned on the path, so a fn of the wrong shape is reported there.
            let check = quote_spanned! {path.span()=>
                ::pi_tool::__private::check_approval::<#params, _, _>(&#path, args, ctx)
            };
            quote! {
                fn needs_approval(
                    &self,
                    args: &::pi_tool::serde_json::Value,
                    ctx: &::pi_tool::ToolContext,
                ) -> bool {
                    #check
                }
            }
        }
    }
}
