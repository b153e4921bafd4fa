//! What a confined command may do: the mode (Codex's names), the writable roots and what stays
//! read-only inside them, the network, the environment and the process bound.

use std::path::PathBuf;

use crate::env::EnvFilter;

/// How much of the file system a confined command may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SandboxMode {
    /// Reads anywhere, writes nowhere (but `/dev/null` and its like).
    ReadOnly,
    /// Reads anywhere, writes only under the writable roots (the working directory and the
    /// temporary directory); `.git` and the agent's own configuration in them stay read-only.
    WorkspaceWrite,
    /// No confinement of the file system, the network or the processes (secrets are still
    /// kept out of the environment unless allowed).
    FullAccess,
}

impl SandboxMode {
    /// The mode's name as the `--sandbox` flag and settings write it: `read-only`,
    /// `workspace-write`, `full-access`.
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::FullAccess => "full-access",
        }
    }

    /// Parses a mode name; `off` is `full-access`.
    ///
    /// ```
    /// use pi_sandbox::SandboxMode;
    /// assert_eq!(SandboxMode::parse("workspace-write"), Some(SandboxMode::WorkspaceWrite));
    /// assert_eq!(SandboxMode::parse("off"), Some(SandboxMode::FullAccess));
    /// assert_eq!(SandboxMode::parse("on"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "read-only" => Some(SandboxMode::ReadOnly),
            "workspace-write" => Some(SandboxMode::WorkspaceWrite),
            "full-access" | "off" => Some(SandboxMode::FullAccess),
            _ => None,
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The names kept read-only inside every writable root when they exist there: the repository's
/// `.git` (hooks and config run code outside the sandbox) and pi's project configuration `.pi`.
pub const PROTECTED_NAMES: [&str; 2] = [".git", ".pi"];

/// How many processes (and threads) a confined command may have at once, by default.
pub const DEFAULT_MAX_PROCESSES: u32 = 1024;

/// A sandbox policy: build one with [`read_only`](Self::read_only),
/// [`workspace_write`](Self::workspace_write) or [`full_access`](Self::full_access), adjust it
/// with the `with_*` methods, and confine commands with [`Sandbox::new`](crate::Sandbox::new).
///
/// ```
/// use pi_sandbox::{SandboxMode, SandboxPolicy};
///
/// let policy = SandboxPolicy::workspace_write("/srv/project")
///     .with_writable_root("/srv/cache")
///     .with_hidden_env("DATABASE_URL");
/// assert_eq!(policy.mode(), SandboxMode::WorkspaceWrite);
/// assert!(!policy.network());
/// assert!(policy.writable_roots().iter().any(|root| root.ends_with("cache")));
/// ```
#[derive(Clone, Debug)]
pub struct SandboxPolicy {
    mode: SandboxMode,
    writable_roots: Vec<PathBuf>,
    protected_names: Vec<String>,
    read_only_paths: Vec<PathBuf>,
    network: bool,
    env: EnvFilter,
    max_processes: u32,
}

impl SandboxPolicy {
    /// A policy of `mode`; `cwd` is the first writable root in [`SandboxMode::WorkspaceWrite`],
    /// the temporary directory (`$TMPDIR`, else `/tmp`) the second.
    pub fn new(mode: SandboxMode, cwd: impl Into<PathBuf>) -> Self {
        let writable_roots = match mode {
            SandboxMode::WorkspaceWrite => vec![cwd.into(), std::env::temp_dir()],
            SandboxMode::ReadOnly | SandboxMode::FullAccess => Vec::new(),
        };
        SandboxPolicy {
            mode,
            writable_roots,
            protected_names: PROTECTED_NAMES
                .iter()
                .map(|&name| name.to_owned())
                .collect(),
            read_only_paths: Vec::new(),
            network: false,
            env: EnvFilter::default(),
            max_processes: DEFAULT_MAX_PROCESSES,
        }
    }

    /// Reads anywhere, writes nowhere, no network.
    pub fn read_only() -> Self {
        SandboxPolicy::new(SandboxMode::ReadOnly, PathBuf::new())
    }

    /// Writes under `cwd` and the temporary directory only, `.git` and `.pi` there read-only,
    /// no network.
    pub fn workspace_write(cwd: impl Into<PathBuf>) -> Self {
        SandboxPolicy::new(SandboxMode::WorkspaceWrite, cwd)
    }

