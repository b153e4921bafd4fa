//! The `pi` command: arguments (pi 0.73.1's flags, its two-letter short forms included),
//! configuration, the provider and session choice, and the modes: print (`-p`), JSON events
//! (`--mode json`), the RPC protocol (`--mode rpc`) and interactive.

mod argv;
mod input;
mod interactive;
mod list_models;
mod model_choice;
mod print;
mod rpc;
mod saved_settings;
mod session_choice;
mod tui;
mod waiting;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use pi_runtime::{StreamOptions, ThinkingLevel};
use pi_tool::ToolRegistry;
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::Mutex;

use crate::agent::{Approval, ApprovalRequest, CodingAgent};
use crate::config::Settings;
use crate::mcp::{ClientSetup, McpServers, McpTools, OAUTH_TOKENS_FILE};
use crate::models::ModelRegistry;
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
  PI_CODING_AGENT_DIR  pi's agent directory (default ~/.pi/agent): models.json, settings.json,
                       AGENTS.md, SYSTEM.md, APPEND_SYSTEM.md, mcp.json, sessions/
  PI_CODING_AGENT_SESSION_DIR  where sessions are saved and found (like --session-dir)
  PI_SESSION_DIR       as PI_CODING_AGENT_SESSION_DIR (the name earlier versions used)
  HOME                 where ~/.pi/agent is

Without --provider and --model: settings.json's defaultProvider/defaultModel, else the first
configured of OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY/GOOGLE_API_KEY,
else the first model of models.json.

Package commands (pi install, remove, update, list, config) are not supported.";

