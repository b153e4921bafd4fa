//! What stays read-only inside a writable root (`.git`, `.pi`): Landlock only adds rights down a
//! tree, so these are bind-mounted read-only on themselves in the command's own mount namespace
//! (a user namespace too when not root). Landlock and seccomp then forbid undoing the mounts.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use nix::mount::MsFlags;
use nix::sched::CloneFlags;
use nix::sys::statvfs::{FsFlags, statvfs};

use crate::SandboxError;

/// A read-only bind of one path on itself, with the flags its mount already has (a remount in a
/// user namespace may not drop `nosuid`, `nodev`, ...).
pub(super) struct Bind {
    pub(super) path: CString,
    pub(super) remount_flags: MsFlags,
}

/// The namespace and the binds a child makes.
pub(super) struct MountPlan {
    pub(super) unshare: CloneFlags,
    /// `uid_map` and `gid_map` lines mapping the user to themselves, when not root.
    pub(super) id_maps: Option<(Vec<u8>, Vec<u8>)>,
    pub(super) binds: Vec<Bind>,
}

/// The flags of `unshare`: a mount namespace, in a user namespace of its own when not root.
pub(super) fn namespace_flags() -> CloneFlags {
    if nix::unistd::geteuid().is_root() {
        CloneFlags::CLONE_NEWNS
    } else {
        CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS
    }
}

impl MountPlan {
    pub(super) fn new(paths: &[PathBuf]) -> Result<MountPlan, SandboxError> {
        let unshare = namespace_flags();
        let id_maps = unshare.contains(CloneFlags::CLONE_NEWUSER).then(|| {
            let uid = nix::unistd::geteuid();
            let gid = nix::unistd::getegid();
            (
                format!("{uid} {uid} 1\n").into_bytes(),
                format!("{gid} {gid} 1\n").into_bytes(),
            )
        });
        let binds = paths
            .iter()
            .map(|path| {
                let fail = |err: &dyn std::fmt::Display| {
                    SandboxError::Setup(format!("cannot keep {} read-only: {err}", path.display()))
                };
                let real = std::fs::canonicalize(path).map_err(|e| fail(&e))?;
                let flags = statvfs(&real).map_err(|e| fail(&e))?.flags();
                let path = CString::new(real.as_os_str().as_bytes()).map_err(|e| fail(&e))?;
                Ok(Bind {
                    path,
                    remount_flags: locked_flags(flags),
                })
            })
            .collect::<Result<Vec<_>, SandboxError>>()?;
        Ok(MountPlan {
            unshare,
            id_maps,
            binds,
        })
    }
}

/// The mount flags to keep on a remount, from what `statvfs` reports.
fn locked_flags(flags: FsFlags) -> MsFlags {
    let pairs = [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ];
    pairs
        .into_iter()
        .filter(|(st, _)| flags.contains(*st))
        .fold(MsFlags::empty(), |all, (_, ms)| all | ms)
}
