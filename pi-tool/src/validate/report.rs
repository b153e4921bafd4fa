//! Turns `jsonschema` errors into lines a model can act on:
//! `  - unit: expected one of "celsius", "fahrenheit"; got "kelvin"`.

use std::fmt::Write;

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use super::alternatives::{Verdict, judge};
use super::shape::Shape;
use crate::suggest::{closest, did_you_mean};

/// Longest rendering of a received value inside a message before it is shortened.
const MAX_VALUE_CHARS: usize = 60;

/// Longest `Received arguments` block; a huge argument is not echoed back in full.
pub(crate) const MAX_RECEIVED_CHARS: usize = 4096;

/// Most problems listed in one message; the rest are counted.
const MAX_PROBLEMS: usize = 20;

/// One problem: where (`a.0.b`, `root`) and what. An empty path marks the summary line of
/// problems not shown.
pub(crate) struct Problem {
    pub(crate) path: String,
    pub(crate) message: String,
}

pub(crate) fn problems<'a>(
    errors: impl Iterator<Item = ValidationError<'a>>,
    shape: &Shape,
    schema: &Value,
) -> Vec<Problem> {
    let mut out: Vec<Problem> = Vec::new();
    let mut hidden = 0usize;
    for error in errors {
        // A flood of errors (100,000 bad items) is counted, not described: the message stays
        // short and the work linear.
        if out.len() >= MAX_PROBLEMS {
            hidden += 1;
            continue;
        }
        let before = out.len();
        describe(&error, shape, schema, &mut out);
        // Drop repeats (an `anyOf` branch can restate an error); lists are short, so a scan is
        // cheaper than hashing.
        let mut index = before;
        while index < out.len() {
            let repeated = out[..index]
                .iter()
                .any(|p| p.path == out[index].path && p.message == out[index].message);
            if repeated {
                out.remove(index);
            } else {
                index += 1;
            }
        }
    }
    if out.len() > MAX_PROBLEMS {
        hidden += out.len() - MAX_PROBLEMS;
        out.truncate(MAX_PROBLEMS);
    }
    if hidden > 0 {
        out.push(Problem {
            path: String::new(),
            message: format!("… {hidden} more problems not shown"),
        });
    }
    out
}

fn segments(pointer: &str) -> Vec<String> {
    if pointer.is_empty() {
        return Vec::new();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|s| {
            if s.contains('~') {
                s.replace("~1", "/").replace("~0", "~")
            } else {
                s.to_owned()
            }
        })
        .collect()
}

fn dotted(segments: &[String]) -> String {
    if segments.is_empty() {
        "root".to_owned()
    } else {
        segments.join(".")
    }
}

fn joined(base: &[String], last: &str) -> String {
    if base.is_empty() {
        return last.to_owned();
    }
    let mut path = base.join(".");
    path.push('.');
    path.push_str(last);
    path
}

