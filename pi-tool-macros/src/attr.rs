//! The `#[tool(...)]` arguments: `name`, `label`, `description`, `sequential` / `parallel`,
//! `deny_unknown_fields`, `prepare_arguments`, `defer`, `keywords`, `callers`, `replay`, `aborted`, `approval`, and the annotation flags `read_only`,
//! `destructive`, `idempotent`, `open_world`.

use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, ExprPath, Lit, LitStr, Meta, Path, Token};

use crate::ctxt::Ctxt;

/// Every key `#[tool]` accepts, in the order the error message lists them.
pub(crate) const KEYS: &[&str] = &[
    "name",
    "label",
    "description",
    "sequential",
    "parallel",
    "prepare_arguments",
    "deny_unknown_fields",
    "timeout",
    "blocking",
    "defer",
    "example",
    "keywords",
    "eager_input_streaming",
    "callers",
    "replay",
    "aborted",
    "approval",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
];

/// The annotation flags, in the order `ToolAnnotations`' builder methods are called.
pub(crate) const ANNOTATION_KEYS: &[&str] =
    &["read_only", "destructive", "idempotent", "open_world"];

/// `sequential` or `parallel`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Sequential,
    Parallel,
}

/// The parsed arguments; every value keeps its tokens so later checks can point at them.
#[derive(Default)]
pub(crate) struct ToolArgs {
    pub(crate) name: Option<LitStr>,
    pub(crate) label: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) mode: Option<Mode>,
    pub(crate) prepare_arguments: Option<Path>,
    /// Unknown argument keys are an error (`additionalProperties: false` in the schema).
    pub(crate) deny_unknown_fields: Option<Path>,
    /// Annotation hints set: (key, value), one per key (`read_only` or `read_only = false`).
    pub(crate) annotations: Vec<(&'static str, bool)>,
    /// `timeout = "30s"`, parsed.
    pub(crate) timeout: Option<std::time::Duration>,
    /// The `timeout` key, for errors about it.
    pub(crate) timeout_key: Option<Path>,
    /// `blocking`: run each call on tokio's blocking pool.
    pub(crate) blocking: Option<Path>,
    /// `defer`: the schema is sent only once the tool is loaded.
    pub(crate) defer: Option<Path>,
    /// `example = "{..}"`, each time it is given: example arguments (checked in `examples`).
    pub(crate) examples: Vec<LitStr>,
    /// `keywords = ["..", ..]`: words the tool search finds the tool by (checked in
    /// `keywords`).
    pub(crate) keywords: Option<Vec<LitStr>>,
    /// `eager_input_streaming`: the API may stream the arguments unbuffered.
    pub(crate) eager_input_streaming: Option<Path>,
    /// `callers = "code"`: the `ToolCallers` variant.
    pub(crate) callers: Option<syn::Ident>,
    /// `replay = "never"`: the `Replay` variant.
    pub(crate) replay: Option<syn::Ident>,
    /// `aborted = "Command aborted"`: the text of a call answered for an abort.
    pub(crate) aborted: Option<LitStr>,
    /// `approval` or `approval = path`.
    pub(crate) approval: Option<crate::approval::Approval>,
}

