//! The shared configuration every built-in tool gets as `State<Workspace>`: where relative paths
//! start, whether tools are confined there, the per-file mutation queue, where `bash` keeps full
//! logs and which shell it runs.

use std::collections::HashMap;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use pi_sandbox::{SandboxMode, SandboxPolicy};
use pi_tool::ToolError;
use tokio::sync::OwnedMutexGuard;

use crate::fs_error;

/// How deep a chain of dangling symlinks may go before it counts as a loop (Linux's `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: u32 = 40;

/// Configuration shared by the seven tools: working directory, confinement, mutation queue,
/// temporary directory and shell.
///
/// ```
/// use pi_coder::Workspace;
///
/// let workspace = Workspace::new("/srv/project");
/// assert_eq!(workspace.resolve("@src/../main.rs").unwrap(), std::path::Path::new("/srv/project/main.rs"));
///
/// let project = tempfile::tempdir().unwrap();
/// let confined = Workspace::new(project.path()).confined(true);
/// assert!(confined.resolve("new/file.txt").is_ok());
/// assert!(confined.resolve("/etc/passwd").is_err());
/// ```
#[derive(Debug)]
pub struct Workspace {
    cwd: PathBuf,
    confined: bool,
    shell: Option<PathBuf>,
    temp_dir: PathBuf,
    images_supported: bool,
    sandbox: Option<SandboxPolicy>,
    mutations: MutationQueue,
}