fn describe(error: &ValidationError<'_>, shape: &Shape, schema: &Value, out: &mut Vec<Problem>) {
    let base = segments(error.instance_path().as_str());
    let got = || render(error.instance());
    let mut push = |path: String, message: String| out.push(Problem { path, message });
    match error.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            // A close unknown key is likely the same property misspelled: say so (unless the
            // schema forbids unknown keys, which are then reported with a suggestion anyway).
            let known = shape
                .at_path(base.iter().map(String::as_str))
                .filter(|node| !node.closed);
            let unknown_keys = error
                .instance()
                .as_object()
                .into_iter()
                .flat_map(|map| map.keys())
                .filter(|key| known.is_some_and(|node| node.property(key).is_none()));
            let hint = match closest(&name, unknown_keys.map(String::as_str)) {
                Some(key) => format!(" (got \"{key}\"; is it misspelled?)"),
                None => String::new(),
            };
            push(
                joined(&base, &name),
                format!("missing required property{hint}"),
            );
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let node = shape.at_path(base.iter().map(String::as_str));
            for name in unexpected {
                let hint = match node {
                    Some(node) => {
                        let suggestion = did_you_mean(name, node.property_names());
                        if suggestion.is_empty() && !node.properties.is_empty() {
                            let allowed: Vec<String> =
                                node.property_names().map(|n| format!("\"{n}\"")).collect();
                            format!(" (allowed: {})", allowed.join(", "))
                        } else {
                            suggestion
                        }
                    }
                    None => String::new(),
                };
                push(joined(&base, name), format!("unknown property{hint}"));
            }
        }
        ValidationErrorKind::Type { kind } => {
            push(
                dotted(&base),
                format!("expected {}; got {}", type_names(kind), got()),
            );
        }
        ValidationErrorKind::Enum { options } => {
            push(
                dotted(&base),
                format!("expected one of {}; got {}", list_values(options), got()),
            );
        }
        ValidationErrorKind::Constant { expected_value } => {
            push(
                dotted(&base),
                format!("expected {}; got {}", render(expected_value), got()),
            );
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            let one_of = matches!(error.kind(), ValidationErrorKind::OneOfNotValid { .. });
            match judge(
                context,
                error.instance_path().as_str(),
                error.instance(),
                one_of,
                schema,
            ) {
                Some(Verdict::Within(errors)) => {
                    for inner in errors {
                        describe(inner, shape, schema, out);
                    }
                }
                Some(Verdict::Refused {
                    alternatives,
                    tag_key,
                    got,
                }) => {
                    let path = match &tag_key {
                        Some(key) => joined(&base, key),
                        None => dotted(&base),
                    };
                    push(
                        path,
                        format!("expected {}; got {got}", one_of_list(&alternatives)),
                    );
                }
                None => push(
                    dotted(&base),
                    format!("does not match any allowed form; got {}", got()),
                ),
            }
        }
        ValidationErrorKind::Not { schema: refused } => {
            // `NonZero*` is `"not": {"const": 0}`: say which value, not the schema.
            let message = match refused.as_object().map(|s| (s.len(), s.get("const"))) {
                Some((1, Some(forbidden))) => format!("must not be {}", render(forbidden)),
                _ => format!("must not match {}; got {}", render(refused), got()),
            };
            push(dotted(&base), message);
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            push(
                dotted(&base),
                "matches more than one allowed form; add the fields that tell them apart".into(),
            );
        }
        ValidationErrorKind::Minimum { limit } => push(
            dotted(&base),
            format!("expected at least {limit}; got {}", got()),
        ),
        ValidationErrorKind::Maximum { limit } => push(
            dotted(&base),
            format!("expected at most {limit}; got {}", got()),
        ),
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            push(
                dotted(&base),
                format!("expected more than {limit}; got {}", got()),
            );
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            push(
                dotted(&base),
                format!("expected less than {limit}; got {}", got()),
            );
        }
        ValidationErrorKind::MinLength { limit } => {
            push(
                dotted(&base),
                format!(
                    "expected at least {limit} character{}; got {got}",
                    plural(*limit),
                    got = got()
                ),
            );
        }
        ValidationErrorKind::MaxLength { limit } => {
            let length = error.instance().as_str().map_or(0, |s| s.chars().count());
            push(
                dotted(&base),
                format!(
                    "expected at most {limit} character{}; got {length}",
                    plural(*limit)
                ),
            );
        }
        ValidationErrorKind::MinItems { limit } => {
            let count = error.instance().as_array().map_or(0, Vec::len);
            push(
                dotted(&base),
                format!(
                    "expected at least {limit} item{}; got {count}",
                    plural(*limit)
                ),
            );
        }
        ValidationErrorKind::MaxItems { limit } => {
            let count = error.instance().as_array().map_or(0, Vec::len);
            push(
                dotted(&base),
                format!(
                    "expected at most {limit} item{}; got {count}",
                    plural(*limit)
                ),
            );
        }
        ValidationErrorKind::MinProperties { limit } => {
            push(
                dotted(&base),
                format!(
                    "expected at least {limit} propert{}",
                    if *limit == 1 { "y" } else { "ies" }
                ),
            );
        }
        ValidationErrorKind::MaxProperties { limit } => {
            push(
                dotted(&base),
                format!(
                    "expected at most {limit} propert{}",
                    if *limit == 1 { "y" } else { "ies" }
                ),
            );
        }
        ValidationErrorKind::Pattern { pattern } => {
            push(
                dotted(&base),
                format!("expected a string matching `{pattern}`; got {}", got()),
            );
        }
        ValidationErrorKind::Format { format } => {
            push(
                dotted(&base),
                format!("expected a valid {format}; got {}", got()),
            );
        }
        ValidationErrorKind::MultipleOf { multiple_of, .. } => {
            push(
                dotted(&base),
                format!("expected a multiple of {multiple_of}; got {}", got()),
            );
        }
        ValidationErrorKind::UniqueItems => push(
            dotted(&base),
            "expected unique items; got duplicates".into(),
        ),
        ValidationErrorKind::FalseSchema => push(dotted(&base), "no value is allowed here".into()),
        _ => push(dotted(&base), error.to_string()),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `"a"` alone, or `one of "a", "b"`.
