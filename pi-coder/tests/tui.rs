//! The terminal interface as a user sees it: the real `pi` binary in a real terminal (tmux),
//! keys sent with `send-keys`, the screen read with `capture-pane`, against the local scripted
//! model server of `support`. Each test has its own tmux server (`-L`), killed at the end even
//! when the test fails; every wait polls the screen with a deadline (no sleep is an assertion).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

mod support;
use support::{FakeServer, Script};

/// How long a wait for the screen lasts before the test fails (a loaded machine is slow).
const DEADLINE: Duration = Duration::from_secs(40);

/// Whether tmux is here; without it the tests are skipped, except in CI (`CI=true`), where
/// `.ci/run` installs it and its absence is a failure.
fn have_tmux() -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").is_err(),
            "tmux is missing (.ci/run installs it)"
        );
        eprintln!("skipped: tmux is not installed");
    }
    found
}

/// A terminal running `pi` under a shell that, once `pi` exits, prints its exit status and
/// whether the terminal is back in its usual mode (`stty`), then waits.
struct Pane {
    socket: String,
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// A user's world: a HOME, pi's agent directory, a project, a session directory.
struct World {
    _root: tempfile::TempDir,
    home: PathBuf,
    agent: PathBuf,
    project: PathBuf,
    sessions: PathBuf,
}

impl World {
    fn new() -> World {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let agent = root.path().join("agent");
        let project = root.path().join("project");
        let sessions = root.path().join("sessions");
        for dir in [&home, &agent, &project, &sessions] {
            std::fs::create_dir_all(dir).unwrap();
        }
        World {
            _root: root,
            home,
            agent,
            project,
            sessions,
        }
    }

    /// `pi` with the fake server as the model.
    fn pi(&self, server: &FakeServer, extra: &[&str], width: u16, height: u16) -> Pane {
        let mut args = vec![
            "--base-url".to_owned(),
            server.address.clone(),
            "--model".into(),
            "fake".into(),
        ];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        self.run(&args, "xterm-256color", width, height)
    }

