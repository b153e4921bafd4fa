//! One resuming process per run: an exclusive advisory lock on a file of the run's, held as
//! long as the claim. The operating system drops it when the process dies (kill -9 included),
//! so a crash never leaves a run locked.

use std::fs::{File, OpenOptions};
use std::path::Path;

use super::StoreError;

/// A held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub(crate) struct RunLock {
    _file: File,
}

impl RunLock {
    /// Takes the lock of `run` on the file `path` (created when missing), or
    /// [`StoreError::Busy`] when someone holds it.
    pub(crate) fn take(path: &Path, run: &str) -> Result<RunLock, StoreError> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        try_lock(&file).map_err(|busy| match busy {
            Busy::Held => StoreError::Busy(run.to_owned()),
            Busy::Failed(err) => StoreError::Io(format!("locking {}: {err}", path.display())),
        })?;
        Ok(RunLock { _file: file })
    }
}

enum Busy {
    Held,
    Failed(String),
}

#[cfg(unix)]
fn try_lock(file: &File) -> Result<(), Busy> {
    use rustix::fs::{FlockOperation, flock};
    match flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(Busy::Held),
        Err(err) => Err(Busy::Failed(err.to_string())),
    }
}

#[cfg(not(unix))]
fn try_lock(_file: &File) -> Result<(), Busy> {
    // No advisory lock here: one resuming process per run is up to the caller.
    Ok(())
}
