//! A sandbox for one command: made from a policy (failing when this system cannot confine it),
//! it gives the confined `Command`, and kills what the command left behind.

use std::ffi::{OsStr, OsString};
use std::process::Command;

use crate::{SandboxError, SandboxMode, SandboxPolicy};

/// The confinement of one command (and every process it starts). Make it with [`Sandbox::new`],
/// get the command with [`Sandbox::command`], spawn it, and keep the sandbox until the command
/// is done: dropping it kills whatever the command left running (with a cgroup: wherever those
/// processes went) and removes its cgroup.
pub struct Sandbox {
    mode: SandboxMode,
    hidden_env: Vec<OsString>,
    used: bool,
    #[cfg(target_os = "linux")]
    linux: crate::linux::Prepared,
    #[cfg(target_os = "macos")]
    profile: Option<String>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("mode", &self.mode)
            .field("hidden_env", &self.hidden_env)
            .field("used", &self.used)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Prepares the confinement of `policy`; an error when this system lacks what it needs
    /// (say so to the user, and offer [`SandboxMode::FullAccess`] as the explicit way out).
    pub fn new(policy: &SandboxPolicy) -> Result<Sandbox, SandboxError> {
        let hidden_env = policy.env_filter().hidden_now();
        #[cfg(target_os = "linux")]
        {
            Ok(Sandbox {
                mode: policy.mode(),
                hidden_env,
                used: false,
                linux: crate::linux::Prepared::new(policy)?,
            })
        }
        #[cfg(target_os = "macos")]
        {
            let profile = if policy.mode() == SandboxMode::FullAccess {
                None
            } else {
                if let Some(missing) = crate::probe().missing_for(policy.mode(), false) {
                    return Err(SandboxError::Unsupported {
                        mode: policy.mode(),
                        missing,
                    });
                }
                let real = |path: &std::path::Path| {
                    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
                };
                let mut real_policy = policy.clone();
                real_policy.canonicalize_roots();
                let protected: Vec<_> = policy.protected_paths().iter().map(|p| real(p)).collect();
                crate::seatbelt_profile(&real_policy, &protected)
            };
            Ok(Sandbox {
                mode: policy.mode(),
                hidden_env,
                used: false,
                profile,
            })
        }
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        {
            if let Some(missing) = crate::probe().missing_for(policy.mode(), false) {
                return Err(SandboxError::Unsupported {
                    mode: policy.mode(),
                    missing,
                });
            }
            Ok(Sandbox {
                mode: policy.mode(),
                hidden_env,
                used: false,
            })
        }
    }

    /// The mode this sandbox confines to.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// The names of the variables the command will not get (this process has them).
    pub fn hidden_env(&self) -> &[OsString] {
        &self.hidden_env
    }

    /// A `std::process::Command` for `program`, confined: the hidden variables removed, and on
    /// Linux the confinement applied by the child to itself before it runs `program`; on macOS
    /// `program` runs under `sandbox-exec`. Set its arguments, directory and pipes as usual
    /// (but do not `env_clear` it and add secrets back); for tokio,
    /// `tokio::process::Command::from(command)`. Only one command per sandbox.
    pub fn command(&mut self, program: impl AsRef<OsStr>) -> Result<Command, SandboxError> {
        if std::mem::replace(&mut self.used, true) {
            return Err(SandboxError::AlreadyUsed);
        }
        let program = program.as_ref();
        #[cfg(target_os = "linux")]
        let mut command = self.linux.command(program);
        #[cfg(target_os = "macos")]
        let mut command = match &self.profile {
            Some(profile) => {
                let mut command = Command::new(crate::seatbelt::SANDBOX_EXEC);
                command.args(crate::seatbelt_args(profile, std::path::Path::new(program)));
                command
            }
            None => Command::new(program),
        };
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        let mut command = Command::new(program);
        for name in &self.hidden_env {
            command.env_remove(name);
        }
        Ok(command)
    }

    /// Kills every process the command left behind, now; `false` when this system gives no way
    /// to find them all (no writable cgroup: kill the command's process group instead).
    pub fn kill_remaining(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.linux.kill_remaining()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.kill_remaining();
    }
}
