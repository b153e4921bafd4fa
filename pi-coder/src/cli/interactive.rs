//! Interactive mode: a conversation in the terminal, one line per prompt, with pi's commands
//! (`/session`, `/compact [instructions]`, `/model [pattern]`, `/thinking [level]`, `/new`,
//! `/resume`, `/export [file]`, `/name <name>`, `/quit`), `!command` (run it, and put its
//! output in the context) and `!!command` (run it only), and pi's footer after every answer:
//! the session's tokens and cost, how full the context is, the model and its thinking level.

use std::io::Write;
use std::process::ExitCode;

use pi_runtime::ThinkingLevel;
use pi_tool::{CancellationToken, Content};

use super::Setup;
use super::model_choice::switchable;
use crate::agent::{CodingAgent, PromptOutcome};
use crate::render::Renderer;
use crate::session::Session;

/// Runs the conversation until `/quit`, `/exit` or the end of input.
pub(super) async fn run(
    setup: &mut Setup,
    first: Option<Vec<Content>>,
    rest: Vec<String>,
) -> Result<ExitCode, String> {
    let agent = &setup.agent;
    eprintln!(
        "pi: {}/{} in {}; tools: {}. Ctrl-C aborts a turn; Ctrl-D or /quit quits; /help lists the commands.",
        agent.model().provider(),
        agent.model().id(),
        agent.cwd().display(),
        agent.tool_names().join(", "),
    );
    if let Some(path) = agent.session().and_then(Session::file) {
        eprintln!("Session: {}", path.display());
    }
    let initial = first
        .into_iter()
        .chain(rest.into_iter().map(|m| vec![Content::text(m)]));
    for prompt in initial {
        let shown: String = prompt.iter().filter_map(Content::as_text).collect();
        eprintln!("\n> {shown}");
        setup.tools.refresh(&mut setup.agent);
        run_turn(setup, prompt).await;
    }
    loop {
        eprint!("\n> ");
        let _ = std::io::stderr().flush();
        let line = {
            let mut lines = setup.input.lock().await;
            tokio::select! {
                line = lines.next_line() => line.map_err(|err| format!("pi: reading input: {err}"))?,
                _ = setup.interrupts.recv() => None,
            }
        };
        let Some(line) = line else {
            eprintln!();
            return Ok(ExitCode::SUCCESS);
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if matches!(text, "/exit" | "/quit") {
            return Ok(ExitCode::SUCCESS);
        }
        if command(setup, text).await {
            continue;
        }
        setup.tools.refresh(&mut setup.agent);
        run_turn(setup, vec![Content::text(text)]).await;
    }
}

/// One prompt with Ctrl-C aborting it: the first press aborts the turn (the session goes on), a
/// second press while the turn is still winding down quits. The footer follows the answer.
async fn run_turn(setup: &mut Setup, prompt: Vec<Content>) -> PromptOutcome {
    let signal = CancellationToken::new();
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let outcome = {
        let mut renderer = Renderer::new(&mut stdout, &mut stderr);
        let turn = setup
            .agent
            .prompt_content(prompt, signal.clone(), &mut renderer);
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
                    signal.cancel();
                }
            }
        }
    };
    let providers: std::collections::BTreeSet<&str> = setup
        .registry
        .available()
        .into_iter()
        .map(|m| m.provider.as_str())
        .collect();
    eprintln!("{}", footer(&setup.agent, providers.len() > 1));
    outcome
}

/// pi's footer (`components/footer.ts`) on two lines: the working directory (and the
/// session's name), then the session's tokens (`↑` input, `↓` output, `R`/`W` cache) and cost,
/// the context used of the model's window (`(auto)`: compaction is on), then the model and its
/// thinking level.
pub(crate) fn footer(agent: &CodingAgent, name_provider: bool) -> String {
    let parts = footer_parts(agent, name_provider);
    format!("{}\n{}  {}", parts.cwd, parts.stats, parts.model)
}

/// The footer's three parts: where, how much, which model.
pub(crate) struct FooterParts {
    pub(crate) cwd: String,
    pub(crate) stats: String,
    pub(crate) model: String,
}

