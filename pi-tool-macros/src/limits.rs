//! The `timeout = "30s"`, `blocking` and `defer` keys: duration parsing (checked at compile time, the
//! error spanned on the value) and the `AgentTool` methods they generate.

use std::time::Duration;

use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

use crate::attr::ToolArgs;
use crate::ctxt::Ctxt;

/// A `timeout` on a sync `fn` without `blocking` is refused: such a fn runs inline, inside the
/// call's future, so nothing can stop it before it returns and the timeout would never fire.
pub(crate) fn check(cx: &Ctxt, args: &ToolArgs, sig: &syn::Signature) {
    if sig.asyncness.is_some() || args.blocking.is_some() {
        return;
    }
    if let Some(key) = &args.timeout_key {
        cx.error_spanned_by(
            key,
            format!(
                "`timeout` cannot stop a sync `fn`: it runs inline, so the call ends only when `{}` returns; \
                 add `blocking` (`#[tool(blocking, timeout = ..)]`: the fn runs on the blocking pool and the \
                 call is answered when the timeout expires) or make the fn `async`",
                sig.ident
            ),
        );
    }
}

/// Parses `500ms`, `30s`, `5m`, `1h` (a whole number and a unit, no space).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let expected = "expected a whole number and a unit (`ms`, `s`, `m` or `h`), e.g. `timeout = \"30s\"` or `timeout = \"500ms\"`";
    if number.is_empty() {
        return Err(format!(
            "`timeout` value `{text}` has no number; {expected}"
        ));
    }
    let Ok(amount) = number.parse::<u64>() else {
        return Err(format!("`timeout` value `{text}` is too large"));
    };
    let duration = match unit {
        "ms" => Some(Duration::from_millis(amount)),
        "s" => Some(Duration::from_secs(amount)),
        "m" => amount.checked_mul(60).map(Duration::from_secs),
        "h" => amount.checked_mul(3600).map(Duration::from_secs),
        "" => return Err(format!("`timeout` value `{text}` has no unit; {expected}")),
        other => return Err(format!("`timeout` unit `{other}` is unknown; {expected}")),
    };
    match duration {
        Some(duration) if duration.is_zero() => Err(format!(
            "`timeout` value `{text}` is zero; a call could never finish (leave `timeout` out for no limit)"
        )),
        Some(duration) => Ok(duration),
        None => Err(format!("`timeout` value `{text}` is too large")),
    }
}

/// `timeout = "30s"`: the string literal parsed, or an error for the literal's span.
pub(crate) fn timeout_value(lit: &LitStr) -> Result<Duration, syn::Error> {
    parse_duration(&lit.value()).map_err(|message| syn::Error::new(lit.span(), message))
}

/// The `timeout`, `blocking` and `deferred` methods of the generated `AgentTool` impl (nothing when unset).
pub(crate) fn limit_methods(args: &ToolArgs) -> TokenStream {
    let timeout = args.timeout.map(|duration| {
        let secs = duration.as_secs();
        let nanos = duration.subsec_nanos();
        quote! {
            fn timeout(&self) -> ::core::option::Option<::core::time::Duration> {
                ::core::option::Option::Some(::core::time::Duration::new(#secs, #nanos))
            }
        }
    });
    let blocking = args.blocking.as_ref().map(|_| {
        quote! {
            fn blocking(&self) -> bool {
                true
            }
        }
    });
    let defer = args.defer.as_ref().map(|_| {
        quote! {
            fn deferred(&self) -> bool {
                true
            }
        }
    });
    quote!(#timeout #blocking #defer)
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn parses_the_usual_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
    }

    #[test]
    fn refuses_what_is_not_a_duration() {
        for bad in [
            "30",
            "s",
            "thirty seconds",
            "30 s",
            "1.5s",
            "30sec",
            "0s",
            "",
            "-1s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(
            parse_duration("99999999999999999999s")
                .unwrap_err()
                .contains("too large")
        );
    }
}
