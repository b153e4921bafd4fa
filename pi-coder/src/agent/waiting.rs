//! `bash` approval as a call that waits (pi-tool's approval): unless every command may run,
//! `bash` needs approval ([`ToolRegistry::require_approval`]); with someone to ask
//! ([`Approval::Ask`]) the loop's in-process approver asks, and otherwise
//! ([`Approval::Never`]) the run pauses with the call waiting. The paused run is kept beside
//! the session file (`<session>.waiting.json`), so `pi -c` shows the call, asks, and goes on
//! ([`CodingAgent::resume_waiting`]); a new prompt instead leaves it behind, answered with an
//! error result, so the transcript never holds a call without a result.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use pi_runtime::{
    AgentLoopConfig, ApprovalTimeout, Decision, Message, Resume, RunState, ToolResultMessage,
    WaitingCall, agent_loop_resume,
};
use pi_tool::{CancellationToken, ToolRegistry, ToolResult};

use super::{Approval, ApprovalRequest, CodingAgent, DECLINED, PromptOutcome};
use crate::events::Observer;

/// The result of a call that waited when the user went on with a new prompt instead.
pub const LEFT_WAITING: &str = "The command was not run: it waited for the user's approval, and the user went on without deciding.";

/// Where a session's paused run is kept: beside its file (none for a session in memory).
fn paused_file(session: &Path) -> Option<PathBuf> {
    if session.as_os_str().is_empty() {
        return None;
    }
    let mut name = session.file_name()?.to_os_string();
    name.push(".waiting.json");
    Some(session.with_file_name(name))
}

/// The text a denied command's result gives, pi's (the model reads it).
fn declined() -> Decision {
    Decision::Answer {
        result: ToolResult::error(DECLINED),
    }
}

impl CodingAgent {
    /// The calls the last run left waiting for a decision (empty when none).
    pub fn waiting_calls(&self) -> &[WaitingCall] {
        self.paused.as_ref().map_or(&[], RunState::waiting)
    }

    /// The tools of a run: `bash` waits for approval unless every command may run.
    pub(super) fn tools_for_run(&self) -> ToolRegistry {
        match self.approval {
            Approval::Always => self.tools.clone(),
            _ => self
                .tools
                .clone()
                .require_approval(|tool| tool.spec().name == "bash"),
        }
    }

    /// The loop's configuration for a run: with someone to ask, its approver.
    pub(super) fn run_config(&self, signal: &CancellationToken) -> AgentLoopConfig {
        let config = self.config();
        let Approval::Ask(approver) = &self.approval else {
            return config;
        };
        let approver = Arc::clone(approver);
        let progress = Arc::clone(&self.progress);
        let signal = signal.clone();
        config.approver(
            move |waiting: WaitingCall| {
                let approver = Arc::clone(&approver);
                let progress = Arc::clone(&progress);
                let signal = signal.clone();
                async move {
                    let asked = Instant::now();
                    // The question follows the call's header (`● bash $ ...`), never before it.
                    progress.rendered(&waiting.id, &signal).await;
                    let request = ApprovalRequest {
                        call_id: waiting.id.clone(),
                        command: command_of(&waiting),
                        signal,
                    };
                    let approved = approver(request).await;
                    let waited = u64::try_from(asked.elapsed().as_millis()).unwrap_or(u64::MAX);
                    progress.record_wait(waited);
                    if approved {
                        Decision::Approve
                    } else {
                        declined()
                    }
                }
            },
            ApprovalTimeout::WaitForever,
        )
    }

    /// Keeps a run that paused, and saves it beside the session file.
    pub(super) fn keep_paused(&mut self, state: RunState) {
        if let Some(file) = paused_file(self.session.path()) {
            let written = std::fs::write(&file, state.to_json());
            if let Err(err) = written {
                eprintln!(
                    "warning: could not save the waiting call to {}: {err}",
                    file.display()
                );
            }
        }
        self.paused = Some(state);
    }

    /// Takes up the paused run saved beside a continued session's file, if it is this
    /// transcript's (its last message is the transcript's last).
    pub(super) fn load_paused(&mut self) {
        self.paused = None;
        let Some(file) = paused_file(self.session.path()) else {
            return;
        };
        let Ok(text) = std::fs::read_to_string(&file) else {
            return;
        };
        match RunState::from_json(&text) {
            Ok(state) if state.messages.last() == self.transcript.last() => {
                self.paused = Some(state);
            }
            Ok(_) => {
                eprintln!(
                    "warning: {} is not this session's last run: its waiting calls are left out",
                    file.display()
                );
            }
            Err(err) => {
                eprintln!("warning: {} cannot be read: {err}", file.display());
            }
        }
    }

    /// Forgets the paused run and its file.
    fn forget_paused(&mut self) -> Option<RunState> {
        if let Some(file) = paused_file(self.session.path()) {
            let _ = std::fs::remove_file(file);
        }
        self.paused.take()
    }

    /// A new prompt while calls wait: each gets an error result saying it was not run (in the
    /// transcript and the session file), so no call is left without a result.
    pub(super) fn leave_waiting_behind(&mut self) {
        let Some(state) = self.forget_paused() else {
            return;
        };
        for waiting in state.waiting() {
            let result = ToolResult::error(LEFT_WAITING);
            let message = Arc::new(Message::ToolResult(
                ToolResultMessage::new(waiting.id.clone(), waiting.tool.clone(), result.content)
                    .with_is_error(true),
            ));
            if let Err(err) = self.session.append(&message) {
                eprintln!(
                    "warning: could not save the session to {}: {err}",
                    self.session.path().display()
                );
            }
            self.transcript.push(message);
        }
    }

    /// Settles the calls the last run left waiting, each as `decide` says (a denial is pi's
    /// `The user declined to run this command.`), and goes on with that run: the approved
    /// calls run through the loop with its hooks and events, then the model is asked again.
    /// `None` when nothing waits.
    pub async fn resume_waiting(
        &mut self,
        mut decide: impl FnMut(&WaitingCall) -> bool,
        signal: CancellationToken,
        observer: &mut dyn Observer,
    ) -> Option<Result<PromptOutcome, String>> {
        let mut state = self.forget_paused()?;
        let waiting = state.waiting().to_vec();
        for call in &waiting {
            let decision = if decide(call) {
                Decision::Approve
            } else {
                declined()
            };
            if let Err(err) = state.decide(&call.id, decision) {
                return Some(Err(err.to_string()));
            }
        }
        let context = self.run_context();
        let config = self.run_config(&signal);
        let model = Arc::clone(&self.model);
        let resumed = agent_loop_resume(Resume::new(state), context, config, model, signal.clone());
        let stream = match resumed {
            Ok(stream) => stream,
            Err(refused) => return Some(Err(refused.error.to_string())),
        };
        Some(Ok(self.follow(stream, &signal, observer).await))
    }
}

/// What the approver is shown of a waiting call: a `bash` call's command, else the tool and
/// its arguments.
pub(crate) fn command_of(waiting: &WaitingCall) -> String {
    match waiting.arguments.get("command").and_then(|c| c.as_str()) {
        Some(command) if waiting.tool == "bash" => command.to_owned(),
        _ => format!("{} {}", waiting.tool, waiting.arguments),
    }
}
