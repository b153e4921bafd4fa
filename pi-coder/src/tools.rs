//! The seven built-in tools and what they share.

pub mod bash;
mod diff;
pub mod edit;
mod exif;
pub mod find;
pub mod grep;
pub(crate) mod image;
mod lines;
pub mod ls;
pub(crate) mod output;
pub mod read;
pub mod write;

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;
use pi_tool::{Content, ToolError, ToolResult};
use serde_json::{Map, Value, json};

use crate::Workspace;
use crate::truncate::{DEFAULT_MAX_BYTES, format_size, truncate_head};

/// A model's `limit` argument as a count: the default when absent, at least 1.
pub(crate) fn result_limit(limit: Option<i64>, default: i64) -> usize {
    usize::try_from(limit.unwrap_or(default).max(1)).unwrap_or(usize::MAX)
}

/// pi's abort error.
pub(crate) fn aborted() -> ToolError {
    ToolError::new("Operation aborted")
}

/// How the files `grep` searches are walked: pi runs `rg --hidden` (grep.ts:214), which applies
/// `.gitignore` only inside a git repository (a `.git` in the folder or a parent), and reads
/// `.ignore` and `.rgignore` everywhere.
pub(crate) fn rg_walker(root: &Path) -> WalkBuilder {
    let mut builder = walker(root, true);
    builder.add_custom_ignore_filename(".rgignore");
    builder
}

/// How the entries `find` matches are walked: pi runs `fd --hidden --no-require-git`
/// (find.ts:230-238), which applies `.gitignore` even outside a git repository, and reads
/// `.ignore` and `.fdignore`.
pub(crate) fn fd_walker(root: &Path) -> WalkBuilder {
    let mut builder = walker(root, false);
    builder.add_custom_ignore_filename(".fdignore");
    builder
}

/// What rg and fd share: dotfiles included, `.gitignore`/`.ignore`/git excludes respected,
/// `.git` itself skipped, symlinks not followed, entries sorted by name so output is stable.
fn walker(root: &Path, require_git: bool) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .ignore(true)
        .parents(true)
        .require_git(require_git)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

/// `path` relative to `root`, with `/` separators.
pub(crate) fn relative_posix(path: &Path, root: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The directory or file `grep` and `find` search: the workspace directory when none is given;
/// a missing one is pi's `Path not found: <abs>`.
pub(crate) fn search_root(workspace: &Workspace, path: Option<&str>) -> Result<PathBuf, ToolError> {
    let root = workspace.resolve_or_cwd(path)?;
    if !root.exists() {
        return Err(ToolError::new(format!(
            "Path not found: {}",
            root.display()
        )));
    }
    Ok(root)
}

/// One of pi's notices and the details entry that records it.
pub(crate) struct Notice {
    pub(crate) text: String,
    pub(crate) key: &'static str,
    pub(crate) value: Value,
}

/// The result of `grep`, `find` and `ls`: the lines head-truncated to 50 KB, then pi's
/// `\n\n[notice. notice]` block: the limit notice, the size notice, then `more`. Details hold
/// one entry per notice, and are `null` when there is none.
pub(crate) fn listing(lines: &[String], limit: Option<Notice>, more: Option<Notice>) -> ToolResult {
    let truncation = truncate_head(&lines.join("\n"), usize::MAX, DEFAULT_MAX_BYTES);
    let size = truncation.truncated.then(|| Notice {
        text: format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)),
        key: "truncation",
        value: json!(truncation),
    });
    let notices: Vec<Notice> = [limit, size, more].into_iter().flatten().collect();
    let mut text = truncation.content;
    if notices.is_empty() {
        return ToolResult::new(vec![Content::text(text)], Value::Null);
    }
    let texts: Vec<&str> = notices.iter().map(|notice| notice.text.as_str()).collect();
    text.push_str("\n\n[");
    text.push_str(&texts.join(". "));
    text.push(']');
    let details: Map<String, Value> = notices
        .into_iter()
        .map(|notice| (notice.key.to_owned(), notice.value))
        .collect();
    ToolResult::new(vec![Content::text(text)], Value::Object(details))
}
