//! The `pi` command: arguments, provider choice, the one-shot and interactive modes, Ctrl-C.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use pi_runtime::{Model, StopReason, StreamOptions};
use pi_tool::{CancellationToken, ToolRegistry};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::Mutex;

use crate::agent::{Approval, ApprovalRequest, CodingAgent, PromptOutcome};
use crate::mcp::{McpServers, McpTools};
use crate::render::Renderer;
use crate::session::Session;
use crate::{ALL_TOOL_NAMES, DEFAULT_TOOL_NAMES, Workspace, coding_tools};

/// `pi`: a coding agent in your terminal. It reads, edits, writes and runs code in the working
/// directory with the model you choose.
#[derive(Debug, Parser)]
#[command(name = "pi", version, about, long_about = None)]
pub struct Args {
    /// Run one prompt, print the answer and exit (without it: an interactive session)
    #[arg(short = 'p', long = "print", value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// Provider: openai, anthropic, google or openai-compatible (default: the first configured
    /// in the environment)
    #[arg(long, env = "PI_PROVIDER")]
    pub provider: Option<String>,
    /// Model id, or provider/model (default: $PI_MODEL, else the provider's default)
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible server (Ollama, vLLM, ...); implies that provider
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Run bash commands without asking for approval
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Working directory of the tools (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Confine read, edit, write, grep, find and ls to the working directory
    #[arg(long)]
    pub confine: bool,
    /// Tools to offer, comma-separated (default: read,bash,edit,write; `all` for all seven)
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
    /// Save the session to this JSONL file, resuming it if it exists
    #[arg(long, value_name = "FILE", conflicts_with_all = ["resume", "no_session"])]
    pub session: Option<PathBuf>,
    /// Resume the most recent session of the working directory
    #[arg(short = 'r', long, conflicts_with = "no_session")]
    pub resume: bool,
    /// Do not save the session
    #[arg(long)]
    pub no_session: bool,
    /// Replace the system prompt
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// Use an MCP server's tools, named NAME__tool: a stdio command line, or an http(s):// URL
    /// (repeatable)
    #[arg(long = "mcp", value_name = "NAME=COMMAND")]
    pub mcp: Vec<String>,
    /// Ignore the mcpServers files (~/.pi/agent/mcp.json, .mcp.json, .pi/mcp.json)
    #[arg(long)]
    pub no_mcp_config: bool,
    /// A subcommand instead of a session (`pi mcp serve`)
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `pi`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Model Context Protocol
    Mcp {
        /// What to do
        #[command(subcommand)]
        command: McpCommand,
    },
}

/// `pi mcp ...`
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Serve the seven coding tools (read, bash, edit, write, grep, find, ls) to MCP clients, on
    /// stdio (the default) or streamable HTTP
    Serve(McpServeArgs),
}

/// `pi mcp serve [--http ADDR] [--cwd DIR] [--confine]`
#[derive(Debug, clap::Args)]
pub struct McpServeArgs {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080)
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Working directory of the tools (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Confine read, edit, write, grep, find and ls to the working directory
    #[arg(long)]
    pub confine: bool,
}

/// Shared standard input: prompts and approvals read lines from the same reader.
type Input = Arc<Mutex<Lines<BufReader<Stdin>>>>;

