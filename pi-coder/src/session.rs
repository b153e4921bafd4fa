//! Sessions saved as pi saves them (`session-manager.ts`, format version 3): a JSONL file with a
//! `session` header and a tree of entries, appended as the conversation goes, so a session
//! survives a crash, can be resumed, and opens whole in pi (and pi's files open whole here).
//!
//! New sessions go where pi keeps its own (`~/.pi/agent/sessions/--<cwd>--/`, named
//! `<ISO time>_<uuid v7>.jsonl`), so `pi -c` in either tool continues the other's latest. As in
//! pi, nothing is written before the first answer of the model: a session left before it leaves
//! no file. A file of an older format (pi's versions 1 and 2, this crate's own earlier format) is
//! migrated to version 3 and rewritten when it is opened, as pi does.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use pi_runtime::Message;
use serde_json::{Value, json};

use crate::pi_session::{self, BranchContext, CURRENT_VERSION};

/// The format version written in the header: pi's.
pub const FORMAT_VERSION: u32 = 3;

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The session file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A line (not the last one) is not a session entry. The file is left as it is.
    #[error("{path}:{line}: not a session entry: {message} (the file was not changed)")]
    Corrupt {
        /// The session file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// The file was written in a format version newer than pi 0.73.1's.
    #[error(
        "{path}: session format version {version} is newer than the version this pi reads and writes ({FORMAT_VERSION}, pi 0.73.1's)"
    )]
    NewerVersion {
        /// The session file.
        path: PathBuf,
        /// The version in its header.
        version: u64,
    },
}

/// Who wrote a session file, and which version of the format, as it was found on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionFormat {
    /// This crate's earlier format (versions 1 and 2, `"format":"pi-tool"`).
    PiTool(u64),
    /// pi's format (versions 1 to 3); this crate writes version 3 too.
    Pi(u64),
}

/// What a session file holds: who wrote it, its id, and the conversation.
#[derive(Clone, Debug)]
pub struct SavedSession {
    /// The format of the file.
    pub format: SessionFormat,
    /// The session id from the header.
    pub id: String,
    /// The conversation of the current branch, oldest first, as pi resumes it.
    pub messages: Vec<Message>,
}

/// A session [`Session::resume`] opened.
#[derive(Debug)]
pub struct Resumed {
    /// Where the conversation is saved from now on (the same file).
    pub session: Session,
    /// The messages it already held, as the model is to see them.
    pub messages: Vec<Message>,
}

/// One entry of [`Session::list`]: enough to choose a session to resume.
#[derive(Clone, Debug)]
pub struct SessionSummary {
    /// The file.
    pub path: PathBuf,
    /// The session id from the header.
    pub id: String,
    /// The working directory the session was started in.
    pub cwd: String,
    /// When it was last active (pi's rule: the newest message, else the header, else the file).
    pub modified: SystemTime,
    /// Who wrote it.
    pub format: SessionFormat,
    /// How many message entries it holds.
    pub messages: usize,
    /// The first user prompt, on one line.
    pub first_prompt: String,
    /// The name set with `/name` in pi, if any.
    pub name: Option<String>,
}

/// A session: its entries in memory, and the file they are appended to (none for
/// `--no-session`).
#[derive(Debug)]
pub struct Session {
    path: Option<PathBuf>,
    cwd: String,
    header: Value,
    entries: Vec<Value>,
    index: HashMap<String, usize>,
    leaf: Option<String>,
    /// Whether the file has every entry so far (false until the model first answers).
    flushed: bool,
    file: Option<File>,
}

impl Session {
    /// A new session to be saved at `path` (its directory is made when the first entry is
    /// written). An existing file there is an error.
    pub fn create(path: impl Into<PathBuf>, cwd: &Path) -> Result<Session, SessionError> {
        let path = path.into();
        if path.exists() {
            return Err(SessionError::Io {
                source: io::Error::new(io::ErrorKind::AlreadyExists, "the file exists"),
                path,
            });
        }
        Ok(Session::fresh(Some(path), cwd, None))
    }

    /// A new session kept only in memory (`--no-session`).
    pub fn in_memory(cwd: &Path) -> Session {
        Session::fresh(None, cwd, None)
    }

