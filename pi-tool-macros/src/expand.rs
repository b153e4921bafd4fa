//! `#[tool]`: parse -> validate -> expand. On error the fn is still emitted (helper attributes
//! stripped) with a stand-in tool type, so one mistake does not cascade and IDEs keep working.
//!
//! The expansion is small on purpose (compile cost per tool): the parameters are deserialized
//! along one path only (`&Value`), and everything that does not depend on the parameter types
//! lives in non-generic code of `pi_tool::__private`.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{ItemFn, Visibility};

use crate::ast::{ParamKind, Target, ToolFn};
use crate::attr::{Mode, ToolArgs};
use crate::ctxt::Ctxt;

pub(crate) fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    if args.to_string() == "__in_tools_impl" {
        // A method `#[tools]` has already turned into a tool.
        return input;
    }
    let item: ItemFn = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            let message =
                syn::Error::new(Span::call_site(), "`#[tool]` can only be used on a `fn`");
            let error = message.to_compile_error();
            return quote!(#error #input);
        }
    };
    let (mut tool_fn, checked) = analyze(args, item, Target::Free);
    match checked {
        Ok((args, name)) => {
            let generated = generate(&tool_fn, &args, &name, Target::Free);
            allow_signature_lints(&mut tool_fn.item);
            let item = &tool_fn.item;
            quote!(#item #generated)
        }
        Err(err) => fallback(&tool_fn, err),
    }
}

/// Parses and checks one fn: the fn (its parameter attributes stripped, on every path), and
/// its arguments and tool name, or every error found.
pub(crate) fn analyze(
    args: TokenStream,
    item: ItemFn,
    target: Target<'_>,
) -> (ToolFn, syn::Result<(ToolArgs, String)>) {
    let cx = Ctxt::new();
    let args = ToolArgs::from_tokens(&cx, args);
    let tool_fn = ToolFn::from_syn(&cx, item);
    let (name, name_span) = match &args.name {
        Some(lit) => (lit.value(), lit.span()),
        None => (
            tool_fn.item.sig.ident.unraw().to_string(),
            tool_fn.item.sig.ident.span(),
        ),
    };
    tool_fn.validate(&cx, &args, &name, name_span, target);
    crate::examples::check(&cx, &args);
    crate::limits::check(&cx, &args, &tool_fn.item.sig);
    crate::keywords::check(&cx, &args);
    let checked = cx.check().map(|()| (args, name));
    (tool_fn, checked)
}

