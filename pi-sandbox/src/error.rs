//! Why a command cannot be confined.

use crate::SandboxMode;

/// A sandbox that cannot be set up: the command must not run (it would run unconfined).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// This system lacks what the mode needs.
    #[error("the {mode} sandbox is not available on this system: it lacks {missing}")]
    Unsupported {
        /// The mode asked for.
        mode: SandboxMode,
        /// What is missing, in words.
        missing: String,
    },
    /// Preparing the confinement failed (a path that cannot be opened, a cgroup that cannot
    /// be made, ...).
    #[error("the sandbox could not be set up: {0}")]
    Setup(String),
    /// [`Sandbox::command`](crate::Sandbox::command) was called twice: a sandbox confines one
    /// process (and what it starts).
    #[error("this sandbox already confines a command; make a new one for each")]
    AlreadyUsed,
}
