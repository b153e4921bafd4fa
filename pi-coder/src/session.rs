//! Sessions saved as JSONL, one line per message, appended as the conversation goes, so a
//! session survives a crash and can be resumed; and pi's own session files, read so that a
//! conversation started in pi goes on here.
//!
//! Our format, version 2: the first line is a header,
//! `{"type":"session","format":"pi-tool","version":2,"id":..,"timestamp":<unix ms>,"cwd":..}`;
//! each further line is `{"type":"message","message":<pi-runtime Message>}`. Version 1 (the
//! same without `"format"`) is still read.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use pi_runtime::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::pi_session;

/// The format version written in the header.
pub const FORMAT_VERSION: u32 = 2;
/// The `format` field of our header: it tells our files from pi's, whose headers also say
/// `"type":"session"` with a version.
const FORMAT_NAME: &str = "pi-tool";

/// One line of a session file of ours.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Line {
    Session {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<String>,
        version: u32,
        id: String,
        timestamp: i64,
        cwd: String,
    },
    Message {
        message: Message,
    },
}

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
    /// The file was written by a newer version of this format.
    #[error(
        "{path}: session format version {version} is newer than this pi reads ({FORMAT_VERSION}): update pi"
    )]
    NewerVersion {
        /// The session file.
        path: PathBuf,
        /// The version in its header.
        version: u64,
    },
    /// The file is pi's own format: read it with [`Session::read`] and continue in a file of
    /// ours ([`Session::resume`] does both), so pi's file stays as pi wrote it.
    #[error("{path} is a session file of pi's own format: it is read, never appended to")]
    PiFormat {
        /// The session file.
        path: PathBuf,
    },
}

/// Who wrote a session file, and which version of the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionFormat {
    /// This crate's format ([`FORMAT_VERSION`]).
    PiTool(u64),
    /// pi's own (`session-manager.ts`, versions 1 to 3).
    Pi(u64),
}

/// What a session file holds: who wrote it, its id, and the conversation.
#[derive(Clone, Debug)]
pub struct SavedSession {
    /// The format of the file.
    pub format: SessionFormat,
    /// The session id from the header.
    pub id: String,
    /// The conversation, oldest first (for pi's files: the current branch, as pi resumes it).
    pub messages: Vec<Message>,
}

/// A session [`Session::resume`] opened.
#[derive(Debug)]
pub struct Resumed {
    /// Where the conversation is saved from now on.
    pub session: Session,
    /// The messages it already held.
    pub messages: Vec<Message>,
    /// The pi session file it was imported from, when it was one of pi's.
    pub imported_from: Option<PathBuf>,
}

/// One entry of [`Session::list`]: enough to choose a session to resume.
#[derive(Clone, Debug)]
pub struct SessionSummary {
    /// The file.
    pub path: PathBuf,
    /// When it was last written.
    pub modified: SystemTime,
    /// Who wrote it.
    pub format: SessionFormat,
    /// How many messages it holds.
    pub messages: usize,
    /// The first user prompt, on one line.
    pub first_prompt: String,
}

/// An open session file; messages are appended with [`append`](Self::append).
#[derive(Debug)]
pub struct Session {
    path: PathBuf,
    id: String,
    file: File,
}

