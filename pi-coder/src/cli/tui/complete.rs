//! File completion in the editor, as pi's: `@` followed by part of a path opens a list of the
//! project's files that match it (fuzzy: the letters in order), and Tab completes the path
//! before the cursor (the common part of several, with the list). Both skip what `.gitignore`,
//! `.ignore` and `.fdignore` leave out, as the `find` tool does (the `ignore` crate), and `.git`.

use std::path::{Path, PathBuf};

/// Most files the `@` index holds (a huge tree is cut rather than walked for seconds).
const INDEX_LIMIT: usize = 20_000;
/// Most suggestions listed.
pub(crate) const LIST_LIMIT: usize = 8;

/// The open list of suggestions.
#[derive(Debug)]
pub(crate) struct Completion {
    pub(crate) items: Vec<String>,
    pub(crate) selected: usize,
    /// How many bytes before the cursor the chosen item replaces.
    pub(crate) replace: usize,
    /// An `@` reference (the item is written after `@`) or a plain path (Tab).
    pub(crate) at: bool,
    /// What Tab writes at once when several items share a start: that common start.
    pub(crate) common: Option<String>,
}

impl Completion {
    /// The text that replaces the `replace` bytes before the cursor: the item (after `@` for a
    /// reference) and, for a file, a space to go on typing.
    pub(crate) fn accepted(&self) -> Option<String> {
        let item = self.items.get(self.selected)?;
        let space = if item.ends_with('/') { "" } else { " " };
        Some(if self.at {
            format!("@{item}{space}")
        } else {
            format!("{item}{space}")
        })
    }

    pub(crate) fn move_by(&mut self, step: isize) {
        let n = self.items.len() as isize;
        if n > 0 {
            self.selected = (self.selected as isize + step).rem_euclid(n) as usize;
        }
    }
}

/// The word before the cursor (after the last whitespace).
fn last_word(before: &str) -> &str {
    before
        .rfind(char::is_whitespace)
        .map_or(before, |at| &before[at + 1..])
}

/// The `@` reference being typed before the cursor: its query, without the `@`.
pub(crate) fn at_query(before: &str) -> Option<&str> {
    last_word(before).strip_prefix('@')
}

/// The project's files for `@`, walked once per session on first use.
#[derive(Default)]
pub(crate) struct FileIndex {
    files: Option<Vec<String>>,
}

impl FileIndex {
    /// Files (and directories, ending in `/`) of `cwd` whose relative path matches `query`,
    /// best first: a name that starts with it, then a name that has it, then a path that has
    /// its letters in order; shorter paths first within each.
    pub(crate) fn matches(&mut self, cwd: &Path, query: &str) -> Vec<String> {
        let files = self.files.get_or_insert_with(|| walk(cwd, None));
        let query = query.to_lowercase();
        let mut scored: Vec<(u8, usize, &String)> = files
            .iter()
            .filter_map(|path| {
                let lower = path.to_lowercase();
                let name = lower.trim_end_matches('/').rsplit('/').next().unwrap_or("");
                let rank = if query.is_empty() || name.starts_with(&query) {
                    0
                } else if name.contains(&query) {
                    1
                } else if lower.contains(&query) {
                    2
                } else if subsequence(&query, &lower) {
                    3
                } else {
                    return None;
                };
                Some((rank, path.len(), path))
            })
            .collect();
        scored.sort();
        scored
            .into_iter()
            .take(LIST_LIMIT)
            .map(|(_, _, p)| p.clone())
            .collect()
    }
}

fn subsequence(query: &str, text: &str) -> bool {
    let mut chars = text.chars();
    query.chars().all(|q| chars.any(|c| c == q))
}

/// Paths under `root` relative to it, directories with a trailing `/`, sorted; only the
/// entries directly in it when `depth` is `Some(1)`.
fn walk(root: &Path, depth: Option<usize>) -> Vec<String> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .add_custom_ignore_filename(".fdignore")
        .max_depth(depth)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    for entry in walker.flatten() {
        if out.len() >= INDEX_LIMIT {
            break;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(text) = relative.to_str() else {
            continue;
        };
        if text.is_empty() {
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        out.push(if is_dir {
            format!("{text}/")
        } else {
            text.to_owned()
        });
    }
    out.sort();
    out
}

/// Tab: completions of the path before the cursor (relative to `cwd`, or absolute, or `~/`).
pub(crate) fn tab(cwd: &Path, before: &str) -> Option<Completion> {
    let word = last_word(before);
    let (at, path) = match word.strip_prefix('@') {
        Some(rest) => (true, rest),
        None => (false, word),
    };
    let (dir_part, name_part) = match path.rfind('/') {
        Some(at) => (&path[..=at], &path[at + 1..]),
        None => ("", path),
    };
    let dir: PathBuf = if dir_part.is_empty() {
        cwd.to_path_buf()
    } else if let Some(rest) = dir_part.strip_prefix("~/") {
        std::env::var_os("HOME").map(PathBuf::from)?.join(rest)
    } else {
        cwd.join(dir_part)
    };
    let items: Vec<String> = walk(&dir, Some(1))
        .into_iter()
        .filter(|entry| entry.starts_with(name_part))
        .filter(|entry| !entry.starts_with('.') || name_part.starts_with('.'))
        .map(|entry| format!("{dir_part}{entry}"))
        .collect();
    if items.is_empty() {
        return None;
    }
    let replace = word.len() - usize::from(at);
    // Several: the common start is written at once, the list shown for the rest.
    let common = items.iter().skip(1).fold(items[0].clone(), |common, item| {
        let shared: usize = common
            .char_indices()
            .zip(item.chars())
            .take_while(|((_, a), b)| a == b)
            .map(|((_, a), _)| a.len_utf8())
            .sum();
        common[..shared].to_owned()
    });
    let common = (items.len() > 1 && common.len() > path.len()).then_some(common);
    Some(Completion {
        items: items.into_iter().take(LIST_LIMIT).collect(),
        selected: 0,
        replace,
        at: false,
        common,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "").unwrap();
        std::fs::write(dir.path().join("notebook.md"), "").unwrap();
        std::fs::write(dir.path().join("src/deep/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("ignored.log"), "").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        dir
    }

    #[test]
    fn at_lists_matching_files_without_ignored_ones() {
        let dir = project();
        let mut index = FileIndex::default();
        assert_eq!(index.matches(dir.path(), "main"), ["src/deep/main.rs"]);
        assert_eq!(
            index.matches(dir.path(), "note"),
            ["notes.txt", "notebook.md"]
        );
        assert_eq!(index.matches(dir.path(), "sdm"), ["src/deep/main.rs"]);
        assert!(index.matches(dir.path(), "ignored").is_empty());
        assert_eq!(at_query("see @src/de"), Some("src/de"));
        assert_eq!(at_query("see src"), None);
    }

    #[test]
    fn tab_completes_a_path_or_lists_the_choices() {
        let dir = project();
        let one = tab(dir.path(), "look at ./sr").unwrap();
        assert_eq!(one.accepted().as_deref(), Some("./src/"));
        assert_eq!(one.replace, 4);
        let several = tab(dir.path(), "no").unwrap();
        assert_eq!(several.items, ["notebook.md", "notes.txt"]);
        assert_eq!(several.common.as_deref(), Some("note"));
        assert!(tab(dir.path(), "ignored").is_none());
        let nested = tab(dir.path(), "@src/deep/m").unwrap();
        assert_eq!(nested.accepted().as_deref(), Some("src/deep/main.rs "));
        assert_eq!(nested.replace, "src/deep/m".len());
    }
}
