//! Interactive mode in a pseudo-terminal (`TERM=dumb`: the line prompt): pi's commands (`/session`, `/compact`, `/model`,
//! `/thinking`, `/new`, `/resume`, `/export`, `/quit`), `!command` and `!!command`, the footer
//! with tokens, cost and context, and Ctrl-C aborting a turn while the session goes on.

use std::io::{Read, Write};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::mock::Mock;
use super::{Home, lines};

/// `pi` on a terminal.
struct Terminal {
    child: std::process::Child,
    input: std::fs::File,
    screen: Arc<Mutex<Vec<u8>>>,
    /// How much of the screen earlier waits have read.
    read: usize,
}

impl Terminal {
    fn start(command: &mut std::process::Command) -> Terminal {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        let slave = std::fs::File::from(pty.slave);
        // The line prompt, which a plain terminal keeps (tests/tui.rs drives the terminal
        // interface that a terminal with a TERM gets).
        let child = command
            .env("TERM", "dumb")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .spawn()
            .expect("run pi");
        let mut master = std::fs::File::from(pty.master);
        let input = master.try_clone().unwrap();
        let screen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&screen);
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
        Terminal {
            child,
            input,
            screen,
            read: 0,
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).replace('\r', "")
    }

    /// Waits for `needle` after what earlier waits read; returns the text up to it.
    fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = self.text();
            if let Some(at) = text[self.read.min(text.len())..].find(needle) {
                let end = self.read + at + needle.len();
                let seen = text[self.read..end].to_owned();
                self.read = end;
                return seen;
            }
            assert!(
                Instant::now() < deadline,
                "no {needle:?} in:\n{}",
                &text[self.read.min(text.len())..]
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn type_line(&mut self, line: &str) {
        self.input
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
    }

    fn interrupt(&self) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    }
}

#[test]
fn commands_shell_escapes_and_the_footer() {
    let mock = Mock::start();
    let home = Home::new(
        &mock,
        json!({"cost": {"input": 3, "output": 15, "cacheRead": 0, "cacheWrite": 0}}),
    );
    let mut pi =
        Terminal::start(
            home.ours()
                .args(["--provider", "mock", "--model", "mock-model", "-nt"]),
        );
    pi.wait_for("\n> ");
    pi.type_line("hello");
    let answer = pi.wait_for("\n> ");
    assert!(answer.contains("MOCK TEXT: hello"), "{answer}");
    // The footer: the project, then tokens, cost, context used of the window, the model.
    let stats = answer
        .lines()
        .find(|l| l.starts_with('↑'))
        .unwrap_or_else(|| panic!("no footer in {answer}"));
    let input: u64 = stats[3..].split(' ').next().unwrap().parse().unwrap();
    assert!(input > 100, "{stats}");
    assert!(stats.contains(" ↓10 $0.00"), "{stats}");
    assert!(answer.contains("%/128k (auto)  mock-model"), "{answer}");

    pi.type_line("/session");
    let info = pi.wait_for("\n> ");
    assert!(info.contains("Session Info\n\nFile: "), "{info}");
    assert!(
        info.contains("Messages\nUser: 1\nAssistant: 1\nTool Calls: 0\nTool Results: 0\nTotal: 2"),
        "{info}"
    );
    assert!(info.contains("\nCost\nTotal: 0.00"), "{info}");

    pi.type_line("!echo bang-output");
    let ran = pi.wait_for("\n> ");
    assert!(ran.contains("bang-output"), "{ran}");
    pi.type_line("!!echo quiet-output");
    let ran = pi.wait_for("\n> ");
    assert!(
        ran.contains("quiet-output") && ran.contains("(not added to the context)"),
        "{ran}"
    );
    pi.type_line("next");
    pi.wait_for("MOCK TEXT: next");
    pi.wait_for("\n> ");
    let sent = mock.requests().last().unwrap().conversation();
    assert_eq!(
        sent[2],
        (
            "user".to_owned(),
            "Ran `echo bang-output`\n```\nbang-output\n\n```".to_owned()
        ),
        "{sent:?}"
    );
    assert!(
        !format!("{sent:?}").contains("quiet-output"),
        "!! stays out of the context"
    );

    pi.type_line("/thinking");
    assert!(
        pi.wait_for("\n> ")
            .contains("Thinking: off (this model has: off)")
    );
    pi.type_line("/thinking high");
    assert!(
        pi.wait_for("\n> ")
            .contains("Thinking: off (high is not one of this model's: off)")
    );
    pi.type_line("/model mock-model");
    assert!(pi.wait_for("\n> ").contains("Model: mock/mock-model"));
    pi.type_line("/compact be brief");
    let compacted = pi.wait_for("\n> ");
    assert!(
        compacted.contains("Nothing to compact") || compacted.contains("Compacted: "),
        "{compacted}"
    );
    pi.type_line("/export page.html");
    assert!(
        pi.wait_for("\n> ")
            .contains("Session exported to: page.html")
    );
    assert!(home.project.join("page.html").exists());
    pi.type_line("/new");
    assert!(pi.wait_for("\n> ").contains("✓ New session started"));
    pi.type_line("fresh start");
    pi.wait_for("MOCK TEXT: fresh start");
    pi.wait_for("\n> ");
    assert_eq!(
        mock.requests().last().unwrap().conversation().len(),
        1,
        "a new conversation"
    );
    pi.type_line("/resume");
    pi.wait_for("Resume which?");
    pi.type_line("2");
    let resumed = pi.wait_for("\n> ");
    assert!(
        resumed.contains("Resumed ") && resumed.contains("(5 messages)"),
        "{resumed}"
    );
    pi.type_line("/quit");
    assert!(pi.child.wait().unwrap().success());
    // The first session's file has the `!` commands as pi records them.
    let files = home.session_files();
    assert_eq!(files.len(), 2);
    let bash: Vec<serde_json::Value> = files
        .iter()
        .flat_map(|f| lines(f))
        .filter(|e| e["message"]["role"] == "bashExecution")
        .map(|e| e["message"].clone())
        .collect();
    assert_eq!(bash.len(), 2);
    assert_eq!(bash[0]["command"], "echo bang-output");
    assert_eq!(bash[0]["exitCode"], 0);
    assert!(bash[0].get("excludeFromContext").is_none());
    assert_eq!(bash[1]["excludeFromContext"], true);
}

#[test]
fn ctrl_c_aborts_the_turn_and_the_session_goes_on() {
    let mock = Mock::start();
    let home = Home::new(&mock, json!({}));
    let mut pi =
        Terminal::start(
            home.ours()
                .args(["--provider", "mock", "--model", "mock-model", "--yes"]),
        );
    pi.wait_for("\n> ");
    // `sta'rted'` keeps the needle out of the echoed command line: only the output has it.
    pi.type_line("BASH echo sta'rted'; sleep 30");
    pi.wait_for("started");
    pi.interrupt();
    pi.wait_for("(aborting");
    pi.wait_for("(aborted)");
    pi.wait_for("\n> ");
    pi.type_line("and now?");
    pi.wait_for("MOCK TEXT: and now?");
    pi.type_line("/quit");
    assert!(pi.child.wait().unwrap().success(), "{}", pi.text());
    let entries = lines(&home.session_files()[0]);
    let results: Vec<&serde_json::Value> = entries
        .iter()
        .filter(|e| e["message"]["role"] == "toolResult")
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["message"]["isError"], true);
}