    fn run(&self, args: &[String], term: &str, width: u16, height: u16) -> Pane {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let socket = format!(
            "pi-tui-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        );
        let quoted: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
        let script = format!(
            "trap : INT; {} {}; printf '[exit %s]\\n' $?; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '; echo; sleep 600",
            shell_quote(env!("CARGO_BIN_EXE_pi")),
            quoted.join(" ")
        );
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "pi",
            ])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .arg("-c")
            .arg(&self.project)
            .args(["env", "-i"])
            .arg(format!("HOME={}", self.home.display()))
            .arg(format!(
                "PATH={}",
                std::env::var("PATH").unwrap_or_default()
            ))
            .arg(format!("TERM={term}"))
            .arg(format!("PI_CODING_AGENT_DIR={}", self.agent.display()))
            .arg(format!(
                "PI_CODING_AGENT_SESSION_DIR={}",
                self.sessions.display()
            ))
            .args(["sh", "-c", &script])
            .status()
            .expect("run tmux");
        assert!(status.success());
        let pane = Pane { socket };
        // The window keeps its size whatever clients attach (there are none).
        pane.tmux(&["set-option", "-g", "window-size", "manual"]);
        pane
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

impl Pane {
    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Keys by tmux's names (`Enter`, `C-c`, `M-Enter`, `Up`) or literal text.
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "pi"];
        args.extend(keys);
        self.tmux(&args);
    }

    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "pi", "-l", text]);
    }

    /// A bracketed paste of `text` (tmux wraps it in the paste marks when pi asked for them).
    fn paste(&self, text: &str) {
        self.tmux(&["set-buffer", "-b", "p", text]);
        self.tmux(&["paste-buffer", "-p", "-b", "p", "-t", "pi"]);
    }

    /// The visible screen.
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "pi"])
    }

    /// Waits until the screen satisfies `check`; the screen then.
    fn wait_until(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn wait_for(&self, needle: &str) -> String {
        self.wait_until(needle, |s| s.contains(needle))
    }

    /// The editor's text: the lines between its two borders.
    fn editor(&self) -> String {
        let screen = self.screen();
        let lines: Vec<&str> = screen.lines().collect();
        let borders: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.starts_with("─────"))
            .map(|(i, _)| i)
            .collect();
        match borders.as_slice() {
            [.., top, bottom] => lines[top + 1..*bottom]
                .iter()
                .map(|l| l.trim_end())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => panic!("no editor on the screen:\n{screen}"),
        }
    }

    fn wait_editor(&self, expected: &str) {
        let deadline = Instant::now() + DEADLINE;
        while self.editor() != expected {
            assert!(
                Instant::now() < deadline,
                "the editor holds {:?}, not {expected:?}:\n{}",
                self.editor(),
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Waits for `pi` to exit; its status and the terminal's mode after it.
    fn wait_exit(&self) -> (i32, String) {
        let screen = self.wait_for("[exit ");
        let line = screen
            .lines()
            .find_map(|l| l.split_once("[exit ").map(|(_, r)| r.to_owned()))
            .unwrap();
        let code: i32 = line.trim_end_matches(']').trim().parse().unwrap();
        let modes = self.wait_until("stty's modes", |s| s.contains("icanon"));
        (code, modes)
    }

    /// The pid of `pi` (the shell's child).
    fn pi_pid(&self) -> u32 {
        let shell: u32 = self
            .tmux(&["display-message", "-p", "-t", "pi", "#{pane_pid}"])
            .trim()
            .parse()
            .unwrap();
        let children =
            std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
        children.split_whitespace().next().unwrap().parse().unwrap()
    }
}

/// The last user message of each request the model got.
fn prompts(server: &FakeServer) -> Vec<serde_json::Value> {
    server
        .seen()
        .iter()
        .filter_map(|seen| seen.body["messages"].as_array()?.last().cloned())
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].clone())
        .collect()
}

fn text_of(content: &serde_json::Value) -> String {
    match content {
        serde_json::Value::String(text) => text.clone(),
        other => other
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str())
            .collect(),
    }
}

/// Asserts that the terminal is back in cooked mode with echo (`icanon`, `echo`, not `-icanon`).
fn assert_restored(modes: &str) {
    let words: Vec<&str> = modes.lines().flat_map(str::split_whitespace).collect();
    assert!(
        words.contains(&"icanon") && words.contains(&"echo") && !words.contains(&"-icanon"),
        "the terminal was left in raw mode:\n{modes}"
    );
}

