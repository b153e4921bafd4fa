//! The child's side, between fork and exec: it joins its cgroup, makes its mounts, bounds its
//! processes, then restricts itself with Landlock and seccomp, in that order (each later step
//! forbids the earlier ones). Only syscalls on data made ready in the parent: no allocation, no
//! lock, as `pre_exec` requires. Any failure fails the spawn: a command never runs unconfined.
//!
//! The crate's only `unsafe` code is here.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

use landlock::{RulesetCreated, RulesetStatus};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::resource::{Resource, setrlimit};
use nix::sys::stat::Mode;
use seccompiler::BpfProgram;

use super::mounts::MountPlan;

/// What one child applies to itself.
pub(super) struct Plan {
    pub(super) cgroup_procs: Option<OwnedFd>,
    pub(super) mounts: Option<MountPlan>,
    pub(super) nproc: Option<u64>,
    pub(super) ruleset: Option<RulesetCreated>,
    pub(super) filters: Vec<BpfProgram>,
}

/// Makes `command` apply `plan` to itself before it runs its program.
pub(super) fn confine(command: &mut Command, plan: Plan) {
    let mut plan = Some(plan);
    // SAFETY: the closure runs in the forked child, and only makes syscalls on data owned by the
    // plan (paths as C strings, file descriptors, BPF programs): it allocates nothing and takes
    // no lock. The child's copy of `plan` is its own; the parent's stays `Some` and is dropped
    // with the command.
    unsafe {
        command.pre_exec(move || match plan.take() {
            Some(plan) => plan.apply(),
            None => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        });
    }
}

impl Plan {
    fn apply(mut self) -> io::Result<()> {
        if let Some(procs) = &self.cgroup_procs {
            nix::unistd::write(procs, b"0")?;
        }
        if let Some(mounts) = &self.mounts {
            make_mounts(mounts)?;
        }
        if let Some(count) = self.nproc {
            setrlimit(Resource::RLIMIT_NPROC, count, count)?;
        }
        let ruleset = self
            .ruleset
            .take()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        match ruleset.restrict_self() {
            Ok(status) if status.ruleset != RulesetStatus::NotEnforced => {}
            // Landlock did nothing (or failed): refuse to run unconfined.
            _ => return Err(io::Error::from_raw_os_error(libc::ENOSYS)),
        }
        for filter in &self.filters {
            seccompiler::apply_filter(filter)
                .map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
        }
        Ok(())
    }
}

/// The mount namespace (and user namespace), then each read-only bind.
fn make_mounts(plan: &MountPlan) -> io::Result<()> {
    unshare(plan.unshare)?;
    if let Some((uid_map, gid_map)) = &plan.id_maps {
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", uid_map)?;
        write_file(c"/proc/self/gid_map", gid_map)?;
    }
    // Our mounts stay ours: nothing propagates back to the parent's namespace.
    mount(
        None::<&CStr>,
        c"/",
        None::<&CStr>,
        MsFlags::MS_REC | MsFlags::MS_SLAVE,
        None::<&CStr>,
    )?;
    for bind in &plan.binds {
        mount(
            Some(bind.path.as_c_str()),
            bind.path.as_c_str(),
            None::<&CStr>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&CStr>,
        )?;
        mount(
            None::<&CStr>,
            bind.path.as_c_str(),
            None::<&CStr>,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | bind.remount_flags,
            None::<&CStr>,
        )?;
    }
    Ok(())
}

fn write_file(path: &CStr, content: &[u8]) -> io::Result<()> {
    let fd = nix::fcntl::open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    nix::unistd::write(&fd, content)?;
    Ok(())
}

/// The kernel's Landlock ABI version, 0 without Landlock (the landlock crate keeps its own
/// query private, so that rules never depend on it; here it only informs [`crate::probe`]).
pub(crate) fn landlock_abi() -> u8 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0, this flag only returns the ABI version.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u8::try_from(version.max(0)).unwrap_or(u8::MAX)
}

/// Whether a forked child can `unshare(flags)` and make its mounts private.
pub(super) fn try_mount_namespace(flags: &CloneFlags) -> bool {
    let flags = *flags;
    // SAFETY: the child only makes two syscalls and exits with `_exit`.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            let made = unshare(flags).is_ok()
                && mount(
                    None::<&CStr>,
                    c"/",
                    None::<&CStr>,
                    MsFlags::MS_REC | MsFlags::MS_SLAVE,
                    None::<&CStr>,
                )
                .is_ok();
            // SAFETY: `_exit` is async-signal-safe.
            unsafe { libc::_exit(if made { 0 } else { 1 }) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => loop {
            match nix::sys::wait::waitpid(child, None) {
                Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => return true,
                Err(Errno::EINTR) => continue,
                _ => return false,
            }
        },
        Err(_) => false,
    }
}