impl Session {
    /// Creates a new session file at `path` (and its directory) with a header; an existing file
    /// is an error.
    pub fn create(path: impl Into<PathBuf>, cwd: &Path) -> Result<Session, SessionError> {
        let path = path.into();
        let io_err = |source| SessionError::Io {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io_err)?;
        }
        let mut file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(io_err)?;
        let id = format!("{:016x}", fastrand::u64(..));
        let header = Line::Session {
            format: Some(FORMAT_NAME.to_owned()),
            version: FORMAT_VERSION,
            id: id.clone(),
            timestamp: pi_runtime::now_ms(),
            cwd: cwd.display().to_string(),
        };
        write_line(&mut file, &header).map_err(io_err)?;
        Ok(Session { path, id, file })
    }

    /// Opens `path`, creating it (and its directory) with a header when it does not exist.
    /// Returns the session and the messages it already holds, oldest first.
    ///
    /// A last line cut short (a crash mid-write) is dropped; any other bad line is an error,
    /// and the file is not changed. A file of pi's own format is [`SessionError::PiFormat`]:
    /// use [`resume`](Self::resume).
    pub fn open_or_create(
        path: impl Into<PathBuf>,
        cwd: &Path,
    ) -> Result<(Session, Vec<Message>), SessionError> {
        let path = path.into();
        if !path.exists() {
            return Ok((Session::create(path, cwd)?, Vec::new()));
        }
        let parsed = parse(&path)?;
        if parsed.pi {
            return Err(SessionError::PiFormat { path });
        }
        let saved = ours(&path, &parsed)?;
        let io_err = |source| SessionError::Io {
            path: path.clone(),
            source,
        };
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io_err)?;
        if let Some(cut_at) = parsed.cut_at {
            // Drop the entry cut short by a crash, so the next one starts on a clean line.
            file.set_len(cut_at).map_err(io_err)?;
        }
        Ok((
            Session {
                path,
                id: saved.id,
                file,
            },
            saved.messages,
        ))
    }

    /// Reads a session file of either format without changing it.
    ///
    /// A last line cut short is ignored; any other line that is not an entry is
    /// [`SessionError::Corrupt`], naming the line.
    pub fn read(path: &Path) -> Result<SavedSession, SessionError> {
        let parsed = parse(path)?;
        if parsed.pi {
            let pi = pi_session::conversation(&parsed.lines).map_err(|message| {
                SessionError::Corrupt {
                    path: path.to_path_buf(),
                    line: 1,
                    message,
                }
            })?;
            return Ok(SavedSession {
                format: SessionFormat::Pi(pi.version),
                id: pi.id,
                messages: pi.messages,
            });
        }
        ours(path, &parsed)
    }

    /// Continues the conversation in `path`: a file of ours is appended to; one of pi's is read
    /// and its conversation copied into a new file of ours in `dir` (pi's file is not touched).
    pub fn resume(path: &Path, cwd: &Path, dir: &Path) -> Result<Resumed, SessionError> {
        let saved = Session::read(path)?;
        if let SessionFormat::PiTool(_) = saved.format {
            let (session, messages) = Session::open_or_create(path, cwd)?;
            return Ok(Resumed {
                session,
                messages,
                imported_from: None,
            });
        }
        let mut session = Session::create(Session::new_path(dir), cwd)?;
        for message in &saved.messages {
            session.append(message).map_err(|source| SessionError::Io {
                path: session.path.clone(),
                source,
            })?;
        }
        Ok(Resumed {
            session,
            messages: saved.messages,
            imported_from: Some(path.to_path_buf()),
        })
    }

    /// Appends one message and flushes it to disk.
    pub fn append(&mut self, message: &Message) -> io::Result<()> {
        write_line(
            &mut self.file,
            &Line::Message {
                message: message.clone(),
            },
        )
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session id from the header.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Where sessions for `cwd` live by default: `$PI_SESSION_DIR`, else
    /// `~/.pi-rs/sessions/<cwd with / as ->/`.
    pub fn default_dir(cwd: &Path) -> PathBuf {
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

    /// Where pi keeps its sessions for `cwd` (`getDefaultSessionDir`):
    /// `$PI_CODING_AGENT_DIR` (else `~/.pi/agent`), then `sessions/--<cwd, / as ->--`.
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
        pi_agent_dir().join("sessions").join(format!("--{safe}--"))
    }

    /// A new session file name in `dir`: `<unix ms>-<8 hex>.jsonl`, so names sort by age.
    pub fn new_path(dir: &Path) -> PathBuf {
        dir.join(format!(
            "{}-{:08x}.jsonl",
            pi_runtime::now_ms(),
            fastrand::u32(..)
        ))
    }

    /// The most recently modified `.jsonl` file in `dir`, if any.
    pub fn latest_in(dir: &Path) -> Option<PathBuf> {
        jsonl_files(dir)
            .into_iter()
            .max_by_key(|(modified, _)| *modified)
            .map(|(_, path)| path)
    }

    /// The most recently modified session file (ours or pi's) in `dirs`, judged by its first
    /// line only, as pi's `findMostRecentSession` does: no transcript is read.
    pub fn latest(dirs: &[PathBuf]) -> Option<PathBuf> {
        let mut files: Vec<(SystemTime, PathBuf)> =
            dirs.iter().flat_map(|dir| jsonl_files(dir)).collect();
        files.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
        files
            .into_iter()
            .map(|(_, path)| path)
            .find(|path| starts_with_a_header(path))
    }

    /// The sessions in `dirs` (ours and pi's), newest first. Files that cannot be read as a
    /// session are left out.
    pub fn list(dirs: &[PathBuf]) -> Vec<SessionSummary> {
        let mut found: Vec<SessionSummary> = dirs
            .iter()
            .flat_map(|dir| jsonl_files(dir))
            .filter_map(|(modified, path)| {
                let saved = Session::read(&path).ok()?;
                let first_prompt = saved
                    .messages
                    .iter()
                    .find_map(|m| match m {
                        Message::User(user) => Some(
                            user.content
                                .iter()
                                .filter_map(|c| match c {
                                    pi_tool::Content::Text { text } => Some(text.as_str()),
                                    _ => None,
                                })
                                .collect::<Vec<_>>()
                                .join(" "),
                        ),
                        _ => None,
                    })
                    .unwrap_or_default()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                Some(SessionSummary {
                    path,
                    modified,
                    format: saved.format,
                    messages: saved.messages.len(),
                    first_prompt,
                })
            })
            .collect();
        found.sort_by_key(|s| std::cmp::Reverse(s.modified));
        found
    }
}