    /// A new session in `dir`, named as pi names its files; `parent` is recorded as the
    /// `parentSession` it was forked from.
    pub fn create_in(dir: &Path, cwd: &Path, parent: Option<&Path>) -> Session {
        let id = pi_session::new_session_id();
        let now = pi_runtime::now_ms();
        let mut session = Session::fresh(None, cwd, parent);
        session.header["id"] = json!(id);
        session.header["timestamp"] = json!(pi_session::iso_time(now));
        session.path = Some(dir.join(file_name(now, &id)));
        session
    }

    fn fresh(path: Option<PathBuf>, cwd: &Path, parent: Option<&Path>) -> Session {
        let mut header = json!({
            "type": "session",
            "version": CURRENT_VERSION,
            "id": pi_session::new_session_id(),
            "timestamp": pi_session::iso_time(pi_runtime::now_ms()),
            "cwd": cwd.display().to_string(),
        });
        if let Some(parent) = parent {
            header["parentSession"] = json!(parent.display().to_string());
        }
        Session {
            path,
            cwd: cwd.display().to_string(),
            header,
            entries: Vec::new(),
            index: HashMap::new(),
            leaf: None,
            flushed: false,
            file: None,
        }
    }

    /// Opens `path` to continue it, or starts a new session there when it does not exist.
    /// Returns the session and the messages of its current branch, oldest first.
    ///
    /// A last line cut short (a crash mid-write) is dropped; any other bad line is an error, and
    /// the file is not changed. A file of an older format is migrated and rewritten.
    pub fn open_or_create(
        path: impl Into<PathBuf>,
        cwd: &Path,
    ) -> Result<(Session, Vec<Message>), SessionError> {
        let path = path.into();
        if !path.exists() {
            return Ok((Session::fresh(Some(path), cwd, None), Vec::new()));
        }
        let session = Session::open(&path)?;
        let messages = session.context_of(&path)?.messages;
        Ok((session, messages))
    }

