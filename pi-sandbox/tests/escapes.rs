//! The escape suite: real `bash` commands trying to get out of a `workspace-write` sandbox.
//! Each test fails if its escape works; each has a control showing the same command does work
//! where it is allowed (so a test cannot pass because the command was broken). We run as root
//! in CI: Landlock binds root too.
#![cfg(target_os = "linux")]

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use pi_sandbox::{ProcessBound, Sandbox, SandboxPolicy, probe};
use tempfile::TempDir;

/// A workspace (with a `.git`) and a folder outside it, both outside the temporary directory
/// (which `workspace-write` may write).
struct Fixture {
    workspace: TempDir,
    outside: TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        assert!(
            !base.starts_with(std::env::temp_dir()),
            "the target folder ({}) is inside the temporary directory, which workspace-write \
             may write, so no folder of it is outside the sandbox: build elsewhere \
             (CARGO_TARGET_DIR) or set TMPDIR",
            base.display()
        );
        let workspace = tempfile::tempdir_in(base).unwrap();
        let outside = tempfile::tempdir_in(base).unwrap();
        std::fs::create_dir_all(workspace.path().join(".git/hooks")).unwrap();
        std::fs::write(workspace.path().join(".git/config"), "[core]\n").unwrap();
        std::fs::write(outside.path().join("victim"), "original\n").unwrap();
        Fixture { workspace, outside }
    }

    fn ws(&self) -> &Path {
        self.workspace.path()
    }

    fn out(&self) -> &Path {
        self.outside.path()
    }

    fn policy(&self) -> SandboxPolicy {
        SandboxPolicy::workspace_write(self.ws())
    }

    /// Runs `script` with bash in the workspace under `policy`.
    fn run(&self, policy: &SandboxPolicy, script: &str) -> Ran {
        run(policy, self.ws(), script)
    }
}

struct Ran {
    code: Option<i32>,
    output: String,
}

/// Runs `bash -c script` confined, for at most 20 s (then everything it started is killed).
fn run(policy: &SandboxPolicy, cwd: &Path, script: &str) -> Ran {
    let mut sandbox = Sandbox::new(policy).expect("this machine can confine");
    let mut command = sandbox.command("/bin/bash").unwrap();
    command
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            sandbox.kill_remaining();
            let _ = child.wait();
            panic!("the command did not end within 20 s: {script}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Whatever is left (a background child) holds the pipes: kill it before reading them.
    sandbox.kill_remaining();
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let mut output = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut output)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut output)
        .unwrap();
    Ran { code, output }
}

fn unchanged(path: &Path) -> bool {
    std::fs::read_to_string(path).unwrap() == "original\n"
}

#[test]
fn writes_inside_the_workspace_and_temp_dir_work() {
    let f = Fixture::new();
    let tmp = tempfile::tempdir().unwrap();
    let script = format!(
        "echo a > inside && mkdir -p sub/dir && echo b > sub/dir/f && echo c > {}/t && cat inside",
        tmp.path().display()
    );
    let ran = f.run(&f.policy(), &script);
    assert_eq!(ran.code, Some(0), "{}", ran.output);
    assert_eq!(
        std::fs::read_to_string(f.ws().join("sub/dir/f")).unwrap(),
        "b\n"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("t")).unwrap(),
        "c\n"
    );
}

#[test]
fn no_write_outside_by_absolute_path_dotdot_or_proc_root() {
    let f = Fixture::new();
    let out = f.out().display().to_string();
    let name = f.out().file_name().unwrap().to_string_lossy().into_owned();
    for script in [
        format!("echo x > {out}/new"),
        format!("echo x >> {out}/victim"),
        format!("echo x > ../{name}/new"),
        format!("echo x > /proc/self/root{out}/new"),
        format!("echo x > /proc/$$/root{out}/new"),
        format!("rm -f {out}/victim"),
        format!("mv {out}/victim inside"),
        format!("truncate -s 0 {out}/victim"),
    ] {
        let ran = f.run(&f.policy(), &script);
        assert_ne!(ran.code, Some(0), "escaped: {script}: {}", ran.output);
        assert!(!f.out().join("new").exists(), "{script}");
        assert!(unchanged(&f.out().join("victim")), "{script}");
    }
    // Control: unconfined, the same writes work.
    let ran = run(
        &SandboxPolicy::full_access(),
        f.ws(),
        &format!("echo x > {out}/new"),
    );
    assert_eq!(ran.code, Some(0));
    assert!(f.out().join("new").exists());
}

