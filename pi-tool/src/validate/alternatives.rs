//! Explains a value that matched none of an `anyOf`/`oneOf`'s branches (an `Option<T>`, an
//! enum of any tagging, an untagged union).
//!
//! A branch the value *fits* (right JSON type, right tag) holds the real problems: those are
//! reported, from the fitting branch with the fewest. Only when the value fits no branch is it
//! refused as a whole, with every form it could have taken: all tags of a tagged enum, all
//! values of a string enum, each JSON type once.

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use super::report::render;

/// What a value could have been instead, when it fits no branch.
#[derive(PartialEq)]
pub(crate) enum Alternative {
    /// A JSON type (`integer`) or a literal (`"celsius"`), as written in the message.
    Form(String),
    /// An internally or adjacently tagged variant: `key` must hold `value` (rendered).
    Tag { key: String, value: String },
}

/// How one branch relates to the value.
enum Fit<'e> {
    /// The value is of this branch's kind: these are its problems.
    Fits(&'e [ValidationError<'static>]),
    /// The value is of another kind: what this branch would have accepted.
    Other(Vec<Alternative>),
}

/// The verdict on a whole `anyOf`/`oneOf`.
pub(crate) enum Verdict<'e> {
    /// Report these problems: the best-fitting branch's.
    Within(&'e [ValidationError<'static>]),
    /// The value fits no branch. `tag_key`: the problem is the tag under this key (`got` is
    /// the tag's value); otherwise `got` is the whole value.
    Refused {
        alternatives: Vec<String>,
        tag_key: Option<String>,
        got: String,
    },
}

/// Judges the branches of a union at instance path `at`. `one_of` marks a `oneOf` (how
/// schemars writes enums): only there is an object with one unknown key read as an
/// externally tagged variant named wrong.
pub(crate) fn judge<'e>(
    context: &'e [Vec<ValidationError<'static>>],
    at: &str,
    instance: &Value,
    one_of: bool,
    schema: &Value,
) -> Option<Verdict<'e>> {
    let fits: Vec<Fit<'e>> = context
        .iter()
        .filter(|branch| !branch.is_empty())
        .map(|branch| fit(branch, at, instance, one_of, schema))
        .collect();
    let best = fits
        .iter()
        .filter_map(|fit| match fit {
            Fit::Fits(errors) => Some(*errors),
            Fit::Other(_) => None,
        })
        .min_by_key(|errors| errors.len());
    if let Some(errors) = best {
        return Some(Verdict::Within(errors));
    }
    let mut alternatives: Vec<Alternative> = Vec::new();
    for fit in fits {
        if let Fit::Other(forms) = fit {
            for form in forms {
                if !alternatives.contains(&form) {
                    alternatives.push(form);
                }
            }
        }
    }
    if alternatives.is_empty() {
        return None;
    }
    // A tagged enum named with a wrong tag: list every tag, at the tag.
    if let Some(Alternative::Tag { key, .. }) = alternatives.first() {
        let key = key.clone();
        if alternatives
            .iter()
            .all(|a| matches!(a, Alternative::Tag { key: k, .. } if *k == key))
        {
            let got = instance.get(&key).map_or_else(|| "nothing".into(), render);
            let values = alternatives
                .into_iter()
                .filter_map(|a| match a {
                    Alternative::Tag { value, .. } => Some(value),
                    Alternative::Form(_) => None,
                })
                .collect();
            return Some(Verdict::Refused {
                alternatives: values,
                tag_key: Some(key),
                got,
            });
        }
    }
    let forms = alternatives
        .into_iter()
        .map(|a| match a {
            Alternative::Form(form) => form,
            Alternative::Tag { key, value } => format!("{{\"{key}\": {value}, …}}"),
        })
        .collect();
    Some(Verdict::Refused {
        alternatives: forms,
        tag_key: None,
        got: render(instance),
    })
}

