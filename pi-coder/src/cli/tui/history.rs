//! The prompts sent, kept across sessions in pi's agent directory (`prompt-history.jsonl`: one
//! JSON string a line, the newest last), for Up and Down in the editor.

use std::io::Write;
use std::path::PathBuf;

/// Most prompts kept (older ones are dropped when the file is rewritten).
const KEEP: usize = 500;
/// The file's name in the agent directory.
pub(crate) const FILE: &str = "prompt-history.jsonl";

/// The prompt history: in memory, and appended to its file when there is one.
pub(crate) struct History {
    entries: Vec<String>,
    file: Option<PathBuf>,
}

impl History {
    /// The history in `file` (none yet when it is missing or unreadable; bad lines skipped).
    pub(crate) fn load(file: PathBuf) -> History {
        let mut entries: Vec<String> = std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<String>(line).ok())
            .filter(|entry| !entry.trim().is_empty())
            .collect();
        if entries.len() > KEEP {
            entries.drain(..entries.len() - KEEP);
            // Rewritten so the file does not grow without bound.
            let text: String = entries
                .iter()
                .map(|e| format!("{}\n", serde_json::Value::from(e.as_str())))
                .collect();
            let _ = std::fs::write(&file, text);
        }
        History {
            entries,
            file: Some(file),
        }
    }

    /// A history that is not saved.
    #[cfg(test)]
    pub(crate) fn in_memory(entries: Vec<String>) -> History {
        History {
            entries,
            file: None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn get(&self, at: usize) -> Option<&str> {
        self.entries.get(at).map(String::as_str)
    }

    /// Adds a sent prompt (not the same as the last one again) and appends it to the file.
    pub(crate) fn add(&mut self, text: &str) {
        if text.trim().is_empty() || self.entries.last().is_some_and(|last| last == text) {
            return;
        }
        self.entries.push(text.to_owned());
        if let Some(file) = &self.file {
            if let Some(dir) = file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            if let Ok(mut out) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
            {
                let _ = writeln!(out, "{}", serde_json::Value::from(text));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_kept_across_loads() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agent").join(FILE);
        let mut history = History::load(file.clone());
        assert_eq!(history.len(), 0);
        history.add("one");
        history.add("two\nlines");
        history.add("two\nlines");
        history.add("  ");
        let again = History::load(file);
        assert_eq!(again.len(), 2);
        assert_eq!(again.get(1), Some("two\nlines"));
    }
}
