//! A pids cgroup per command, where one is writable (cgroup v2 with the pids controller, or the
//! v1 pids hierarchy): `pids.max` bounds a fork bomb even for root (whom `RLIMIT_NPROC` does not
//! bind), and every process left in it when the call ends is found and killed, even one that
//! left the process group with `setsid`.

use std::fs::{File, OpenOptions};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::{ProcessBound, SandboxError};

/// The folder this process makes its commands' cgroups in, if it can.
fn parent() -> Option<&'static Path> {
    static PARENT: OnceLock<Option<PathBuf>> = OnceLock::new();
    PARENT.get_or_init(find_parent).as_deref()
}

/// What bounds processes here.
pub(crate) fn bound_available() -> ProcessBound {
    if parent().is_some() {
        ProcessBound::Cgroup
    } else if nix::unistd::geteuid().is_root() {
        ProcessBound::None
    } else {
        ProcessBound::Rlimit
    }
}

/// `<our cgroup>/pi-sandbox` (shared by every process using this crate) in the v2 hierarchy if its pids controller can be used
/// there, else in the v1 pids hierarchy; made now, and checked to have `pids.max`.
fn find_parent() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut candidates = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.is_empty() {
            if let Some(mount) = mount_point(&mounts, |fstype, _| fstype == "cgroup2") {
                candidates.push(mount.join(path));
            }
        } else if controllers.split(',').any(|c| c == "pids")
            && let Some(mount) = mount_point(&mounts, |fstype, options| {
                fstype == "cgroup" && options.split(',').any(|o| o == "pids")
            })
        {
            candidates.push(mount.join(path));
        }
    }
    candidates.into_iter().find_map(|base| {
        let dir = base.join("pi-sandbox");
        if std::fs::create_dir(&dir).is_err() && !dir.is_dir() {
            return None;
        }
        // v2 needs the controller enabled for the children of `dir`; v1 has it everywhere.
        let _ = std::fs::write(dir.join("cgroup.subtree_control"), "+pids");
        let probe = dir.join(format!("probe-{}", std::process::id()));
        let usable = std::fs::create_dir(&probe).is_ok() && probe.join("pids.max").exists();
        let _ = std::fs::remove_dir(&probe);
        usable.then_some(dir)
    })
}

/// The mount point of the first mount in `mountinfo` whose file system type and super options
/// pass `matches`.
fn mount_point(mountinfo: &str, matches: impl Fn(&str, &str) -> bool) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        let point = mount.split(' ').nth(4)?;
        let mut fs = fs.split(' ');
        let fstype = fs.next()?;
        let _source = fs.next()?;
        let options = fs.next().unwrap_or("");
        matches(fstype, options).then(|| PathBuf::from(point))
    })
}

/// One command's cgroup: removed (after killing what is left in it) when dropped.
pub(crate) struct Cgroup {
    dir: PathBuf,
    procs: File,
}

impl Cgroup {
    /// A new cgroup bounded to `max` tasks, or `None` when no cgroup is writable here.
    pub(crate) fn create(max: u32) -> Result<Option<Cgroup>, SandboxError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let Some(parent) = parent() else {
            return Ok(None);
        };
        let dir = parent.join(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let fail =
            |err: std::io::Error| SandboxError::Setup(format!("cgroup {}: {err}", dir.display()));
        std::fs::create_dir(&dir).map_err(fail)?;
        let made = std::fs::write(dir.join("pids.max"), max.to_string()).and_then(|()| {
            OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
        });
        match made {
            Ok(procs) => Ok(Some(Cgroup { dir, procs })),
            Err(err) => {
                let _ = std::fs::remove_dir(&dir);
                Err(fail(err))
            }
        }
    }

    /// The `cgroup.procs` file the child writes itself into.
    pub(crate) fn procs_fd(&self) -> Result<OwnedFd, SandboxError> {
        self.procs
            .try_clone()
            .map(OwnedFd::from)
            .map_err(|err| SandboxError::Setup(format!("cgroup: {err}")))
    }

    /// SIGKILL to every process in the cgroup, until none is left (a process forking while
    /// the list is read is caught on the next round; `pids.max` bounds how many there can be).
    pub(crate) fn kill_all(&self) {
        for _ in 0..1000 {
            let Ok(list) = std::fs::read_to_string(self.dir.join("cgroup.procs")) else {
                return;
            };
            let pids: Vec<i32> = list.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if self.dir.as_os_str().is_empty() || std::fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        // Processes were left, or killed ones are not reaped yet: finish in the background.
        let dir = std::mem::take(&mut self.dir);
        let cgroup = Cgroup {
            dir,
            procs: match self.procs.try_clone() {
                Ok(procs) => procs,
                Err(_) => return,
            },
        };
        std::thread::spawn(move || {
            cgroup.kill_all();
            for _ in 0..200 {
                if std::fs::remove_dir(&cgroup.dir).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            // Leave the (empty) path to the next drop: nothing more to do.
            let mut cgroup = cgroup;
            cgroup.dir = PathBuf::new();
        });
    }
}
