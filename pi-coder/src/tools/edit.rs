//! `edit`: several exact replacements matched against the original file, with pi's fuzzy
//! fallback, its uniqueness, overlap and no-op errors, BOM and line endings preserved.

use pi_tool::{State, ToolContext, ToolError, ToolResult, tool};
use serde::Deserialize;
use serde_json::{Value, json};
use unicode_normalization::UnicodeNormalization;

use crate::fs_error;
use crate::tools::diff::line_numbered_diff;
use crate::{Workspace, tools::aborted};

/// One targeted replacement.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Replacement {
    /// Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call.
    #[serde(rename = "oldText")]
    pub old_text: String,
    /// Replacement text for this targeted edit.
    #[serde(rename = "newText")]
    pub new_text: String,
}

/// Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.
#[tool(
    name = "edit",
    label = "edit",
    prepare_arguments = prepare_edit_arguments,
    deny_unknown_fields,
    read_only = false,
    destructive,
    open_world = false
)]
pub async fn edit(
    /// Path to the file to edit (relative or absolute)
    path: String,
    /// One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead.
    edits: Vec<Replacement>,
    workspace: State<Workspace>,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    if edits.is_empty() {
        return Err(ToolError::new(
            "Edit tool input is invalid. edits must contain at least one replacement.",
        ));
    }
    if ctx.is_aborted() {
        return Err(aborted());
    }
    let absolute = workspace.resolve(&path)?;
    let _guard = workspace.lock_file(&absolute).await;
    if ctx.is_aborted() {
        return Err(aborted());
    }
    let cannot_edit = |err: std::io::Error| {
        ToolError::new(format!(
            "Could not edit file: {path}. Error code: {}.",
            fs_error::code(&err)
        ))
    };
    tokio::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&absolute)
        .await
        .map_err(cannot_edit)?;
    let bytes = tokio::fs::read(&absolute).await.map_err(cannot_edit)?;
    let raw = String::from_utf8(bytes).map_err(|_| {
        ToolError::new(format!(
            "Could not edit file: {path}. It is not UTF-8 text."
        ))
    })?;
    let (bom, content) = match raw.strip_prefix('\u{FEFF}') {
        Some(rest) => ("\u{FEFF}", rest),
        None => ("", raw.as_str()),
    };
    let crlf = uses_crlf(content);
    let normalized = to_lf(content);
    let (base, updated) = apply_edits(&normalized, &edits, &path)?;
    let restored = if crlf {
        updated.replace('\n', "\r\n")
    } else {
        updated.clone()
    };
    if ctx.is_aborted() {
        return Err(aborted());
    }
    tokio::fs::write(&absolute, format!("{bom}{restored}"))
        .await
        .map_err(|err| ToolError::new(fs_error::describe(&err, "open", &absolute)))?;
    let (diff, first_changed_line) = line_numbered_diff(&base, &updated);
    Ok(ToolResult::new(
        vec![pi_tool::Content::text(format!(
            "Successfully replaced {} block(s) in {path}.",
            edits.len()
        ))],
        json!({ "diff": diff, "firstChangedLine": first_changed_line }),
    ))
}

/// pi's `prepareArguments` for `edit`: a stringified `edits` array is parsed, and the legacy
/// top-level `oldText`/`newText` pair becomes one more entry of `edits`.
fn prepare_edit_arguments(mut args: Value) -> Result<Value, ToolError> {
    let Value::Object(map) = &mut args else {
        return Ok(args);
    };
    if let Some(Value::String(text)) = map.get("edits")
        && let Ok(parsed @ Value::Array(_)) = serde_json::from_str::<Value>(text)
    {
        map.insert("edits".into(), parsed);
    }
    if let (Some(Value::String(_)), Some(Value::String(_))) =
        (map.get("oldText"), map.get("newText"))
    {
        let old_text = map.remove("oldText").unwrap_or_default();
        let new_text = map.remove("newText").unwrap_or_default();
        let legacy = json!({ "oldText": old_text, "newText": new_text });
        match map.get_mut("edits") {
            Some(Value::Array(edits)) => edits.push(legacy),
            _ => {
                map.insert("edits".into(), Value::Array(vec![legacy]));
            }
        }
    }
    Ok(args)
}

/// CRLF when the first line break is `\r\n`.
fn uses_crlf(content: &str) -> bool {
    match (content.find("\r\n"), content.find('\n')) {
        (Some(crlf), Some(lf)) => crlf < lf,
        _ => false,
    }
}