#[test]
fn editor_multi_line_paste_line_keys_and_history_across_sessions() {
    if !have_tmux() {
        return;
    }
    let server = FakeServer::start(Script::echo(&[]));
    let world = World::new();
    let pane = world.pi(&server, &["--no-session"], 100, 30);
    pane.wait_for("────");
    // Ctrl+J adds a line; Enter sends both lines as one prompt.
    pane.type_text("first line");
    pane.keys(&["C-j"]);
    pane.type_text("second line");
    pane.wait_editor("first line\nsecond line");
    pane.keys(&["Enter"]);
    pane.wait_for("Echo: first line | second line");
    // A bracketed paste of two lines is one message, not two.
    pane.paste("pasted A\npasted B");
    pane.wait_editor("pasted A\npasted B");
    pane.keys(&["Enter"]);
    pane.wait_for("Echo: pasted A | pasted B");
    // The line-editing keys.
    pane.type_text("hello big world");
    pane.keys(&["C-w"]);
    pane.wait_editor("hello big");
    pane.keys(&["M-b"]);
    pane.type_text("very ");
    pane.keys(&["C-a"]);
    pane.type_text("> ");
    pane.keys(&["C-e"]);
    pane.keys(&["BSpace"]);
    pane.keys(&["BSpace"]);
    pane.wait_editor("> hello very bi");
    pane.keys(&["Home"]);
    pane.keys(&["M-f"]);
    pane.keys(&["C-k"]);
    pane.wait_editor("> hello");
    pane.keys(&["Left", "Left", "DC"]);
    pane.wait_editor("> helo");
    pane.keys(&["C-u"]);
    pane.wait_editor("o");
    pane.keys(&["C-k"]);
    pane.wait_editor("");
    // Up recalls the last prompts, Down comes back.
    pane.keys(&["Up"]);
    pane.wait_editor("pasted A\npasted B");
    pane.keys(&["Up", "Up", "Up"]);
    pane.wait_editor("first line\nsecond line");
    pane.keys(&["Down", "Down"]);
    pane.wait_editor("pasted A\npasted B");
    // Past the newest: the text being written before (none).
    pane.keys(&["Down"]);
    pane.wait_editor("");
    pane.type_text("draft");
    // Ctrl+C clears the editor, and a second one quits at once.
    pane.wait_editor("draft");
    pane.keys(&["C-c"]);
    pane.wait_editor("");
    pane.wait_for("Press Ctrl+C again to exit");
    pane.keys(&["C-c"]);
    let (code, modes) = pane.wait_exit();
    assert_eq!(code, 0);
    assert_restored(&modes);
    let sent: Vec<String> = prompts(&server).iter().map(text_of).collect();
    assert_eq!(sent, ["first line\nsecond line", "pasted A\npasted B"]);
    drop(pane);

    // The next session has the history.
    let pane = world.pi(&server, &["--no-session"], 100, 30);
    pane.wait_for("────");
    pane.keys(&["Up"]);
    pane.wait_editor("pasted A\npasted B");
    // Ctrl+D on a full editor deletes (nothing at the end), on an empty one quits.
    pane.keys(&["C-d"]);
    pane.type_text("!");
    pane.wait_editor("pasted A\npasted B!");
    pane.keys(&["C-c"]);
    pane.wait_editor("");
    pane.keys(&["C-d"]);
    let (code, modes) = pane.wait_exit();
    assert_eq!(code, 0);
    assert_restored(&modes);
}

#[test]
fn at_and_tab_complete_paths_and_an_image_path_pasted_is_attached() {
    if !have_tmux() {
        return;
    }
    let server = FakeServer::start(Script::echo(&[]));
    let world = World::new();
    let project = &world.project;
    std::fs::create_dir_all(project.join("src/deep")).unwrap();
    std::fs::write(project.join("notes.txt"), "hi").unwrap();
    std::fs::write(project.join("notebook.md"), "hi").unwrap();
    std::fs::write(project.join("src/deep/main.rs"), "fn main() {}").unwrap();
    std::fs::write(project.join("noisy.log"), "x").unwrap();
    std::fs::write(project.join(".gitignore"), "*.log\n").unwrap();
    // A 1x1 PNG.
    let png = [
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f,
        0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8,
        0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00,
        0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];
    let image = world.home.join("shot one.png");
    std::fs::write(&image, png).unwrap();

    let pane = world.pi(&server, &["--no-session"], 100, 30);
    pane.wait_for("────");
    // `@` lists the project's files that match, ignored ones left out.
    pane.type_text("look at @no");
    let screen = pane.wait_for("→ notes.txt");
    assert!(screen.contains("notebook.md"), "{screen}");
    assert!(!screen.contains("noisy.log"), "{screen}");
    pane.keys(&["Down", "Tab"]);
    pane.wait_editor("look at @notebook.md");
    pane.keys(&["C-u"]);
    pane.type_text("@sdm");
    pane.wait_for("→ src/deep/main.rs");
    pane.keys(&["Enter"]);
    pane.wait_editor("@src/deep/main.rs");
    pane.keys(&["C-u"]);
    // Tab completes a path, the common part of several with the list.
    pane.type_text("cat sr");
    pane.keys(&["Tab"]);
    pane.wait_editor("cat src/");
    pane.type_text("d");
    pane.keys(&["Tab"]);
    pane.wait_editor("cat src/deep/");
    pane.keys(&["Tab"]);
    pane.wait_editor("cat src/deep/main.rs");
    pane.keys(&["C-u"]);
    pane.type_text("read ");
    pane.keys(&["Tab"]);
    pane.wait_for("notes.txt");
    // (Escape on its own: right before another key it reads as Alt with that key.)
    pane.keys(&["Escape"]);
    pane.wait_until("the list closed", |s| !s.contains("→ "));
    pane.keys(&["C-u"]);
    pane.wait_editor("");

    // An image file's path pasted: attached, with a marker in the editor.
    pane.type_text("what is this ");
    pane.paste(&format!("'{}'", image.display()));
    pane.wait_editor("what is this [image #1: shot one.png]");
    pane.keys(&["Enter"]);
    pane.wait_for("Echo: what is this [image #1: shot one.png] [+image]");
    let last = prompts(&server).pop().unwrap();
    let parts = last.as_array().expect("text and image parts");
    assert!(
        parts.iter().any(|p| p["type"] == "image_url"),
        "no image sent: {last}"
    );
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.wait_exit().0, 0);
}

