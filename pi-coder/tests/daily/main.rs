//! The `pi` command for daily use, through the binary: compaction, `--mode json` and
//! `--mode rpc`, pi's configuration files, thinking levels, pi's flags, print mode, interactive
//! mode in a pseudo-terminal, and the same command lines run side by side with the real pi
//! 0.73.1 (npm `@mariozechner/pi-coding-agent`, from `.ci/install-test-deps`) against one
//! scripted server ([`mock::Mock`]).

mod compaction;
mod config;
mod flags;
mod interactive;
mod mock;
mod modes;
mod providers;
mod side_by_side;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A home directory with pi's agent directory (`~/.pi/agent`) in it, and a project.
pub(crate) struct Home {
    pub(crate) home: tempfile::TempDir,
    pub(crate) project: PathBuf,
}

impl Home {
    /// A home whose `models.json` names `mock` as pi's provider `mock` (model `mock-model`,
    /// with `model`'s fields), and a project with `notes.txt`.
    pub(crate) fn new(mock: &mock::Mock, model: Value) -> Home {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".pi/agent")).unwrap();
        std::fs::write(
            home.path().join(".pi/agent/models.json"),
            mock.models_json(model),
        )
        .unwrap();
        let project = home.path().join("proj");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("notes.txt"), "hello from notes\n").unwrap();
        let project = project.canonicalize().unwrap();
        Home { home, project }
    }

    pub(crate) fn agent_dir(&self) -> PathBuf {
        self.home.path().join(".pi/agent")
    }

    /// `settings.json` in the agent directory.
    pub(crate) fn settings(&self, settings: Value) {
        std::fs::write(self.agent_dir().join("settings.json"), settings.to_string()).unwrap();
    }

    /// pi's session directory for the project.
    pub(crate) fn sessions(&self) -> PathBuf {
        let encoded = self
            .project
            .display()
            .to_string()
            .trim_start_matches('/')
            .replace('/', "-");
        self.agent_dir()
            .join("sessions")
            .join(format!("--{encoded}--"))
    }

    /// The session files of the project, oldest first.
    pub(crate) fn session_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.sessions())
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        files
    }

    fn env(&self, command: &mut Command) {
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "MISTRAL_API_KEY",
            "AZURE_OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "PI_MODEL",
            "PI_PROVIDER",
            "PI_CODING_AGENT_DIR",
            "PI_CODING_AGENT_SESSION_DIR",
            "PI_SESSION_DIR",
        ] {
            command.env_remove(name);
        }
        command
            .env("HOME", self.home.path())
            .current_dir(&self.project)
            .stdin(Stdio::null());
    }

    /// Our `pi` in the project.
    pub(crate) fn ours(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pi"));
        self.env(&mut command);
        command
    }

    /// The real pi 0.73.1 in the project, or `None` (the test skips) when it is not installed
    /// outside CI; in CI its absence fails the test.
    pub(crate) fn pi(&self) -> Option<Command> {
        let deps = test_deps()?;
        let mut command = Command::new(deps.join("node22"));
        command.arg(deps.join("node_modules/@mariozechner/pi-coding-agent/dist/cli.js"));
        self.env(&mut command);
        command
            .env("PI_OFFLINE", "1")
            .env("PI_TELEMETRY", "0")
            .env("PI_SKIP_VERSION_CHECK", "1");
        Some(command)
    }
}

/// `.ci/install-test-deps`'s folder with the real pi in it, or `None` (skipped) outside CI.
pub(crate) fn test_deps() -> Option<PathBuf> {
    let dir = std::env::var_os("PI_TEST_DEPS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/pi-tool-test-deps"))
        });
    let found = dir.filter(|dir| {
        dir.join("node22").exists()
            && dir
                .join("node_modules/@mariozechner/pi-coding-agent/dist/cli.js")
                .exists()
    });
    if found.is_none() {
        let message = "the real pi (@mariozechner/pi-coding-agent@0.73.1) is missing: run .ci/install-test-deps";
        assert!(std::env::var_os("CI").is_none(), "{message}");
        eprintln!("skipped: {message}");
    }
    found
}

/// Runs `command` with `stdin` piped in.
pub(crate) fn run_with_stdin(command: &mut Command, stdin: &str) -> Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().expect("wait")
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The JSON lines of a session file.
pub(crate) fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