/// The footer's parts (see [`footer`]).
pub(crate) fn footer_parts(agent: &CodingAgent, name_provider: bool) -> FooterParts {
    let stats = footer_stats(
        &agent.session_usage(),
        agent.context_usage(),
        agent.compaction_settings().enabled,
    );
    let mut cwd = agent.cwd().display().to_string();
    if let Some(home) = std::env::var_os("HOME").map(|h| h.to_string_lossy().into_owned())
        && !home.is_empty()
        && let Some(rest) = cwd.strip_prefix(&home)
    {
        cwd = format!("~{rest}");
    }
    if let Some(name) = agent.session_state().name() {
        cwd = format!("{cwd} • {name}");
    }
    let info = agent.model_info();
    let mut model = info.id.clone();
    if info.reasoning {
        model = match agent.thinking() {
            ThinkingLevel::Off => format!("{model} • thinking off"),
            level => format!("{model} • {level}"),
        };
    }
    if name_provider {
        model = format!("({}) {model}", info.provider);
    }
    FooterParts { cwd, stats, model }
}

/// The footer's middle: the session's tokens (`↑` input, `↓` output, `R`/`W` cache) and cost,
/// then the context used of the model's window (`(auto)`: compaction is on).
pub(crate) fn footer_stats(
    usage: &pi_tool::Usage,
    context: Option<crate::agent::ContextUsage>,
    auto_compaction: bool,
) -> String {
    let mut stats = Vec::new();
    for (mark, count) in [
        ("↑", usage.input),
        ("↓", usage.output),
        ("R", usage.cache_read),
        ("W", usage.cache_write),
    ] {
        if count > 0 {
            stats.push(format!("{mark}{}", format_tokens(count)));
        }
    }
    if usage.cost.total > 0.0 {
        stats.push(format!("${:.3}", usage.cost.total));
    }
    let auto = if auto_compaction { " (auto)" } else { "" };
    match context {
        Some(context) => {
            let window = format_tokens(context.context_window);
            stats.push(match context.percent {
                Some(percent) => format!("{percent:.1}%/{window}{auto}"),
                None => format!("?/{window}{auto}"),
            });
        }
        None => stats.push(format!("?/0{auto}")),
    }
    stats.join(" ")
}

/// pi's `formatTokens` for the footer: `999`, `1.2k`, `45k`, `1.5M`.
fn format_tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..10_000 => format!("{:.1}k", count as f64 / 1_000.0),
        10_000..1_000_000 => format!("{}k", (count as f64 / 1_000.0).round()),
        1_000_000..10_000_000 => format!("{:.1}M", count as f64 / 1_000_000.0),
        _ => format!("{}M", (count as f64 / 1_000_000.0).round()),
    }
}

