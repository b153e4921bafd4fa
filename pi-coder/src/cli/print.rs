//! Print mode (`-p`, or stdin piped) and JSON mode (`--mode json`), as pi's `print-mode.ts`:
//! the prompts are sent one after another, then text mode prints the last answer's text on
//! stdout (tool activity goes to stderr, the text in between nowhere), or JSON mode has printed
//! the session header and every event as one JSON line.

use std::io::Write;
use std::process::ExitCode;

use pi_runtime::{AgentEvent, StopReason};
use pi_tool::{CancellationToken, Content};

use super::{EXIT_APPROVAL_NEEDED, Setup};
use crate::compaction::CompactionReason;
use crate::events::{CompactionEnd, Observer, PiJson};
use crate::render::Renderer;

/// Writes every event as pi's JSON, one line each, on stdout: the events of JSON mode's
/// prompts, and of the paused run `pi -c` goes on with before them.
pub(super) struct JsonLines {
    encoder: PiJson,
}

impl JsonLines {
    pub(super) fn new() -> Self {
        JsonLines {
            encoder: PiJson::new(),
        }
    }

    /// JSON mode's first line: the session header, before any event.
    pub(super) fn header(setup: &Setup) {
        JsonLines::line(setup.agent.session_state().header());
    }

    fn line(value: &serde_json::Value) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{value}");
        let _ = stdout.flush();
    }
}

impl Observer for JsonLines {
    fn agent_event(&mut self, event: &AgentEvent) {
        JsonLines::line(&self.encoder.agent_event(event));
    }

    fn compaction_start(&mut self, reason: CompactionReason) {
        JsonLines::line(&PiJson::compaction_start(reason));
    }

    fn compaction_end(&mut self, end: &CompactionEnd) {
        JsonLines::line(&PiJson::compaction_end(end));
    }

    fn queue_update(&mut self, steering: &[String], follow_up: &[String]) {
        JsonLines::line(&PiJson::queue_update(steering, follow_up));
    }
}

/// Runs the prompts and exits: 0, or 1 when an answer failed (its error on stderr), 130
/// after Ctrl-C, [`EXIT_APPROVAL_NEEDED`] when a command waits for approval nobody can give here.
/// In JSON mode the session header is already out ([`JsonLines::header`]).
pub(super) async fn run(setup: &mut Setup, prompts: Vec<Vec<Content>>, json: bool) -> ExitCode {
    let mut json_lines = JsonLines::new();
    let mut stderr = std::io::stderr();
    let mut nowhere = std::io::sink();
    let mut refused = false;
    let mut interrupted = false;
    let mut failed: Option<crate::agent::PromptOutcome> = None;
    for prompt in prompts {
        let signal = CancellationToken::new();
        let outcome = {
            let mut renderer = Renderer::new(&mut nowhere, &mut stderr);
            let observer: &mut dyn Observer = if json { &mut json_lines } else { &mut renderer };
            let turn = setup.agent.prompt_content(prompt, signal.clone(), observer);
            tokio::pin!(turn);
            loop {
                tokio::select! {
                    outcome = &mut turn => break outcome,
                    _ = setup.interrupts.recv() => {
                        if signal.is_cancelled() {
                            eprintln!("\npi: interrupted twice, quitting");
                            std::process::exit(130);
                        }
                        eprintln!("\n(aborting: Ctrl-C again to quit)");
                        interrupted = true;
                        signal.cancel();
                    }
                }
            }
        };
        refused |= outcome.approval_refused;
        if matches!(outcome.stop_reason, StopReason::Error | StopReason::Aborted) {
            failed = Some(outcome);
            break;
        }
        if refused {
            break;
        }
    }
    if refused {
        // The call waits in the paused run, kept beside the session file when there is one.
        let kept = if setup.agent.session_state().file().is_some() {
            " Continue with `pi -c` in a terminal to approve or deny it, or `pi -c --yes` to run it."
        } else {
            ""
        };
        eprintln!(
            "pi: the model asked to run a command, and nobody can approve it here (no terminal, no --yes): it waits, and pi stopped.{kept} Rerun with --yes to let the model run commands."
        );
    }
    let last = setup
        .agent
        .transcript()
        .last()
        .and_then(|m| m.as_assistant())
        .cloned();
    let code = if refused {
        ExitCode::from(EXIT_APPROVAL_NEEDED)
    } else {
        ExitCode::SUCCESS
    };
    if json {
        return code;
    }
    if let Some(failed) = failed {
        let reason = if failed.stop_reason == StopReason::Error {
            "error"
        } else {
            "aborted"
        };
        // A model error is already on stderr (`error: ...`, as it happened); an abort is said
        // here, as pi says it.
        if failed.stop_reason == StopReason::Aborted {
            let message = failed
                .error_message
                .unwrap_or_else(|| format!("Request {reason}"));
            eprintln!("{message}");
        }
        return if interrupted {
            ExitCode::from(130)
        } else {
            ExitCode::FAILURE
        };
    }
    if let Some(last) = last {
        match last.stop_reason {
            StopReason::Error | StopReason::Aborted => {}
            _ => {
                let mut stdout = std::io::stdout().lock();
                for block in &last.content {
                    if let pi_runtime::AssistantContent::Text { text, .. } = block {
                        let _ = writeln!(stdout, "{text}");
                    }
                }
                let _ = stdout.flush();
            }
        }
    }
    code
}
