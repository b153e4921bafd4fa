//! The Landlock ruleset: read and run anything, write under the writable roots and to a few
//! devices; with the network off, no TCP bind or connect (ABI 4); no signals to, and no abstract
//! Unix sockets of, processes outside the sandbox (ABI 6).

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

use crate::{SandboxError, SandboxMode, SandboxPolicy};

/// The newest ABI this code asks for; the kernel's own may be older (best effort, then checked:
/// a ruleset the kernel did not enforce at all fails the spawn).
const ABI_WANTED: ABI = ABI::V6;

/// Devices every command may write: output thrown away, zeros read, the terminal.
const WRITABLE_DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
];

pub(super) fn ruleset(policy: &SandboxPolicy) -> Result<RulesetCreated, SandboxError> {
    let fail = |err: &dyn std::fmt::Display| SandboxError::Setup(format!("Landlock: {err}"));
    let all = AccessFs::from_all(ABI_WANTED);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(|e| fail(&e))?;
    if !policy.network() {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_WANTED))
            .map_err(|e| fail(&e))?;
    }
    let mut created = ruleset
        .scope(Scope::from_all(ABI_WANTED))
        .map_err(|e| fail(&e))?
        .create()
        .map_err(|e| fail(&e))?;
    // Read and run everything (ioctl on devices too: terminals need it).
    let read: BitFlags<AccessFs> = AccessFs::from_read(ABI_WANTED) | AccessFs::IoctlDev;
    created = created
        .add_rule(PathBeneath::new(
            PathFd::new("/").map_err(|e| fail(&e))?,
            read,
        ))
        .map_err(|e| fail(&e))?;
    for device in WRITABLE_DEVICES {
        if let Ok(fd) = PathFd::new(device) {
            created = created
                .add_rule(PathBeneath::new(fd, AccessFs::from_file(ABI_WANTED)))
                .map_err(|e| fail(&e))?;
        }
    }
    if policy.mode() == SandboxMode::WorkspaceWrite {
        for (index, root) in policy.writable_roots().iter().enumerate() {
            match PathFd::new(root) {
                Ok(fd) => {
                    created = created
                        .add_rule(PathBeneath::new(fd, all))
                        .map_err(|e| fail(&e))?;
                }
                // The working directory must exist; another root that does not is skipped.
                Err(err) if index == 0 => {
                    return Err(SandboxError::Setup(format!(
                        "the writable root {} cannot be opened: {err}",
                        root.display()
                    )));
                }
                Err(_) => {}
            }
        }
    }
    Ok(created)
}
