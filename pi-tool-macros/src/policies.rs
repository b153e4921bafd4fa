//! The `callers = "model" | "code" | "both"` and `replay = "never" | "safe"` keys: who may call
//! the tool, and what a durable host does with a call of it that was interrupted. Both values
//! are checked at compile time, on the literal.

use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

use crate::attr::ToolArgs;

/// `callers = ".."`: the variant of `ToolCallers`, or an error on the literal.
pub(crate) fn callers_value(lit: &LitStr) -> Result<syn::Ident, syn::Error> {
    let variant = match lit.value().as_str() {
        "model" => "Model",
        "code" => "Code",
        "both" => "Both",
        other => {
            return Err(syn::Error::new(
                lit.span(),
                format!(
                    "unknown `callers` value `{other}`: expected `\"model\"` (the model only), `\"code\"` (only from code: nested calls and the `code` tool's scripts) or `\"both\"`"
                ),
            ));
        }
    };
    Ok(syn::Ident::new(variant, lit.span()))
}

/// `replay = ".."`: the variant of `Replay`, or an error on the literal.
pub(crate) fn replay_value(lit: &LitStr) -> Result<syn::Ident, syn::Error> {
    let variant = match lit.value().as_str() {
        "safe" => "Safe",
        "never" => "Never",
        other => {
            return Err(syn::Error::new(
                lit.span(),
                format!(
                    "unknown `replay` value `{other}`: expected `\"never\"` (an interrupted call is not run again) or `\"safe\"` (running it again is harmless)"
                ),
            ));
        }
    };
    Ok(syn::Ident::new(variant, lit.span()))
}

/// The `callers`, `replay` and `aborted_message` methods of the generated `AgentTool` impl
/// (nothing when unset).
pub(crate) fn policy_methods(args: &ToolArgs) -> TokenStream {
    let callers = args.callers.as_ref().map(|variant| {
        quote! {
            fn callers(&self) -> ::pi_tool::ToolCallers {
                ::pi_tool::ToolCallers::#variant
            }
        }
    });
    let replay = args.replay.as_ref().map(|variant| {
        quote! {
            fn replay(&self) -> ::core::option::Option<::pi_tool::Replay> {
                ::core::option::Option::Some(::pi_tool::Replay::#variant)
            }
        }
    });
    let aborted = args.aborted.as_ref().map(|text| {
        quote! {
            fn aborted_message(&self) -> &str {
                #text
            }
        }
    });
    quote!(#callers #replay #aborted)
}
