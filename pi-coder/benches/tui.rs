//! The terminal interface's speed as a user feels it, in a pseudo-terminal (120 x 35):
//!
//! - **start-up to the first frame**: from starting `pi` to its footer on the screen;
//! - **keystroke to screen**: from a key written to the terminal to the frame that shows it;
//! - the peak memory (RSS) of the process after those keys.
//!
//! Beside ours, the same for pi 0.73.1 (node) when `.ci/install-test-deps` has installed it in
//! `$PI_TEST_DEPS` (default `~/.cache/pi-tool-test-deps`). Run with
//! `cargo bench -p pi-coder --bench tui` (`-- --runs N` for another number of starts).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the terminal received, with the time of each read.
type Received = Arc<Mutex<Vec<u8>>>;

struct Session {
    child: Child,
    input: std::fs::File,
    output: Received,
    _home: tempfile::TempDir,
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `command` in a new pseudo-terminal with a fresh HOME and pi's agent directory
/// (a `models.json` with one model on a closed local port: nothing is sent).
fn start(mut command: Command) -> Session {
    let home = tempfile::tempdir().unwrap();
    let agent = home.path().join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("models.json"),
        r#"{"providers": {"mock": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "KEY", "models": [{"id": "mock-model"}]}}}"#,
    )
    .unwrap();
    std::fs::write(
        agent.join("settings.json"),
        r#"{"defaultProvider": "mock", "defaultModel": "mock-model"}"#,
    )
    .unwrap();
    let size = nix::pty::Winsize {
        ws_row: 35,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&size), None).expect("openpty");
    let slave = std::fs::File::from(pty.slave);
    let child = command
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TERM", "xterm-256color")
        .env("PI_OFFLINE", "1")
        .current_dir(home.path())
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .expect("start");
    let mut master = std::fs::File::from(pty.master);
    let input = master.try_clone().unwrap();
    let output: Received = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&output);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 65536];
        while let Ok(n) = master.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });
    Session {
        child,
        input,
        output,
        _home: home,
    }
}

/// Waits until what the terminal received after `from` holds `needle`; the time then.
fn wait(output: &Received, from: usize, needle: &[u8], limit: Duration) -> Option<Instant> {
    let deadline = Instant::now() + limit;
    loop {
        {
            let bytes = output.lock().unwrap();
            if bytes.len() > from && bytes[from..].windows(needle.len()).any(|w| w == needle) {
                return Some(Instant::now());
            }
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Peak resident memory of a process (`VmHWM`), in MB.
fn peak_rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

struct Figures {
    first_frame: Vec<Duration>,
    keystroke: Vec<Duration>,
    rss_mb: Vec<f64>,
}

/// `runs` starts of `command`, each followed by 20 keystrokes.
fn measure(name: &str, runs: usize, command: impl Fn() -> Command) -> Option<Figures> {
    let mut figures = Figures {
        first_frame: Vec::new(),
        keystroke: Vec::new(),
        rss_mb: Vec::new(),
    };
    for _ in 0..runs {
        let started = Instant::now();
        let mut session = start(command());
        // The footer, the last thing of a frame in both (`0.0%/128k (auto)`).
        let Some(shown) = wait(&session.output, 0, b"(auto)", Duration::from_secs(30)) else {
            eprintln!("{name}: no first frame within 30 s");
            return None;
        };
        figures.first_frame.push(shown - started);
        // Let start-up work that follows the first frame settle.
        std::thread::sleep(Duration::from_millis(300));
        for i in 0..20u8 {
            let key = b'a' + (i % 26);
            let from = session.output.lock().unwrap().len();
            let sent = Instant::now();
            session.input.write_all(&[key]).unwrap();
            // The frame that shows it: the key's letter in what is written after it.
            match wait(&session.output, from, &[key], Duration::from_secs(5)) {
                Some(at) => figures.keystroke.push(at - sent),
                None => eprintln!("{name}: key {} not shown within 5 s", key as char),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(rss) = peak_rss_mb(session.child.id()) {
            figures.rss_mb.push(rss);
        }
    }
    Some(figures)
}

fn stats(values: &mut [Duration]) -> String {
    values.sort();
    if values.is_empty() {
        return "-".into();
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    format!(
        "min {:.2} ms, median {:.2} ms, p90 {:.2} ms",
        ms(values[0]),
        ms(p(0.5)),
        ms(p(0.9))
    )
}

fn report(name: &str, figures: Option<Figures>) {
    let Some(mut figures) = figures else { return };
    let rss = figures.rss_mb.iter().copied().fold(0.0f64, f64::max);
    println!("{name}:");
    println!(
        "  start-up to first frame ({} runs): {}",
        figures.first_frame.len(),
        stats(&mut figures.first_frame)
    );
    println!(
        "  keystroke to screen ({} keys):    {}",
        figures.keystroke.len(),
        stats(&mut figures.keystroke)
    );
    println!("  peak RSS: {rss:.1} MB");
}

fn main() {
    let mut runs = 10;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--runs" {
            runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(runs);
        }
    }
    let ours = env!("CARGO_BIN_EXE_pi");
    report(
        "pi-coder (ours)",
        measure("ours", runs, || {
            let mut command = Command::new(ours);
            command.arg("--no-session");
            command
        }),
    );
    let deps = std::env::var_os("PI_TEST_DEPS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/pi-tool-test-deps"))
        });
    let Some(deps) = deps else { return };
    let node = deps.join("node22");
    let cli = deps.join("node_modules/@mariozechner/pi-coding-agent/dist/cli.js");
    if !node.exists() || !cli.exists() {
        println!(
            "pi 0.73.1: not installed in {} (.ci/install-test-deps)",
            deps.display()
        );
        return;
    }
    report(
        "pi 0.73.1 (node 22)",
        measure("pi", runs, || {
            let mut command = Command::new(&node);
            command.arg(&cli).arg("--no-session");
            command
        }),
    );
}
