//! The `pi` command: arguments, provider choice, the one-shot and interactive modes, Ctrl-C.

mod model_choice;
mod session_choice;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use pi_runtime::{StopReason, StreamOptions};
use pi_tool::{CancellationToken, ToolRegistry};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::Mutex;

use crate::agent::{Approval, ApprovalRequest, CodingAgent, PromptOutcome};
use crate::mcp::{ClientSetup, McpServers, McpTools, OAUTH_TOKENS_FILE};
use crate::render::Renderer;
use crate::system_prompt::{PromptParts, load_context_files};
use crate::{ALL_TOOL_NAMES, DEFAULT_TOOL_NAMES, Workspace, coding_tools};

/// The environment variables `pi` reads, for `--help`.
const ENVIRONMENT_HELP: &str = "Environment variables:
  OPENAI_API_KEY       OpenAI key (provider openai; also sent to an OpenAI-compatible server)
  ANTHROPIC_API_KEY    Anthropic key (provider anthropic)
  GEMINI_API_KEY       Google Gemini key (provider google; GOOGLE_API_KEY also works)
  OPENAI_BASE_URL      an OpenAI-compatible server (Ollama, vLLM, llama.cpp, ...), like --base-url
  PI_MODEL             the model, or provider/model, like --model
  PI_PROVIDER          the provider, like --provider
  PI_SESSION_DIR       where sessions are saved (default ~/.pi-rs/sessions/<working directory>)
  PI_CODING_AGENT_DIR  pi's agent directory (default ~/.pi/agent): its AGENTS.md, its sessions
  HOME                 where ~/.pi-rs, ~/.pi/agent and ~/.pi/agent/mcp.json are

Without --provider the first configured wins: OPENAI_BASE_URL, OPENAI_API_KEY,
ANTHROPIC_API_KEY, GEMINI_API_KEY/GOOGLE_API_KEY.";

/// Whether tools are sent with OpenAI's `strict: true`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Strict {
    /// Send `strict: true` where a tool's schema qualifies.
    On,
    /// Never send `strict`.
    Off,
}

/// `pi`: a coding agent in your terminal. It reads, edits, writes and runs code in the working
/// directory with the model you choose.
#[derive(Debug, Parser)]
#[command(name = "pi", version, about, long_about = None, after_help = ENVIRONMENT_HELP)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Prompts to send, one after another (`pi "fix the test"`); then the session goes on
    /// interactively, or, with --print, pi exits
    #[arg(value_name = "PROMPT")]
    pub messages: Vec<String>,
    /// Print mode: send the prompts, print the answer and exit
    #[arg(short = 'p', long = "print")]
    pub print: bool,
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
    /// API key (default: the provider's environment variable)
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Send tools with OpenAI's `strict: true` (default: on for OpenAI, off for compatible
    /// servers, many of which reject or ignore it)
    #[arg(long, value_name = "ON|OFF")]
    pub strict: Option<Strict>,
    /// Run bash commands without asking for approval
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Working directory of the tools (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Confine read, edit, write, grep, find and ls to the working directory
    #[arg(long)]
    pub confine: bool,
    /// Tools to offer, comma-separated, in this order (default: read,bash,edit,write; `all` for
    /// all seven)
    #[arg(short = 't', long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
    /// Save the session to this JSONL file, resuming it if it exists (a pi session file is
    /// read and continued in a new file)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["resume", "continue_session", "no_session"])]
    pub session: Option<PathBuf>,
    /// Continue the most recent session of the working directory (ours or pi's)
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["resume", "no_session"])]
    pub continue_session: bool,
    /// Pick a recent session of the working directory to resume (ours or pi's)
    #[arg(short = 'r', long, conflicts_with = "no_session")]
    pub resume: bool,
    /// Directory for saving and finding sessions (default: $PI_SESSION_DIR, else
    /// `~/.pi-rs/sessions/<working directory>`, and pi's own sessions are found too)
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,
    /// Do not save the session
    #[arg(long)]
    pub no_session: bool,
    /// Replace the system prompt (context files, date and working directory are still added)
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// Append text, or a file's contents, to the system prompt (repeatable)
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Vec<String>,
    /// Do not load AGENTS.md / CLAUDE.md files
    #[arg(long)]
    pub no_context_files: bool,
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
    /// stdio (the default), streamable HTTP or a Unix socket
    #[command(after_help = MCP_SERVE_HELP)]
    Serve(McpServeArgs),
}

