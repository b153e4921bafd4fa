//! `${VAR}` and `${VAR:-default}` in `mcpServers` entries, expanded from the environment as
//! Claude Code, Cursor and VS Code (which writes `${env:VAR}`) do, so one file serves them and us.

/// Why a value could not be expanded. Names the variable, never a value: an expanded value is
/// often a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${NAME}` without a default, and `NAME` is not set.
    Unset { variable: String },
    /// `${` without its `}`, or something between them that is not a variable.
    Malformed { reference: String },
    /// VS Code's `${input:..}`: a value it asks the user for, which only VS Code can do.
    Input { reference: String },
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpandError::Unset { variable } => write!(
                f,
                "the environment variable {variable} is not set (the configuration uses ${{{variable}}}; set it, or write ${{{variable}:-default}})"
            ),
            ExpandError::Malformed { reference } => write!(
                f,
                "`{reference}` is not a variable reference (expected ${{NAME}} or ${{NAME:-default}})"
            ),
            ExpandError::Input { reference } => write!(
                f,
                "`{reference}` is a VS Code input, which only VS Code can ask for; use an environment variable (${{NAME}}) instead"
            ),
        }
    }
}

/// Replaces every `${NAME}`, `${env:NAME}` and `${NAME:-default}` in `text`. A variable that is
/// unset (or, with `:-`, set but empty) takes the default; without a default it is an error. A
/// `$` not followed by `{` stays as it is.
pub(crate) fn expand(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    let Some(first) = text.find("${") else {
        return Ok(text.to_owned());
    };
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..first]);
    let mut rest = &text[first..];
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(ExpandError::Malformed {
                reference: rest[start..].to_owned(),
            });
        };
        let reference = &after[..end];
        let whole = &rest[start..start + 2 + end + 1];
        out.push_str(&resolve(reference, whole, lookup)?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of one reference (`NAME`, `env:NAME`, `NAME:-default`; `whole` is `${..}` for
/// messages).
fn resolve(
    reference: &str,
    whole: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    if reference.starts_with("input:") {
        return Err(ExpandError::Input {
            reference: whole.to_owned(),
        });
    }
    let reference = reference.strip_prefix("env:").unwrap_or(reference);
    let (name, default) = match reference.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (reference, None),
    };
    if !is_variable_name(name) {
        return Err(ExpandError::Malformed {
            reference: whole.to_owned(),
        });
    }
    match (lookup(name), default) {
        (Some(value), Some(default)) if value.is_empty() => Ok(default.to_owned()),
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_owned()),
        (None, None) => Err(ExpandError::Unset {
            variable: name.to_owned(),
        }),
    }
}

/// `[A-Za-z_][A-Za-z0-9_]*`, what a POSIX shell accepts as a variable name.
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first == '_' || first.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// The process environment, as the lookup for [`expand`] (a value that is not UTF-8 counts as
/// unset).
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_and_defaults_expand_as_in_a_shell() {
        for (text, expected) in [
            ("Bearer ${TOKEN}", "Bearer s3cret"),
            ("${env:TOKEN}", "s3cret"),
            ("${TOKEN}${TOKEN}", "s3crets3cret"),
            ("${MISSING:-fallback}", "fallback"),
            ("${EMPTY:-fallback}", "fallback"),
            ("${EMPTY}", ""),
            ("${TOKEN:-unused}", "s3cret"),
            ("${MISSING:-}", ""),
            ("${MISSING:-a:-b}", "a:-b"),
            (
                "no variables, $TOKEN, $ {TOKEN}",
                "no variables, $TOKEN, $ {TOKEN}",
            ),
            ("https://h/${env:TOKEN:-x}/mcp", "https://h/s3cret/mcp"),
        ] {
            assert_eq!(expand(text, &env).as_deref(), Ok(expected), "{text}");
        }
    }

    #[test]
    fn problems_name_the_variable_and_never_a_value() {
        let unset = expand("Bearer ${GITHUB_TOKEN}", &env).unwrap_err();
        assert_eq!(
            unset,
            ExpandError::Unset {
                variable: "GITHUB_TOKEN".into()
            }
        );
        assert_eq!(
            unset.to_string(),
            "the environment variable GITHUB_TOKEN is not set (the configuration uses ${GITHUB_TOKEN}; set it, or write ${GITHUB_TOKEN:-default})"
        );
        for (text, reference) in [
            ("a ${TOKEN", "${TOKEN"),
            ("${}", "${}"),
            ("${1ABC}", "${1ABC}"),
            ("${TO KEN}", "${TO KEN}"),
        ] {
            assert_eq!(
                expand(text, &env),
                Err(ExpandError::Malformed {
                    reference: reference.into()
                }),
                "{text}"
            );
        }
        let input = expand("${input:token}", &env).unwrap_err();
        assert!(input.to_string().contains("VS Code input"), "{input}");
        // A later problem is still found after an earlier variable expanded to a secret, and
        // the message does not carry that secret.
        let err = expand("${TOKEN} ${NOPE}", &env).unwrap_err().to_string();
        assert!(!err.contains("s3cret"), "{err}");
    }
}