/// `$HOME`, else the temporary directory.
fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from)
}

/// pi's agent directory: `$PI_CODING_AGENT_DIR` (with `~` expanded), else `~/.pi/agent`.
pub(crate) fn pi_agent_dir() -> PathBuf {
    match std::env::var("PI_CODING_AGENT_DIR") {
        Ok(dir) if !dir.is_empty() => match dir.strip_prefix("~/") {
            Some(rest) => home().join(rest),
            None if dir == "~" => home(),
            None => PathBuf::from(dir),
        },
        _ => home().join(".pi").join("agent"),
    }
}

/// Whether the file's first line is a session header (ours or pi's).
fn starts_with_a_header(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut first = String::new();
    if BufReader::new(file).read_line(&mut first).is_err() {
        return false;
    }
    serde_json::from_str::<Value>(&first).is_ok_and(|header| header["type"] == "session")
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

/// A session file's lines, parsed as JSON, with a cut-short last line set aside.
struct Parsed {
    /// The parsed lines (blank lines skipped), with their 1-based line numbers.
    lines: Vec<Value>,
    numbers: Vec<usize>,
    /// Whether the header is pi's.
    pi: bool,
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
    let mut numbers = Vec::new();
    let mut offset = 0u64;
    let mut cut_at = None;
    for (index, text) in texts.iter().enumerate() {
        let start = offset;
        offset += text.len() as u64 + 1;
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(value) if value.is_object() => {
                lines.push(value);
                numbers.push(index + 1);
            }
            Ok(_) if index == last && index > 0 => cut_at = Some(start),
            Err(_) if index == last && index > 0 => cut_at = Some(start),
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
            line: numbers[0],
            message: "the first entry is not a session header".into(),
        });
    }
    Ok(Parsed {
        pi: pi_session::is_pi_header(header),
        lines,
        numbers,
        cut_at,
    })
}

/// A file of our format, from its parsed lines.
fn ours(path: &Path, parsed: &Parsed) -> Result<SavedSession, SessionError> {
    let corrupt = |line: usize, message: String| SessionError::Corrupt {
        path: path.to_path_buf(),
        line,
        message,
    };
    let version = parsed.lines[0]["version"].as_u64().unwrap_or(1);
    if version > u64::from(FORMAT_VERSION) {
        return Err(SessionError::NewerVersion {
            path: path.to_path_buf(),
            version,
        });
    }
    let mut id = String::new();
    let mut messages = Vec::new();
    for (value, line) in parsed.lines.iter().zip(&parsed.numbers) {
        match Line::deserialize(value) {
            Ok(Line::Session { id: header_id, .. }) => id = header_id,
            Ok(Line::Message { message }) => messages.push(message),
            Err(err) => return Err(corrupt(*line, err.to_string())),
        }
    }
    Ok(SavedSession {
        format: SessionFormat::PiTool(version),
        id,
        messages,
    })
}

fn write_line(file: &mut File, line: &Line) -> io::Result<()> {
    let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
    text.push('\n');
    file.write_all(text.as_bytes())?;
    file.flush()
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
        let written = vec![Message::user("hello"), Message::user("again")];
        for message in &written {
            session.append(message).unwrap();
        }
        let id = session.id().to_owned();
        drop(session);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"type\":\"message\",\"mess").unwrap();
        let (mut session, messages) = Session::open_or_create(&path, dir.path()).unwrap();
        assert_eq!(session.id(), id);
        assert_eq!(messages, written);
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
    }
}