/// `--mode`: how `pi` talks to its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Text: the answer (print mode) or a conversation in the terminal.
    Text,
    /// Every event as one JSON line on stdout, then exit (pi's `--mode json`).
    Json,
    /// pi's RPC protocol: JSON commands on stdin, responses and events on stdout.
    Rpc,
}

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
    /// Provider: openai, anthropic, google, mistral, azure-openai-responses, amazon-bedrock,
    /// google-vertex, google-vertex-anthropic, openai-compatible
    /// or one of models.json (default: the first configured in the environment)
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
    /// The OS sandbox bash commands run in: workspace-write (the default: writes only in the
    /// working directory and the temp dir, .git read-only, no network, no API keys), read-only,
    /// or off (full-access; commands then need approval, or --yes)
    #[arg(long, value_name = "MODE", value_parser = parse_sandbox)]
    pub sandbox: Option<pi_sandbox::SandboxMode>,
    /// Working directory of the tools (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Confine read, edit, write, grep, find and ls to the working directory
    #[arg(long)]
    pub confine: bool,
    /// Tools to offer, comma-separated, in this order (default: read,bash,edit,write; the
    /// seven are read, bash, edit, write, grep, find, ls; "" for none)
    #[arg(short = 't', long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
    /// Offer no tools at all, built-in or MCP (`-nt`)
    #[arg(long)]
    pub no_tools: bool,
    /// Offer no built-in tools, only the MCP servers' (`-nbt`)
    #[arg(long)]
    pub no_builtin_tools: bool,
    /// Save to and continue this session: a file (created if missing), or the start of a
    /// session id, looked up as pi does (this project's sessions, then every project's)
    #[arg(long, value_name = "PATH|ID", conflicts_with_all = ["resume", "continue_session", "no_session"])]
    pub session: Option<String>,
    /// Continue a copy of this session (a file or the start of an id) in a new session
    #[arg(long, value_name = "PATH|ID")]
    pub fork: Option<String>,
    /// Continue the most recent session of the working directory (ours or pi's)
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["resume", "no_session"])]
    pub continue_session: bool,
    /// Pick a recent session of the working directory to resume (ours or pi's)
    #[arg(short = 'r', long, conflicts_with = "no_session")]
    pub resume: bool,
    /// Directory for saving and finding sessions (default: $PI_CODING_AGENT_SESSION_DIR, else
    /// settings.json's sessionDir, else pi's `~/.pi/agent/sessions/--<working directory>--`)
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
    /// Do not load AGENTS.md / CLAUDE.md files (`-nc`)
    #[arg(long)]
    pub no_context_files: bool,
    /// Thinking level: off, minimal, low, medium, high, xhigh (clamped to what the model has;
    /// default settings.json's, else medium)
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<String>,
    /// Output mode: text (default), json (every event as a JSON line), rpc (JSON commands on
    /// stdin, events and responses on stdout)
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<Mode>,
    /// Models to switch between with /model and RPC's cycle_model, comma-separated patterns
    /// (`sonnet,gpt-5:high`; default settings.json's enabledModels)
    #[arg(long, value_delimiter = ',', value_name = "PATTERNS")]
    pub models: Option<Vec<String>>,
    /// List the models (those matching SEARCH) and exit
    #[arg(long, value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,
    /// Export a session file to HTML and exit: `pi --export session.jsonl [out.html]`
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// pi's: load a TypeScript extension (not supported here)
    #[arg(short = 'e', long = "extension", value_name = "PATH", hide = true)]
    pub extensions: Vec<String>,
    /// pi's: load a skill (not supported here)
    #[arg(long = "skill", value_name = "PATH", hide = true)]
    pub skills: Vec<String>,
    /// pi's: load a prompt template (not supported here)
    #[arg(long = "prompt-template", value_name = "PATH", hide = true)]
    pub prompt_templates: Vec<String>,
    /// pi's: load a theme (the plain terminal here has none)
    #[arg(long = "theme", value_name = "PATH", hide = true)]
    pub themes: Vec<String>,
    /// pi's switches that have nothing to switch off here: --no-extensions (-ne),
    /// --no-skills (-ns), --no-prompt-templates (-np), --no-themes, --verbose, --offline
    #[arg(long, hide = true)]
    pub no_extensions: bool,
    /// See `no_extensions`.
    #[arg(long, hide = true)]
    pub no_skills: bool,
    /// See `no_extensions`.
    #[arg(long, hide = true)]
    pub no_prompt_templates: bool,
    /// See `no_extensions`.
    #[arg(long, hide = true)]
    pub no_themes: bool,
    /// See `no_extensions`.
    #[arg(long, hide = true)]
    pub verbose: bool,
    /// See `no_extensions`.
    #[arg(long, hide = true)]
    pub offline: bool,
    /// Use an MCP server's tools, named NAME__tool: a stdio command line, or an http(s):// URL
    /// (repeatable)
    #[arg(long = "mcp", value_name = "NAME=COMMAND")]
    pub mcp: Vec<String>,
    /// Ignore the mcpServers files (~/.pi/agent/mcp.json, .mcp.json, .pi/mcp.json)
    #[arg(long)]
    pub no_mcp_config: bool,
    /// Send every MCP tool's schema with every request (past 30 MCP tools they are deferred by
    /// default, and the model finds them with tool_search)
    #[arg(long)]
    pub mcp_tools_direct: bool,
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
    /// The OS sandbox bash commands run in: workspace-write (the default), read-only, or off
    #[arg(long, value_name = "MODE", value_parser = parse_sandbox)]
    pub sandbox: Option<pi_sandbox::SandboxMode>,
}

/// `--sandbox`'s value.
fn parse_sandbox(value: &str) -> Result<pi_sandbox::SandboxMode, String> {
    pi_sandbox::SandboxMode::parse(value).ok_or_else(|| {
        format!("`{value}` is no sandbox mode: read-only, workspace-write, or off (full-access)")
    })
}

/// Shared standard input: prompts and approvals read lines from the same reader.
type Input = Arc<Mutex<Lines<BufReader<Stdin>>>>;

/// Exit code when `bash` calls were refused because nobody could approve them (print, JSON and
/// RPC modes without `--yes`): the run stops at the first one, and stderr says why.
pub const EXIT_APPROVAL_NEEDED: u8 = 3;