    /// Opens an existing session file (either tool's, any version) to continue it.
    pub fn open(path: &Path) -> Result<Session, SessionError> {
        let mut parsed = parse(path)?;
        let migrated = pi_session::migrate(&mut parsed.lines);
        let mut lines = parsed.lines.into_iter();
        let header = lines.next().unwrap_or_default();
        let entries: Vec<Value> = lines.collect();
        let mut session = Session {
            path: Some(path.to_path_buf()),
            cwd: header["cwd"].as_str().unwrap_or_default().to_owned(),
            header,
            index: HashMap::new(),
            entries,
            leaf: None,
            flushed: true,
            file: None,
        };
        session.reindex();
        // Validate the branch now, so a bad entry is an error before anything is written.
        session.context_of(path)?;
        if migrated {
            session.rewrite().map_err(|source| SessionError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        } else if let Some(cut_at) = parsed.cut_at {
            // Drop the entry cut short by a crash, so the next one starts on a clean line.
            let file = OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|f| f.set_len(cut_at).map(|()| f));
            file.map_err(|source| SessionError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        }
        Ok(session)
    }

    /// Reads a session file of either format without changing it.
    ///
    /// A last line cut short is ignored; any other line that is not an entry is
    /// [`SessionError::Corrupt`], naming the line.
    pub fn read(path: &Path) -> Result<SavedSession, SessionError> {
        let mut parsed = parse(path)?;
        let header = &parsed.lines[0];
        let version = header["version"].as_u64().unwrap_or(1);
        let format = if pi_session::is_old_format(header) {
            SessionFormat::PiTool(version)
        } else {
            SessionFormat::Pi(version)
        };
        let id = header["id"].as_str().unwrap_or_default().to_owned();
        pi_session::migrate(&mut parsed.lines);
        let entries = &parsed.lines[1..];
        let index = index_of(entries);
        let path_indices = pi_session::branch_indices(entries, &index, None);
        let branch: Vec<&Value> = path_indices.iter().map(|i| &entries[*i]).collect();
        let context =
            pi_session::branch_context(&branch).map_err(|message| corrupt(path, message))?;
        Ok(SavedSession {
            format,
            id,
            messages: context.messages,
        })
    }

    /// Continues the conversation in `path` (either tool's file): it is opened and appended to.
    pub fn resume(path: &Path) -> Result<Resumed, SessionError> {
        let session = Session::open(path)?;
        let messages = session.context_of(path)?.messages;
        Ok(Resumed { session, messages })
    }

    /// A new session in `dir` holding a copy of every entry of `source` (pi's `forkFrom`): the
    /// new header names `source` as its `parentSession` and `cwd` as its working directory.
    pub fn fork_from(source: &Path, cwd: &Path, dir: &Path) -> Result<Session, SessionError> {
        // Read and migrated in memory only: the source stays as it is.
        let mut parsed = parse(source)?;
        pi_session::migrate(&mut parsed.lines);
        let mut session = Session::create_in(dir, cwd, Some(source));
        session.entries = parsed.lines.split_off(1);
        session.reindex();
        session.flushed = false;
        session.flush().map_err(|source| SessionError::Io {
            path: session.path.clone().unwrap_or_default(),
            source,
        })?;
        Ok(session)
    }

    /// A new session in `dir` holding the branch from the root to `leaf` (pi's
    /// `createBranchedSession`; label entries left out), or nothing when `leaf` is `None`; its
    /// header names this session's file as its `parentSession`.
    pub fn branched(&self, leaf: Option<&str>, dir: &Path) -> Result<Session, SessionError> {
        let cwd = PathBuf::from(&self.cwd);
        let mut session = Session::create_in(dir, &cwd, self.path.as_deref());
        if self.path.is_none() {
            session.path = None;
        }
        if let Some(leaf) = leaf {
            session.entries = pi_session::branch_indices(&self.entries, &self.index, Some(leaf))
                .into_iter()
                .map(|i| self.entries[i].clone())
                .filter(|e| e["type"] != "label")
                .collect();
        }
        session.reindex();
        session.persist().map_err(|source| SessionError::Io {
            path: session.path().to_path_buf(),
            source,
        })?;
        Ok(session)
    }

    /// The user messages of the file with their entry ids (pi's `getUserMessagesForForking`).
    pub fn user_messages(&self) -> Vec<(String, String)> {
        self.entries
            .iter()
            .filter(|e| e["type"] == "message" && e["message"]["role"] == "user")
            .filter_map(|e| {
                let text = match &e["message"]["content"] {
                    Value::String(text) => text.clone(),
                    Value::Array(blocks) => blocks
                        .iter()
                        .filter(|b| b["type"] == "text")
                        .filter_map(|b| b["text"].as_str())
                        .collect(),
                    _ => String::new(),
                };
                let id = e["id"].as_str()?.to_owned();
                (!text.is_empty()).then_some((id, text))
            })
            .collect()
    }

    /// The entry with this id.
    pub fn entry(&self, id: &str) -> Option<&Value> {
        self.index.get(id).map(|i| &self.entries[*i])
    }

    fn reindex(&mut self) {
        self.index = index_of(&self.entries);
        self.leaf = self
            .entries
            .last()
            .and_then(|e| e["id"].as_str())
            .map(str::to_owned);
    }

    fn context_of(&self, path: &Path) -> Result<BranchContext, SessionError> {
        self.context().map_err(|message| corrupt(path, message))
    }

    /// The messages, model and thinking level of the current branch.
    pub(crate) fn context(&self) -> Result<BranchContext, String> {
        pi_session::branch_context(&self.branch())
    }

    /// The entries from the root to the current leaf.
    pub(crate) fn branch(&self) -> Vec<&Value> {
        pi_session::branch_indices(&self.entries, &self.index, self.leaf.as_deref())
            .into_iter()
            .map(|i| &self.entries[i])
            .collect()
    }

    /// Every entry of the file (the header left out), in file order.
    pub fn entries(&self) -> &[Value] {
        &self.entries
    }

    /// The header line.
    pub fn header(&self) -> &Value {
        &self.header
    }

    /// The current leaf's entry id (the parent of the next entry).
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// Appends one message and flushes it to disk (from the first assistant message on).
    pub fn append(&mut self, message: &Message) -> io::Result<()> {
        self.append_message(message).map(|_| ())
    }

    /// Appends one message; returns its entry id.
    pub fn append_message(&mut self, message: &Message) -> io::Result<String> {
        let mut value = serde_json::to_value(message).map_err(io::Error::other)?;
        // pi leaves `details` out when a tool gave none.
        if let Value::Object(map) = &mut value
            && map.get("details").is_some_and(Value::is_null)
        {
            map.remove("details");
        }
        self.append_entry("message", json!({ "message": value }))
    }

    /// Appends a raw pi message (a `bashExecution` from a `!` command): what pi writes for it.
    pub(crate) fn append_raw_message(&mut self, message: Value) -> io::Result<String> {
        self.append_entry("message", json!({ "message": message }))
    }

    /// Appends a `model_change` entry.
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> io::Result<String> {
        self.append_entry(
            "model_change",
            json!({"provider": provider, "modelId": model_id}),
        )
    }

    /// Appends a `thinking_level_change` entry.
    pub fn append_thinking_level_change(&mut self, level: &str) -> io::Result<String> {
        self.append_entry("thinking_level_change", json!({ "thinkingLevel": level }))
    }

    /// Appends a `compaction` entry as pi writes one (`fromHook: false`).
    pub(crate) fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: &str,
        tokens_before: u64,
        details: Value,
    ) -> io::Result<String> {
        self.append_entry(
            "compaction",
            json!({
                "summary": summary,
                "firstKeptEntryId": first_kept_entry_id,
                "tokensBefore": tokens_before,
                "details": details,
                "fromHook": false,
            }),
        )
    }