#[test]
fn escape_stops_a_turn_and_typing_while_working_steers_or_follows_up() {
    if !have_tmux() {
        return;
    }
    let server = FakeServer::start(Script::echo(&[]));
    let world = World::new();
    let pane = world.pi(&server, &["--no-session"], 100, 30);
    pane.wait_for("────");
    pane.type_text("SLOW one");
    pane.keys(&["Enter"]);
    pane.wait_for("Working... (esc to interrupt)");
    pane.wait_for("word3");
    pane.keys(&["Escape"]);
    let screen = pane.wait_for("Operation aborted");
    assert!(!screen.contains("word39"), "{screen}");
    pane.wait_until("the spinner to stop", |s| !s.contains("Working..."));

    // Messages queued for a turn that is stopped come back into the editor, not sent.
    pane.type_text("SLOW again");
    pane.keys(&["Enter"]);
    pane.wait_for("word1");
    pane.type_text("queued one");
    pane.keys(&["Enter"]);
    pane.wait_for("Steering: queued one");
    pane.keys(&["Escape"]);
    pane.wait_editor("queued one");
    assert!(!pane.screen().contains("Steering:"));
    pane.keys(&["C-u"]);
    pane.wait_editor("");

    // Enter while working steers, Alt+Enter queues a follow-up; both shown until sent.
    pane.type_text("SLOW two");
    pane.keys(&["Enter"]);
    pane.wait_for("word1");
    pane.type_text("SLOW steered");
    pane.keys(&["Enter"]);
    pane.type_text("after that");
    pane.keys(&["M-Enter"]);
    let screen = pane.wait_for("Follow-up: after that");
    assert!(screen.contains("Steering: SLOW steered"), "{screen}");
    // The footer follows each answer within the turn: the first answer's usage is there while
    // the steered one still streams (the two stopped ones had none).
    pane.wait_until("the footer during the turn", |s| {
        s.contains("↑200 ↓40 ") && s.contains("Working...")
    });
    pane.wait_for("Echo: after that");
    pane.wait_for("↑600 ↓120 ");
    let sent: Vec<String> = prompts(&server).iter().map(text_of).collect();
    assert_eq!(
        sent,
        [
            "SLOW one",
            "SLOW again",
            "SLOW two",
            "SLOW steered",
            "after that"
        ]
    );
    pane.wait_until("the queue to empty", |s| {
        !s.contains("Steering:") && !s.contains("Follow-up:")
    });
    // The user's own commands: shown like a tool call; Escape stops a long one.
    pane.type_text("!echo bang-out");
    pane.keys(&["Enter"]);
    pane.wait_until("the command's output", |s| {
        s.contains("$ echo bang-out") && s.lines().any(|l| l.trim() == "bang-out")
    });
    pane.type_text("!sleep 30");
    pane.keys(&["Enter"]);
    pane.wait_for("$ sleep 30");
    pane.keys(&["Escape"]);
    pane.wait_for("(command cancelled)");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.wait_exit().0, 0);
}