impl Workspace {
    /// A workspace rooted at `cwd` (made absolute against the process's current directory),
    /// not confined, logging to the system temporary directory, with images supported.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        let cwd = cwd.into();
        let cwd = if cwd.is_absolute() {
            normalize(&cwd)
        } else {
            normalize(
                &std::env::current_dir()
                    .unwrap_or_else(|_| PathBuf::from("/"))
                    .join(cwd),
            )
        };
        Workspace {
            cwd,
            confined: false,
            shell: None,
            temp_dir: std::env::temp_dir(),
            images_supported: true,
            sandbox: None,
            mutations: MutationQueue::default(),
        }
    }

    /// Confines `read`, `edit`, `write`, `grep`, `find` and `ls` to the working directory: a path
    /// that resolves outside it (through `..`, an absolute path or a symlink) is an error.
    ///
    /// `bash` still starts in the working directory, but a shell command can reach anything the
    /// process can; confinement is not a sandbox for it (use [`sandboxed`](Self::sandboxed), or
    /// gate `bash` with approval).
    #[must_use]
    pub fn confined(mut self, confined: bool) -> Self {
        self.confined = confined;
        self
    }

    /// Runs `bash` commands with this shell (`<shell> -c <command>`) instead of `/bin/bash`.
    /// As in pi, the path must exist: otherwise every `bash` call fails with
    /// `Custom shell path not found: <path>` (nothing is looked up on `PATH`).
    #[must_use]
    pub fn with_shell(mut self, shell: impl Into<PathBuf>) -> Self {
        self.shell = Some(shell.into());
        self
    }

    /// Writes `bash`'s full logs (`pi-bash-<16 hex>.log`) here instead of the system temporary directory.
    #[must_use]
    pub fn with_temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_dir = dir.into();
        self
    }

    /// Runs every `bash` command in an OS sandbox of `mode` (see the `pi-sandbox` crate):
    /// [`SandboxMode::WorkspaceWrite`] writes only under the working directory and the temporary
    /// directory, `.git` and `.pi` there read-only, no network, no API keys in the environment.
    /// Where the system cannot confine a command, `bash` refuses to run it.
    #[must_use]
    pub fn sandboxed(self, mode: SandboxMode) -> Self {
        let policy = SandboxPolicy::new(mode, self.cwd.clone());
        self.with_sandbox(policy)
    }

    /// Runs every `bash` command confined by `policy` (its network, writable roots and
    /// environment as you set them).
    #[must_use]
    pub fn with_sandbox(mut self, policy: SandboxPolicy) -> Self {
        self.sandbox = Some(policy);
        self
    }

    /// Whether the current model accepts images; when not, `read` adds pi's note that the image
    /// will be omitted.
    #[must_use]
    pub fn with_images_supported(mut self, supported: bool) -> Self {
        self.images_supported = supported;
        self
    }

    /// The working directory (absolute, lexically normalized).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Whether tools are confined to the working directory.
    pub fn is_confined(&self) -> bool {
        self.confined
    }

    /// The temporary directory for `bash` logs.
    pub fn temp_dir(&self) -> &Path {
        &self.temp_dir
    }

    /// The sandbox `bash` commands run in, if any.
    pub fn sandbox(&self) -> Option<&SandboxPolicy> {
        self.sandbox.as_ref()
    }

    /// Whether the model accepts images.
    pub fn images_supported(&self) -> bool {
        self.images_supported
    }

    /// The shell `bash` runs: the configured one, else `/bin/bash`, else `bash` on `PATH`, else
    /// `sh` (pi's `getShellConfig`). A configured shell that does not exist is pi's error
    /// `Custom shell path not found: <path>`.
    pub fn shell(&self) -> Result<PathBuf, ToolError> {
        if let Some(shell) = &self.shell {
            if !shell.exists() {
                return Err(ToolError::new(format!(
                    "Custom shell path not found: {}",
                    shell.display()
                )));
            }
            return Ok(shell.clone());
        }
        if Path::new("/bin/bash").exists() {
            return Ok(PathBuf::from("/bin/bash"));
        }
        if let Some(paths) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&paths) {
                let candidate = dir.join("bash");
                if candidate.is_file() {
                    return Ok(candidate);
                }
            }
        }
        Ok(PathBuf::from("sh"))
    }

    /// Resolves a path as a model wrote it, pi's way: a leading `@` is dropped, Unicode spaces
    /// become spaces, `~` is the home directory, relative paths start at the working directory.
    /// When confined, a path whose real location is outside the working directory is an error.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let resolved = self.lexical(path);
        if self.confined {
            self.check_confined(&resolved)?;
        }
        Ok(resolved)
    }

    /// [`resolve`](Self::resolve) for an optional path argument: none means the working directory.
    pub fn resolve_or_cwd(&self, path: Option<&str>) -> Result<PathBuf, ToolError> {
        match path {
            Some(path) if !path.trim().is_empty() => self.resolve(path),
            _ => Ok(self.cwd.clone()),
        }
    }

    /// Checks an already absolute path against the confinement (no-op when not confined).
    pub(crate) fn check(&self, absolute: &Path) -> Result<(), ToolError> {
        if self.confined {
            self.check_confined(absolute)?;
        }
        Ok(())
    }

    fn lexical(&self, path: &str) -> PathBuf {
        let path = path.strip_prefix('@').unwrap_or(path);
        let path: String = path
            .chars()
            .map(|c| if is_unicode_space(c) { ' ' } else { c })
            .collect();
        let home = || std::env::var_os("HOME").map(PathBuf::from);
        let expanded = if path == "~" {
            home().unwrap_or_else(|| PathBuf::from(&path))
        } else if let Some(rest) = path.strip_prefix("~/") {
            home().map_or_else(|| PathBuf::from(&path), |home| home.join(rest))
        } else {
            PathBuf::from(&path)
        };
        normalize(&self.cwd.join(expanded))
    }

    fn check_confined(&self, resolved: &Path) -> Result<(), ToolError> {
        let root = std::fs::canonicalize(&self.cwd)
            .map_err(|err| ToolError::new(fs_error::describe(&err, "realpath", &self.cwd)))?;
        let real = real_location(resolved, 0)
            .map_err(|err| ToolError::new(fs_error::describe(&err, "realpath", resolved)))?;
        if real.starts_with(&root) || self.is_output_log(&real) {
            Ok(())
        } else {
            Err(ToolError::new(format!(
                "Path {} is outside the working directory {} (tools are confined to it)",
                resolved.display(),
                self.cwd.display()
            )))
        }
    }

    /// Whether `real` is a full output log (`pi-<tool>-<16 hex>.log`) in the temporary
    /// directory: results point the model at these, so a confined `read` may open them.
    fn is_output_log(&self, real: &Path) -> bool {
        std::fs::canonicalize(&self.temp_dir)
            .is_ok_and(|dir| crate::spill::is_output_log(real, &dir))
    }

    /// Waits for earlier `edit`/`write` calls on the same file, then holds the file until the guard drops.
    pub(crate) async fn lock_file(&self, path: &Path) -> OwnedMutexGuard<()> {
        let key = real_location(path, 0).unwrap_or_else(|_| path.to_path_buf());
        self.mutations.lock(key).await
    }
}

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// Removes `.` and resolves `..` without touching the filesystem (like Node's `path.resolve`).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Where `path` really is: symlinks followed, including dangling ones (so a link to a file that
/// does not exist yet cannot smuggle a write outside the root), missing tail components kept.
fn real_location(path: &Path, hops: u32) -> io::Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Ok(real) => Ok(real),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            let parent = path.parent();
            if let Ok(meta) = std::fs::symlink_metadata(path)
                && meta.file_type().is_symlink()
            {
                if hops >= MAX_SYMLINK_HOPS {
                    return Err(io::Error::from_raw_os_error(
                        nix::errno::Errno::ELOOP as i32,
                    ));
                }
                let target = std::fs::read_link(path)?;
                let base = match parent {
                    Some(parent) => real_location(parent, hops)?,
                    None => PathBuf::from("/"),
                };
                return real_location(&normalize(&base.join(target)), hops + 1);
            }
            match (parent, path.file_name()) {
                (Some(parent), Some(name)) => Ok(real_location(parent, hops)?.join(name)),
                _ => Err(err),
            }
        }
        Err(err) => Err(err),
    }
}

/// One async lock per real file path; entries disappear when no call holds or waits for them.
#[derive(Debug, Default)]
struct MutationQueue {
    locks: Mutex<HashMap<PathBuf, Weak<tokio::sync::Mutex<()>>>>,
}

impl MutationQueue {
    async fn lock(&self, key: PathBuf) -> OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self
                .locks
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            locks.retain(|_, lock| lock.strong_count() > 0);
            match locks.get(&key).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    locks.insert(key, Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_pi() {
        let ws = Workspace::new("/p/q");
        assert_eq!(ws.resolve("@a/../b.txt").unwrap(), Path::new("/p/q/b.txt"));
        assert_eq!(ws.resolve("/abs/x").unwrap(), Path::new("/abs/x"));
        assert_eq!(
            ws.resolve("my\u{00A0}file").unwrap(),
            Path::new("/p/q/my file")
        );
        assert_eq!(ws.resolve_or_cwd(None).unwrap(), Path::new("/p/q"));
    }
}
