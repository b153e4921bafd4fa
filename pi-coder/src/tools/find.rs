//! `find`: files and directories by glob, like `fd --glob --hidden --no-require-git` (smart case).

use std::path::PathBuf;

use globset::{GlobBuilder, GlobMatcher};
use pi_tool::{CancellationToken, State, ToolContext, ToolError, ToolResult, tool};
use regex_syntax::hir::{Capture, Class, Hir, HirKind, Literal, Repetition};
use serde_json::json;

use crate::Workspace;
use crate::tools::{
    Notice, aborted, fd_walker, listing, relative_posix, result_limit, search_root,
};

/// Results returned when the model gives no `limit`.
const DEFAULT_LIMIT: i64 = 1000;

/// Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to 1000 results or 50KB (whichever is hit first).
#[tool(name = "find", label = "find", read_only, open_world = false)]
pub async fn find(
    /// Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'
    pattern: String,
    /// Directory to search in (default: current directory)
    path: Option<String>,
    /// Maximum number of results (default: 1000)
    limit: Option<i64>,
    workspace: State<Workspace>,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    if ctx.is_aborted() {
        return Err(aborted());
    }
    let root = search_root(&workspace, path.as_deref())?;
    let limit = result_limit(limit, DEFAULT_LIMIT);
    let (glob, full_path) = glob_for(&pattern)?;
    let signal = ctx.signal().clone();
    let results = tokio::task::spawn_blocking(move || walk(root, glob, full_path, limit, signal))
        .await
        .map_err(|err| ToolError::new(format!("find failed: {err}")))??;
    if results.is_empty() {
        return Ok(ToolResult::text("No files found matching pattern"));
    }
    let limit_notice = (results.len() >= limit).then(|| Notice {
        text: format!(
            "{limit} results limit reached. Use limit={} for more, or refine pattern",
            limit.saturating_mul(2)
        ),
        key: "resultLimitReached",
        value: json!(limit),
    });
    Ok(listing(&results, limit_notice, None))
}

/// fd's rules: a pattern with `/` matches the full path (prefixed with `**/` unless anchored),
/// otherwise the file name; `*` never crosses `/`; smart case (case-insensitive unless the
/// pattern has an upper-case character).
fn glob_for(pattern: &str) -> Result<(GlobMatcher, bool), ToolError> {
    let full_path = pattern.contains('/');
    let pattern = if full_path
        && !(pattern.starts_with('/') || pattern.starts_with("**/") || pattern == "**")
    {
        format!("**/{pattern}")
    } else {
        pattern.to_owned()
    };
    let build = |case_insensitive: bool| {
        GlobBuilder::new(&pattern)
            .literal_separator(true)
            .case_insensitive(case_insensitive)
            .build()
            .map_err(|err| ToolError::new(format!("Invalid glob pattern: {err}")))
    };
    let glob = build(false)?;
    if regex_has_uppercase_char(glob.regex()) {
        return Ok((glob.compile_matcher(), full_path));
    }
    Ok((build(true)?.compile_matcher(), full_path))
}

/// fd's smart-case test (`pattern_has_uppercase_char` in fd's `regex_helper.rs`), run on the
/// regex the glob becomes, as fd does: an upper-case literal, or a class with an upper-case
/// bound, makes the search case-sensitive; `\D`-style escapes and `*` do not.
fn regex_has_uppercase_char(regex: &str) -> bool {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(regex)
        .is_ok_and(|hir| hir_has_uppercase_char(&hir))
}

fn hir_has_uppercase_char(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Literal(Literal(bytes)) => match std::str::from_utf8(bytes) {
            Ok(text) => text.chars().any(char::is_uppercase),
            Err(_) => bytes.iter().any(|&b| char::from(b).is_uppercase()),
        },
        HirKind::Class(Class::Unicode(ranges)) => ranges
            .iter()
            .any(|r| r.start().is_uppercase() || r.end().is_uppercase()),
        HirKind::Class(Class::Bytes(ranges)) => ranges
            .iter()
            .any(|r| char::from(r.start()).is_uppercase() || char::from(r.end()).is_uppercase()),
        HirKind::Capture(Capture { sub, .. }) | HirKind::Repetition(Repetition { sub, .. }) => {
            hir_has_uppercase_char(sub)
        }
        HirKind::Concat(hirs) | HirKind::Alternation(hirs) => {
            hirs.iter().any(hir_has_uppercase_char)
        }
        HirKind::Empty | HirKind::Look(_) => false,
    }
}

fn walk(
    root: PathBuf,
    glob: GlobMatcher,
    full_path: bool,
    limit: usize,
    signal: CancellationToken,
) -> Result<Vec<String>, ToolError> {
    let mut results = Vec::new();
    for entry in fd_walker(&root).build() {
        if signal.is_cancelled() {
            return Err(aborted());
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let matched = if full_path {
            glob.is_match(entry.path())
        } else {
            glob.is_match(entry.file_name())
        };
        if !matched {
            continue;
        }
        let mut shown = relative_posix(entry.path(), &root);
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            shown.push('/');
        }
        results.push(shown);
        if results.len() >= limit {
            break;
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smart_case_follows_upper_case_letters_in_the_glob() {
        let matches = |pattern: &str, name: &str| glob_for(pattern).unwrap().0.is_match(name);
        assert!(matches("*.md", "README.MD"));
        assert!(matches("readme*", "README.md"));
        assert!(!matches("*.MD", "notes.md"));
        assert!(matches("*.MD", "README.MD"));
        // fd looks at the regex the glob becomes: a class with an upper-case bound counts,
        // `*` and `?` (`[^/]`) do not.
        assert!(!matches("[A-Z].md", "b.md"));
        assert!(matches("[a-z].md", "B.md"));
        assert!(matches("?.md", "B.MD"));
    }
}
