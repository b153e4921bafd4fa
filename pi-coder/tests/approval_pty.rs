//! Interactive approval as a user sees it, in a pseudo-terminal: the question comes on its own
//! line after the call's header (not glued to the model's text), each line says which call it
//! is, and the time shown leaves out the time the user took to answer.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod support;
use support::{FakeServer, Script};

/// How long the user "thinks" before answering the first question.
const THINKING: Duration = Duration::from_millis(2000);
const QUESTION: &str = "  Run this command? [y]es / [N]o / [a]lways: ";

/// The terminal's text so far, `\r` removed (the terminal turns `\n` into `\r\n`).
fn screen(buffer: &Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(&buffer.lock().unwrap()).replace('\r', "")
}

fn wait_for(buffer: &Mutex<Vec<u8>>, needle: &str, count: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = screen(buffer);
        if text.matches(needle).count() >= count {
            return text;
        }
        assert!(Instant::now() < deadline, "no {needle:?} in:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn approval_questions_follow_their_call_and_durations_leave_out_the_wait() {
    let server = FakeServer::start(Script::new(&["echo one", "echo two"]).lead("Let me check"));
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let slave = std::fs::File::from(pty.slave);
    let mut child = Command::new(env!("CARGO_BIN_EXE_pi"))
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args([
            "--base-url",
            &server.address,
            "--model",
            "fake",
            "--no-session",
            // Outside the sandbox commands need approval (inside it they do not).
            "--sandbox",
            "off",
            "--cwd",
        ])
        .arg(dir.path())
        .arg("run both")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .expect("run pi");
    let mut master = std::fs::File::from(pty.master);
    let mut input = master.try_clone().unwrap();
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&buffer);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        // Reading fails (EIO) once pi has exited and the terminal is closed.
        while let Ok(n) = master.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });

    wait_for(&buffer, QUESTION, 1);
    std::thread::sleep(THINKING);
    input.write_all(b"y\n").unwrap();
    wait_for(&buffer, QUESTION, 2);
    input.write_all(b"y\n").unwrap();
    wait_for(&buffer, "Saw: ", 1);
    input.write_all(b"/exit\n").unwrap();
    let status = child.wait().expect("wait");
    let text = screen(&buffer);
    assert!(status.success(), "{text}");

    // The model's text ends its line; each header, then its question on the next line.
    let expected =
        format!("Let me check\n● bash $ echo one\n{QUESTION}y\n● bash $ echo two\n{QUESTION}y\n");
    assert!(text.contains(&expected), "{text}");
    // Each result line names its call.
    let done: Vec<&str> = text.lines().filter(|l| l.starts_with("  ✓ ")).collect();
    assert_eq!(done.len(), 2, "{text}");
    assert!(
        done.iter().any(|l| l.starts_with("  ✓ bash $ echo one (")),
        "{text}"
    );
    assert!(
        done.iter().any(|l| l.starts_with("  ✓ bash $ echo two (")),
        "{text}"
    );
    // The first call was waiting for the user for THINKING; its time leaves that out.
    for line in done {
        let ms: u64 = line
            .rsplit_once('(')
            .and_then(|(_, rest)| rest.strip_suffix(" ms)"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no duration in {line:?}"));
        assert!(
            u128::from(ms) < THINKING.as_millis(),
            "{line}: the wait for the user is counted\n{text}"
        );
    }
    // Both ran, after both were approved; the model saw their outputs in call order.
    assert!(text.contains("Saw: one\n | two\n"), "{text}");
}
