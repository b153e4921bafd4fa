//! Which session file `pi` saves to and resumes: `--session`, `-c`, the `-r` picker, a new
//! one, or none; pi's own session files are found next to ours and imported.

use std::path::{Path, PathBuf};

use pi_runtime::Message;

use super::{Args, Input};
use crate::session::{Resumed, Session, SessionFormat, SessionSummary};

/// Most sessions the `-r` picker lists.
const PICKER_ROWS: usize = 20;

/// What to save to, and what was already said.
pub(super) enum Choice {
    /// `--no-session`.
    None,
    /// A session file, with the messages it already holds.
    Open(Resumed),
    /// The user left the `-r` picker without choosing.
    Cancelled,
}

/// Where sessions are written (`--session-dir`, else [`Session::default_dir`]) and where earlier
/// ones are looked for (that directory, plus pi's own for this working directory unless
/// `--session-dir` was given).
pub(super) fn session_dirs(args: &Args, cwd: &Path) -> (PathBuf, Vec<PathBuf>) {
    match &args.session_dir {
        Some(dir) => (dir.clone(), vec![dir.clone()]),
        None => {
            let ours = Session::default_dir(cwd);
            (ours.clone(), vec![ours, Session::pi_dir(cwd)])
        }
    }
}

/// Opens the session the flags ask for.
pub(super) async fn choose(args: &Args, cwd: &Path, input: &Input) -> Result<Choice, String> {
    if args.no_session {
        return Ok(Choice::None);
    }
    let (dir, search) = session_dirs(args, cwd);
    let open = |path: &Path| {
        Session::resume(path, cwd, &dir)
            .map(Choice::Open)
            .map_err(|err| format!("pi: session: {err}"))
    };
    if let Some(path) = &args.session {
        if !path.exists() {
            return Session::create(path, cwd)
                .map(fresh)
                .map_err(|err| format!("pi: session: {err}"));
        }
        return open(path);
    }
    if args.continue_session {
        match Session::latest(&search) {
            Some(latest) => return open(&latest),
            None => eprintln!("pi: no earlier session for this directory; starting a new one"),
        }
    }
    if args.resume {
        let sessions = Session::list(&search);
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
    Session::create(Session::new_path(&dir), cwd)
        .map(fresh)
        .map_err(|err| format!("pi: session: {err}"))
}

fn fresh(session: Session) -> Choice {
    Choice::Open(Resumed {
        session,
        messages: Vec::<Message>::new(),
        imported_from: None,
    })
}

/// pi's `-r`: the recent sessions, newest first, numbered; the user types a number.
async fn pick(sessions: &[SessionSummary], input: &Input) -> Result<Option<PathBuf>, String> {
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

/// `  1. 2026-12-01 12:31   12 messages  Fix the failing test   (pi)`
fn picker_row(number: usize, session: &SessionSummary) -> String {
    let when: chrono::DateTime<chrono::Local> = session.modified.into();
    let origin = match session.format {
        SessionFormat::Pi(_) => "  (pi)",
        SessionFormat::PiTool(_) => "",
    };
    let prompt: String = session.first_prompt.chars().take(60).collect();
    let ellipsis = if session.first_prompt.chars().count() > 60 {
        "…"
    } else {
        ""
    };
    format!(
        "{number:>3}. {}  {:>4} messages  {prompt}{ellipsis}{origin}",
        when.format("%Y-%m-%d %H:%M"),
        session.messages
    )
}