/// Runs the `pi` command; the exit code is 0 on success, 1 on an error, 130 after Ctrl-C.
pub async fn run(args: Args) -> ExitCode {
    match start(args).await {
        Ok(code) => code,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

async fn start(args: Args) -> Result<ExitCode, String> {
    if let Some(Command::Mcp {
        command: McpCommand::Serve(serve),
    }) = &args.command
    {
        crate::mcp_serve::serve(serve).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let cwd = working_dir(args.cwd.as_deref())?;
    let model = select_model(&args)?;
    let workspace = Workspace::new(&cwd)
        .confined(args.confine)
        .with_images_supported(model.accepts_images());
    let all = coding_tools(workspace);
    let names: Vec<String> = match &args.tools {
        Some(names) if names.iter().any(|n| n == "all") => {
            ALL_TOOL_NAMES.iter().map(|n| (*n).to_owned()).collect()
        }
        Some(names) => names
            .iter()
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty())
            .collect(),
        None => DEFAULT_TOOL_NAMES.iter().map(|n| (*n).to_owned()).collect(),
    };
    let builtins = all
        .subset(&names)
        .map_err(|err| format!("pi: --tools: {err}"))?;

    let input: Input = Arc::new(Mutex::new(BufReader::new(tokio::io::stdin()).lines()));
    let mut tools = Tools::start(&args, &cwd, builtins, &input).await?;
    let approval = if args.yes {
        Approval::Always
    } else if std::io::stdin().is_terminal() {
        Approval::Ask(terminal_approver(Arc::clone(&input)))
    } else {
        Approval::Never("Running commands needs the user's approval, and none can be asked for here: the user can rerun pi with --yes to allow it.".into())
    };
    let mut agent =
        CodingAgent::new(Arc::clone(&model), tools.registry(), &cwd).with_approval(approval);
    if let Some(prompt) = &args.system_prompt {
        agent = agent.with_system_prompt(prompt.clone());
    }
    if let Some(path) = session_path(&args, &cwd)? {
        let (session, earlier) =
            Session::open_or_create(&path, &cwd).map_err(|err| format!("pi: session: {err}"))?;
        if !earlier.is_empty() {
            eprintln!("Resumed {} ({} messages)", path.display(), earlier.len());
        }
        agent = agent.with_session(session, earlier);
    }
    agent = agent.with_stream_options(StreamOptions::default());

    // One listener for the whole process: a press is never lost between two waits for it.
    let mut interrupts = signal(SignalKind::interrupt())
        .map_err(|err| format!("pi: cannot listen for Ctrl-C: {err}"))?;
    match &args.prompt {
        Some(prompt) => {
            let outcome = run_turn(&mut agent, prompt, &mut interrupts).await;
            Ok(exit_code(&outcome))
        }
        None => interactive(&mut agent, &mut tools, &input, &mut interrupts).await,
    }
}

/// The built-in tools plus the tools of the MCP servers `pi` connected to.
struct Tools {
    builtins: ToolRegistry,
    mcp: McpTools,
}

impl Tools {
    /// Reads the MCP configuration (files unless `--no-mcp-config`, then `--mcp` options) and
    /// connects. The project's servers start only with the user's consent: `--yes`, or `y` to
    /// a question on the terminal.
    async fn start(
        args: &Args,
        cwd: &std::path::Path,
        builtins: ToolRegistry,
        input: &Input,
    ) -> Result<Tools, String> {
        let servers = if args.no_mcp_config {
            McpServers::from_options(&args.mcp)?
        } else {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            McpServers::read(home.as_deref(), cwd, &args.mcp)?
        };
        let mut config = servers.trusted.clone();
        if !servers.project.servers.is_empty() {
            let files: Vec<String> = servers
                .project_files
                .iter()
                .map(|path| path.display().to_string())
                .collect();
            let consent = if args.yes {
                true
            } else if std::io::stdin().is_terminal() {
                eprintln!(
                    "This project's {} starts MCP servers:\n{}",
                    files.join(" and "),
                    servers.describe_project()
                );
                eprint!("Start them? [y]es / [N]o: ");
                let _ = std::io::stderr().flush();
                let answer = input.lock().await.next_line().await;
                matches!(answer, Ok(Some(line)) if parse_answer(&line) != Answer::No)
            } else {
                eprintln!(
                    "pi: the MCP servers of {} were not started: pass --yes to start them",
                    files.join(" and ")
                );
                false
            };
            if consent {
                config.merge(servers.project);
            }
        }
        let mcp = McpTools::connect(&config, |warning| eprintln!("{warning}")).await;
        Ok(Tools { builtins, mcp })
    }

    fn registry(&self) -> ToolRegistry {
        let mut registry = self.builtins.clone();
        self.mcp
            .add_to(&mut registry, |warning| eprintln!("{warning}"));
        registry
    }

    /// Gives the agent the new tools when an MCP server's list changed.
    fn refresh(&mut self, agent: &mut CodingAgent) {
        if self.mcp.changed() {
            agent.set_tools(self.registry());
        }
    }
}

/// `--cwd` (or the current directory), canonical, and checked to be a directory.
pub(crate) fn working_dir(dir: Option<&std::path::Path>) -> Result<PathBuf, String> {
    let cwd = match dir {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|err| format!("pi: cannot read the current directory: {err}"))?,
    };
    let cwd = std::fs::canonicalize(&cwd)
        .map_err(|err| format!("pi: working directory {}: {err}", cwd.display()))?;
    if !cwd.is_dir() {
        return Err(format!("pi: {} is not a directory", cwd.display()));
    }
    Ok(cwd)
}

/// Where the session is saved: `--session`, the latest one for `--resume`, a new file in the
/// default directory, or nowhere with `--no-session`.
fn session_path(args: &Args, cwd: &std::path::Path) -> Result<Option<PathBuf>, String> {
    if args.no_session {
        return Ok(None);
    }
    if let Some(path) = &args.session {
        return Ok(Some(path.clone()));
    }
    let dir = Session::default_dir(cwd);
    if args.resume {
        return Session::latest_in(&dir)
            .map(Some)
            .ok_or_else(|| format!("pi: --resume: no session to resume in {}", dir.display()));
    }
    Ok(Some(Session::new_path(&dir)))
}

/// One prompt with Ctrl-C aborting it: the first press aborts the turn (the session goes on), a
/// second press while the turn is still winding down quits.
async fn run_turn(agent: &mut CodingAgent, prompt: &str, interrupts: &mut Signal) -> PromptOutcome {
    let signal = CancellationToken::new();
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let mut renderer = Renderer::new(&mut stdout, &mut stderr);
    let turn = agent.prompt(prompt, signal.clone(), &mut renderer);
    tokio::pin!(turn);
    loop {
        tokio::select! {
            outcome = &mut turn => return outcome,
            _ = interrupts.recv() => {
                if signal.is_cancelled() {
                    eprintln!("\npi: interrupted twice, quitting");
                    std::process::exit(130);
                }
                eprintln!("\n(aborting: Ctrl-C again to quit)");
                signal.cancel();
            }
        }
    }
}

async fn interactive(
    agent: &mut CodingAgent,
    tools: &mut Tools,
    input: &Input,
    interrupts: &mut Signal,
) -> Result<ExitCode, String> {
    eprintln!(
        "pi: {}/{} in {}; tools: {}. Ctrl-C aborts a turn; Ctrl-D or /exit quits.",
        agent.model().provider(),
        agent.model().id(),
        agent.cwd().display(),
        agent.tool_names().join(", "),
    );
    if let Some(session) = agent.session() {
        eprintln!("Session: {}", session.path().display());
    }
    loop {
        eprint!("\n> ");
        let _ = std::io::stderr().flush();
        let line = {
            let mut lines = input.lock().await;
            tokio::select! {
                line = lines.next_line() => line.map_err(|err| format!("pi: reading input: {err}"))?,
                _ = interrupts.recv() => None,
            }
        };
        let Some(line) = line else {
            eprintln!();
            return Ok(ExitCode::SUCCESS);
        };
        let prompt = line.trim();
        match prompt {
            "" => continue,
            "/exit" | "/quit" => return Ok(ExitCode::SUCCESS),
            _ => {
                tools.refresh(agent);
                run_turn(agent, prompt, interrupts).await;
            }
        }
    }
}

fn exit_code(outcome: &PromptOutcome) -> ExitCode {
    match outcome.stop_reason {
        StopReason::Error => ExitCode::FAILURE,
        StopReason::Aborted => ExitCode::from(130),
        _ => ExitCode::SUCCESS,
    }
}

/// Asks on the terminal, one command at a time; Ctrl-C (the run's abort) declines, and `a`
/// approves this and every later command of the session.
fn terminal_approver(input: Input) -> crate::agent::Approver {
    let always = Arc::new(std::sync::atomic::AtomicBool::new(false));
    Arc::new(move |request: ApprovalRequest| {
        let input = Arc::clone(&input);
        let always = Arc::clone(&always);
        Box::pin(async move {
            if always.load(std::sync::atomic::Ordering::Relaxed) {
                return true;
            }
            let mut lines = input.lock().await;
            eprint!("  Run `{}`? [y]es / [N]o / [a]lways: ", request.command);
            let _ = std::io::stderr().flush();
            let answer = tokio::select! {
                line = lines.next_line() => match line {
                    Ok(Some(line)) => parse_answer(&line),
                    _ => Answer::No,
                },
                () = request.signal.cancelled() => Answer::No,
            };
            if answer == Answer::Always {
                always.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            answer != Answer::No
        })
    })
}

/// A reply to an approval question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Yes,
    No,
    Always,
}

/// `y`/`yes` run the command, `a`/`always` run it and every later one; anything else declines.
fn parse_answer(line: &str) -> Answer {
    match line.trim().to_lowercase().as_str() {
        "y" | "yes" => Answer::Yes,
        "a" | "always" => Answer::Always,
        _ => Answer::No,
    }
}

/// The model from the flags and the environment, or the message saying what to set.
fn select_model(args: &Args) -> Result<Arc<dyn Model>, String> {
    use pi_runtime::providers::Selection;

    let provider = if args.base_url.is_some() {
        Some("openai-compatible".to_owned())
    } else {
        args.provider.clone()
    };
    if let Some(provider) = &provider
        && !PROVIDERS.contains(&provider.as_str())
    {
        return Err(format!(
            "pi: unknown provider \"{provider}\": use one of {}.",
            PROVIDERS.join(", ")
        ));
    }
    let model_override = match (&provider, &args.model) {
        (Some(provider), Some(model)) if !model.contains('/') => {
            Some(format!("{provider}/{model}"))
        }
        (_, Some(model)) => Some(model.clone()),
        (_, None) => None,
    };
    let base_url = args.base_url.clone();
    let lookup = |name: &str| -> Option<String> {
        if name == "OPENAI_BASE_URL"
            && let Some(url) = &base_url
        {
            return Some(url.clone());
        }
        // With --provider and no model, only that provider's variables count, so the choice
        // cannot fall to another configured provider.
        if let (Some(provider), None) = (&provider, &model_override)
            && !provider_variable(provider, name)
        {
            return None;
        }
        std::env::var(name).ok()
    };
    let selection = Selection::resolve(model_override.as_deref(), lookup).map_err(|err| {
        let message = err.to_string();
        match (&provider, &model_override) {
            // Only that provider's variables were looked at: say which one is missing.
            (Some(provider), None) => {
                let help = message
                    .split_once('\n')
                    .map_or(message.as_str(), |(_, help)| help);
                format!(
                    "--provider {provider} needs {}, which is not set.\n{help}",
                    provider_keys(provider)
                )
            }
            _ => message,
        }
    })?;
    Ok(Arc::from(selection.into_model()))
}

/// The providers `--provider` accepts.
const PROVIDERS: [&str; 4] = ["openai", "anthropic", "google", "openai-compatible"];

/// The variable(s) that configure `provider`, for messages.
fn provider_keys(provider: &str) -> &'static str {
    match provider {
        "openai" => "OPENAI_API_KEY",
        "anthropic" => "ANTHROPIC_API_KEY",
        "google" => "GEMINI_API_KEY (or GOOGLE_API_KEY)",
        _ => "OPENAI_BASE_URL (or --base-url) and a model (--model or PI_MODEL)",
    }
}