    /// Appends a `session_info` entry naming the session (pi's `/name`).
    pub fn append_session_info(&mut self, name: &str) -> io::Result<String> {
        self.append_entry("session_info", json!({ "name": name.trim() }))
    }

    /// The name the last `session_info` entry gave the session.
    pub fn name(&self) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|e| e["type"] == "session_info")
            .and_then(|e| e["name"].as_str())
            .map(str::trim)
            .filter(|n| !n.is_empty())
    }

    fn append_entry(&mut self, kind: &str, fields: Value) -> io::Result<String> {
        let id = pi_session::new_entry_id(&|id| self.index.contains_key(id));
        let mut entry = json!({
            "type": kind,
            "id": id,
            "parentId": self.leaf,
            "timestamp": pi_session::iso_time(pi_runtime::now_ms()),
        });
        if let (Value::Object(entry), Value::Object(fields)) = (&mut entry, fields) {
            entry.extend(fields);
        }
        self.index.insert(id.clone(), self.entries.len());
        self.entries.push(entry);
        self.leaf = Some(id.clone());
        self.persist()?;
        Ok(id)
    }

    /// pi's `_persist`: nothing reaches the file before the first assistant message; then
    /// everything so far, then each entry as it comes.
    fn persist(&mut self) -> io::Result<()> {
        if self.path.is_none() {
            return Ok(());
        }
        if self.flushed {
            let last = self.entries.last().cloned().unwrap_or_default();
            return self.write_lines(std::slice::from_ref(&last));
        }
        let answered = self
            .entries
            .iter()
            .any(|e| e["type"] == "message" && e["message"]["role"] == "assistant");
        if answered {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the header and every entry (the file is new).
    fn flush(&mut self) -> io::Result<()> {
        let mut lines = vec![self.header.clone()];
        lines.extend(self.entries.iter().cloned());
        self.write_lines(&lines)?;
        self.flushed = true;
        Ok(())
    }

    fn write_lines(&mut self, lines: &[Value]) -> io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if self.file.is_none() {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)?;
            }
            self.file = Some(OpenOptions::new().create(true).append(true).open(path)?);
        }
        let mut text = String::new();
        for line in lines {
            text.push_str(&serde_json::to_string(line).map_err(io::Error::other)?);
            text.push('\n');
        }
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| io::Error::other("no file"))?;
        file.write_all(text.as_bytes())?;
        file.flush()
    }

    /// Replaces the file with the header and entries in memory (after a migration), through a
    /// temporary file renamed over it, so a crash leaves the old file or the new, never half.
    fn rewrite(&mut self) -> io::Result<()> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        let mut text = serde_json::to_string(&self.header).map_err(io::Error::other)?;
        text.push('\n');
        for entry in &self.entries {
            text.push_str(&serde_json::to_string(entry).map_err(io::Error::other)?);
            text.push('\n');
        }
        let temporary = path.with_extension("jsonl.migrating");
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, &path)?;
        self.file = None;
        Ok(())
    }

    /// The session file (for an in-memory session: none).
    pub fn file(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The session file, or an empty path for an in-memory session.
    pub fn path(&self) -> &Path {
        self.path.as_deref().unwrap_or(Path::new(""))
    }

    /// The session id from the header.
    pub fn id(&self) -> &str {
        self.header["id"].as_str().unwrap_or_default()
    }

    /// The working directory in the header.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// Where pi keeps its sessions for `cwd` (`getDefaultSessionDir`), which is where new
    /// sessions go: `$PI_CODING_AGENT_SESSION_DIR` when set, else `$PI_CODING_AGENT_DIR` (else
    /// `~/.pi/agent`) followed by `sessions/--<cwd, / as ->--`.
    pub fn default_dir(cwd: &Path) -> PathBuf {
        if let Some(dir) = std::env::var_os("PI_CODING_AGENT_SESSION_DIR").filter(|d| !d.is_empty())
        {
            return expand_home(&PathBuf::from(dir));
        }
        Session::pi_dir(cwd)
    }

    /// pi's own session directory for `cwd`, whatever `PI_CODING_AGENT_SESSION_DIR` says.
    pub fn pi_dir(cwd: &Path) -> PathBuf {
        let cwd = cwd.display().to_string();
        let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(&cwd);
        let safe: String = trimmed
            .chars()
            .map(|c| {
                if matches!(c, '/' | '\\' | ':') {
                    '-'
                } else {
                    c
                }
            })
            .collect();
        Session::sessions_root().join(format!("--{safe}--"))
    }

    /// Where every project's session directory is (`~/.pi/agent/sessions`).
    pub fn sessions_root() -> PathBuf {
        pi_agent_dir().join("sessions")
    }

    /// Where this crate's earlier versions saved sessions for `cwd`: `$PI_SESSION_DIR`, else
    /// `~/.pi-rs/sessions/<cwd with / as ->`. They are still found by `-c` and `-r`.
    pub fn legacy_dir(cwd: &Path) -> PathBuf {
        if let Some(dir) = std::env::var_os("PI_SESSION_DIR").filter(|d| !d.is_empty()) {
            return PathBuf::from(dir);
        }
        let encoded: String = cwd
            .display()
            .to_string()
            .chars()
            .map(|c| {
                if c == '/' || c == '\\' || c == ':' {
                    '-'
                } else {
                    c
                }
            })
            .collect();
        home().join(".pi-rs").join("sessions").join(encoded)
    }

    /// A new session file name in `dir`, as pi names them: `<ISO time, : and . as ->_<uuid>.jsonl`.
    pub fn new_path(dir: &Path) -> PathBuf {
        dir.join(file_name(
            pi_runtime::now_ms(),
            &pi_session::new_session_id(),
        ))
    }

    /// The most recently modified `.jsonl` file in `dir`, if any.
    pub fn latest_in(dir: &Path) -> Option<PathBuf> {
        jsonl_files(dir)
            .into_iter()
            .max_by_key(|(modified, _)| *modified)
            .map(|(_, path)| path)
    }

    /// The most recently modified session file in `dirs`, judged by its first line only, as
    /// pi's `findMostRecentSession` does: no transcript is read.
    pub fn latest(dirs: &[PathBuf]) -> Option<PathBuf> {
        let mut files: Vec<(SystemTime, PathBuf)> =
            dirs.iter().flat_map(|dir| jsonl_files(dir)).collect();
        files.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
        files
            .into_iter()
            .map(|(_, path)| path)
            .find(|path| starts_with_a_header(path))
    }

    /// The sessions in `dirs`, newest first (pi's `SessionManager.list`). Files that cannot be
    /// read as a session are left out.
    pub fn list(dirs: &[PathBuf]) -> Vec<SessionSummary> {
        let mut found: Vec<SessionSummary> = dirs
            .iter()
            .flat_map(|dir| jsonl_files(dir))
            .filter_map(|(modified, path)| summarize(path, modified))
            .collect();
        found.sort_by_key(|s| std::cmp::Reverse(s.modified));
        found
    }

    /// The sessions of every project under [`sessions_root`](Self::sessions_root), newest
    /// first (pi's `SessionManager.listAll`).
    pub fn list_all() -> Vec<SessionSummary> {
        let Ok(dirs) = std::fs::read_dir(Session::sessions_root()) else {
            return Vec::new();
        };
        let dirs: Vec<PathBuf> = dirs
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        Session::list(&dirs)
    }
}