#[test]
fn markdown_tool_calls_thinking_approval_and_the_footer() {
    if !have_tmux() {
        return;
    }
    let server = FakeServer::start(Script::echo(&["seq 1 12"]));
    let world = World::new();
    // Outside the sandbox, so that the command needs approval.
    let pane = world.pi(&server, &["--no-session", "--sandbox", "off"], 100, 40);
    pane.wait_for("────");
    pane.type_text("MARKDOWN please");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("└───┴────┘");
    for shown in [
        "Heading One",
        "Some bold and code.",
        "- item one",
        "```rust",
        "  fn main() {}",
        "┌───┬────┐",
        "│ a │ b  │",
        "│ 1 │ 22 │",
    ] {
        assert!(screen.contains(shown), "{shown:?} not in:\n{screen}");
    }
    assert!(
        !screen.contains("# Heading") && !screen.contains("**bold**"),
        "{screen}"
    );
    // The footer: the directory, the tokens and context, the model.
    let footer: Vec<&str> = screen
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(2)
        .collect();
    assert!(footer[0].starts_with("↑200 ↓40 "), "{screen}");
    assert!(footer[0].trim_end().ends_with("fake"), "{screen}");
    assert!(footer[1].contains("project"), "{screen}");

    // A command: the question, then the call's box with its output collapsed.
    pane.type_text("BASH count");
    pane.keys(&["Enter"]);
    pane.wait_for("Run this command? [y]es / [N]o / [a]lways");
    pane.wait_for("$ seq 1 12");
    pane.keys(&["y"]);
    let screen = pane.wait_for("Saw: 1");
    assert!(
        screen.contains("... (7 earlier lines, ctrl+o to expand)"),
        "{screen}"
    );
    assert!(screen.contains("Took "), "{screen}");
    assert!(!screen.lines().any(|l| l.trim() == "7"), "{screen}");
    // Ctrl+O shows all of it.
    pane.keys(&["C-o"]);
    pane.wait_until("the whole output", |s| {
        s.lines().any(|l| l.trim() == "7") && !s.contains("ctrl+o to expand")
    });
    pane.keys(&["C-o"]);
    pane.wait_for("ctrl+o to expand");

    // Thinking: shown, then one line with Ctrl+T.
    pane.type_text("THINK hard");
    pane.keys(&["Enter"]);
    pane.wait_for("Done thinking");
    pane.wait_for("pondering deeply");
    pane.keys(&["C-t"]);
    pane.wait_until("thinking hidden", |s| {
        s.contains("Thinking...") && !s.contains("pondering deeply")
    });
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.wait_exit().0, 0);
}

