//! `bash`: run a command in its own process group, stdout and stderr merged in arrival order,
//! streamed updates, a timeout, and abort that kills the whole group.

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use pi_sandbox::{Sandbox, SandboxError, SandboxPolicy};
use pi_tool::{Content, State, ToolContext, ToolError, ToolResult, tool};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use crate::Workspace;
use crate::tools::output::OutputTail;

/// How often streamed updates may be sent.
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// How long to keep reading after the shell exits (a background child may hold the pipe open).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(100);

/// Why the command stopped.
pub(crate) enum Outcome {
    Exited(Option<i32>),
    TimedOut,
    Aborted,
}

/// Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.
#[tool(
    name = "bash",
    label = "bash",
    aborted = "Command aborted",
    read_only = false,
    destructive,
    open_world
)]
pub async fn bash(
    /// Bash command to execute
    command: String,
    /// Timeout in seconds (optional, no default timeout)
    timeout: Option<f64>,
    workspace: State<Workspace>,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    if ctx.is_aborted() {
        return Err(ToolError::new("Command aborted"));
    }
    // pi resolves the shell before it checks the working directory (bash.ts:69-73).
    let shell = workspace.shell()?;
    let ran = run_command(
        &shell,
        workspace.cwd(),
        &command,
        timeout,
        workspace.temp_dir(),
        workspace.sandbox(),
        ctx.signal(),
        |output| match output {
            Some(output) => send_update(&ctx, output),
            None => ctx.update(ToolResult::new(Vec::new(), Value::Null)),
        },
    )
    .await?;
    let snapshot = &ran.snapshot;
    let mut text = snapshot.text_with_notice();
    if let Some(err) = &ran.log_error {
        text.push_str(&format!("\n[Could not save the full output: {err}]"));
    }
    let status = match ran.outcome {
        Outcome::Aborted => Some("Command aborted".to_owned()),
        Outcome::TimedOut => Some(format!(
            "Command timed out after {} seconds",
            format_seconds(timeout.unwrap_or_default())
        )),
        Outcome::Exited(Some(code)) if code != 0 => {
            Some(format!("Command exited with code {code}"))
        }
        Outcome::Exited(_) => None,
    };
    // pi (bash.ts:345-394): an exit status follows the output or `(no output)`; an abort or a
    // timeout follows the output only.
    if text.is_empty() && matches!(ran.outcome, Outcome::Exited(_)) {
        text.push_str("(no output)");
    }
    match status {
        Some(status) if text.is_empty() => Err(ToolError::new(status)),
        Some(status) => Err(ToolError::new(format!("{text}\n\n{status}"))),
        None => Ok(ToolResult::new(
            vec![Content::text(text)],
            snapshot.details(),
        )),
    }
}

/// A command that ran: why it stopped, and its output (tail-truncated, the whole of it in a log
/// file once over the limits).
pub(crate) struct Ran {
    pub(crate) outcome: Outcome,
    pub(crate) snapshot: crate::tools::output::Snapshot,
    pub(crate) log_error: Option<String>,
}

