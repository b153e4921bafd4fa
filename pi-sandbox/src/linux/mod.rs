//! Linux: Landlock for the file system (and TCP, signals and abstract sockets where the ABI has
//! them), seccomp for the network and the syscalls that would undo the rest, a mount namespace
//! for what stays read-only inside a writable root, and a pids cgroup for the process count.

pub(crate) mod cgroup;
mod child;
mod filesystem;
mod mounts;
mod seccomp;

use std::ffi::OsStr;
use std::process::Command;

pub(crate) use child::landlock_abi;

use crate::{SandboxError, SandboxMode, SandboxPolicy};

/// Whether seccomp filters can be installed (the kernel lists its filter actions).
pub(crate) fn seccomp_available() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail")
        .is_ok_and(|actions| actions.split_whitespace().any(|action| action == "errno"))
        && seccomp::target_arch().is_some()
}

/// Whether a child can make its own mount namespace (tried once in a forked child).
pub(crate) fn mount_namespace_available() -> bool {
    child::try_mount_namespace(&mounts::namespace_flags())
}

/// Everything a confined child applies to itself between fork and exec, made ready in the
/// parent (the child only makes syscalls: no allocation, no lock).
pub(crate) struct Prepared {
    plan: Option<child::Plan>,
    cgroup: Option<cgroup::Cgroup>,
}

impl Prepared {
    /// Builds the Landlock ruleset, the seccomp filters, the mounts and the cgroup for `policy`.
    pub(crate) fn new(policy: &SandboxPolicy) -> Result<Prepared, SandboxError> {
        if policy.mode() == SandboxMode::FullAccess {
            return Ok(Prepared {
                plan: None,
                cgroup: None,
            });
        }
        let protected = policy.protected_paths();
        if let Some(missing) = crate::probe().missing_for(policy.mode(), !protected.is_empty()) {
            return Err(SandboxError::Unsupported {
                mode: policy.mode(),
                missing,
            });
        }
        let ruleset = filesystem::ruleset(policy)?;
        let filters = seccomp::filters(policy.network())?;
        let mounts = if protected.is_empty() {
            None
        } else {
            Some(mounts::MountPlan::new(&protected)?)
        };
        let cgroup = cgroup::Cgroup::create(policy.max_processes())?;
        let nproc = match (&cgroup, nix::unistd::geteuid().is_root()) {
            (None, false) => Some(u64::from(policy.max_processes())),
            _ => None,
        };
        let plan = child::Plan {
            cgroup_procs: cgroup.as_ref().map(cgroup::Cgroup::procs_fd).transpose()?,
            mounts,
            nproc,
            ruleset: Some(ruleset),
            filters,
        };
        Ok(Prepared {
            plan: Some(plan),
            cgroup,
        })
    }

    /// A command running `program` that confines itself before it starts.
    pub(crate) fn command(&mut self, program: &OsStr) -> Command {
        let mut command = Command::new(program);
        if let Some(plan) = self.plan.take() {
            child::confine(&mut command, plan);
        }
        command
    }

    /// Kills every process left in the command's cgroup; `false` when there is no cgroup.
    pub(crate) fn kill_remaining(&self) -> bool {
        match &self.cgroup {
            Some(cgroup) => {
                cgroup.kill_all();
                true
            }
            None => false,
        }
    }
}