#[test]
fn no_write_through_a_symlink_or_a_hard_link() {
    let f = Fixture::new();
    let out = f.out().display().to_string();
    // A link made before the call (by an earlier command, say), and one made in the call.
    std::os::unix::fs::symlink(f.out(), f.ws().join("old-link")).unwrap();
    for script in [
        "echo x > old-link/new".to_owned(),
        "echo x >> old-link/victim".to_owned(),
        format!("ln -s {out} link && echo x > link/new"),
        format!("ln -s {out}/victim file-link && echo x >> file-link"),
        format!("ln {out}/victim hard && echo x >> hard"),
    ] {
        let ran = f.run(&f.policy(), &script);
        assert_ne!(ran.code, Some(0), "escaped: {script}: {}", ran.output);
        assert!(!f.out().join("new").exists(), "{script}");
        assert!(unchanged(&f.out().join("victim")), "{script}");
    }
}

#[test]
fn git_stays_read_only() {
    let f = Fixture::new();
    for script in [
        "echo evil > .git/hooks/pre-commit",
        "echo '[core] hooksPath = /tmp' >> .git/config",
        "rm -rf .git",
        "mv .git moved",
        "mv .git/hooks .git/h2",
        "cd .git && echo x > ../.git/hooks/post-checkout",
    ] {
        let ran = f.run(&f.policy(), script);
        assert_ne!(ran.code, Some(0), "escaped: {script}: {}", ran.output);
        assert!(f.ws().join(".git/hooks").is_dir(), "{script}");
        assert!(!f.ws().join(".git/hooks/pre-commit").exists(), "{script}");
        assert!(
            !f.ws().join(".git/hooks/post-checkout").exists(),
            "{script}"
        );
        assert_eq!(
            std::fs::read_to_string(f.ws().join(".git/config")).unwrap(),
            "[core]\n"
        );
    }
    // `.git` is read, and the rest of the workspace stays writable.
    let ran = f.run(&f.policy(), "cat .git/config && echo ok > beside-git");
    assert_eq!(ran.code, Some(0), "{}", ran.output);
    assert_eq!(ran.output, "[core]\n");
    // Control: unconfined, the hook is written.
    let ran = run(
        &SandboxPolicy::full_access(),
        f.ws(),
        "echo evil > .git/hooks/pre-commit",
    );
    assert_eq!(ran.code, Some(0));
}

#[test]
fn no_mount_unshare_or_bind_of_the_temp_dir() {
    let f = Fixture::new();
    let out = f.out().display().to_string();
    // A folder in the temporary directory (which the sandbox may write), bound over one outside.
    let tmp = tempfile::tempdir().unwrap();
    let tmp = tmp.path().display().to_string();
    for script in [
        format!("mount --bind {tmp} {out}"),
        format!("mount -t tmpfs none {out}"),
        "mkdir -p m && mount -t tmpfs none m".to_owned(),
        "mount -o remount,rw .git".to_owned(),
        "umount .git".to_owned(),
        "unshare -r true".to_owned(),
        "unshare -Urm true".to_owned(),
        "unshare -m true".to_owned(),
        "unshare -n true".to_owned(),
        // The user namespace asked of clone rather than unshare.
        "python3 -c 'import os; os.unshare(os.CLONE_NEWUSER)'".to_owned(),
    ] {
        let ran = f.run(&f.policy(), &script);
        if ran.code == Some(0) {
            // The escape worked (as root, on the host): undo the mounts before failing, so
            // that removing the fixtures cannot reach through them.
            for target in [f.out().to_path_buf(), f.ws().join("m")] {
                let _ = std::process::Command::new("umount")
                    .arg("-l")
                    .arg(target)
                    .status();
            }
        }
        assert_ne!(ran.code, Some(0), "escaped: {script}: {}", ran.output);
    }
    assert!(
        std::fs::read_dir(f.out()).unwrap().count() == 1,
        "the outside folder changed"
    );
}

#[test]
fn no_ptrace_of_another_process() {
    let f = Fixture::new();
    // A process outside the sandbox (a sacrificial one: if the escape worked, it is the one
    // stopped). PTRACE_ATTACH is 16.
    let mut target = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let script = format!(
        "python3 -c 'import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); \\
         sys.exit(0 if libc.ptrace(16, {}, 0, 0) == 0 else 1)'",
        target.id()
    );
    let ran = f.run(&f.policy(), &script);
    let strace = f.run(&f.policy(), "strace -f true");
    let _ = target.kill();
    let _ = target.wait();
    assert_eq!(ran.code, Some(1), "ptrace worked: {}", ran.output);
    assert_ne!(strace.code, Some(0), "strace worked: {}", strace.output);
}