/// The `pi` binary: this process's arguments, parsed as pi parses them (its two-letter short
/// flags `-nc`, `-nt`, `-nbt`, `-ne`, `-ns`, `-np` and `-v` read as their long forms; pi's
/// package commands answered), then [`run`].
pub async fn main() -> ExitCode {
    let argv = argv::normalize(std::env::args_os());
    if let Some(command) = argv::package_command(&argv) {
        eprintln!(
            "pi: packages are not supported: `pi {command}` manages pi's TypeScript extensions, skills, prompt templates and themes, which this pi cannot load. (To send \"{command}\" as a prompt: pi -- {command} ...)"
        );
        return ExitCode::FAILURE;
    }
    let help = argv
        .iter()
        .skip(1)
        .map(|a| a.to_str())
        .take_while(|a| *a != Some("--"))
        .any(|a| matches!(a, Some("-h" | "--help")));
    let parsed = if help {
        // Only for --help: the providers of this machine's models.json are read and listed.
        use clap::{CommandFactory, FromArgMatches};
        Args::command()
            .after_help(format!("{}\n\n{ENVIRONMENT_HELP}", providers_help()))
            .try_get_matches_from(argv)
            .and_then(|matches| Args::from_arg_matches(&matches))
    } else {
        Args::try_parse_from(argv)
    };
    match parsed {
        Ok(args) => run(args).await,
        Err(err) => err.exit(),
    }
}

/// `--help`'s list of providers: the built-in ones, then those of `models.json`.
fn providers_help() -> String {
    let agent_dir = crate::session::pi_agent_dir();
    let builtin = ModelRegistry::from_config(crate::config::ModelsConfig::default(), None);
    let builtin: Vec<&str> = builtin.provider_names();
    let registry = ModelRegistry::load(&agent_dir);
    let mut names: Vec<String> = builtin.iter().map(|n| (*n).to_owned()).collect();
    for name in registry.provider_names() {
        if !builtin.contains(&name) {
            names.push(format!("{name} (models.json)"));
        }
    }
    names.push("openai-compatible (with --base-url or OPENAI_BASE_URL)".into());
    format!("Providers (--provider):\n  {}", names.join("\n  "))
}