/// pi's file name for a session started at `ms`: `2026-12-01T12-31-57-049Z_<id>.jsonl`.
fn file_name(ms: i64, id: &str) -> String {
    let stamp = pi_session::iso_time(ms).replace([':', '.'], "-");
    format!("{stamp}_{id}.jsonl")
}

fn corrupt(path: &Path, message: String) -> SessionError {
    SessionError::Corrupt {
        path: path.to_path_buf(),
        line: 1,
        message,
    }
}

fn index_of(entries: &[Value]) -> HashMap<String, usize> {
    entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| Some((e["id"].as_str()?.to_owned(), i)))
        .collect()
}

/// `$HOME`, else the temporary directory.
fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from)
}

/// `~` and `~/..` expanded to `$HOME`.
pub(crate) fn expand_home(path: &Path) -> PathBuf {
    match path.to_str() {
        Some("~") => home(),
        Some(text) => match text.strip_prefix("~/") {
            Some(rest) => home().join(rest),
            None => path.to_path_buf(),
        },
        None => path.to_path_buf(),
    }
}

/// pi's agent directory: `$PI_CODING_AGENT_DIR` (with `~` expanded), else `~/.pi/agent`.
pub(crate) fn pi_agent_dir() -> PathBuf {
    match std::env::var("PI_CODING_AGENT_DIR") {
        Ok(dir) if !dir.is_empty() => expand_home(Path::new(&dir)),
        _ => home().join(".pi").join("agent"),
    }
}