/// The commands: `true` when `text` was one (handled), `false` for a prompt.
async fn command(setup: &mut Setup, text: &str) -> bool {
    let (name, argument) = match text.split_once(' ') {
        Some((name, rest)) => (name, rest.trim()),
        None => (text, ""),
    };
    if let Some(command) = text.strip_prefix('!') {
        let (exclude, command) = match command.strip_prefix('!') {
            Some(command) => (true, command.trim()),
            None => (false, command.trim()),
        };
        if command.is_empty() {
            return false;
        }
        bash(setup, command, exclude).await;
        return true;
    }
    match name {
        "/help" => {
            eprintln!(
                "Commands: /session, /compact [instructions], /model [pattern], /thinking [level], /new, /resume, /export [file], /name <name>, /quit\n!command runs a shell command and puts its output in the context; !!command runs it only."
            );
        }
        "/session" => eprintln!("{}", session_info(&setup.agent)),
        "/compact" => {
            let signal = CancellationToken::new();
            let mut stdout = std::io::stdout();
            let mut stderr = std::io::stderr();
            let instructions = (!argument.is_empty()).then_some(argument);
            let result = {
                let mut renderer = Renderer::new(&mut stdout, &mut stderr);
                let compaction = setup
                    .agent
                    .compact(instructions, signal.clone(), &mut renderer);
                tokio::pin!(compaction);
                tokio::select! {
                    result = &mut compaction => result,
                    _ = setup.interrupts.recv() => {
                        signal.cancel();
                        compaction.await
                    }
                }
            };
            // The renderer has shown the outcome, an error included.
            drop(result);
        }
        "/model" => model(setup, argument).await,
        "/thinking" => thinking(setup, argument),
        "/new" => {
            let session = Session::create_in(&setup.session_dir, setup.agent.cwd(), None);
            setup.agent.replace_session(session, Vec::new());
            setup.agent.record_start();
            eprintln!("✓ New session started");
        }
        "/resume" => resume(setup).await,
        "/export" => {
            let Some(file) = setup.agent.session().and_then(Session::file) else {
                eprintln!("Failed to export session: Cannot export in-memory session to HTML");
                return true;
            };
            let output = (!argument.is_empty()).then(|| std::path::PathBuf::from(argument));
            match crate::export::export_file(file, output.as_deref()) {
                Ok(path) => eprintln!("Session exported to: {}", path.display()),
                Err(err) => eprintln!("Failed to export session: {err}"),
            }
        }
        "/name" => {
            if argument.is_empty() {
                eprintln!("Usage: /name <name>");
            } else {
                setup.agent.set_session_name(argument);
                eprintln!("Session name set: {argument}");
            }
        }
        _ => return false,
    }
    true
}

/// pi's `/session`.
pub(crate) fn session_info(agent: &CodingAgent) -> String {
    let stats = agent.stats();
    let mut info = String::from("Session Info\n\n");
    if let Some(name) = agent.session_state().name() {
        info.push_str(&format!("Name: {name}\n"));
    }
    let file = stats
        .session_file
        .as_ref()
        .map_or_else(|| "In-memory".to_owned(), |p| p.display().to_string());
    info.push_str(&format!("File: {file}\nID: {}\n\n", stats.session_id));
    info.push_str(&format!(
        "Messages\nUser: {}\nAssistant: {}\nTool Calls: {}\nTool Results: {}\nTotal: {}\n\n",
        stats.user_messages,
        stats.assistant_messages,
        stats.tool_calls,
        stats.tool_results,
        stats.total_messages
    ));
    let t = &stats.tokens;
    info.push_str(&format!(
        "Tokens\nInput: {}\nOutput: {}\n",
        grouped(t.input),
        grouped(t.output)
    ));
    if t.cache_read > 0 {
        info.push_str(&format!("Cache Read: {}\n", grouped(t.cache_read)));
    }
    if t.cache_write > 0 {
        info.push_str(&format!("Cache Write: {}\n", grouped(t.cache_write)));
    }
    info.push_str(&format!(
        "Total: {}",
        grouped(t.input + t.output + t.cache_read + t.cache_write)
    ));
    if stats.cost > 0.0 {
        info.push_str(&format!("\n\nCost\nTotal: {:.4}", stats.cost));
    }
    info
}

/// `12,345` (JavaScript's `toLocaleString` in English).
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `!command` / `!!command`: runs it, its output streamed to the terminal.
async fn bash(setup: &mut Setup, command: &str, exclude: bool) {
    let signal = CancellationToken::new();
    let run = setup
        .agent
        .run_user_bash(command, exclude, signal.clone(), |chunk| {
            eprint!("{chunk}");
            let _ = std::io::stderr().flush();
        });
    tokio::pin!(run);
    let result = tokio::select! {
        result = &mut run => result,
        _ = setup.interrupts.recv() => {
            signal.cancel();
            run.await
        }
    };
    if !result.output.is_empty() && !result.output.ends_with('\n') {
        eprintln!();
    }
    if result.cancelled {
        eprintln!("(command cancelled)");
    } else if let Some(code) = result.exit_code.filter(|c| *c != 0) {
        eprintln!("Command exited with code {code}");
    }
    if exclude {
        eprintln!("(not added to the context)");
    }
}