fn one_of_list(alternatives: &[String]) -> String {
    match alternatives {
        [only] => only.clone(),
        _ => format!("one of {}", alternatives.join(", ")),
    }
}

fn type_names(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(single) => single.to_string(),
        TypeKind::Multiple(set) => {
            // `null` last: "integer or null" reads as an optional integer.
            let mut names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
            names.sort_by_key(|name| name == "null");
            names.join(" or ")
        }
    }
}

fn list_values(options: &Value) -> String {
    match options {
        Value::Array(values) => values.iter().map(render).collect::<Vec<_>>().join(", "),
        other => render(other),
    }
}

/// A value as compact JSON, shortened when long so one bad argument cannot flood the message.
pub(crate) fn render(value: &Value) -> String {
    // Serialized straight into a buffer that gives up early: a 5 MB argument costs nothing here.
    let mut capped = Capped(Vec::with_capacity(64));
    if serde_json::to_writer(&mut capped, value).is_ok() {
        // serde_json writes UTF-8 only.
        let text = String::from_utf8(capped.0).unwrap_or_default();
        if text.chars().count() <= MAX_VALUE_CHARS {
            return text;
        }
    }
    match value {
        Value::String(s) => {
            let head: String = s.chars().take(MAX_VALUE_CHARS - 10).collect();
            format!(
                "\"{}…\" ({} characters)",
                head.escape_debug(),
                s.chars().count()
            )
        }
        Value::Array(items) if items.len() == 1 => "an array of 1 item".to_owned(),
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::Object(map) => format!("an object with {} properties", map.len()),
        other => other.to_string(),
    }
}

/// A writer that fails once it holds more than a short rendering needs.
struct Capped(Vec<u8>);

impl std::io::Write for Capped {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        // Four bytes per character is the most UTF-8 needs for `MAX_VALUE_CHARS` characters.
        if self.0.len() + bytes.len() > MAX_VALUE_CHARS * 4 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The `Received arguments` block: 2-space-indented JSON. A huge argument is not echoed back in
/// full: long strings and arrays are shortened first, and the block is cut after
/// [`MAX_RECEIVED_CHARS`].
pub(crate) fn received(arguments: &Value) -> String {
    let pretty =
        |value: &Value| serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    let mut text = pretty(arguments);
    if text.len() <= MAX_RECEIVED_CHARS {
        return text;
    }
    text = pretty(&shorten(arguments));
    if text.len() > MAX_RECEIVED_CHARS {
        let mut cut = MAX_RECEIVED_CHARS;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let rest = text.len() - cut;
        text.truncate(cut);
        let _ = write!(text, "\n… ({rest} more bytes not shown)");
    }
    text
}

/// Longest string and array kept whole in the `Received arguments` block of a huge argument.
const SHORTEN_STRING_CHARS: usize = 200;
const SHORTEN_ARRAY_ITEMS: usize = 20;

fn shorten(value: &Value) -> Value {
    match value {
        Value::String(s) if s.chars().count() > SHORTEN_STRING_CHARS => {
            let head: String = s.chars().take(SHORTEN_STRING_CHARS).collect();
            Value::String(format!("{head}… ({} characters)", s.chars().count()))
        }
        Value::Array(items) => {
            let mut kept: Vec<Value> = items
                .iter()
                .take(SHORTEN_ARRAY_ITEMS)
                .map(shorten)
                .collect();
            if items.len() > SHORTEN_ARRAY_ITEMS {
                kept.push(Value::String(format!(
                    "… ({} more items)",
                    items.len() - SHORTEN_ARRAY_ITEMS
                )));
            }
            Value::Array(kept)
        }
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shorten(v))).collect())
        }
        other => other.clone(),
    }
}