/// Whether the environment variable `name` configures `provider`.
fn provider_variable(provider: &str, name: &str) -> bool {
    match provider {
        "openai" => name == "OPENAI_API_KEY",
        "anthropic" => name == "ANTHROPIC_API_KEY",
        "google" => name == "GEMINI_API_KEY" || name == "GOOGLE_API_KEY",
        "openai-compatible" => name == "OPENAI_BASE_URL" || name == "OPENAI_API_KEY",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_answers() {
        assert_eq!(parse_answer(" Y\n"), Answer::Yes);
        assert_eq!(parse_answer("always"), Answer::Always);
        assert_eq!(parse_answer(""), Answer::No);
        assert_eq!(parse_answer("sure"), Answer::No);
    }

    #[test]
    fn flags_parse() {
        let args =
            Args::try_parse_from(["pi", "-p", "hi", "--tools", "read,ls", "--confine", "-y"])
                .unwrap();
        assert_eq!(args.prompt.as_deref(), Some("hi"));
        assert_eq!(args.tools, Some(vec!["read".to_owned(), "ls".to_owned()]));
        assert!(args.confine && args.yes);
        assert!(Args::try_parse_from(["pi", "--session", "s.jsonl", "--no-session"]).is_err());
    }

    #[test]
    fn mcp_flags_repeat() {
        let args = Args::try_parse_from([
            "pi",
            "--mcp",
            "fs=npx -y @modelcontextprotocol/server-filesystem .",
            "--mcp",
            "web=http://127.0.0.1:8000/mcp",
            "--no-mcp-config",
        ])
        .unwrap();
        assert_eq!(args.mcp.len(), 2);
        assert!(args.no_mcp_config);
    }
}