/// What `pi mcp serve --help` adds after the options.
const MCP_SERVE_HELP: &str =
    "Over HTTP every request needs `Authorization: Bearer TOKEN`: the token is
$PI_MCP_TOKEN when set (16 characters or more), else a new random one printed at start.
Whoever has it can run bash as you. Only loopback addresses are served unless --allow-remote
is given; then put TLS in front (a reverse proxy). --unix PATH serves on a socket only you can
open (mode 0600), with no token unless PI_MCP_TOKEN is set.";

/// `pi mcp serve [--http ADDR | --unix PATH] [--cwd DIR] [--confine] ...`
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("transport").args(["http", "unix"]))]
pub struct McpServeArgs {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080)
    #[arg(long, value_name = "ADDR", conflicts_with = "unix")]
    pub http: Option<String>,
    /// Serve streamable HTTP on a Unix socket at PATH (mode 0600) instead of stdio
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Serve on an address that is not a loopback one (0.0.0.0, a LAN address); the token is
    /// then required, and any Host header is accepted unless --allow-host names them
    #[arg(long, requires = "http", conflicts_with = "unix")]
    pub allow_remote: bool,
    /// Take HTTP requests without a token (loopback addresses only): every program and user of
    /// this machine can then run the tools
    #[arg(long, requires = "http", conflicts_with_all = ["allow_remote", "unix"])]
    pub no_auth: bool,
    /// A browser origin allowed to call, e.g. http://localhost:6274 (repeatable; requests with
    /// any other Origin header get 403)
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "transport")]
    pub allow_origin: Vec<String>,
    /// A Host header value accepted besides localhost, 127.0.0.1 and ::1, e.g. mcp.example.com
    /// behind a reverse proxy (repeatable)
    #[arg(
        long = "allow-host",
        value_name = "HOST",
        requires = "http",
        conflicts_with = "unix"
    )]
    pub allow_host: Vec<String>,
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
    if args.print && args.messages.is_empty() {
        return Err("pi: --print needs a prompt: pi -p \"fix the failing test\"".into());
    }
    let cwd = working_dir(args.cwd.as_deref())?;
    let builtin_names = tool_names(args.tools.as_deref())?;
    let chosen = model_choice::select_model(&args)?;
    let model = chosen.model;
    let workspace = Workspace::new(&cwd)
        .confined(args.confine)
        .with_images_supported(model.accepts_images());
    let builtins = coding_tools(workspace)
        .subset(&builtin_names)
        .map_err(|err| format!("pi: --tools: {err}"))?;

    let input: Input = Arc::new(Mutex::new(BufReader::new(tokio::io::stdin()).lines()));
    let session = match session_choice::choose(&args, &cwd, &input).await? {
        session_choice::Choice::Cancelled => {
            eprintln!("No session selected.");
            return Ok(ExitCode::SUCCESS);
        }
        session_choice::Choice::None => None,
        session_choice::Choice::Open(resumed) => Some(resumed),
    };
    let mut tools = Tools::start(&args, &cwd, builtins, &input).await?;
    let approval = if args.yes {
        Approval::Always
    } else if std::io::stdin().is_terminal() {
        Approval::Ask(terminal_approver(Arc::clone(&input)))
    } else {
        Approval::Never("Running commands needs the user's approval, and none can be asked for here: the user can rerun pi with --yes to allow it.".into())
    };
    let mut agent = CodingAgent::new(Arc::clone(&model), tools.registry(), &cwd)
        .with_approval(approval)
        .with_tool_order(builtin_names.iter().cloned());
    let prompt = system_prompt(&args, &cwd, &agent)?;
    agent = agent.with_system_prompt(prompt);
    if let Some(resumed) = session {
        let count = resumed.messages.len();
        match &resumed.imported_from {
            Some(pi_file) => eprintln!(
                "Resumed pi session {} ({count} messages); continuing in {}",
                pi_file.display(),
                resumed.session.path().display()
            ),
            None if count > 0 => eprintln!(
                "Resumed {} ({count} messages)",
                resumed.session.path().display()
            ),
            None => {}
        }
        agent = agent.with_session(resumed.session, resumed.messages);
    }
    let mut options = StreamOptions::default();
    options.api_key.clone_from(&args.api_key);
    agent = agent.with_stream_options(options);
    if let Some(server) = &chosen.server {
        model_choice::warn_if_unreachable(server).await;
    }

    // One listener for the whole process: a press is never lost between two waits for it.
    let mut interrupts = signal(SignalKind::interrupt())
        .map_err(|err| format!("pi: cannot listen for Ctrl-C: {err}"))?;
    if args.print {
        let mut code = ExitCode::SUCCESS;
        for prompt in &args.messages {
            let outcome = run_turn(&mut agent, prompt, &mut interrupts).await;
            code = exit_code(&outcome);
            if outcome.stop_reason == StopReason::Error
                || outcome.stop_reason == StopReason::Aborted
            {
                break;
            }
        }
        return Ok(code);
    }
    interactive(
        &mut agent,
        &mut tools,
        &args.messages,
        &input,
        &mut interrupts,
    )
    .await
}

