//! Kill trials run a test binary's own `child_process_entry` test again as a child process
//! (told what to do through one environment variable), kill it at some point, and wait for
//! the next one: the start, the bounded wait and the resume to the end, shared by the trials.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use pi_runtime::{
    AgentContext, AgentLoopConfig, Resume, RunState, RunStore, ScriptedModel, StoreError,
    agent_loop_resume,
};
use pi_tool::CancellationToken;

/// Starts this test binary's `child_process_entry` alone, with `var` set to `value`.
pub(crate) fn spawn(var: &str, value: String) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(var, value)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits for a child, at most a minute; its exit code (-1 when a signal ended it).
pub(crate) fn wait(mut child: Child) -> i32 {
    for _ in 0..6000 {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().ok();
    panic!("a resuming child did not finish within a minute");
}

/// A resuming child's last step: claims `run` (exit code 3 when another process holds it),
/// resumes it to the end on a model that answers "all done", and returns 0.
pub(crate) async fn claim_and_finish(
    store: &dyn RunStore,
    run: &str,
    state: RunState,
    context: AgentContext,
) -> i32 {
    let claim = match store.claim(run, &state) {
        Ok(claim) => claim,
        Err(StoreError::Busy(_)) => return 3,
        Err(err) => panic!("claim: {err}"),
    };
    let stream = agent_loop_resume(
        Resume::new(state).with_claim(claim),
        context,
        AgentLoopConfig::new(),
        Arc::new(ScriptedModel::new([crate::common::text("all done")])),
        CancellationToken::new(),
    )
    .map_err(|refused| refused.error)
    .unwrap();
    let (_, paused) = stream.outcome().await;
    assert!(paused.is_none());
    0
}
