//! What confinement adds to a command: `bash -c true` spawned and waited for, unconfined and
//! confined (`workspace-write`, without and with a `.git` to keep read-only, and `read-only`),
//! interleaved in the same run so that the machine's load hits all alike. Prints the median and
//! the 90th percentile of each, and the medians' difference.
//!
//! `cargo bench -p pi-sandbox --bench spawn` (`-- 500` for more rounds; default 200).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pi_sandbox::{Sandbox, SandboxPolicy, probe};

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(200);
    let plain_dir = tempfile::tempdir().unwrap();
    let git_dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(git_dir.path().join(".git")).unwrap();
    let cases: Vec<(&str, Option<SandboxPolicy>)> = vec![
        ("unconfined", None),
        (
            "workspace-write",
            Some(SandboxPolicy::workspace_write(plain_dir.path())),
        ),
        (
            "workspace-write, .git kept",
            Some(SandboxPolicy::workspace_write(git_dir.path())),
        ),
        ("read-only", Some(SandboxPolicy::read_only())),
    ];
    println!("{:?}", probe());
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); cases.len()];
    for round in 0..rounds + 10 {
        for (index, (_, policy)) in cases.iter().enumerate() {
            let took = spawn_once(policy.as_ref());
            if round >= 10 {
                times[index].push(took);
            }
        }
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        (times[times.len() / 2], times[times.len() * 9 / 10])
    };
    let (base, _) = median(&mut times[0].clone());
    for ((name, _), times) in cases.iter().zip(&mut times) {
        let (p50, p90) = median(times);
        println!(
            "{name:<28} median {:>7.0} us  p90 {:>7.0} us  added {:>+6.0} us",
            p50.as_secs_f64() * 1e6,
            p90.as_secs_f64() * 1e6,
            (p50.as_secs_f64() - base.as_secs_f64()) * 1e6
        );
    }
}

/// One `bash -c true`, from preparing the sandbox to the sandbox's drop (cgroup removed).
fn spawn_once(policy: Option<&SandboxPolicy>) -> Duration {
    let start = Instant::now();
    let mut sandbox = policy.map(|policy| Sandbox::new(policy).unwrap());
    let mut command = match &mut sandbox {
        Some(sandbox) => sandbox.command("/bin/bash").unwrap(),
        None => Command::new("/bin/bash"),
    };
    let status = command
        .args(["-c", "true"])
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    drop(sandbox);
    start.elapsed()
}