/// Clippy lints on the fn that `#[tool]` itself makes fire, allowed on the fn so the user's crate
/// needs no `allow` of its own (`tests/pedantic-user` is linted with `clippy::pedantic`):
/// - `too_many_arguments`: a tool's parameters are its schema;
/// - `needless_pass_by_value` (pedantic): arguments are deserialized into owned values and
///   `State<T>` is passed by value; `#[tool]` refuses borrowed parameters;
/// - `unused_async` (pedantic, `async fn`): an `async fn` without `.await` is a fine tool;
/// - `must_use_candidate` (pedantic, plain `fn`): the return value is the tool's result, which
///   the generated tool always uses.
pub(crate) fn allow_signature_lints(item: &mut ItemFn) {
    let allow: syn::Attribute = if item.sig.asyncness.is_some() {
        syn::parse_quote!(#[allow(clippy::too_many_arguments, clippy::needless_pass_by_value, clippy::unused_async)])
    } else {
        syn::parse_quote!(#[allow(clippy::too_many_arguments, clippy::needless_pass_by_value, clippy::must_use_candidate)])
    };
    item.attrs.push(allow);
}

/// `get_weather` -> `GetWeather`.
pub(crate) fn pascal_case(ident: &syn::Ident) -> String {
    ident
        .unraw()
        .to_string()
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// `XxxParams` and `XxxTool`; a method's are prefixed with its type's name (`DbGetTool`).
pub(crate) fn type_idents(item: &ItemFn, target: Target<'_>) -> (syn::Ident, syn::Ident) {
    let base = match target {
        Target::Free => pascal_case(&item.sig.ident),
        Target::Method { self_name, .. } => {
            format!("{}{}", self_name.unraw(), pascal_case(&item.sig.ident))
        }
    };
    let span = item.sig.ident.span();
    (
        format_ident!("{}Params", base, span = span),
        format_ident!("{}Tool", base, span = span),
    )
}

/// Everything `#[tool]` adds next to the fn: the params struct, the tool type and its
/// `AgentTool` impl, and (for a free fn) the registration.
pub(crate) fn generate(
    tool_fn: &ToolFn,
    args: &ToolArgs,
    name: &str,
    target: Target<'_>,
) -> TokenStream {
    let item = &tool_fn.item;
    let vis = &item.vis;
    let fn_ident = &item.sig.ident;
    let fn_name = fn_ident.unraw().to_string();
    let (params_ident, tool_ident) = type_idents(item, target);
    let description = match &args.description {
        Some(lit) => quote!(#lit),
        None => tool_fn.docs.to_tokens(),
    };
    let deny_unknown_fields = args
        .deny_unknown_fields
        .as_ref()
        .map(|_| quote!(#[serde(deny_unknown_fields)]));
    let label = args
        .label
        .as_ref()
        .map_or_else(|| name.to_owned(), syn::LitStr::value);

    let arguments: Vec<_> = tool_fn
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Argument))
        .collect();
    let fields = arguments.iter().map(|param| {
        let ident = &param.ident;
        let ty = &param.ty;
        let attrs = &param.field_attrs;
        let allow_undocumented = (!param.has_docs).then(|| quote!(#[allow(missing_docs)]));
        let read = reads_through_parameter(param).then(|| {
            let path = syn::LitStr::new("::pi_tool::__private::deserialize_parameter", ty.span());
            let schema = syn::LitStr::new(
                &format!(
                    "::pi_tool::__private::parameter_schema::<{}>",
                    ty.to_token_stream()
                ),
                ty.span(),
            );
            quote_spanned! {ty.span()=>
                #[serde(deserialize_with = #path)]
                #[schemars(schema_with = #schema)]
            }
        });
        quote_spanned! {ty.span()=>
            #(#attrs)*
            #read
            #allow_undocumented
            pub #ident: #ty
        }
    });
    // Type-checked only, never called (so never compiled to code): an injected type the macro
    // could not tell by its name gets an error that says to mark it `#[inject]`.
    let probes = arguments.iter().map(|param| {
        let ty = &param.ty;
        quote_spanned! {ty.span()=>
            (&::pi_tool::__private::ArgumentProbe::<#ty>::new()).check();
        }
    });

    let mut bindings = Vec::new();
    let mut call_args = Vec::new();
    for (index, param) in tool_fn.params.iter().enumerate() {
        let ident = &param.ident;
        let binding = format_ident!("__injected{}", index);
        let extracted = match &param.kind {
            ParamKind::Argument => {
                call_args.push(quote!(__params.#ident));
                continue;
            }
            ParamKind::Context => {
                call_args.push(quote!(__ctx.clone()));
                continue;
            }
            ParamKind::State(inner) => quote_spanned! {inner.span()=>
                ::pi_tool::__private::extract_state::<#inner>(&__ctx)
            },
            ParamKind::Marked => {
                let ty = &param.ty;
                quote_spanned! {ty.span()=>
                    <#ty as ::pi_tool::__private::Inject>::inject(&__ctx)
                }
            }
        };
        bindings.push(quote! {
            let #binding = match #extracted {
                ::core::result::Result::Ok(value) => value,
                ::core::result::Result::Err(err) => return ::core::result::Result::Err(err),
            };
        });
        call_args.push(quote!(#binding));
    }

    let mode = args.mode.map(|mode| {
        let variant = match mode {
            Mode::Sequential => quote!(Sequential),
            Mode::Parallel => quote!(Parallel),
        };
        quote! {
            fn execution_mode(&self) -> ::core::option::Option<::pi_tool::ExecutionMode> {
                ::core::option::Option::Some(::pi_tool::ExecutionMode::#variant)
            }
        }
    });
    let rewrites = args.prepare_arguments.is_none().then(|| {
        quote! {
            fn rewrites_arguments(&self) -> bool {
                false
            }
        }
    });
    let prepare = args.prepare_arguments.as_ref().map(|path| {
        let call = quote_spanned! {path.span()=> ::pi_tool::__private::PrepareArguments::prepare(&#path, __args) };
        quote! {
            fn prepare_arguments(
                &self,
                __args: ::pi_tool::__private::serde_json::Value,
            ) -> ::core::result::Result<::pi_tool::__private::serde_json::Value, ::pi_tool::ToolError> {
                #call
            }
        }
    });
    let annotations = (!args.annotations.is_empty()).then(|| {
        let setters = args.annotations.iter().map(|(key, value)| {
            let method = format_ident!("{}", key);
            quote!(.#method(#value))
        });
        quote! {
            fn annotations(&self) -> ::pi_tool::ToolAnnotations {
                const __ANNOTATIONS: ::pi_tool::ToolAnnotations = ::pi_tool::ToolAnnotations::new() #(#setters)*;
                __ANNOTATIONS
            }
        }
    });
    let limit_methods = crate::limits::limit_methods(args);
    let state_types_method = state_types_method(tool_fn);
    let example_methods = crate::examples::example_methods(args);
    let keywords_method = crate::keywords::keywords_method(args);
    let policy_methods = crate::policies::policy_methods(args);
    let approval_method = crate::approval::approval_method(args.approval.as_ref(), &params_ident);
    let output_schema = output_schema_method(&item.sig.output);
    let output_span = match &item.sig.output {
        syn::ReturnType::Default => fn_ident.span(),
        syn::ReturnType::Type(_, ty) => ty.span(),
    };
    // Spanned on the return type, so an unsupported one is reported there.
    let call = match target {
        Target::Free => quote_spanned!(output_span=> #fn_ident(#(#call_args),*)),
        Target::Method { self_ty, .. } => {
            quote_spanned!(output_span=> <#self_ty>::#fn_ident(&__this, #(#call_args),*))
        }
    };
    let call = match item.sig.asyncness {
        Some(_) => quote_spanned!(output_span=> #call.await),
        None => call,
    };
    let into_result = quote_spanned! {output_span=>
        ::pi_tool::IntoToolResult::into_tool_result(#call)
    };
    // Parameters are deserialized before the future is made, so the future holds no JSON.
    let boxed = quote_spanned! {fn_ident.span()=>
        ::pi_tool::__private::send_future(async move {
            #(#bindings)*
            #into_result
        })
    };
    let params_doc = format!(
        " Arguments of the `{name}` tool, generated by `#[tool]` from `{fn_name}`'s parameters."
    );
    let (tool_struct, this_param, this_arg, registration) = match target {
        Target::Free => {
            let tool_doc = format!(
                " The `{name}` tool, generated by `#[tool]` from `{fn_name}`: found by `ToolRegistry::discover`, or register it by hand."
            );
            let registration = quote! {
                ::pi_tool::__private::inventory::submit! {
                    ::pi_tool::ToolRegistration {
                        name: #name,
                        location: ::core::concat!(::core::module_path!(), "::", #fn_name),
                        file: ::core::file!(),
                        line: ::core::line!(),
                        make: || ::pi_tool::__private::Arc::new(#tool_ident),
                    }
                }
            };
            (
                quote! {
                    #[doc = #tool_doc]
                    #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
                    #vis struct #tool_ident;
                },
                None,
                None,
                Some(registration),
            )
        }
        Target::Method { self_ty, .. } => {
            let tool_doc = format!(
                " The `{name}` tool, generated by `#[tool]` from the method `{fn_name}`, bound to one shared value: get it from `tools()`."
            );
            (
                quote! {
                    #[doc = #tool_doc]
                    #[derive(::core::clone::Clone)]
                    #vis struct #tool_ident(::pi_tool::__private::Arc<#self_ty>);
                },
                Some(quote!(__this: ::pi_tool::__private::Arc<#self_ty>,)),
                Some(quote!(::pi_tool::__private::Arc::clone(&self.0),)),
                None,
            )
        }
    };

    quote! {
        // First, so that an injected type under another name reads this error before serde's.
        const _: () = {
            #[allow(dead_code)]
            fn __argument_probes() {
                #[allow(unused_imports)]
                use ::pi_tool::__private::NotInjected as _;
                #(#probes)*
            }
        };

        #[doc = #params_doc]
        #[derive(::pi_tool::__private::serde::Deserialize, ::pi_tool::__private::schemars::JsonSchema)]
        #[serde(crate = "::pi_tool::__private::serde")]
        #[schemars(crate = "::pi_tool::__private::schemars")]
        #deny_unknown_fields
        #vis struct #params_ident {
            #(#fields,)*
        }

        #tool_struct

        const _: () = {
            static __PI_TOOL: ::pi_tool::__private::ToolStatics = ::pi_tool::__private::ToolStatics::new();

            #[automatically_derived]
            #[allow(unused_qualifications)]
            impl ::pi_tool::AgentTool for #tool_ident {
                fn spec(&self) -> &::pi_tool::ToolSpec {
                    __PI_TOOL.spec(#name, #description, ::pi_tool::schema_for::<#params_ident>)
                }

                fn label(&self) -> &str {
                    #label
                }

                #mode
                #prepare
                #annotations
                #limit_methods
                #state_types_method
                #example_methods
                #keywords_method
                #policy_methods
                #approval_method
                #output_schema

                fn validator(&self) -> ::core::option::Option<&::pi_tool::ArgumentValidator> {
                    ::core::option::Option::Some(__PI_TOOL.validator(self.spec()))
                }

                #rewrites

                fn execute(
                    &self,
                    __args: ::pi_tool::__private::serde_json::Value,
                    __ctx: ::pi_tool::ToolContext,
                ) -> ::pi_tool::BoxFuture<'static, ::core::result::Result<::pi_tool::ToolResult, ::pi_tool::ToolError>> {
                    self.execute_borrowed(&__args, __ctx)
                }

                fn execute_borrowed(
                    &self,
                    __args: &::pi_tool::__private::serde_json::Value,
                    __ctx: ::pi_tool::ToolContext,
                ) -> ::pi_tool::BoxFuture<'static, ::core::result::Result<::pi_tool::ToolResult, ::pi_tool::ToolError>> {
                    match ::pi_tool::__private::parse_params::<#params_ident>(#name, __args) {
                        ::core::result::Result::Ok(__params) => #tool_ident::__run(#this_arg __params, __ctx),
                        ::core::result::Result::Err(err) => ::pi_tool::__private::failed(err),
                    }
                }
            }

            impl #tool_ident {
                /// Runs the fn with deserialized parameters and injected values.
                fn __run(
                    #this_param
                    __params: #params_ident,
                    __ctx: ::pi_tool::ToolContext,
                ) -> ::pi_tool::BoxFuture<'static, ::core::result::Result<::pi_tool::ToolResult, ::pi_tool::ToolError>> {
                    ::pi_tool::__private::Box::into_pin(#boxed)
                }
            }

            #registration
        };
    }
}

/// Whether a model argument is read through `pi_tool::__private::deserialize_parameter`, whose
/// bound says in one error what a type that is not `Deserialize` lacks. Not an `Option<..>`
/// (serde reads a missing one as `None` only without `deserialize_with`), nor a parameter with
/// `#[serde(..)]` attributes of its own (they may read it their own way).
fn reads_through_parameter(param: &crate::ast::Param) -> bool {
    let is_option = match &param.ty {
        syn::Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == "Option"),
        _ => false,
    };
    !is_option
        && !param
            .field_attrs
            .iter()
            .any(|attr| attr.path().is_ident("serde") || attr.path().is_ident("schemars"))
}

/// `state_types()` listing the fn's `State<T>` parameters, so a host reports a missing `T`
/// before the first call (nothing when there are none: the trait's default).
fn state_types_method(tool_fn: &ToolFn) -> Option<TokenStream> {
    let types: Vec<&syn::Type> = tool_fn
        .params
        .iter()
        .filter_map(|param| match &param.kind {
            ParamKind::State(inner) => Some(&**inner),
            _ => None,
        })
        .collect();
    (!types.is_empty()).then(|| {
        quote! {
            fn state_types(&self) -> ::pi_tool::__private::Vec<::pi_tool::StateType> {
                ::pi_tool::__private::Vec::from([#(::pi_tool::StateType::of::<#types>()),*])
            }
        }
    })
}

/// `output_schema()` for a return type that names `Json` (`Json<T>`, `Result<Json<T>, E>`):
/// the probe in `__private` declares the schema of `T`, and a `T` without `JsonSchema` is an
/// error on the return type that says what to derive. Other return types keep the trait's
/// default (no schema) and cost no code.
fn output_schema_method(output: &syn::ReturnType) -> Option<TokenStream> {
    let syn::ReturnType::Type(_, ty) = output else {
        return None;
    };
    names_json(ty.to_token_stream()).then(|| {
        let probe = quote_spanned! {ty.span()=>
            (&::pi_tool::__private::OutputSchemaProbe::<#ty>::new()).output_schema(&__PI_TOOL)
        };
        quote! {
            fn output_schema(&self) -> ::core::option::Option<&::pi_tool::__private::serde_json::Value> {
                #[allow(unused_imports)]
                use ::pi_tool::__private::NoOutputSchema as _;
                #probe
            }
        }
    })
}

/// Whether the tokens contain the identifier `Json` (not `JsonWithoutSchema`, nor `MyJson`).
fn names_json(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|token| match token {
        proc_macro2::TokenTree::Ident(ident) => ident == "Json",
        proc_macro2::TokenTree::Group(group) => names_json(group.stream()),
        _ => false,
    })
}

/// The fn (with its parameter attributes already stripped) plus a stand-in tool type, so code
/// naming `XxxTool` does not pile secondary errors on top of the real one.
fn fallback(tool_fn: &ToolFn, err: syn::Error) -> TokenStream {
    let item = &tool_fn.item;
    let error = err.to_compile_error();
    if tool_fn.receiver.is_some() {
        // A method sits in an `impl` block, where no struct can be declared.
        return quote!(#error #item);
    }
    let (_, tool_ident) = type_idents(item, Target::Free);
    let vis: &Visibility = &item.vis;
    let doc = " Stand-in emitted because `#[tool]` reported an error.";
    quote! {
        #error
        #item

        #[doc = #doc]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #tool_ident;

        #[automatically_derived]
        impl ::pi_tool::AgentTool for #tool_ident {
            fn spec(&self) -> &::pi_tool::ToolSpec {
                ::core::unreachable!("`#[tool]` reported an error")
            }
            fn label(&self) -> &str {
                ::core::unreachable!("`#[tool]` reported an error")
            }
            fn execute(
                &self,
                _: ::pi_tool::__private::serde_json::Value,
                _: ::pi_tool::ToolContext,
            ) -> ::pi_tool::BoxFuture<'static, ::core::result::Result<::pi_tool::ToolResult, ::pi_tool::ToolError>> {
                ::core::unreachable!("`#[tool]` reported an error")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{pascal_case, tool};
    use quote::quote;
    use syn::parse_quote;

    #[test]
    fn type_names_are_pascal_case_of_the_unraw_fn_name() {
        assert_eq!(pascal_case(&parse_quote!(get_weather)), "GetWeather");
        assert_eq!(pascal_case(&parse_quote!(r#match)), "Match");
        assert_eq!(pascal_case(&parse_quote!(__odd__name_)), "OddName");
    }

    #[test]
    fn the_expansion_names_its_items_and_registers_the_tool() {
        let out = tool(
            quote!(label = "Weather"),
            quote! {
                /// Get the weather.
                pub async fn get_weather(/// City
                    city: String) -> String { city }
            },
        )
        .to_string();
        for expected in [
            "pub struct GetWeatherParams",
            "pub struct GetWeatherTool",
            "impl :: pi_tool :: AgentTool for GetWeatherTool",
            ":: pi_tool :: __private :: inventory :: submit !",
            "\"Weather\"",
            "fn rewrites_arguments",
        ] {
            assert!(out.contains(expected), "missing `{expected}` in {out}");
        }
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn an_error_keeps_the_fn_and_strips_parameter_docs() {
        let out = tool(
            quote!(lable = "x"),
            quote! {
                /// Get the weather.
                async fn get_weather(/// City
                    city: String) -> String { city }
            },
        )
        .to_string();
        assert!(out.contains("compile_error"), "{out}");
        assert!(
            out.contains("async fn get_weather (city : String)"),
            "{out}"
        );
        assert!(
            out.contains("struct GetWeatherTool"),
            "a stand-in keeps other code compiling"
        );
    }
}
