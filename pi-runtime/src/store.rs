//! Where paused runs are kept between processes: the [`RunStore`] trait, the claim a resuming
//! process holds on a run ([`RunClaim`]), and what the stores share: a small header (the state
//! without its transcript, with checksums) written whole, and the transcript appended message by
//! message, never rewritten.
//!
//! Two stores come with the crate: [`JsonFileStore`] (a directory of files) and, with the
//! `sqlite` feature, [`SqliteRunStore`](crate::SqliteRunStore) (one database file).

mod journal;
mod json_file;
mod lock;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::sync::Arc;

pub use json_file::JsonFileStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteRunStore;

use crate::message::Message;
use crate::run_state::RunState;

/// Why a store could not do what was asked. Nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No run has this id.
    #[error("no stored run has the id `{0}`")]
    NotFound(String),
    /// A run id must be 1 to 64 ASCII letters, digits, `-` or `_`.
    #[error("`{0}` is not a run id (1 to 64 ASCII letters, digits, `-` or `_`)")]
    BadRunId(String),
    /// Another process (or another claim in this one) is resuming the run.
    #[error("the run `{0}` is being resumed elsewhere; a run is resumed by one process at a time")]
    Busy(String),
    /// The run was resumed (and changed) since this state was loaded: load it again.
    #[error(
        "the run `{run}` changed since this state was loaded (revision {loaded}, stored {stored}): load it again"
    )]
    Stale {
        /// The run.
        run: String,
        /// The revision the state was loaded at.
        loaded: u64,
        /// The revision stored now.
        stored: u64,
    },
    /// The stored run was written by a newer (or unknown) format.
    #[error(
        "the stored run `{run}` has format {found}; this build reads formats 1 to {}",
        crate::RUN_STATE_FORMAT
    )]
    UnsupportedFormat {
        /// The run.
        run: String,
        /// The format found.
        found: u32,
    },
    /// The stored run is damaged: a checksum does not match, or a part is missing or cut.
    #[error("the stored run `{run}` is damaged: {what}")]
    Damaged {
        /// The run.
        run: String,
        /// What is wrong.
        what: String,
    },
    /// The file system or the database failed.
    #[error("the run store failed: {0}")]
    Io(String),
}

impl From<std::io::Error> for StoreError {
    fn from(err: std::io::Error) -> Self {
        StoreError::Io(err.to_string())
    }
}

/// A place paused runs are kept, named by run ids.
///
/// A first process saves a paused run ([`create`](Self::create)) and may exit; a later one
/// [`load`](Self::load)s it, decides its waiting calls, [`claim`](Self::claim)s it and resumes
/// it with the claim ([`Resume::with_claim`](crate::Resume::with_claim)). Writes are atomic: a
/// crash leaves the run as it was before the write or after it.
pub trait RunStore: Send + Sync {
    /// Saves a paused run under a new id, and returns the id.
    ///
    /// # Errors
    ///
    /// The store failed.
    fn create(&self, state: &RunState) -> Result<String, StoreError>;

    /// The run as stored: its transcript, the calls that wait, the decisions recorded, and the
    /// calls recorded as started or finished.
    ///
    /// # Errors
    ///
    /// An unknown id, a damaged or newer-format run, or a failing store.
    fn load(&self, run: &str) -> Result<RunState, StoreError>;

    /// Takes the run for resuming `state` (loaded from this store): refused while another
    /// claim on it is held (in any process; a claim ends when it is dropped or its process
    /// dies), or when the run changed since `state` was loaded.
    ///
    /// # Errors
    ///
    /// [`StoreError::Busy`], [`StoreError::Stale`], or as [`load`](Self::load).
    fn claim(&self, run: &str, state: &RunState) -> Result<Box<dyn RunClaim>, StoreError>;
}

/// A process's hold on one stored run while it resumes it. The loop calls it; dropping it
/// releases the run.
pub trait RunClaim: Send + Sync {
    /// The run's id.
    fn run_id(&self) -> &str;

    /// Records the decisions taken on the waiting calls (before any runs).
    ///
    /// # Errors
    ///
    /// The store failed; the run does not start.
    fn record_decisions(&self, state: &RunState) -> Result<(), StoreError>;

    /// Records that the approved call `id` starts (before it does).
    ///
    /// # Errors
    ///
    /// The store failed; the call does not run.
    fn call_started(&self, id: &str) -> Result<(), StoreError>;

    /// Records the result of the decided call `id`.
    ///
    /// This need not be durable against a power cut by itself (a store may make it durable with
    /// its next [`call_started`](Self::call_started), [`paused`](Self::paused) or
    /// [`ended`](Self::ended)), as long as nothing recorded after it is kept without it: a
    /// result lost with a power cut leaves the call started and not finished, which a resume
    /// treats as interrupted. It must survive a kill of the process.
    ///
    /// # Errors
    ///
    /// The store failed.
    fn call_finished(&self, id: &str, result: &Message) -> Result<(), StoreError>;

    /// Appends the messages of `transcript` the store does not hold yet (a turn ended).
    ///
    /// # Errors
    ///
    /// The store failed.
    fn append(&self, transcript: &[Arc<Message>]) -> Result<(), StoreError>;

    /// The run paused again: appends its new messages and records the calls that wait now;
    /// returns the run's new revision (a state to claim it with again must have it).
    ///
    /// # Errors
    ///
    /// The store failed.
    fn paused(&self, state: &RunState) -> Result<u64, StoreError>;

    /// The run ended: appends its last messages and records that nothing waits.
    ///
    /// # Errors
    ///
    /// The store failed.
    fn ended(&self, transcript: &[Arc<Message>]) -> Result<(), StoreError>;
}

/// Whether `run` can name a run (and a file).
pub(crate) fn check_run_id(run: &str) -> Result<(), StoreError> {
    let ok = (1..=64).contains(&run.len())
        && run
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadRunId(run.chars().take(80).collect()))
    }
}

/// A new run id: the time, the process and a counter (unique on this machine; stores refuse
/// an id that exists).
pub(crate) fn new_run_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("run-{nanos:x}-{:x}-{count:x}", std::process::id())
}