/// Runs `command` with `<shell> -c` in `cwd`, in its own process group: stdout and stderr
/// merged in arrival order, `on_update` called once with `None` when the command started, then
/// with the output so far at most every 100 ms, the
/// whole group killed on timeout or when `signal` fires. Shared by the `bash` tool and the
/// user's `!` commands. In a `sandbox`, the command is confined, refused when it cannot be, and
/// whatever it leaves running is killed when it ends.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_command(
    shell: &std::path::Path,
    cwd: &std::path::Path,
    command: &str,
    timeout: Option<f64>,
    temp_dir: &std::path::Path,
    sandbox: Option<&SandboxPolicy>,
    signal: &pi_tool::CancellationToken,
    mut on_update: impl FnMut(Option<&OutputTail>),
) -> Result<Ran, ToolError> {
    if !cwd.is_dir() {
        return Err(ToolError::new(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            cwd.display()
        )));
    }
    let (reader, writer) = std::io::pipe()?;
    let writer_for_stderr = writer.try_clone()?;
    let mut sandbox = sandbox
        .map(|policy| Sandbox::new(policy).map_err(refused))
        .transpose()?;
    let mut child = {
        let mut cmd = match &mut sandbox {
            Some(sandbox) => sandbox.command(shell).map_err(refused)?,
            None => std::process::Command::new(shell),
        };
        cmd.arg("-c")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer_for_stderr))
            .process_group(0);
        let mut cmd = tokio::process::Command::from(cmd);
        cmd.spawn().map_err(|err| match &sandbox {
            Some(_) => ToolError::new(format!(
                "Failed to start {} in the sandbox: {err}{OPT_OUT}",
                shell.display()
            )),
            None => ToolError::new(format!("Failed to start {}: {err}", shell.display())),
        })?
        // `cmd` drops here, closing our copies of the pipe's write end.
    };
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let mut group = GroupGuard { pid, armed: true };
    let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;

    let mut output = OutputTail::new(temp_dir);
    on_update(None);
    let deadline = timeout
        .filter(|t| *t > 0.0 && t.is_finite())
        .map(|t| Instant::now() + Duration::from_secs_f64(t.min(1.0e9)));
    let mut buffer = vec![0u8; 16 * 1024];
    let mut exit: Option<Option<i32>> = None;
    let mut killed: Option<Outcome> = None;
    let mut eof = false;
    let mut drain_until: Option<Instant> = None;
    let mut dirty = false;
    let mut last_update = Instant::now() - UPDATE_INTERVAL;
    let mut ticker = tokio::time::interval(UPDATE_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    loop {
        if eof && exit.is_some() {
            break;
        }
        tokio::select! {
            read = pipe.read(&mut buffer), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    output.push(&buffer[..n]).await;
                    dirty = true;
                    if last_update.elapsed() >= UPDATE_INTERVAL {
                        on_update(Some(&output));
                        dirty = false;
                        last_update = Instant::now();
                    }
                }
            },
            status = child.wait(), if exit.is_none() => {
                group.armed = false;
                exit = Some(status.ok().and_then(|s| s.code()));
                drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
            },
            () = sleep_until(deadline), if deadline.is_some() && killed.is_none() && exit.is_none() => {
                kill_group(pid);
                killed = Some(Outcome::TimedOut);
            },
            () = signal.cancelled(), if killed.is_none() && exit.is_none() => {
                kill_group(pid);
                killed = Some(Outcome::Aborted);
            },
            () = sleep_until(drain_until), if drain_until.is_some() => break,
            _ = ticker.tick() => {
                if dirty {
                    on_update(Some(&output));
                    dirty = false;
                    last_update = Instant::now();
                }
            },
        }
    }
    output.finish().await;
    if let Some(sandbox) = &sandbox {
        // Nothing a sandboxed command started outlives it: its process group, and (with a
        // cgroup) every process it made, wherever it went.
        kill_group(pid);
        sandbox.kill_remaining();
        group.armed = false;
    }
    if dirty {
        on_update(Some(&output));
    }
    Ok(Ran {
        outcome: killed.unwrap_or(Outcome::Exited(exit.flatten())),
        snapshot: output.snapshot(),
        log_error: output.log_error().map(str::to_owned),
    })
}

/// How a user opts out of the sandbox, after every refusal.
const OPT_OUT: &str = ". The command was not run. To run commands without the sandbox, start pi with `--sandbox off` (or set \"sandbox\": \"off\" in settings.json).";

/// A sandbox that cannot be set up: the command is refused, never run unconfined.
fn refused(err: SandboxError) -> ToolError {
    ToolError::new(format!("{err}{OPT_OUT}"))
}

fn send_update(ctx: &ToolContext, output: &OutputTail) {
    let snapshot = output.snapshot();
    let text = snapshot.truncation.content.clone();
    ctx.update(ToolResult::new(
        vec![Content::text(text)],
        snapshot.details(),
    ));
}

/// Sleeps until `deadline`, or forever when there is none (the branch is disabled then anyway).
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Kills the process group if the call is dropped before the shell exits (the loop dropped the
/// run), so no command outlives the agent that started it.
struct GroupGuard {
    pid: Option<Pid>,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            kill_group(self.pid);
        }
    }
}

/// SIGKILL to the whole process group (the shell and everything it started), falling back to the pid.
fn kill_group(pid: Option<Pid>) {
    let Some(pid) = pid else { return };
    if killpg(pid, Signal::SIGKILL).is_err() {
        let _ = kill(pid, Signal::SIGKILL);
    }
}

/// Seconds as JavaScript prints a number: `5`, `0.5`.
fn format_seconds(seconds: f64) -> String {
    if seconds.fract() == 0.0 && seconds.abs() < 1e15 {
        format!("{}", seconds as i64)
    } else {
        format!("{seconds}")
    }
}