/// Whether the file's first line is a session header (pi's `isValidSessionFile`).
fn starts_with_a_header(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut first = String::new();
    if BufReader::new(file).read_line(&mut first).is_err() {
        return false;
    }
    serde_json::from_str::<Value>(&first)
        .is_ok_and(|header| header["type"] == "session" && header["id"].is_string())
}

/// The `.jsonl` files of `dir` with their modification times.
fn jsonl_files(dir: &Path) -> Vec<(SystemTime, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect()
}

/// pi's `buildSessionInfo`: the id, first prompt, message count and last activity of a file.
fn summarize(path: PathBuf, file_time: SystemTime) -> Option<SessionSummary> {
    let parsed = parse(&path).ok()?;
    let header = &parsed.lines[0];
    let version = header["version"].as_u64().unwrap_or(1);
    let format = if pi_session::is_old_format(header) {
        SessionFormat::PiTool(version)
    } else {
        SessionFormat::Pi(version)
    };
    let mut messages = 0;
    let mut first_prompt = String::new();
    let mut last_activity: Option<i64> = None;
    let mut name = None;
    for entry in &parsed.lines[1..] {
        if entry["type"] == "session_info" {
            name = entry["name"]
                .as_str()
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_owned);
        }
        if entry["type"] != "message" {
            continue;
        }
        messages += 1;
        let message = &entry["message"];
        let role = message["role"].as_str().unwrap_or_default();
        if role != "user" && role != "assistant" {
            continue;
        }
        let time = message["timestamp"]
            .as_i64()
            .or_else(|| Some(pi_session::entry_time(entry)).filter(|t| *t > 0));
        if let Some(time) = time {
            last_activity = Some(last_activity.unwrap_or(0).max(time));
        }
        let text = match &message["content"] {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        if first_prompt.is_empty() && role == "user" && !text.is_empty() {
            first_prompt = text.split_whitespace().collect::<Vec<_>>().join(" ");
        }
    }
    let header_time = header["timestamp"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp_millis())
        .or_else(|| header["timestamp"].as_i64());
    let modified = match last_activity.filter(|t| *t > 0).or(header_time) {
        Some(ms) => {
            SystemTime::UNIX_EPOCH
                + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or_default())
        }
        None => file_time,
    };
    Some(SessionSummary {
        id: header["id"].as_str().unwrap_or_default().to_owned(),
        cwd: header["cwd"].as_str().unwrap_or_default().to_owned(),
        path,
        modified,
        format,
        messages,
        first_prompt,
        name,
    })
}