/// Runs the `pi` command; the exit code is 0 on success, 1 on an error, 2 for bad arguments,
/// 3 when commands were refused for want of approval ([`EXIT_APPROVAL_NEEDED`]), 130 after
/// Ctrl-C.
pub async fn run(args: Args) -> ExitCode {
    match start(args).await {
        Ok(code) => code,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// What every mode gets: the agent, its configuration, and the shared input and Ctrl-C.
pub(crate) struct Setup {
    pub(crate) agent: CodingAgent,
    pub(crate) tools: Tools,
    pub(crate) registry: ModelRegistry,
    pub(crate) settings: Settings,
    pub(crate) input: Input,
    pub(crate) interrupts: Signal,
    /// `--models`/`enabledModels`, resolved: what `/model` and `cycle_model` switch between.
    pub(crate) scoped: Vec<(crate::models::ModelInfo, Option<ThinkingLevel>)>,
    /// Where new sessions go (`/new`).
    pub(crate) session_dir: PathBuf,
    /// Where sessions are looked for (`/resume`).
    pub(crate) session_search: Vec<PathBuf>,
    pub(crate) api_key: Option<String>,
    pub(crate) strict: Option<bool>,
}

async fn start(args: Args) -> Result<ExitCode, String> {
    if let Some(Command::Mcp {
        command: McpCommand::Serve(serve),
    }) = &args.command
    {
        crate::mcp_serve::serve(serve).await?;
        return Ok(ExitCode::SUCCESS);
    }
    for (flag, values) in [
        ("--extension", &args.extensions),
        ("--skill", &args.skills),
        ("--prompt-template", &args.prompt_templates),
    ] {
        if !values.is_empty() {
            return Err(format!(
                "pi: {flag}: pi's TypeScript extensions, skills and prompt templates are not supported by this pi"
            ));
        }
    }
    if let Some(path) = &args.export {
        let output = args.messages.first().map(PathBuf::from);
        let written = crate::export::export_file(path, output.as_deref())?;
        println!("Exported to: {}", written.display());
        return Ok(ExitCode::SUCCESS);
    }
    if args.fork.is_some() {
        let conflicting: Vec<&str> = [
            (args.session.is_some(), "--session"),
            (args.continue_session, "--continue"),
            (args.resume, "--resume"),
            (args.no_session, "--no-session"),
        ]
        .into_iter()
        .filter_map(|(set, flag)| set.then_some(flag))
        .collect();
        if !conflicting.is_empty() {
            return Err(format!(
                "Error: --fork cannot be combined with {}",
                conflicting.join(", ")
            ));
        }
    }
    let mode = args.mode.unwrap_or(Mode::Text);
    if mode == Mode::Rpc && args.messages.iter().any(|m| m.starts_with('@')) {
        return Err("Error: @file arguments are not supported in RPC mode".into());
    }
    let cwd = working_dir(args.cwd.as_deref())?;
    let agent_dir = crate::session::pi_agent_dir();
    let settings = Settings::load(&agent_dir, &cwd, |warning| eprintln!("Warning: {warning}"));
    let registry = ModelRegistry::load(&agent_dir);
    if let Some(error) = &registry.error {
        eprintln!("Warning: errors loading models.json:\n{error}");
    }
    if let Some(search) = &args.list_models {
        list_models::print(&registry, search);
        return Ok(ExitCode::SUCCESS);
    }
    let thinking_flag = match args.thinking.as_deref() {
        Some(name) => match ThinkingLevel::parse(name) {
            Some(level) => Some(level),
            None => {
                eprintln!(
                    "Warning: Invalid thinking level \"{name}\". Valid values: off, minimal, low, medium, high, xhigh"
                );
                None
            }
        },
        None => None,
    };
    let interactive_terminal = std::io::stdin().is_terminal();

    let input: Input = Arc::new(Mutex::new(BufReader::new(tokio::io::stdin()).lines()));
    let (session_dir, session_search) = session_choice::session_dirs(&args, &cwd, &settings);
    let resumed =
        match session_choice::choose(&args, &cwd, &session_dir, &session_search, &input).await? {
            session_choice::Choice::Cancelled => {
                eprintln!("No session selected.");
                return Ok(ExitCode::SUCCESS);
            }
            session_choice::Choice::Open(resumed) => *resumed,
        };
    let saved = resumed.session.context().ok();
    let saved_model = saved.as_ref().and_then(|c| c.model.clone());
    let has_history = !resumed.messages.is_empty();
    let chosen = model_choice::select_model(
        &args,
        &settings,
        &registry,
        saved_model.filter(|_| has_history),
    )?;
    if let Some(warning) = &chosen.warning {
        eprintln!("Warning: {warning}");
    }
    let model = chosen.model;
    // pi's order: the flag, then `--model id:level`, then the session's, then settings, then
    // medium; clamped to what the model has.
    let saved_thinking = saved
        .as_ref()
        .and_then(|c| c.thinking_level.as_deref())
        .and_then(ThinkingLevel::parse)
        .filter(|_| has_history);
    let thinking = thinking_flag
        .or(chosen.thinking)
        .or(saved_thinking)
        .or_else(|| {
            settings
                .default_thinking_level
                .as_deref()
                .and_then(ThinkingLevel::parse)
        })
        .unwrap_or(ThinkingLevel::Medium);

    let builtin_names = if args.no_tools || args.no_builtin_tools {
        Vec::new()
    } else {
        tool_names(args.tools.as_deref())
    };
    let sandbox = settings.sandbox_policy(args.sandbox, &cwd, &agent_dir)?;
    let sandboxed = sandbox.mode() != pi_sandbox::SandboxMode::FullAccess;
    let workspace = Workspace::new(&cwd)
        .confined(args.confine)
        .with_sandbox(sandbox)
        .with_images_supported(model.accepts_images());
    let workspace = match settings.shell_path.as_deref() {
        Some(shell) => workspace.with_shell(shell),
        None => workspace,
    };
    let builtins = coding_tools(workspace)
        .subset(&builtin_names)
        .map_err(|err| format!("pi: --tools: {err}"))?;
    // The terminal interface (both ends a terminal, interactive text mode) asks in its own
    // screen; a plain terminal (TERM unset or dumb) keeps the line prompts.
    let use_tui = mode == Mode::Text && !args.print && tui::wanted();
    let (server_questions, elicitations) = tui::elicitation::channel();
    let interface_questions =
        use_tui.then(|| Arc::new(server_questions) as Arc<dyn pi_mcp::ElicitationHandler>);
    let mut tools = if args.no_tools {
        Tools::none(builtins)
    } else {
        Tools::start(&args, &cwd, builtins, &input, interface_questions).await?
    };
    // A confined command needs no approval: the sandbox is what keeps it in bounds (and where
    // it cannot be confined, `bash` refuses it instead of running it unconfined).
    let (asker, questions) = tui::approval::channel();
    let approval = if args.yes || sandboxed {
        Approval::Always
    } else if use_tui {
        Approval::Ask(asker.approver())
    } else if interactive_terminal && mode == Mode::Text && !args.print {
        Approval::Ask(terminal_approver(Arc::clone(&input)))
    } else {
        Approval::Never(format!(
            "Running commands outside the sandbox needs the user's approval, and none can be asked for here: the user can rerun pi with --yes to allow it.{}",
            ""
        ))
    };
    let mut agent = CodingAgent::new(Arc::clone(&model), tools.registry(), &cwd)
        .with_approval(approval)
        .with_tool_order(builtin_names.iter().cloned())
        .with_model_info(chosen.info.clone())
        .with_thinking(thinking)
        .with_compaction(settings.compaction())
        .with_shell(
            settings.shell_path.as_deref().map(PathBuf::from),
            settings.shell_command_prefix.clone(),
        );
    let prompt = system_prompt(&args, &cwd, &agent_dir, &agent)?;
    agent = agent.with_system_prompt(prompt);
    let count = resumed.messages.len();
    if count > 0 && mode == Mode::Text {
        eprintln!(
            "Resumed {} ({count} messages)",
            resumed.session.path().display()
        );
    }
    agent = agent.with_session(resumed.session, resumed.messages);
    agent.record_start();
    let mut options = StreamOptions::default();
    options.api_key.clone_from(&args.api_key);
    agent = agent.with_stream_options(options);
    if let Some(server) = &chosen.server {
        model_choice::warn_if_unreachable(server).await;
    }
    tools.refresh(&mut agent);
    let scoped = model_choice::scope(&args, &settings, &registry);

    // One listener for the whole process: a press is never lost between two waits for it.
    let interrupts = signal(SignalKind::interrupt())
        .map_err(|err| format!("pi: cannot listen for Ctrl-C: {err}"))?;
    let mut setup = Setup {
        agent,
        tools,
        registry,
        settings,
        input,
        interrupts,
        scoped,
        session_dir,
        session_search,
        api_key: args.api_key.clone(),
        strict: args.strict.map(|s| s == Strict::On),
    };
    if mode == Mode::Rpc {
        return rpc::run(setup).await;
    }
    // pi reads piped stdin into the first prompt, and then runs in print mode.
    let stdin_text = if interactive_terminal {
        None
    } else {
        input::read_rest(&setup.input).await
    };
    let (files, mut messages): (Vec<String>, Vec<String>) = args
        .messages
        .iter()
        .cloned()
        .partition(|m| m.starts_with('@'));
    let first = input::initial_message(stdin_text.as_deref(), &files, &mut messages, &cwd)?;
    let print_mode = args.print || !interactive_terminal || mode == Mode::Json;
    // A continued session whose last run stopped at calls waiting for approval: decide them
    // and go on with that run first.
    let deciding = if args.yes {
        waiting::Deciding::ApproveAll
    } else if interactive_terminal && !print_mode {
        waiting::Deciding::Ask
    } else {
        waiting::Deciding::Nobody
    };
    let prompt_follows = first.is_some() || !messages.is_empty();
    let json = mode == Mode::Json;
    if json {
        // First, before the events of a paused run that goes on.
        print::JsonLines::header(&setup);
    }
    let output = waiting::Output {
        print_mode,
        json,
        prompt_follows,
    };
    if let Some(code) = waiting::settle(&mut setup, deciding, output).await {
        return Ok(code);
    }
    if print_mode {
        let mut prompts: Vec<Vec<pi_tool::Content>> = Vec::new();
        prompts.extend(first);
        prompts.extend(
            messages
                .into_iter()
                .map(|m| vec![pi_tool::Content::text(m)]),
        );
        if prompts.is_empty() && mode != Mode::Json {
            return Err(
                "pi: --print needs a prompt: pi -p \"fix the failing test\" (or pipe one in)"
                    .into(),
            );
        }
        return Ok(print::run(&mut setup, prompts, json).await);
    }
    if use_tui {
        return tui::run(&mut setup, first, messages, questions, elicitations).await;
    }
    interactive::run(&mut setup, first, messages).await
}

/// The built-in tools `--tools` names, in its order (pi's default set without it). As in pi, a
/// name that is no built-in tool is left out, with a warning here.
fn tool_names(requested: Option<&[String]>) -> Vec<String> {
    let Some(requested) = requested else {
        return DEFAULT_TOOL_NAMES.iter().map(|n| (*n).to_owned()).collect();
    };
    let mut names: Vec<String> = Vec::new();
    for name in requested.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if ALL_TOOL_NAMES.contains(&name) {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        } else {
            eprintln!(
                "Warning: --tools: there is no tool \"{name}\" (left out); the tools are {}",
                ALL_TOOL_NAMES.join(", ")
            );
        }
    }
    names
}

/// pi's system prompt: `--system-prompt` (a file's contents when it names one), else
/// `.pi/SYSTEM.md` (the project's, else the agent directory's), else pi's own; then
/// `--append-system-prompt` (each a text or a file's contents), else `APPEND_SYSTEM.md`; the
/// context files unless `--no-context-files`; the date and the working directory.
fn system_prompt(
    args: &Args,
    cwd: &Path,
    agent_dir: &Path,
    agent: &CodingAgent,
) -> Result<String, String> {
    let read_prompt = |text: &str, what: &str| -> Result<String, String> {
        let path = cwd.join(text);
        if !text.contains('\n') && path.is_file() {
            std::fs::read_to_string(&path)
                .map_err(|err| format!("pi: {what} {}: {err}", path.display()))
        } else {
            Ok(text.to_owned())
        }
    };
    let custom = match &args.system_prompt {
        Some(text) => Some(read_prompt(text, "--system-prompt")?),
        None => match crate::config::prompt_file(agent_dir, cwd, "SYSTEM.md") {
            Some(path) => Some(
                std::fs::read_to_string(&path)
                    .map_err(|err| format!("pi: {}: {err}", path.display()))?,
            ),
            None => None,
        },
    };
    let mut append = Vec::new();
    if args.append_system_prompt.is_empty()
        && let Some(path) = crate::config::prompt_file(agent_dir, cwd, "APPEND_SYSTEM.md")
    {
        {
            append.push(
                std::fs::read_to_string(&path)
                    .map_err(|err| format!("pi: {}: {err}", path.display()))?,
            );
        }
    }
    for text in &args.append_system_prompt {
        append.push(read_prompt(text, "--append-system-prompt")?);
    }
    let context_files = if args.no_context_files {
        Vec::new()
    } else {
        load_context_files(agent_dir, cwd, |warning| {
            eprintln!("Warning: {warning}");
        })
    };
    let parts = PromptParts {
        custom,
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
pub(crate) struct Tools {
    builtins: ToolRegistry,
    mcp: McpTools,
}

impl Tools {
    /// Only `builtins`, no MCP server started (`--no-tools`).
    fn none(builtins: ToolRegistry) -> Tools {
        Tools {
            builtins,
            mcp: McpTools::default(),
        }
    }

    /// Reads the MCP configuration (files unless `--no-mcp-config`, then `--mcp` options) and
    /// connects. The project's servers start only with the user's consent: `--yes`, or `y` to
    /// a question on the terminal. Servers' questions during calls go to `interface` when the
    /// terminal interface runs, else they are asked on lines of the terminal (not --print).
    async fn start(
        args: &Args,
        cwd: &Path,
        builtins: ToolRegistry,
        input: &Input,
        interface: Option<Arc<dyn pi_mcp::ElicitationHandler>>,
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
        // Questions are asked on lines of the cooked terminal, or in the terminal interface,
        // which reads keys; with --print the server is told that pi cannot ask.
        let asks = !args.print && std::io::stdin().is_terminal() && interface.is_none();
        let mut setup = ClientSetup::for_terminal(
            &config,
            crate::session::pi_agent_dir().join(OAUTH_TOKENS_FILE),
            asks.then(|| Arc::clone(input)),
            |warning| eprintln!("{warning}"),
        );
        if interface.is_some() {
            setup.elicitation = interface;
        }
        let mut mcp =
            McpTools::connect_with(&config, &setup, |warning| eprintln!("{warning}")).await;
        mcp.send_directly(args.mcp_tools_direct);
        Ok(Tools { builtins, mcp })
    }

    pub(crate) fn registry(&self) -> ToolRegistry {
        let mut registry = self.builtins.clone();
        self.mcp
            .add_to(&mut registry, |warning| eprintln!("{warning}"));
        registry
    }

    /// Gives the agent the new tools when an MCP server's list changed.
    pub(crate) fn refresh(&mut self, agent: &mut CodingAgent) {
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
    fn unknown_tools_are_left_out_as_in_pi() {
        let names = |list: &[&str]| {
            tool_names(Some(
                &list.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(),
            ))
        };
        assert_eq!(names(&["read", "blah"]), ["read"]);
        assert_eq!(names(&["ls", "read", "ls"]), ["ls", "read"]);
        assert!(names(&["all"]).is_empty(), "pi's `all` is no tool name");
        assert!(names(&[""]).is_empty());
    }

    #[test]
    fn pi_short_flags_parse_as_their_long_forms() {
        let argv = [
            "pi",
            "-nc",
            "-nt",
            "-nbt",
            "-ne",
            "-ns",
            "-np",
            "--thinking",
            "high",
            "--mode",
            "json",
            "x",
        ];
        let args =
            Args::try_parse_from(argv::normalize(argv.map(std::ffi::OsString::from))).unwrap();
        assert!(args.no_context_files && args.no_tools && args.no_builtin_tools);
        assert!(args.no_extensions && args.no_skills && args.no_prompt_templates);
        assert_eq!(
            (args.thinking.as_deref(), args.mode),
            (Some("high"), Some(Mode::Json))
        );
        let args = Args::try_parse_from(["pi", "--list-models"]).unwrap();
        assert_eq!(args.list_models.as_deref(), Some(""));
        let args = Args::try_parse_from(["pi", "--list-models", "sonnet"]).unwrap();
        assert_eq!(args.list_models.as_deref(), Some("sonnet"));
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
