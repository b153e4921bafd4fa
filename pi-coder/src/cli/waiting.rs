//! `pi -c` on a session whose last run paused on calls waiting for approval (`bash` run with
//! nobody to ask): the calls are shown, the user is asked about each (or `--yes` approves
//! them), and the paused run goes on before any new prompt. With nobody to ask they keep
//! waiting and pi stops with [`EXIT_APPROVAL_NEEDED`].

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

use pi_runtime::StopReason;
use pi_tool::CancellationToken;

use super::print::JsonLines;
use super::{EXIT_APPROVAL_NEEDED, Setup, parse_answer};
use crate::agent::command_of;
use crate::events::Observer;
use crate::render::Renderer;

/// How the waiting calls of a continued session are decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Deciding {
    /// `--yes`: every waiting call is approved.
    ApproveAll,
    /// A terminal: the user is asked about each.
    Ask,
    /// Nobody can decide here.
    Nobody,
}

/// Where the resumed run's output goes, as for the prompts after it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Output {
    /// Print mode (`-p`, piped, JSON mode): the answer's text is printed at the end, not
    /// streamed.
    pub(super) print_mode: bool,
    /// JSON mode: the run's events are JSON lines on stdout (the header is already out).
    pub(super) json: bool,
    /// Prompts follow the resumed run.
    pub(super) prompt_follows: bool,
}

/// Settles the waiting calls of a continued session and goes on with its paused run.
/// `Some(code)` when pi stops here: the calls still wait (nobody to ask), the resumed run
/// paused again or failed, or it went on and no prompt follows (print mode prints its answer).
pub(super) async fn settle(
    setup: &mut Setup,
    deciding: Deciding,
    output: Output,
) -> Option<ExitCode> {
    let Output {
        print_mode,
        json,
        prompt_follows,
    } = output;
    let waiting = setup.agent.waiting_calls().to_vec();
    if waiting.is_empty() {
        return None;
    }
    for call in &waiting {
        eprintln!(
            "● {} $ {}\n  waits for approval (the last run of this session stopped at it)",
            call.tool,
            command_of(call)
        );
    }
    let mut approved: HashMap<String, bool> = HashMap::new();
    match deciding {
        Deciding::ApproveAll => {
            approved.extend(waiting.iter().map(|call| (call.id.clone(), true)));
        }
        Deciding::Ask => {
            let mut lines = setup.input.lock().await;
            for call in &waiting {
                eprint!("  Run `{}`? [y]es / [N]o: ", command_of(call));
                let _ = std::io::stderr().flush();
                let answer = match lines.next_line().await {
                    Ok(Some(line)) => parse_answer(&line) != super::Answer::No,
                    _ => false,
                };
                approved.insert(call.id.clone(), answer);
            }
        }
        Deciding::Nobody => {
            eprintln!(
                "pi: nobody can approve it here (no terminal, no --yes): it still waits. Continue with `pi -c` in a terminal to approve or deny it, or `pi -c --yes` to run it."
            );
            return Some(ExitCode::from(EXIT_APPROVAL_NEEDED));
        }
    }
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let mut nowhere = std::io::sink();
    let out: &mut dyn Write = if print_mode {
        &mut nowhere
    } else {
        &mut stdout
    };
    let mut renderer = Renderer::new(out, &mut stderr);
    let mut json_lines = JsonLines::new();
    let observer: &mut dyn Observer = if json { &mut json_lines } else { &mut renderer };
    let decide = |call: &pi_runtime::WaitingCall| approved.get(&call.id).copied().unwrap_or(false);
    let resumed = setup
        .agent
        .resume_waiting(decide, CancellationToken::new(), observer)
        .await?;
    let outcome = match resumed {
        Ok(outcome) => outcome,
        Err(err) => {
            eprintln!("pi: the waiting calls could not be resumed: {err}");
            return Some(ExitCode::FAILURE);
        }
    };
    if outcome.approval_refused {
        eprintln!(
            "pi: the run stopped again at a command that waits for approval: continue with `pi -c` to decide it."
        );
        return Some(ExitCode::from(EXIT_APPROVAL_NEEDED));
    }
    if matches!(outcome.stop_reason, StopReason::Error | StopReason::Aborted) {
        if let Some(message) = outcome.error_message {
            eprintln!("{message}");
        }
        return Some(ExitCode::FAILURE);
    }
    if json && !prompt_follows {
        // Every event is out.
        return Some(ExitCode::SUCCESS);
    }
    if print_mode && !prompt_follows {
        // What print mode prints: the last answer's text blocks.
        let last = setup
            .agent
            .transcript()
            .last()
            .and_then(|m| m.as_assistant());
        let mut stdout = std::io::stdout().lock();
        for block in last.map(|a| a.content.as_slice()).unwrap_or_default() {
            if let pi_runtime::AssistantContent::Text { text, .. } = block {
                let _ = writeln!(stdout, "{text}");
            }
        }
        let _ = stdout.flush();
        return Some(ExitCode::SUCCESS);
    }
    None
}