/// A session file's lines, parsed as JSON, with a cut-short last line set aside.
struct Parsed {
    /// The parsed lines (blank lines skipped); the first is the header.
    lines: Vec<Value>,
    /// Where a cut-short last line starts, to drop it before appending.
    cut_at: Option<u64>,
}

fn parse(path: &Path) -> Result<Parsed, SessionError> {
    let io_err = |source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    };
    let reader = BufReader::new(File::open(path).map_err(io_err)?);
    let texts: Vec<String> = reader.lines().collect::<Result<_, _>>().map_err(io_err)?;
    let last = texts
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .unwrap_or(0);
    let mut lines = Vec::new();
    let mut offset = 0u64;
    let mut cut_at = None;
    let mut header_line = 0;
    for (index, text) in texts.iter().enumerate() {
        let start = offset;
        offset += text.len() as u64 + 1;
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(value) if value.is_object() => {
                if lines.is_empty() {
                    header_line = index + 1;
                }
                lines.push(value);
            }
            Ok(_) | Err(_) if index == last && index > 0 => cut_at = Some(start),
            Ok(_) => {
                return Err(SessionError::Corrupt {
                    path: path.to_path_buf(),
                    line: index + 1,
                    message: "not a JSON object".into(),
                });
            }
            Err(err) => {
                return Err(SessionError::Corrupt {
                    path: path.to_path_buf(),
                    line: index + 1,
                    message: err.to_string(),
                });
            }
        }
    }
    let Some(header) = lines.first() else {
        return Err(SessionError::Corrupt {
            path: path.to_path_buf(),
            line: 1,
            message: "the file has no session header".into(),
        });
    };
    if header["type"] != "session" {
        return Err(SessionError::Corrupt {
            path: path.to_path_buf(),
            line: header_line,
            message: "the first entry is not a session header".into(),
        });
    }
    let version = header["version"].as_u64().unwrap_or(1);
    if version > CURRENT_VERSION {
        return Err(SessionError::NewerVersion {
            path: path.to_path_buf(),
            version,
        });
    }
    Ok(Parsed { lines, cut_at })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_survive_a_round_trip_and_a_cut_short_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/s.jsonl");
        let (mut session, old) = Session::open_or_create(&path, dir.path()).unwrap();
        assert!(old.is_empty());
        let answer = Message::Assistant(pi_runtime::AssistantMessage::new(
            vec![pi_runtime::AssistantContent::text("hi")],
            pi_runtime::StopReason::Stop,
        ));
        session.append(&Message::user("hello")).unwrap();
        assert!(
            !path.exists(),
            "nothing is written before the model answers"
        );
        session.append(&answer).unwrap();
        let id = session.id().to_owned();
        drop(session);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"type\":\"message\",\"mess").unwrap();
        let (mut session, messages) = Session::open_or_create(&path, dir.path()).unwrap();
        assert_eq!(session.id(), id);
        assert_eq!(messages.len(), 2);
        session.append(&Message::user("third")).unwrap();
        let (_, messages) = Session::open_or_create(&path, dir.path()).unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(
            Session::latest_in(dir.path().join("nested").as_path()),
            Some(path)
        );
    }

    #[test]
    fn a_corrupt_middle_line_is_an_error_and_the_file_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.jsonl");
        let text = "{\"type\":\"session\",\"version\":1,\"id\":\"x\",\"timestamp\":0,\"cwd\":\"/\"}\nnot json\n{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":0}}\n";
        std::fs::write(&path, text).unwrap();
        let err = Session::open_or_create(&path, dir.path()).unwrap_err();
        assert!(
            err.to_string().contains("bad.jsonl:2: not a session entry"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn pi_dir_encodes_the_working_directory_as_pi_does() {
        let dir = Session::pi_dir(Path::new("/home/user/my:project"));
        assert!(
            dir.ends_with("sessions/--home-user-my-project--"),
            "{}",
            dir.display()
        );
        let name = file_name(1796128317049, "01a23197-1e78-759c-9d4e-fb160df14463");
        assert_eq!(
            name,
            "2026-12-01T12-31-57-049Z_01a23197-1e78-759c-9d4e-fb160df14463.jsonl"
        );
    }
}