fn fit<'e>(
    branch: &'e [ValidationError<'static>],
    at: &str,
    instance: &Value,
    one_of: bool,
    schema: &Value,
) -> Fit<'e> {
    let mut forms = Vec::new();
    // A branch's listed values say more than its type ("Stop", "Go" rather than string).
    let mut type_forms = Vec::new();
    let mut other_kind = false;
    for error in branch {
        let path = error.instance_path().as_str();
        match error.kind() {
            ValidationErrorKind::Type { kind } if path == at => {
                other_kind = true;
                match one_of.then(|| variant_key(error, schema)).flatten() {
                    Some(variant) => forms.push(Alternative::Form(format!("{{\"{variant}\": …}}"))),
                    // `null` means "absent" for an optional argument: not worth offering.
                    None => type_forms.extend(type_names(kind).into_iter().map(Alternative::Form)),
                }
            }
            ValidationErrorKind::Enum { options } if path == at => {
                other_kind = true;
                if let Value::Array(values) = &**options {
                    forms.extend(values.iter().map(|v| Alternative::Form(render(v))));
                }
            }
            ValidationErrorKind::Constant { expected_value } if path == at => {
                other_kind = true;
                forms.push(Alternative::Form(render(expected_value)));
            }
            ValidationErrorKind::Constant { expected_value } if is_child(path, at) => {
                other_kind = true;
                forms.push(Alternative::Tag {
                    key: last_segment(path),
                    value: render(expected_value),
                });
            }
            ValidationErrorKind::Enum { options } if is_child(path, at) => {
                other_kind = true;
                if let Value::Array(values) = &**options {
                    let key = last_segment(path);
                    forms.extend(values.iter().map(|v| Alternative::Tag {
                        key: key.clone(),
                        value: render(v),
                    }));
                }
            }
            ValidationErrorKind::AnyOf { context }
            | ValidationErrorKind::OneOfNotValid { context }
                if path == at && branch.len() == 1 =>
            {
                let nested_one_of =
                    matches!(error.kind(), ValidationErrorKind::OneOfNotValid { .. });
                return match judge(context, at, instance, nested_one_of, schema) {
                    Some(Verdict::Within(errors)) => Fit::Fits(errors),
                    Some(Verdict::Refused {
                        alternatives,
                        tag_key: Some(key),
                        ..
                    }) => Fit::Other(
                        alternatives
                            .into_iter()
                            .map(|value| Alternative::Tag {
                                key: key.clone(),
                                value,
                            })
                            .collect(),
                    ),
                    Some(Verdict::Refused { alternatives, .. }) => {
                        Fit::Other(alternatives.into_iter().map(Alternative::Form).collect())
                    }
                    None => Fit::Fits(branch),
                };
            }
            _ => {}
        }
    }
    if !other_kind
        && one_of
        && let Some(variant) = external_tag(branch, at, instance)
    {
        return Fit::Other(vec![Alternative::Form(format!("{{\"{variant}\": …}}"))]);
    }
    if other_kind {
        if forms.is_empty() {
            forms = type_forms;
        }
        Fit::Other(forms)
    } else {
        Fit::Fits(branch)
    }
}

/// An externally tagged variant (`{"Circle": {..}}`) given an object whose only key is another
/// variant's name: the branch's errors are exactly "`Circle` missing" and "unknown key".
fn external_tag(branch: &[ValidationError<'static>], at: &str, instance: &Value) -> Option<String> {
    if instance.as_object()?.len() != 1 || branch.len() != 2 {
        return None;
    }
    let mut variant = None;
    let mut unknown = false;
    for error in branch {
        if error.instance_path().as_str() != at {
            return None;
        }
        match error.kind() {
            ValidationErrorKind::Required { property } => {
                variant = property.as_str().map(str::to_owned);
            }
            ValidationErrorKind::AdditionalProperties { .. } => unknown = true,
            _ => return None,
        }
    }
    variant.filter(|_| unknown)
}

/// The variant name of an externally tagged variant's branch (`{"Move": {..}}`: an object
/// with one required key and no other), read from the schema the failed `type` belongs to.
fn variant_key(error: &ValidationError<'static>, schema: &Value) -> Option<String> {
    let pointer = error.schema_path().as_str().strip_suffix("/type")?;
    let branch = schema.pointer(pointer)?.as_object()?;
    if branch.get("additionalProperties") != Some(&Value::Bool(false)) {
        return None;
    }
    match branch.get("required")?.as_array()?.as_slice() {
        [Value::String(key)] => Some(key.clone()),
        _ => None,
    }
}

fn is_child(path: &str, at: &str) -> bool {
    path.strip_prefix(at)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
}

fn last_segment(path: &str) -> String {
    let last = path.rsplit('/').next().unwrap_or_default();
    last.replace("~1", "/").replace("~0", "~")
}

/// The JSON type names of a `type` error, `null` left out.
fn type_names(kind: &TypeKind) -> Vec<String> {
    match kind {
        TypeKind::Single(single) => vec![single.to_string()],
        TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
    }
    .into_iter()
    .filter(|name| name != "null")
    .collect()
}