/// pi's agent directory with a `models.json` provider (two models) and its settings.
fn mock_provider(world: &World, server: &FakeServer) {
    std::fs::write(
        world.agent.join("models.json"),
        serde_json::json!({"providers": {"mock": {
        "baseUrl": server.address, "api": "openai-completions", "apiKey": "MOCK_KEY",
        "models": [
            {"id": "mock-model", "contextWindow": 128000, "maxTokens": 16384},
            {"id": "mock-two", "contextWindow": 128000, "maxTokens": 16384, "reasoning": true}
        ]}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        world.agent.join("settings.json"),
        r#"{"defaultProvider": "mock", "defaultModel": "mock-model", "defaultThinkingLevel": "off", "theme": "dark"}"#,
    )
    .unwrap();
}

#[test]
fn model_and_resume_selectors_save_and_resume_and_help_lists_providers() {
    if !have_tmux() {
        return;
    }
    let server = FakeServer::start(Script::echo(&[]));
    let world = World::new();
    mock_provider(&world, &server);
    let pane = world.run(&[], "xterm-256color", 100, 30);
    pane.wait_for("mock-model");
    pane.type_text("first prompt of the session");
    pane.keys(&["Enter"]);
    pane.wait_for("Echo: first prompt of the session");
    // /model: a searchable list, the current one checked.
    pane.type_text("/model");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("Select model");
    assert!(screen.contains("mock/mock-model ✓"), "{screen}");
    assert!(screen.contains("mock/mock-two"), "{screen}");
    pane.type_text("two");
    pane.wait_until("the list filtered", |s| !s.contains("  mock/mock-model"));
    pane.keys(&["Enter"]);
    pane.wait_for("Model: mock/mock-two");
    // Saved as pi saves it, the other keys kept.
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(world.agent.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(settings["defaultProvider"], "mock");
    assert_eq!(settings["defaultModel"], "mock-two");
    assert_eq!(settings["theme"], "dark");
    // Ctrl+P: the next model, and the next.
    pane.keys(&["C-p"]);
    pane.wait_for("Model: mock/mock-model");
    pane.keys(&["C-p"]);
    pane.wait_until("back to mock-two", |s| {
        s.matches("Model: mock/mock-two").count() == 2
    });
    // `/` lists the commands that start so; Tab takes one.
    pane.type_text("/th");
    pane.wait_for("→ /thinking");
    pane.keys(&["Tab"]);
    pane.wait_editor("/thinking");
    pane.keys(&["C-u"]);
    // Shift+Tab changes the thinking level, saved too.
    pane.keys(&["BTab"]);
    pane.wait_for("Thinking level: minimal");
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(world.agent.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(settings["defaultThinkingLevel"], "minimal");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.wait_exit().0, 0);
    drop(pane);

    // The next start uses the saved model; -r lists the session to resume.
    let pane = world.run(&["-r".to_owned()], "xterm-256color", 100, 30);
    let screen = pane.wait_for("Resume a session");
    assert!(screen.contains("first prompt of the session"), "{screen}");
    pane.type_text("first");
    pane.keys(&["Enter"]);
    // The footer is drawn again when the turn ends, perhaps a frame after the answer.
    pane.wait_until("the answer and the saved model in the footer", |s| {
        s.contains("Echo: first prompt of the session") && s.contains("mock-two • minimal")
    });
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.wait_exit().0, 0);
    drop(pane);

    // --help names the models.json provider.
    let help = Command::new(env!("CARGO_BIN_EXE_pi"))
        .env("PI_CODING_AGENT_DIR", &world.agent)
        .env("HOME", &world.home)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("mock (models.json)"), "{help}");
    for provider in [
        "openai",
        "anthropic",
        "google",
        "mistral",
        "azure-openai-responses",
    ] {
        assert!(help.contains(provider), "{provider} not in {help}");
    }
}

#[test]
fn narrow_terminals_resize_and_plain_terminals_keep_the_line_mode() {
    if !have_tmux() {
        return;
    }
    let server = FakeServer::start(Script::echo(&[]));
    let world = World::new();
    let pane = world.pi(&server, &["--no-session"], 24, 30);
    pane.wait_for("────");
    pane.type_text("MARKDOWN");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("Some bold and");
    assert!(screen.contains("┌───┬────┐"), "{screen}");
    // Wider: drawn again at the new width, the footer at the bottom.
    pane.tmux(&["resize-window", "-t", "pi", "-x", "60", "-y", "30"]);
    let screen = pane.wait_until("the wider editor", |s| s.contains(&"─".repeat(60)));
    assert!(screen.contains("Some bold and code."), "{screen}");
    let last = screen
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert!(last.trim_end().ends_with("fake"), "{screen}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.wait_exit().0, 0);
    drop(pane);

    // TERM=dumb: the line prompt, no interface.
    let args = vec![
        "--base-url".to_owned(),
        server.address.clone(),
        "--model".into(),
        "fake".into(),
        "--no-session".into(),
    ];
    let pane = world.run(&args, "dumb", 80, 24);
    pane.wait_for("/help lists the commands");
    let screen = pane.screen();
    assert!(!screen.contains("────"), "{screen}");
    pane.type_text("plain");
    pane.keys(&["Enter"]);
    // The turn has ended when the footer and the next prompt follow the answer.
    pane.wait_until("the idle prompt after the answer", |screen| {
        screen
            .split("Echo: plain")
            .nth(1)
            .is_some_and(|after| after.lines().any(|line| line.trim_end() == ">"))
    });
    // Ctrl+C at the idle prompt quits at once here too.
    pane.keys(&["C-c"]);
    assert_eq!(pane.wait_exit().0, 0);
}

#[test]
fn the_terminal_is_restored_after_sigterm_and_sigint() {
    if !have_tmux() {
        return;
    }
    let server = FakeServer::start(Script::echo(&[]));
    let world = World::new();
    for (signal, code) in [("-TERM", 143), ("-INT", 130), ("-HUP", 129)] {
        let pane = world.pi(&server, &["--no-session"], 80, 24);
        pane.wait_for("────");
        let pid = pane.pi_pid();
        let killed = Command::new("kill")
            .arg(signal)
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(killed.success());
        let (exit, modes) = pane.wait_exit();
        assert_eq!(exit, code, "{signal}");
        assert_restored(&modes);
    }
}

/// `--mcp ask=...`: tests/support/asking_server.py under the MCP Python SDK of the test
/// dependencies (`.ci/install-test-deps`); `None` (skipped) when they are missing, outside CI.
fn asking_server() -> Option<String> {
    let deps = std::env::var_os("PI_TEST_DEPS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/pi-tool-test-deps"))
        })?;
    let python = deps.join("venv/bin/python");
    if !python.exists() {
        assert!(
            std::env::var("CI").is_err(),
            "the MCP Python SDK is missing: run .ci/install-test-deps"
        );
        eprintln!("skipped: the MCP Python SDK is missing (run .ci/install-test-deps)");
        return None;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/asking_server.py");
    Some(format!("ask={} {}", python.display(), script.display()))
}

#[test]
fn a_servers_form_is_answered_field_by_field_cancelled_with_escape_and_declined() {
    if !have_tmux() {
        return;
    }
    let Some(mcp) = asking_server() else {
        return;
    };
    let server = FakeServer::start(Script::new(&["{}"]).tool("ask__profile"));
    let world = World::new();
    let pane = world.pi(&server, &["--no-session", "--mcp", &mcp], 100, 40);
    pane.wait_for("────");
    pane.type_text("who am I");
    pane.keys(&["Enter"]);
    // The server's message (its escape sequence removed), then the first field.
    let screen = pane.wait_for("Name (1 of 4, required): text");
    assert!(screen.contains("MCP server \"ask\" asks:"), "{screen}");
    assert!(screen.contains("Who are you?"), "{screen}");
    assert!(screen.contains("what to call you"), "{screen}");
    assert!(!screen.contains("pwned"), "{screen}");
    let title = pane.tmux(&["display-message", "-p", "-t", "pi", "#{pane_title}"]);
    assert!(
        !title.contains("pwned"),
        "the server set the title: {title}"
    );
    pane.type_text("Ada");
    pane.wait_editor("Ada");
    pane.keys(&["Enter"]);
    // An empty Enter takes the default.
    pane.wait_for("Age (2 of 4, default 36): a whole number");
    pane.wait_editor("");
    pane.keys(&["Enter"]);
    pane.wait_for("Pets (3 of 4, required): a whole number");
    // A wrong type is refused with the reason and asked again, the text kept to fix.
    pane.type_text("many");
    pane.keys(&["Enter"]);
    pane.wait_for("That does not fit: ");
    pane.wait_until("Pets asked again", |s| {
        s.contains("Pets (3 of 4, required)")
    });
    pane.wait_editor("many");
    pane.keys(&["C-u"]);
    pane.type_text("2");
    pane.keys(&["Enter"]);
    // Choices: numbered, picked with the arrows.
    let screen = pane.wait_for("Plan (4 of 4, required): one of");
    assert!(
        screen.contains("1. free") && screen.contains("2. team"),
        "{screen}"
    );
    pane.keys(&["Down", "Down"]);
    pane.wait_for("→ 2. team");
    pane.keys(&["Enter"]);
    pane.wait_for(r#"Saw: accepted {"age": 36, "name": "Ada", "pets": 2, "plan": "team"}"#);
    // The answers went to the server, none to the model as a message.
    let texts: Vec<String> = prompts(&server).iter().map(text_of).collect();
    assert_eq!(texts, ["who am I"], "{texts:?}");

    // Escape cancels the whole question: the server hears `cancel`; the turn goes on.
    pane.type_text("again");
    pane.keys(&["Enter"]);
    pane.wait_for("Name (1 of 4, required)");
    pane.type_text("Bob");
    pane.wait_editor("Bob");
    // Ctrl+C clears the answer; the question stays.
    pane.keys(&["C-c"]);
    pane.wait_editor("");
    assert!(pane.screen().contains("Name (1 of 4, required)"));
    pane.keys(&["Escape"]);
    pane.wait_for("Saw: answered cancel");
    pane.wait_editor("");
    // Ctrl+D declines it.
    pane.type_text("once more");
    pane.keys(&["Enter"]);
    pane.wait_for("Name (1 of 4, required)");
    pane.keys(&["C-d"]);
    pane.wait_for("Saw: answered decline");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.wait_exit().0, 0);
}

#[test]
fn a_servers_question_takes_the_editor_and_gives_the_draft_back() {
    if !have_tmux() {
        return;
    }
    let Some(mcp) = asking_server() else {
        return;
    };
    let world = World::new();
    let ready = world.project.join("ask now");
    let arguments = serde_json::json!({"wait_for": ready}).to_string();
    let server = FakeServer::start(Script::new(&[&arguments]).tool("ask__profile"));
    let pane = world.pi(&server, &["--no-session", "--mcp", &mcp], 100, 40);
    pane.wait_for("────");
    pane.type_text("who am I");
    pane.keys(&["Enter"]);
    pane.wait_for("Working...");
    // Typed while the call runs: a draft (Enter would steer).
    pane.type_text("my draft");
    pane.wait_editor("my draft");
    std::fs::write(&ready, "").unwrap();
    pane.wait_for("Name (1 of 4, required)");
    pane.wait_editor("");
    pane.type_text("Ada");
    pane.keys(&["Escape"]);
    pane.wait_for("Saw: answered cancel");
    pane.wait_editor("my draft");
    // Nothing typed for the question reached the model.
    let texts: Vec<String> = prompts(&server).iter().map(text_of).collect();
    assert_eq!(texts, ["who am I"], "{texts:?}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.wait_exit().0, 0);
}

#[test]
fn a_servers_url_question_is_shown_and_answered_with_one_key() {
    if !have_tmux() {
        return;
    }
    let Some(mcp) = asking_server() else {
        return;
    };
    let server = FakeServer::start(Script::new(&["{}"]).tool("ask__visit"));
    let world = World::new();
    let pane = world.pi(&server, &["--no-session", "--mcp", &mcp], 100, 40);
    pane.wait_for("────");
    pane.type_text("pay");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("It wants you to open https://pay.example/confirm?id=7");
    assert!(screen.contains("Confirm the payment"), "{screen}");
    assert!(screen.contains("pi does not start a browser"), "{screen}");
    // Other keys are not typed anywhere; `y` accepts.
    pane.keys(&["x"]);
    pane.wait_editor("");
    pane.keys(&["y"]);
    pane.wait_for("Saw: answered accept");
    pane.type_text("pay again");
    pane.keys(&["Enter"]);
    pane.wait_until("the second question", |s| {
        s.matches("It wants you to open").count() == 1 && s.contains("y: accept")
    });
    pane.keys(&["n"]);
    pane.wait_for("Saw: answered decline");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.wait_exit().0, 0);
}
