//! Kill trials run a test binary's own `child_process_entry` test again as a child process
//! (told what to do through one environment variable), kill it at some point, and wait for
//! the next one: the start and the bounded wait, shared by the trials.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Starts this test binary's `child_process_entry` alone, with `var` set to `value`.
pub(crate) fn spawn(var: &str, value: String) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(var, value)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits for a child, at most a minute; its exit code (-1 when a signal ended it).
pub(crate) fn wait(mut child: Child) -> i32 {
    for _ in 0..6000 {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().ok();
    panic!("a resuming child did not finish within a minute");
}