/// `/model`: with a pattern, switch to the model it names (pi's matching); without, the
/// models to choose from (the `--models` set, else every model with a key), numbered.
async fn model(setup: &mut Setup, pattern: &str) {
    let chosen = if pattern.is_empty() {
        let choices = switchable(&setup.registry, &setup.scoped);
        if choices.is_empty() {
            eprintln!("No models available: set a provider's key, or add models to models.json.");
            return;
        }
        let current = setup.agent.model_info();
        for (i, (model, _)) in choices.iter().enumerate() {
            let mark = if model.provider == current.provider && model.id == current.id {
                " (current)"
            } else {
                ""
            };
            eprintln!("{:>3}. {}/{}{mark}", i + 1, model.provider, model.id);
        }
        eprint!("Switch to which? [1-{}, Enter for none]: ", choices.len());
        let _ = std::io::stderr().flush();
        let line = setup.input.lock().await.next_line().await.ok().flatten();
        let Some(n) = line.and_then(|l| l.trim().parse::<usize>().ok()) else {
            return;
        };
        match choices.get(n.wrapping_sub(1)) {
            Some(choice) => choice.clone(),
            None => {
                eprintln!("Not a number from 1 to {}", choices.len());
                return;
            }
        }
    } else {
        match setup.registry.resolve_cli(None, pattern) {
            Ok((model, level, warning)) => {
                if let Some(warning) = warning {
                    eprintln!("Warning: {warning}");
                }
                (model, level)
            }
            Err(err) => {
                eprintln!("{err}");
                return;
            }
        }
    };
    let (info, level) = chosen;
    match setup
        .registry
        .build(&info, setup.api_key.as_deref(), setup.strict)
    {
        Ok(model) => {
            setup.agent.set_model(model, info.clone());
            if let Some(level) = level {
                setup.agent.set_thinking(level);
            }
            eprintln!("Model: {}/{}", info.provider, info.id);
        }
        Err(err) => eprintln!("{err}"),
    }
}

/// `/thinking [level]`: the level in force and the ones the model has, or set one.
fn thinking(setup: &mut Setup, argument: &str) {
    let levels: Vec<&str> = setup
        .agent
        .model_info()
        .thinking_levels()
        .into_iter()
        .map(ThinkingLevel::as_str)
        .collect();
    if argument.is_empty() {
        eprintln!(
            "Thinking: {} (this model has: {})",
            setup.agent.thinking(),
            levels.join(", ")
        );
        return;
    }
    match ThinkingLevel::parse(argument) {
        Some(level) => {
            let effective = setup.agent.set_thinking(level);
            if effective == level {
                eprintln!("Thinking: {effective}");
            } else {
                eprintln!(
                    "Thinking: {effective} ({level} is not one of this model's: {})",
                    levels.join(", ")
                );
            }
        }
        None => eprintln!(
            "Invalid thinking level \"{argument}\". Valid values: off, minimal, low, medium, high, xhigh"
        ),
    }
}

/// `/resume`: the picker of `-r`, then the chosen session replaces this one.
async fn resume(setup: &mut Setup) {
    let sessions = Session::list(&setup.session_search);
    if sessions.is_empty() {
        eprintln!("No sessions to resume");
        return;
    }
    let picked = match super::session_choice::pick(&sessions, &setup.input).await {
        Ok(Some(path)) => path,
        Ok(None) => return,
        Err(err) => {
            eprintln!("{err}");
            return;
        }
    };
    match Session::resume(&picked) {
        Ok(resumed) => {
            let count = resumed.messages.len();
            setup
                .agent
                .replace_session(resumed.session, resumed.messages);
            setup.agent.record_start();
            eprintln!("Resumed {} ({count} messages)", picked.display());
        }
        Err(err) => eprintln!("pi: session: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_and_numbers_read_as_in_pi() {
        assert_eq!(format_tokens(999), "999");
        assert_eq!(format_tokens(1_234), "1.2k");
        assert_eq!(format_tokens(45_600), "46k");
        assert_eq!(format_tokens(1_500_000), "1.5M");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(12), "12");
    }
}
