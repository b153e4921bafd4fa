//! The seccomp filters: with the network off, sockets of any family but Unix; always, the
//! syscalls that would undo the sandbox or reach past it (namespaces, mounts, ptrace, other
//! processes' memory, file handles, kernel modules, keyrings, io_uring, BPF). `clone3` answers
//! ENOSYS, so the C library falls back to `clone`, whose flags a filter can see.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::SandboxError;

/// x32 system calls on x86_64 have this bit set and the same audit arch: each denied number is
/// denied with it too.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// The syscalls a confined command never makes.
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_add_key,
    libc::SYS_keyctl,
    libc::SYS_request_key,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_userfaultfd,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_syslog,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// The namespace flags `clone` may not be given.
const NAMESPACE_FLAGS: [i32; 7] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// This machine's architecture, as seccompiler names it (none: seccomp is not used here).
pub(super) fn target_arch() -> Option<TargetArch> {
    std::env::consts::ARCH.try_into().ok()
}

/// The two filters: the denials (EPERM), then `clone3` (ENOSYS).
pub(super) fn filters(network: bool) -> Result<Vec<BpfProgram>, SandboxError> {
    let fail = |err: &dyn std::fmt::Display| SandboxError::Setup(format!("seccomp: {err}"));
    let arch = target_arch().ok_or_else(|| fail(&"no filter for this architecture"))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = u64::from(flag.unsigned_abs());
            let condition = SeccompCondition::new(
                clone_flags_arg(),
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )?;
            SeccompRule::new(vec![condition])
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(&e))?;
    rules.insert(libc::SYS_clone, clone_rules);
    if !network {
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .and_then(|condition| SeccompRule::new(vec![condition]))
        .map_err(|e| fail(&e))?;
        rules.insert(libc::SYS_socket, vec![not_unix.clone()]);
        rules.insert(libc::SYS_socketpair, vec![not_unix]);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let x32: Vec<(i64, Vec<SeccompRule>)> = rules
            .iter()
            .map(|(&nr, chain)| (nr | X32_SYSCALL_BIT, chain.clone()))
            .collect();
        rules.extend(x32);
    }
    let denials = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .and_then(BpfProgram::try_from)
    .map_err(|e| fail(&e))?;
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .and_then(BpfProgram::try_from)
    .map_err(|e| fail(&e))?;
    Ok(vec![denials, clone3])
}

/// Which argument of `clone` holds the flags (the first everywhere seccompiler runs; s390 and
/// CRIS swap the first two, and seccompiler does not target them).
fn clone_flags_arg() -> u8 {
    0
}
