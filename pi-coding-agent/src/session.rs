//! Sessions saved as JSONL, one line per message, appended as the conversation goes, so a
//! session survives a crash and can be resumed.
//!
//! The first line is a header, `{"type":"session","version":1,"id":..,"timestamp":..,"cwd":..}`;
//! each further line is `{"type":"message","message":<pi-runtime Message>}`.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use pi_runtime::Message;
use serde::{Deserialize, Serialize};

/// The format version written in the header.
const VERSION: u32 = 1;

/// One line of a session file.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Line {
    Session {
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
    /// A line (not the last one) is not a session entry.
    #[error("{path}:{line}: not a session entry: {message}")]
    Corrupt {
        /// The session file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
}

/// An open session file; messages are appended with [`append`](Self::append).
#[derive(Debug)]
pub struct Session {
    path: PathBuf,
    id: String,
    file: File,
}

impl Session {
    /// Opens `path`, creating it (and its directory) with a header when it does not exist.
    /// Returns the session and the messages it already holds, oldest first.
    ///
    /// A last line cut short (a crash mid-write) is dropped; any other bad line is an error.
    pub fn open_or_create(
        path: impl Into<PathBuf>,
        cwd: &Path,
    ) -> Result<(Session, Vec<Message>), SessionError> {
        let path = path.into();
        let io_err = |source| SessionError::Io {
            path: path.clone(),
            source,
        };
        if !path.exists() {
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
                version: VERSION,
                id: id.clone(),
                timestamp: pi_runtime::now_ms(),
                cwd: cwd.display().to_string(),
            };
            write_line(&mut file, &header).map_err(io_err)?;
            return Ok((Session { path, id, file }, Vec::new()));
        }
        let reader = BufReader::new(File::open(&path).map_err(io_err)?);
        let lines: Vec<String> = reader.lines().collect::<Result<_, _>>().map_err(io_err)?;
        let mut id = String::new();
        let mut messages = Vec::new();
        let last = lines
            .iter()
            .rposition(|l| !l.trim().is_empty())
            .unwrap_or(0);
        let mut offset = 0u64;
        let mut cut_at = None;
        for (index, text) in lines.iter().enumerate() {
            let start = offset;
            offset += text.len() as u64 + 1;
            if text.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Line>(text) {
                Ok(Line::Session { id: header_id, .. }) => id = header_id,
                Ok(Line::Message { message }) => messages.push(message),
                Err(_) if index == last && index > 0 => cut_at = Some(start),
                Err(err) => {
                    return Err(SessionError::Corrupt {
                        path: path.clone(),
                        line: index + 1,
                        message: err.to_string(),
                    });
                }
            }
        }
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io_err)?;
        if let Some(cut_at) = cut_at {
            // Drop the entry cut short by a crash, so the next one starts on a clean line.
            file.set_len(cut_at).map_err(io_err)?;
        }
        Ok((Session { path, id, file }, messages))
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
        let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
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
        home.join(".pi-rs").join("sessions").join(encoded)
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
        std::fs::read_dir(dir)
            .ok()?
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .max()
            .map(|(_, path)| path)
    }
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
    fn a_corrupt_middle_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, "{\"type\":\"session\",\"version\":1,\"id\":\"x\",\"timestamp\":0,\"cwd\":\"/\"}\nnot json\n{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":0}}\n").unwrap();
        let err = Session::open_or_create(&path, dir.path()).unwrap_err();
        assert!(
            err.to_string().contains("bad.jsonl:2: not a session entry"),
            "{err}"
        );
    }
}