impl ToolArgs {
    /// Parses the attribute's tokens, recording every problem in `cx`.
    pub(crate) fn from_tokens(cx: &Ctxt, tokens: TokenStream) -> ToolArgs {
        let mut args = ToolArgs::default();
        let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens) {
            Ok(metas) => metas,
            Err(err) => {
                cx.syn_error(err);
                return args;
            }
        };
        for meta in metas {
            args.apply(cx, meta);
        }
        args
    }

    fn apply(&mut self, cx: &Ctxt, meta: Meta) {
        let path = meta.path().clone();
        let Some(ident) = path.get_ident() else {
            cx.error_spanned_by(
                &path,
                unknown_key_message(&quote::quote!(#path).to_string()),
            );
            return;
        };
        let key = ident.to_string();
        match key.as_str() {
            "name" => set_once(cx, &mut self.name, &path, string_value(cx, &key, &meta)),
            "label" => set_once(cx, &mut self.label, &path, string_value(cx, &key, &meta)),
            "description" => set_once(
                cx,
                &mut self.description,
                &path,
                string_value(cx, &key, &meta),
            ),
            "prepare_arguments" => {
                let value = path_value(cx, &meta);
                set_once(cx, &mut self.prepare_arguments, &path, value);
            }
            "timeout" => {
                let value = string_value(cx, &key, &meta).and_then(|lit| {
                    crate::limits::timeout_value(&lit)
                        .map_err(|err| cx.syn_error(err))
                        .ok()
                });
                if value.is_some() {
                    self.timeout_key = Some(path.clone());
                }
                set_once(cx, &mut self.timeout, &path, value);
            }
            "callers" => {
                let value = string_value(cx, &key, &meta).and_then(|lit| {
                    crate::policies::callers_value(&lit)
                        .map_err(|err| cx.syn_error(err))
                        .ok()
                });
                set_once(cx, &mut self.callers, &path, value);
            }
            "replay" => {
                let value = string_value(cx, &key, &meta).and_then(|lit| {
                    crate::policies::replay_value(&lit)
                        .map_err(|err| cx.syn_error(err))
                        .ok()
                });
                set_once(cx, &mut self.replay, &path, value);
            }
            "aborted" => set_once(cx, &mut self.aborted, &path, string_value(cx, &key, &meta)),
            "approval" => {
                let value = crate::approval::approval_value(cx, &meta);
                set_once(cx, &mut self.approval, &path, value);
            }
            "blocking" => {
                if !matches!(meta, Meta::Path(_)) {
                    cx.error_spanned_by(
                        &meta,
                        "`blocking` is a flag and takes no value: write `#[tool(blocking)]`",
                    );
                    return;
                }
                set_once(cx, &mut self.blocking, &path, Some(path.clone()));
            }
            "defer" => {
                if !matches!(meta, Meta::Path(_)) {
                    cx.error_spanned_by(
                        &meta,
                        "`defer` is a flag and takes no value: write `#[tool(defer)]`",
                    );
                    return;
                }
                set_once(cx, &mut self.defer, &path, Some(path.clone()));
            }
            "example" => self.examples.extend(string_value(cx, &key, &meta)),
            "keywords" => {
                let value = crate::keywords::parse(cx, &meta);
                set_once(cx, &mut self.keywords, &path, value);
            }
            "eager_input_streaming" => {
                if !matches!(meta, Meta::Path(_)) {
                    cx.error_spanned_by(
                        &meta,
                        "`eager_input_streaming` is a flag and takes no value: write `#[tool(eager_input_streaming)]`",
                    );
                    return;
                }
                set_once(
                    cx,
                    &mut self.eager_input_streaming,
                    &path,
                    Some(path.clone()),
                );
            }
            "deny_unknown_fields" => {
                if !matches!(meta, Meta::Path(_)) {
                    cx.error_spanned_by(
                        &meta,
                        "`deny_unknown_fields` is a flag and takes no value: write `#[tool(deny_unknown_fields)]`",
                    );
                    return;
                }
                set_once(cx, &mut self.deny_unknown_fields, &path, Some(path.clone()));
            }
            "sequential" | "parallel" => {
                if !matches!(meta, Meta::Path(_)) {
                    cx.error_spanned_by(
                        &meta,
                        format!("`{key}` is a flag and takes no value: write `#[tool({key})]`"),
                    );
                    return;
                }
                let mode = if key == "sequential" {
                    Mode::Sequential
                } else {
                    Mode::Parallel
                };
                match self.mode {
                    None => self.mode = Some(mode),
                    Some(previous) if previous == mode => {
                        cx.error_spanned_by(&path, format!("duplicate `#[tool]` argument `{key}`"));
                    }
                    Some(_) => cx.error_spanned_by(
                        &path,
                        "`sequential` and `parallel` cannot both be set: a tool runs one way or the other",
                    ),
                }
            }
            other => match ANNOTATION_KEYS.iter().find(|k| **k == other) {
                Some(key) => self.apply_annotation(cx, key, &path, &meta),
                None => cx.error_spanned_by(&path, unknown_key_message(other)),
            },
        }
    }

    /// `read_only` (true) or `read_only = true | false`; anything else is an error on the value.
    fn apply_annotation(&mut self, cx: &Ctxt, key: &'static str, path: &Path, meta: &Meta) {
        let value = match meta {
            Meta::Path(_) => true,
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Bool(b), ..
                }) => b.value,
                other => {
                    cx.error_spanned_by(
                        other,
                        format!("`{key}` is a flag: write `#[tool({key})]`, or `{key} = false` to say it is not"),
                    );
                    return;
                }
            },
            Meta::List(_) => {
                cx.error_spanned_by(
                    meta,
                    format!("`{key}` is a flag: write `#[tool({key})]`, or `{key} = false` to say it is not"),
                );
                return;
            }
        };
        if self.annotations.iter().any(|(k, _)| *k == key) {
            cx.error_spanned_by(path, format!("duplicate `#[tool]` argument `{key}`"));
            return;
        }
        self.annotations.push((key, value));
    }
}