#[test]
fn network_off_no_tcp_to_loopback_and_no_dns_query() {
    let f = Fixture::new();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let tcp_port = tcp.local_addr().unwrap().port();
    // A DNS server's socket on loopback: a lookup's query is one datagram to it.
    let dns = UdpSocket::bind("127.0.0.1:0").unwrap();
    dns.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let dns_port = dns.local_addr().unwrap().port();
    let tcp_script = format!("exec 3<>/dev/tcp/127.0.0.1/{tcp_port} && echo connected");
    let dns_script = format!("exec 3>/dev/udp/127.0.0.1/{dns_port} && echo query >&3");
    let lookup = "getent ahosts example.com";

    let ran = f.run(&f.policy(), &tcp_script);
    assert_ne!(ran.code, Some(0), "connected: {}", ran.output);
    assert!(tcp.accept().is_err(), "the server got a connection");
    let ran = f.run(&f.policy(), &dns_script);
    assert_ne!(ran.code, Some(0), "sent: {}", ran.output);
    let mut buf = [0u8; 64];
    assert!(dns.recv(&mut buf).is_err(), "the DNS server got a query");
    let ran = f.run(&f.policy(), lookup);
    assert_ne!(ran.code, Some(0), "resolved: {}", ran.output);
    let ran = f.run(
        &f.policy(),
        "python3 -c 'import socket; socket.socket(socket.AF_INET6)'",
    );
    assert_ne!(ran.code, Some(0), "made an IPv6 socket: {}", ran.output);

    // Control: with the network allowed, both reach their server.
    let open = f.policy().with_network(true);
    let ran = f.run(&open, &tcp_script);
    assert_eq!(ran.code, Some(0), "{}", ran.output);
    let ran = f.run(&open, &dns_script);
    assert_eq!(ran.code, Some(0), "{}", ran.output);
    assert_eq!(dns.recv(&mut buf).unwrap(), "query\n".len());
    // Unix sockets still work with the network off (local tools use them).
    let ran = f.run(
        &f.policy(),
        "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"x\"); assert b.recv(1) == b\"x\"'",
    );
    assert_eq!(ran.code, Some(0), "{}", ran.output);
}

#[test]
fn a_child_that_outlives_the_command_is_killed() {
    if probe().process_bound != ProcessBound::Cgroup {
        eprintln!(
            "skipped: no writable pids cgroup here ({:?})",
            probe().process_bound
        );
        return;
    }
    let f = Fixture::new();
    // In a new session, out of the command's process group: only the cgroup finds it.
    let script = "setsid bash -c 'echo $$ > child.pid; exec sleep 60' </dev/null >/dev/null 2>&1 & \
                  while [ ! -s child.pid ]; do sleep 0.01; done";
    let ran = f.run(&f.policy(), script);
    assert_eq!(ran.code, Some(0), "{}", ran.output);
    let pid: i32 = std::fs::read_to_string(f.ws().join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "child {pid} outlived the command"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` runs (a zombie does not count).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn a_fork_bomb_is_bounded() {
    if probe().process_bound == ProcessBound::None {
        eprintln!("skipped: nothing can bound processes here (root without a pids cgroup)");
        return;
    }
    let f = Fixture::new();
    // Forks until refused; each child sleeps and is killed with the command. 200 at most, so
    // that the test cannot hurt the machine even unbounded.
    let script = "python3 -c '
import os, sys, time
n = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    print(\"refused after\", n)
    sys.exit(0)
print(\"not refused\", n)
sys.exit(1)
'";
    let ran = f.run(&f.policy().with_max_processes(24), script);
    assert_eq!(ran.code, Some(0), "{}", ran.output);
    let count: u32 = ran
        .output
        .trim()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(count < 24, "{}", ran.output);
}

#[test]
fn read_only_writes_nothing_but_dev_null() {
    let f = Fixture::new();
    let tmp = tempfile::tempdir().unwrap();
    let ran = run(
        &SandboxPolicy::read_only(),
        f.ws(),
        &format!(
            "echo x > /dev/null && cat .git/config && ! echo x > inside && ! echo x > {}/t",
            tmp.path().display()
        ),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.output);
    assert!(!f.ws().join("inside").exists());
    assert!(!tmp.path().join("t").exists());
}

#[test]
fn a_sandbox_confines_one_command() {
    let mut sandbox = Sandbox::new(&SandboxPolicy::read_only()).unwrap();
    sandbox.command("/bin/true").unwrap();
    assert!(matches!(
        sandbox.command("/bin/true"),
        Err(pi_sandbox::SandboxError::AlreadyUsed)
    ));
}
