//! Which session `pi` saves to and resumes, as pi chooses (`main.ts`'s
//! `createSessionManager`): `--no-session`, `--fork`, `--session` (a file, or the start of a
//! session id looked up in this project's sessions, then every project's), `-r`, `-c`, or a new
//! one.

use std::path::{Path, PathBuf};

use super::{Args, Input};
use crate::config::Settings;
use crate::session::{Resumed, Session, SessionSummary};

/// Most sessions the `-r` picker lists.
const PICKER_ROWS: usize = 20;

/// What to save to.
pub(super) enum Choice {
    /// A session (for `--no-session`, one in memory), with the messages it already holds.
    Open(Box<Resumed>),
    /// The user left the `-r` picker without choosing.
    Cancelled,
}

/// Where sessions are written and where earlier ones are looked for: `--session-dir`, else
/// `$PI_CODING_AGENT_SESSION_DIR`, else `$PI_SESSION_DIR`, else settings.json's `sessionDir`,
/// else pi's directory for the working directory; earlier versions' directory
/// (`~/.pi-rs/sessions/..`) is searched too unless a directory was named.
pub(super) fn session_dirs(
    args: &Args,
    cwd: &Path,
    settings: &Settings,
) -> (PathBuf, Vec<PathBuf>) {
    let named = args
        .session_dir
        .clone()
        .or_else(|| env_dir("PI_CODING_AGENT_SESSION_DIR"))
        .or_else(|| env_dir("PI_SESSION_DIR"))
        .or_else(|| {
            settings
                .session_dir
                .as_deref()
                .map(|d| crate::session::expand_home(Path::new(d)))
        });
    match named {
        Some(dir) => (dir.clone(), vec![dir]),
        None => {
            let dir = Session::pi_dir(cwd);
            (dir.clone(), vec![dir, Session::legacy_dir(cwd)])
        }
    }
}

fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|d| !d.is_empty())
        .map(|d| crate::session::expand_home(Path::new(&d)))
}

/// Opens the session the flags ask for.
pub(super) async fn choose(
    args: &Args,
    cwd: &Path,
    dir: &Path,
    search: &[PathBuf],
    input: &Input,
) -> Result<Choice, String> {
    let open = |path: &Path| {
        Session::resume(path)
            .map(|resumed| Choice::Open(Box::new(resumed)))
            .map_err(|err| format!("pi: session: {err}"))
    };
    if args.no_session {
        return Ok(fresh(Session::in_memory(cwd)));
    }
    if let Some(source) = &args.fork {
        let path = match resolve(source, search) {
            Resolved::Path(path) | Resolved::Found(path) | Resolved::Elsewhere(path, _) => path,
            Resolved::NotFound => return Err(format!("No session found matching '{source}'")),
        };
        let session = Session::fork_from(&path, cwd, dir).map_err(|err| format!("Error: {err}"))?;
        return open(session.path());
    }
    if let Some(argument) = &args.session {
        return match resolve(argument, search) {
            Resolved::Path(path) if !path.exists() => {
                // pi starts a new session at a path that does not exist yet.
                Session::create(&path, cwd)
                    .map(fresh)
                    .map_err(|err| format!("pi: session: {err}"))
            }
            Resolved::Path(path) | Resolved::Found(path) => open(&path),
            Resolved::Elsewhere(path, other_cwd) => {
                eprintln!("Session found in different project: {other_cwd}");
                eprint!("Fork this session into current directory? [y/N] ");
                let _ = std::io::Write::flush(&mut std::io::stderr());
                let answer = input.lock().await.next_line().await.ok().flatten();
                let yes =
                    answer.is_some_and(|a| matches!(a.trim().to_lowercase().as_str(), "y" | "yes"));
                if !yes {
                    eprintln!("Aborted.");
                    return Ok(Choice::Cancelled);
                }
                let session =
                    Session::fork_from(&path, cwd, dir).map_err(|err| format!("Error: {err}"))?;
                open(session.path())
            }
            Resolved::NotFound => Err(format!("No session found matching '{argument}'")),
        };
    }
    if args.resume {
        let sessions = Session::list(search);
        if sessions.is_empty() {
            return Err(format!(
                "pi: --resume: no session to resume in {}",
                search
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ));
        }
        return match pick(&sessions, input).await? {
            Some(path) => open(&path),
            None => Ok(Choice::Cancelled),
        };
    }
    if args.continue_session {
        match Session::latest(search) {
            Some(latest) => return open(&latest),
            None => eprintln!("pi: no earlier session for this directory; starting a new one"),
        }
    }
    Ok(fresh(Session::create_in(dir, cwd, None)))
}