/// The built-in tools `--tools` names, in its order (pi's default set without it); an unknown
/// name is an error that lists the valid ones.
fn tool_names(requested: Option<&[String]>) -> Result<Vec<String>, String> {
    let Some(requested) = requested else {
        return Ok(DEFAULT_TOOL_NAMES.iter().map(|n| (*n).to_owned()).collect());
    };
    let mut names: Vec<String> = Vec::new();
    for name in requested.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if name == "all" {
            names.extend(ALL_TOOL_NAMES.iter().map(|n| (*n).to_owned()));
        } else if ALL_TOOL_NAMES.contains(&name) {
            names.push(name.to_owned());
        } else {
            return Err(format!(
                "pi: --tools: there is no tool \"{name}\"; the tools are {} (or all)",
                ALL_TOOL_NAMES.join(", ")
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    Ok(names)
}

/// pi's system prompt: `--system-prompt` or pi's own, `--append-system-prompt` (a path to a
/// file is replaced by its contents, as in pi), the context files unless
/// `--no-context-files`, the date and the working directory.
fn system_prompt(args: &Args, cwd: &Path, agent: &CodingAgent) -> Result<String, String> {
    let mut append = Vec::new();
    for text in &args.append_system_prompt {
        let path = cwd.join(text);
        append.push(if !text.contains('\n') && path.is_file() {
            std::fs::read_to_string(&path)
                .map_err(|err| format!("pi: --append-system-prompt {}: {err}", path.display()))?
        } else {
            text.clone()
        });
    }
    let context_files = if args.no_context_files {
        Vec::new()
    } else {
        load_context_files(&crate::session::pi_agent_dir(), cwd, |warning| {
            eprintln!("Warning: {warning}");
        })
    };
    let parts = PromptParts {
        custom: args.system_prompt.clone(),
        append,
        context_files,
        date: None,
    };
    Ok(crate::system_prompt::build(
        &agent.tool_names(),
        cwd,
        &parts,
    ))
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
        cwd: &Path,
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
        let asks = !args.print && std::io::stdin().is_terminal();
        let setup = ClientSetup::for_terminal(
            &config,
            crate::session::pi_agent_dir().join(OAUTH_TOKENS_FILE),
            asks.then(|| Arc::clone(input)),
            |warning| eprintln!("{warning}"),
        );
        let mcp = McpTools::connect_with(&config, &setup, |warning| eprintln!("{warning}")).await;
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
pub(crate) fn working_dir(dir: Option<&Path>) -> Result<PathBuf, String> {
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
    initial: &[String],
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
    for prompt in initial {
        eprintln!("\n> {prompt}");
        tools.refresh(agent);
        run_turn(agent, prompt, interrupts).await;
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
            // The call's header (`● bash $ command`) is on the line above.
            eprint!("  Run this command? [y]es / [N]o / [a]lways: ");
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
        assert!(args.print);
        assert_eq!(args.messages, ["hi"]);
        assert_eq!(args.tools, Some(vec!["read".to_owned(), "ls".to_owned()]));
        assert!(args.confine && args.yes);
        assert!(Args::try_parse_from(["pi", "--session", "s.jsonl", "--no-session"]).is_err());
        assert!(Args::try_parse_from(["pi", "-c", "-r"]).is_err());
        let args = Args::try_parse_from(["pi", "fix the test", "then run it", "-c"]).unwrap();
        assert_eq!(args.messages, ["fix the test", "then run it"]);
        assert!(args.continue_session && !args.print);
        let args = Args::try_parse_from(["pi", "mcp", "serve"]).unwrap();
        assert!(args.command.is_some() && args.messages.is_empty());
    }

    fn serve_args(words: &[&str]) -> Result<McpServeArgs, clap::Error> {
        let args = Args::try_parse_from(["pi", "mcp", "serve"].iter().chain(words))?;
        match args.command {
            Some(Command::Mcp {
                command: McpCommand::Serve(serve),
            }) => Ok(serve),
            other => panic!("not mcp serve: {other:?}"),
        }
    }

    #[test]
    fn mcp_serve_flags_go_with_their_transport() {
        let serve = serve_args(&[
            "--http",
            "0.0.0.0:8080",
            "--allow-remote",
            "--allow-origin",
            "http://localhost:6274",
            "--allow-origin",
            "https://app.example.com",
            "--allow-host",
            "mcp.example.com",
        ])
        .unwrap();
        assert!(serve.allow_remote && !serve.no_auth);
        assert_eq!(serve.allow_origin.len(), 2);
        assert_eq!(serve.allow_host, ["mcp.example.com"]);
        assert!(serve_args(&["--unix", "/tmp/pi.sock", "--allow-origin", "null"]).is_ok());
        for wrong in [
            &["--allow-remote"][..],
            &["--no-auth"],
            &["--unix", "/tmp/pi.sock", "--no-auth"],
            &["--unix", "/tmp/pi.sock", "--http", "127.0.0.1:0"],
            &["--http", "0.0.0.0:0", "--allow-remote", "--no-auth"],
            &["--allow-host", "example.com"],
            &["--allow-origin", "http://localhost:6274"],
            &["--unix", "/tmp/pi.sock", "--allow-remote"],
            &["--unix", "/tmp/pi.sock", "--allow-host", "example.com"],
        ] {
            assert!(serve_args(wrong).is_err(), "{wrong:?}");
        }
    }

    #[test]
    fn unknown_tools_list_the_valid_names() {
        let err = tool_names(Some(&["read".to_owned(), "blah".to_owned()])).unwrap_err();
        assert_eq!(
            err,
            "pi: --tools: there is no tool \"blah\"; the tools are read, bash, edit, write, grep, find, ls (or all)"
        );
        assert_eq!(
            tool_names(Some(&["ls".to_owned(), "read".to_owned(), "ls".to_owned()])).unwrap(),
            ["ls", "read"]
        );
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