    /// No confinement; secrets still kept out of the environment.
    pub fn full_access() -> Self {
        SandboxPolicy::new(SandboxMode::FullAccess, PathBuf::new())
    }

    /// One more writable root (in [`SandboxMode::WorkspaceWrite`]; ignored in the others).
    #[must_use]
    pub fn with_writable_root(mut self, root: impl Into<PathBuf>) -> Self {
        if self.mode == SandboxMode::WorkspaceWrite {
            self.writable_roots.push(root.into());
        }
        self
    }

    /// Keeps `name` read-only in every writable root where it exists (`.git` and `.pi` are by
    /// default).
    #[must_use]
    pub fn with_protected_name(mut self, name: impl Into<String>) -> Self {
        self.protected_names.push(name.into());
        self
    }

    /// Keeps this path read-only when it lies in a writable root (the agent's configuration
    /// directory, say).
    #[must_use]
    pub fn with_read_only_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.read_only_paths.push(path.into());
        self
    }

    /// Allows the network (off by default).
    #[must_use]
    pub fn with_network(mut self, allowed: bool) -> Self {
        self.network = allowed;
        self
    }

    /// Keeps the variable `name` out of the command's environment; `*` at either end matches
    /// any text (`*_TOKEN`). Adds to [`DEFAULT_HIDDEN_ENV`](crate::DEFAULT_HIDDEN_ENV).
    #[must_use]
    pub fn with_hidden_env(mut self, name: impl Into<String>) -> Self {
        self.env.hide(name.into());
        self
    }

    /// Passes the variable `name` (or pattern) to the command even if it is hidden.
    #[must_use]
    pub fn with_allowed_env(mut self, name: impl Into<String>) -> Self {
        self.env.allow(name.into());
        self
    }

    /// At most `count` processes and threads at once (default [`DEFAULT_MAX_PROCESSES`]).
    #[must_use]
    pub fn with_max_processes(mut self, count: u32) -> Self {
        self.max_processes = count.max(1);
        self
    }

    /// The mode.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Where commands may write (empty unless [`SandboxMode::WorkspaceWrite`]).
    pub fn writable_roots(&self) -> &[PathBuf] {
        &self.writable_roots
    }

    /// Whether the network is allowed.
    pub fn network(&self) -> bool {
        self.network || self.mode == SandboxMode::FullAccess
    }

    /// The process bound.
    pub fn max_processes(&self) -> u32 {
        self.max_processes
    }

    /// Whether the variable `name` is kept out of commands' environment.
    ///
    /// ```
    /// use pi_sandbox::SandboxPolicy;
    /// let policy = SandboxPolicy::read_only().with_allowed_env("GITHUB_TOKEN");
    /// assert!(policy.hides_env("ANTHROPIC_API_KEY"));
    /// assert!(policy.hides_env("NPM_TOKEN"));
    /// assert!(!policy.hides_env("GITHUB_TOKEN"));
    /// assert!(!policy.hides_env("PATH"));
    /// ```
    pub fn hides_env(&self, name: &str) -> bool {
        self.env.hides(name)
    }

    /// The paths kept read-only: each protected name in each writable root, and each read-only
    /// path inside a writable root, as far as they exist now.
    pub fn protected_paths(&self) -> Vec<PathBuf> {
        let mut paths = Vec::new();
        for root in &self.writable_roots {
            for name in &self.protected_names {
                let path = root.join(name);
                if path.symlink_metadata().is_ok() {
                    paths.push(path);
                }
            }
            for path in &self.read_only_paths {
                if path.starts_with(root) && path.exists() && !paths.contains(path) {
                    paths.push(path.clone());
                }
            }
        }
        paths
    }

    pub(crate) fn env_filter(&self) -> &EnvFilter {
        &self.env
    }

    /// The writable roots with their symlinks resolved (Seatbelt matches real paths).
    #[cfg(target_os = "macos")]
    pub(crate) fn canonicalize_roots(&mut self) {
        for root in &mut self.writable_roots {
            if let Ok(real) = std::fs::canonicalize(&*root) {
                *root = real;
            }
        }
    }
}