fn fresh(session: Session) -> Choice {
    Choice::Open(Box::new(Resumed {
        session,
        messages: Vec::new(),
    }))
}

/// How a `--session` argument resolved (pi's `resolveSessionPath`).
enum Resolved {
    /// It names a file (it has a `/` or ends with `.jsonl`).
    Path(PathBuf),
    /// A session of this project whose id starts with it.
    Found(PathBuf),
    /// Only a session of another project (its working directory) matched.
    Elsewhere(PathBuf, String),
    /// Nothing matched.
    NotFound,
}

fn resolve(argument: &str, search: &[PathBuf]) -> Resolved {
    if argument.contains('/') || argument.contains('\\') || argument.ends_with(".jsonl") {
        return Resolved::Path(crate::session::expand_home(Path::new(argument)));
    }
    let matches = |sessions: Vec<SessionSummary>| {
        sessions
            .into_iter()
            .find(|s| !argument.is_empty() && s.id.starts_with(argument))
    };
    if let Some(found) = matches(Session::list(search)) {
        return Resolved::Found(found.path);
    }
    match matches(Session::list_all()) {
        Some(found) => Resolved::Elsewhere(found.path, found.cwd),
        None => Resolved::NotFound,
    }
}

/// pi's `-r`: the recent sessions, newest first, numbered; the user types a number.
pub(super) async fn pick(
    sessions: &[SessionSummary],
    input: &Input,
) -> Result<Option<PathBuf>, String> {
    if super::tui::wanted() {
        // pi's searchable selector, in the terminal interface.
        let choices = sessions.iter().map(super::tui::session_choice).collect();
        let picked = super::tui::selector::pick("Resume a session", choices, None).await;
        return Ok(picked.map(|i| sessions[i].path.clone()));
    }
    let shown = &sessions[..sessions.len().min(PICKER_ROWS)];
    eprintln!("Recent sessions (newest first):");
    for (number, session) in shown.iter().enumerate() {
        eprintln!("{}", picker_row(number + 1, session));
    }
    loop {
        eprint!("Resume which? [1-{}, Enter for none]: ", shown.len());
        let _ = std::io::Write::flush(&mut std::io::stderr());
        let line = input
            .lock()
            .await
            .next_line()
            .await
            .map_err(|err| format!("pi: reading input: {err}"))?;
        let Some(line) = line else {
            eprintln!();
            return Ok(None);
        };
        let answer = line.trim();
        if answer.is_empty() {
            return Ok(None);
        }
        match answer.parse::<usize>() {
            Ok(n) if (1..=shown.len()).contains(&n) => return Ok(Some(shown[n - 1].path.clone())),
            _ => eprintln!("Not a number from 1 to {}: {answer}", shown.len()),
        }
    }
}

/// `  1. 2026-12-01 12:31   12 messages  Fix the failing test`
fn picker_row(number: usize, session: &SessionSummary) -> String {
    let when: chrono::DateTime<chrono::Local> = session.modified.into();
    let title = session.name.as_deref().unwrap_or(&session.first_prompt);
    let prompt: String = title.chars().take(60).collect();
    let ellipsis = if title.chars().count() > 60 {
        "…"
    } else {
        ""
    };
    format!(
        "{number:>3}. {}  {:>4} messages  {prompt}{ellipsis}",
        when.format("%Y-%m-%d %H:%M"),
        session.messages
    )
}
