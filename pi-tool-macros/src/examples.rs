//! The `example = "{..}"` and `eager_input_streaming` keys: each example must be a JSON object
//! (checked here, at compile time); its match with the tool's schema is checked when the tool is
//! registered (`ToolRegistry::discover`), since the schema exists only at run time.

use proc_macro2::TokenStream;
use quote::quote;

use crate::attr::ToolArgs;
use crate::ctxt::Ctxt;

/// Records an error for every example that is not a JSON object.
pub(crate) fn check(cx: &Ctxt, args: &ToolArgs) {
    for example in &args.examples {
        match serde_json::from_str::<serde_json::Value>(&example.value()) {
            Ok(serde_json::Value::Object(_)) => {}
            Ok(_) => cx.error_spanned_by(
                example,
                "`example` must be a JSON object of arguments, e.g. `example = r#\"{\"city\": \"Paris\"}\"#`",
            ),
            Err(err) => cx.error_spanned_by(
                example,
                format!("`example` is not valid JSON: {err}"),
            ),
        }
    }
}

/// The `input_examples` and `eager_input_streaming` methods of the generated `AgentTool` impl
/// (nothing when unset). The examples are parsed once, on first use.
pub(crate) fn example_methods(args: &ToolArgs) -> TokenStream {
    let examples = (!args.examples.is_empty()).then(|| {
        let texts = &args.examples;
        quote! {
            fn input_examples(&self) -> &[::pi_tool::__private::serde_json::Value] {
                __PI_TOOL.examples(&[#(#texts),*])
            }
        }
    });
    let eager = args.eager_input_streaming.as_ref().map(|_| {
        quote! {
            fn eager_input_streaming(&self) -> bool {
                true
            }
        }
    });
    quote!(#examples #eager)
}
