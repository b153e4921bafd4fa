//! macOS: the Seatbelt profile (the language of `sandbox-exec -p`) for a policy. A pure function
//! of the policy, so it is built and tested on every system; it runs only on macOS.

use std::path::{Path, PathBuf};

use crate::{SandboxMode, SandboxPolicy};

/// The program that applies a profile to the command it starts.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// The profile for `policy`, its writable roots and read-only paths given as they are on disk
/// (resolve symlinks first: Seatbelt matches real paths, `/private/tmp` and not `/tmp`).
/// `None` for [`SandboxMode::FullAccess`], which runs unconfined.
///
/// ```
/// use pi_sandbox::{SandboxPolicy, seatbelt_profile};
///
/// let policy = SandboxPolicy::workspace_write("/Users/me/project");
/// let profile = seatbelt_profile(&policy, &["/Users/me/project/.git".into()]).unwrap();
/// assert!(profile.starts_with("(version 1)\n(deny default)"));
/// assert!(profile.contains("(subpath \"/Users/me/project\")"));
/// assert!(profile.contains("(require-not (subpath \"/Users/me/project/.git\"))"));
/// assert!(!profile.contains("(allow network-outbound)\n"));
/// ```
pub fn seatbelt_profile(policy: &SandboxPolicy, read_only: &[PathBuf]) -> Option<String> {
    if policy.mode() == SandboxMode::FullAccess {
        return None;
    }
    let mut profile = String::from(BASE);
    if policy.mode() == SandboxMode::WorkspaceWrite {
        let exclusions: String = read_only
            .iter()
            .map(|path| format!(" (require-not (subpath {}))", quote(path)))
            .collect();
        for root in policy.writable_roots() {
            profile.push_str(&format!(
                "(allow file-write* (require-all (subpath {}){exclusions}))\n",
                quote(root)
            ));
        }
    }
    if policy.network() {
        profile
            .push_str("(allow network-outbound)\n(allow network-inbound)\n(allow system-socket)\n");
    }
    Some(profile)
}

/// The arguments that run `program` under the profile: `sandbox-exec -p PROFILE -- program`.
pub fn seatbelt_args(profile: &str, program: &Path) -> Vec<std::ffi::OsString> {
    vec![
        "-p".into(),
        profile.into(),
        "--".into(),
        program.as_os_str().to_owned(),
    ]
}

/// Everything but writes and the network: read any file, run programs, fork, signal its own
/// processes, the services a shell and compilers need, and `/dev/null`-like devices.
const BASE: &str = r#"(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow file-read*)
(allow sysctl-read)
(allow mach-lookup)
(allow ipc-posix-sem)
(allow ipc-posix-shm-read*)
(allow pseudo-tty)
(allow file-ioctl (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))
(allow file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (literal "/dev/dtracehelper"))
(allow system-socket (socket-domain AF_UNIX))
(allow network-outbound (remote unix-socket))
"#;

/// A path as a Seatbelt string literal.
fn quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_writes_nothing_and_full_access_has_no_profile() {
        let profile = seatbelt_profile(&SandboxPolicy::read_only(), &[]).unwrap();
        assert!(!profile.contains("(allow file-write* (require-all"));
        assert!(!profile.contains("(allow network-outbound)\n"));
        assert!(seatbelt_profile(&SandboxPolicy::full_access(), &[]).is_none());
    }

    #[test]
    fn network_when_allowed_and_paths_quoted() {
        let policy = SandboxPolicy::workspace_write("/w/a \"b\"\\c").with_network(true);
        let profile = seatbelt_profile(&policy, &[]).unwrap();
        assert!(profile.contains("(allow network-outbound)\n"));
        assert!(
            profile.contains(r#"(subpath "/w/a \"b\"\\c")"#),
            "{profile}"
        );
        // Every writable root is there: the workspace and the temporary directory.
        assert_eq!(
            profile.matches("(allow file-write* (require-all").count(),
            2
        );
    }

    #[test]
    fn arguments_put_the_profile_before_the_program() {
        let args = seatbelt_args("(version 1)", Path::new("/bin/bash"));
        assert_eq!(args, ["-p", "(version 1)", "--", "/bin/bash"]);
    }
}