fn unknown_key_message(key: &str) -> String {
    let list = KEYS
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let hint = KEYS
        .iter()
        .filter(|k| edit_distance(k, key) <= 2)
        .min_by_key(|k| edit_distance(k, key))
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default();
    format!("unknown `#[tool]` argument `{key}`{hint}; expected one of {list}")
}

fn set_once<T>(cx: &Ctxt, slot: &mut Option<T>, key: &Path, value: Option<T>) {
    let Some(value) = value else { return };
    if slot.is_some() {
        let name = key.get_ident().map(ToString::to_string).unwrap_or_default();
        cx.error_spanned_by(key, format!("duplicate `#[tool]` argument `{name}`"));
    } else {
        *slot = Some(value);
    }
}

fn string_value(cx: &Ctxt, key: &str, meta: &Meta) -> Option<LitStr> {
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => Some(s.clone()),
            other => {
                cx.error_spanned_by(
                    other,
                    format!("`{key}` expects a string literal: `{key} = \"...\"`"),
                );
                None
            }
        },
        _ => {
            cx.error_spanned_by(
                meta,
                format!("`{key}` expects a string literal: `{key} = \"...\"`"),
            );
            None
        }
    }
}

fn path_value(cx: &Ctxt, meta: &Meta) -> Option<Path> {
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Path(ExprPath {
                path, qself: None, ..
            }) => Some(path.clone()),
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => match s.parse::<Path>() {
                Ok(path) => Some(path),
                Err(_) => {
                    cx.error_spanned_by(s, "`prepare_arguments` expects the path of a fn, e.g. `prepare_arguments = upgrade_args`");
                    None
                }
            },
            other => {
                cx.error_spanned_by(other, "`prepare_arguments` expects the path of a fn, e.g. `prepare_arguments = upgrade_args`");
                None
            }
        },
        _ => {
            cx.error_spanned_by(meta, "`prepare_arguments` expects the path of a fn, e.g. `prepare_arguments = upgrade_args`");
            None
        }
    }
}

/// Levenshtein distance, for "did you mean" on misspelled keys.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            current.push(
                (previous[j] + cost)
                    .min(previous[j + 1] + 1)
                    .min(current[j] + 1),
            );
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn errors(tokens: TokenStream) -> Vec<String> {
        let cx = Ctxt::new();
        let _ = ToolArgs::from_tokens(&cx, tokens);
        match cx.check() {
            Ok(()) => Vec::new(),
            Err(err) => err.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn accepts_every_key() {
        assert!(
            errors(quote!(
                name = "a",
                label = "A",
                description = "d",
                sequential,
                prepare_arguments = f,
                defer,
                callers = "code",
                replay = "never",
                read_only,
                open_world = false
            ))
            .is_empty()
        );
    }

    #[test]
    fn annotation_flags_take_no_value_or_a_bool() {
        let cx = Ctxt::new();
        let args = ToolArgs::from_tokens(&cx, quote!(read_only, destructive = false));
        assert!(cx.check().is_ok());
        assert_eq!(
            args.annotations,
            vec![("read_only", true), ("destructive", false)]
        );
        let found = errors(quote!(
            idempotent = 1,
            open_world("x"),
            read_only,
            read_only
        ));
        assert_eq!(
            found,
            vec![
                "`idempotent` is a flag: write `#[tool(idempotent)]`, or `idempotent = false` to say it is not",
                "`open_world` is a flag: write `#[tool(open_world)]`, or `open_world = false` to say it is not",
                "duplicate `#[tool]` argument `read_only`",
            ]
        );
    }

    #[test]
    fn reports_all_problems_at_once() {
        let found = errors(quote!(
            lable = "x",
            label = 5,
            sequential,
            parallel,
            name = "a",
            name = "b"
        ));
        assert_eq!(found.len(), 4, "{found:?}");
        assert!(found[0].starts_with("unknown `#[tool]` argument `lable` (did you mean `label`?)"));
        assert_eq!(
            found[1],
            "`label` expects a string literal: `label = \"...\"`"
        );
        assert!(found[2].starts_with("`sequential` and `parallel` cannot both be set"));
        assert_eq!(found[3], "duplicate `#[tool]` argument `name`");
    }
}
