//! What this system can confine, asked of the kernel once.

use std::sync::OnceLock;

use crate::SandboxMode;

/// How a command's processes are bounded and collected.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcessBound {
    /// A pids cgroup per command (v1 or v2, writable here): `pids.max` bounds it, and every
    /// process left in it when the call ends is killed, wherever it moved in the process tree.
    Cgroup,
    /// `RLIMIT_NPROC` (per user, and not applied to root): no cgroup is writable.
    Rlimit,
    /// Nothing bounds the count: root without a writable pids cgroup.
    None,
}

/// What the kernel supports, from [`probe`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Support {
    /// The Landlock ABI version (0: none). 1 confines the file system, 4 TCP too, 6 signals and
    /// abstract Unix sockets too.
    pub landlock_abi: u8,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Whether a mount namespace can be made (as root, or through an unprivileged user
    /// namespace): what keeps `.git` read-only inside a writable root.
    pub mount_namespace: bool,
    /// How processes are bounded.
    pub process_bound: ProcessBound,
    /// Whether this is macOS with `/usr/bin/sandbox-exec` (Seatbelt).
    pub seatbelt: bool,
}

impl Support {
    /// What `mode` needs and this system lacks, in words (`None`: it can be confined here).
    ///
    /// ```
    /// use pi_sandbox::{SandboxMode, probe};
    /// // Full access needs nothing.
    /// assert_eq!(probe().missing_for(SandboxMode::FullAccess, false), None);
    /// ```
    pub fn missing_for(&self, mode: SandboxMode, protected_paths: bool) -> Option<String> {
        if mode == SandboxMode::FullAccess || self.seatbelt {
            return None;
        }
        let mut missing = Vec::new();
        if !cfg!(any(target_os = "linux", target_os = "macos")) {
            missing.push("a sandbox for this operating system (Linux or macOS only)".to_owned());
        } else if cfg!(target_os = "macos") {
            missing.push("/usr/bin/sandbox-exec (Seatbelt)".to_owned());
        } else {
            if self.landlock_abi == 0 {
                missing.push(
                    "Landlock (Linux 5.13 or later, with `landlock` in the kernel's `lsm=` list)"
                        .to_owned(),
                );
            }
            if !self.seccomp {
                missing.push("seccomp filters (CONFIG_SECCOMP_FILTER)".to_owned());
            }
            if protected_paths && !self.mount_namespace {
                missing.push(
                    "mount namespaces (as root, or unprivileged user namespaces) to keep .git read-only"
                        .to_owned(),
                );
            }
        }
        (!missing.is_empty()).then(|| missing.join(", "))
    }
}

/// What this system's kernel supports (asked once, then remembered).
pub fn probe() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(detect)
}

#[cfg(target_os = "linux")]
fn detect() -> Support {
    Support {
        landlock_abi: crate::linux::landlock_abi(),
        seccomp: crate::linux::seccomp_available(),
        mount_namespace: crate::linux::mount_namespace_available(),
        process_bound: crate::linux::cgroup::bound_available(),
        seatbelt: false,
    }
}

#[cfg(not(target_os = "linux"))]
fn detect() -> Support {
    Support {
        landlock_abi: 0,
        seccomp: false,
        mount_namespace: false,
        process_bound: ProcessBound::None,
        seatbelt: cfg!(target_os = "macos")
            && std::path::Path::new(crate::seatbelt::SANDBOX_EXEC).exists(),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn bare() -> Support {
        Support {
            landlock_abi: 0,
            seccomp: false,
            mount_namespace: false,
            process_bound: ProcessBound::None,
            seatbelt: false,
        }
    }

    #[test]
    fn what_a_mode_lacks_is_named() {
        let missing = bare()
            .missing_for(SandboxMode::WorkspaceWrite, true)
            .unwrap();
        assert!(missing.contains("Landlock"), "{missing}");
        assert!(missing.contains("seccomp"), "{missing}");
        assert!(missing.contains("mount namespaces"), "{missing}");
        let only_mounts = Support {
            landlock_abi: 7,
            seccomp: true,
            ..bare()
        };
        assert_eq!(only_mounts.missing_for(SandboxMode::ReadOnly, false), None);
        assert!(
            only_mounts
                .missing_for(SandboxMode::WorkspaceWrite, true)
                .is_some()
        );
        assert_eq!(bare().missing_for(SandboxMode::FullAccess, true), None);
    }
}
