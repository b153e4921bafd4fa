//! [`JsonFileStore`]: each run a directory of plain files. The transcript is appended to
//! `messages.jsonl` (one message a line, never rewritten); the header (the rest of the state,
//! with the transcript's length and checksum) is replaced atomically (written to a temporary
//! file, synced, renamed over `header`).

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::journal::{self, Backend};
use super::lock::RunLock;
use super::{RunClaim, RunStore, StoreError};
use crate::run_state::RunState;

/// A [`RunStore`] in a directory: `<dir>/<run id>/header`, `messages.jsonl` and `lock`.
///
/// ```
/// use pi_runtime::{JsonFileStore, RunStore};
///
/// let dir = std::env::temp_dir().join(format!("pi-runs-doc-{}", std::process::id()));
/// let store = JsonFileStore::open(&dir)?;
/// assert!(store.load("no-such-run").is_err());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), pi_runtime::StoreError>(())
/// ```
#[derive(Clone, Debug)]
pub struct JsonFileStore {
    files: Arc<Files>,
}

#[derive(Debug)]
struct Files {
    dir: PathBuf,
}

impl JsonFileStore {
    /// A store in `dir` (created when missing).
    ///
    /// # Errors
    ///
    /// The directory cannot be created.
    pub fn open(dir: impl AsRef<Path>) -> Result<JsonFileStore, StoreError> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir)?;
        Ok(JsonFileStore {
            files: Arc::new(Files { dir }),
        })
    }
}

impl RunStore for JsonFileStore {
    fn create(&self, state: &RunState) -> Result<String, StoreError> {
        journal::create(self.files.as_ref(), state)
    }

    fn load(&self, run: &str) -> Result<RunState, StoreError> {
        journal::load(self.files.as_ref(), run).map(|(_, state)| state)
    }

    fn claim(&self, run: &str, state: &RunState) -> Result<Box<dyn RunClaim>, StoreError> {
        journal::claim(Arc::clone(&self.files), run, state)
    }
}

impl Files {
    fn run_dir(&self, run: &str) -> PathBuf {
        self.dir.join(run)
    }

    /// Replaces `header` atomically: a synced temporary file renamed over it, then the
    /// directory synced so that the rename survives a power cut.
    fn write_header(&self, run: &str, header: &str) -> Result<(), StoreError> {
        let dir = self.run_dir(run);
        let temporary = dir.join("header.tmp");
        let mut file = fs::File::create(&temporary)?;
        file.write_all(header.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temporary, dir.join("header"))?;
        sync_dir(&dir);
        Ok(())
    }
}

/// Syncs a directory's entries (where the platform allows opening one).
fn sync_dir(dir: &Path) {
    if let Ok(handle) = fs::File::open(dir) {
        let _ = handle.sync_all();
    }
}

impl Backend for Files {
    fn create(&self, run: &str, header: &str, lines: &[String]) -> Result<(), StoreError> {
        let dir = self.run_dir(run);
        fs::create_dir(&dir)?;
        let mut messages = fs::File::create(dir.join("messages.jsonl"))?;
        for line in lines {
            messages.write_all(line.as_bytes())?;
        }
        messages.sync_all()?;
        // The header last: a run without one was never created.
        self.write_header(run, header)?;
        sync_dir(&self.dir);
        Ok(())
    }

    fn read_header(&self, run: &str) -> Result<String, StoreError> {
        match fs::read_to_string(self.run_dir(run).join("header")) {
            Ok(header) => Ok(header),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Err(StoreError::NotFound(run.to_owned()))
            }
            Err(err) => Err(err.into()),
        }
    }

    fn read(&self, run: &str) -> Result<(String, String), StoreError> {
        let dir = self.run_dir(run);
        let header = self.read_header(run)?;
        let messages = match fs::read(dir.join("messages.jsonl")) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|_| StoreError::Damaged {
                run: run.to_owned(),
                what: "the transcript is not UTF-8".to_owned(),
            })?,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(err) => return Err(err.into()),
        };
        Ok((header, messages))
    }

    /// Every record is synced (`durable` is not used): the header is replaced by a rename,
    /// which is only ordered with the writes before it when they were synced.
    fn append(
        &self,
        run: &str,
        bytes_before: u64,
        lines: &[String],
        header: &str,
        _durable: bool,
    ) -> Result<(), StoreError> {
        if !lines.is_empty() {
            let path = self.run_dir(run).join("messages.jsonl");
            let mut file = OpenOptions::new().write(true).open(path)?;
            // Drop what an append that did not finish left after the recorded end.
            file.set_len(bytes_before)?;
            let mut buffer = Vec::with_capacity(lines.iter().map(String::len).sum());
            for line in lines {
                buffer.extend_from_slice(line.as_bytes());
            }
            std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(bytes_before))?;
            file.write_all(&buffer)?;
            file.sync_data()?;
        }
        self.write_header(run, header)
    }

    fn lock(&self, run: &str) -> Result<RunLock, StoreError> {
        let dir = self.run_dir(run);
        if !dir.join("header").exists() {
            return Err(StoreError::NotFound(run.to_owned()));
        }
        RunLock::take(&dir.join("lock"), run)
    }
}