/// `\r\n` and lone `\r` become `\n`.
fn to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// pi's fuzzy form (`normalizeForFuzzyMatch`, edit-diff.ts:34): NFKC, trailing whitespace
/// trimmed per line the way JavaScript's `trimEnd` does, smart quotes, Unicode dashes and special
/// spaces made ASCII.
fn fuzzy(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    let trimmed: Vec<&str> = nfkc
        .split('\n')
        .map(|line| line.trim_end_matches(is_js_whitespace))
        .collect();
    trimmed
        .join("\n")
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

/// What JavaScript's `trimEnd` removes (ECMAScript WhiteSpace and LineTerminator): Rust's
/// `char::is_whitespace` without U+0085 (NEL), plus U+FEFF (the byte order mark).
fn is_js_whitespace(c: char) -> bool {
    match c {
        '\u{FEFF}' => true,
        '\u{0085}' => false,
        other => other.is_whitespace(),
    }
}

/// Where one edit matched: byte offset and length in the content it was matched against.
struct Match {
    index: usize,
    position: usize,
    length: usize,
    new_text: String,
}

/// Exact match first, else a match in the fuzzy forms: `(position, length, used_fuzzy)`.
fn find(content: &str, old_text: &str) -> Option<(usize, usize, bool)> {
    if let Some(position) = content.find(old_text) {
        return Some((position, old_text.len(), false));
    }
    let fuzzy_old = fuzzy(old_text);
    fuzzy(content)
        .find(&fuzzy_old)
        .map(|position| (position, fuzzy_old.len(), true))
}

/// pi's `applyEditsToNormalizedContent`: returns the content the edits were matched against and
/// the edited content.
fn apply_edits(
    content: &str,
    edits: &[Replacement],
    path: &str,
) -> Result<(String, String), ToolError> {
    let many = edits.len() > 1;
    let edits: Vec<(String, String)> = edits
        .iter()
        .map(|e| (to_lf(&e.old_text), to_lf(&e.new_text)))
        .collect();
    for (i, (old, _)) in edits.iter().enumerate() {
        if old.is_empty() {
            return Err(ToolError::new(if many {
                format!("edits[{i}].oldText must not be empty in {path}.")
            } else {
                format!("oldText must not be empty in {path}.")
            }));
        }
    }
    let any_fuzzy = edits
        .iter()
        .any(|(old, _)| matches!(find(content, old), Some((_, _, true))));
    let base = if any_fuzzy {
        fuzzy(content)
    } else {
        content.to_owned()
    };
    let fuzzy_base = fuzzy(&base);
    let mut matches = Vec::with_capacity(edits.len());
    for (i, (old, new)) in edits.iter().enumerate() {
        let Some((position, length, _)) = find(&base, old) else {
            return Err(ToolError::new(if many {
                format!(
                    "Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and newlines."
                )
            } else {
                format!(
                    "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
                )
            }));
        };
        let occurrences = fuzzy_base.matches(fuzzy(old).as_str()).count();
        if occurrences > 1 {
            return Err(ToolError::new(if many {
                format!(
                    "Found {occurrences} occurrences of edits[{i}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
                )
            } else {
                format!(
                    "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
                )
            }));
        }
        matches.push(Match {
            index: i,
            position,
            length,
            new_text: new.clone(),
        });
    }
    matches.sort_by_key(|m| m.position);
    for pair in matches.windows(2) {
        if pair[0].position + pair[0].length > pair[1].position {
            return Err(ToolError::new(format!(
                "edits[{}] and edits[{}] overlap in {path}. Merge them into one edit or target disjoint regions.",
                pair[0].index, pair[1].index
            )));
        }
    }
    let mut updated = base.clone();
    for m in matches.iter().rev() {
        updated.replace_range(m.position..m.position + m.length, &m.new_text);
    }
    if updated == base {
        return Err(ToolError::new(if many {
            format!("No changes made to {path}. The replacements produced identical content.")
        } else {
            format!(
                "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
            )
        }));
    }
    Ok((base, updated))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(old: &str, new: &str) -> Replacement {
        Replacement {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn edits_match_the_original_not_each_other() {
        let (_, out) = apply_edits("a b c", &[r("a", "b"), r("b", "x")], "f").unwrap();
        assert_eq!(out, "b x c");
    }

    #[test]
    fn fuzzy_fallback_normalizes_the_whole_file() {
        let (base, out) = apply_edits(
            "say \u{201C}hi\u{201D}  \nkeep\u{2014}this  \n",
            &[r("say \"hi\"", "say 'yo'")],
            "f",
        )
        .unwrap();
        assert_eq!(base, "say \"hi\"\nkeep-this\n");
        assert_eq!(out, "say 'yo'\nkeep-this\n");
    }

    #[test]
    fn fuzzy_trims_line_ends_like_javascript_trim_end() {
        // `"a\uFEFF".trimEnd()` is "a"; `"a\u0085".trimEnd()` keeps the NEL (Node 20).
        assert_eq!(
            fuzzy("a\u{FEFF}\nb\u{0085}\nc \t\u{3000}\u{2028}"),
            "a\nb\u{0085}\nc"
        );
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let js = matches!(
                c,
                '\t' | '\n' | '\u{B}' | '\u{C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
                    ..='\u{200A}'
                        | '\u{2028}'
                        | '\u{2029}'
                        | '\u{202F}'
                        | '\u{205F}'
                        | '\u{3000}'
                        | '\u{FEFF}'
            );
            assert_eq!(is_js_whitespace(c), js, "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn line_endings_are_detected_from_the_first_break() {
        assert!(uses_crlf("a\r\nb\n"));
        assert!(!uses_crlf("a\nb\r\n"));
        assert_eq!(to_lf("a\r\nb\rc"), "a\nb\nc");
    }

    #[test]
    fn legacy_arguments_are_folded_into_edits() {
        let out =
            prepare_edit_arguments(json!({"path": "p", "oldText": "a", "newText": "b"})).unwrap();
        assert_eq!(
            out,
            json!({"path": "p", "edits": [{"oldText": "a", "newText": "b"}]})
        );
        let out = prepare_edit_arguments(
            json!({"path": "p", "edits": "[{\"oldText\":\"a\",\"newText\":\"b\"}]"}),
        )
        .unwrap();
        assert_eq!(out["edits"][0]["newText"], "b");
        let out = prepare_edit_arguments(json!({"path": "p", "edits": "not json"})).unwrap();
        assert_eq!(out["edits"], "not json");
    }
}
