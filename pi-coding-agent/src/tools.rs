//! The seven built-in tools and what they share.

pub mod bash;
mod diff;
pub mod edit;
pub mod find;
pub mod grep;
mod image;
mod lines;
pub mod ls;
mod output;
pub mod read;
pub mod write;

use std::path::Path;

use ignore::WalkBuilder;
use pi_tool::ToolError;

/// pi's abort error.
pub(crate) fn aborted() -> ToolError {
    ToolError::new("Operation aborted")
}

/// A walker like `rg --hidden` / `fd --hidden --no-require-git`: dotfiles included,
/// `.gitignore`/`.ignore` respected even outside a git repository, `.git` itself skipped,
/// symlinks not followed, entries sorted by name so output is stable.
pub(crate) fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
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

/// Appends pi's `\n\n[notice. notice]` block when there are notices.
pub(crate) fn with_notices(mut text: String, notices: &[String]) -> String {
    if !notices.is_empty() {
        text.push_str("\n\n[");
        text.push_str(&notices.join(". "));
        text.push(']');
    }
    text
}
