//! pi's slash commands in the interface (`/help`, `/session`, `/compact`, `/model`,
//! `/thinking`, `/new`, `/resume`, `/export`, `/name`, `/quit`), `!command` and `!!command`,
//! and the choices that are saved to `settings.json` as pi saves them (the model chosen,
//! `defaultProvider`/`defaultModel`; the thinking level, `defaultThinkingLevel`).

use std::cell::RefCell;

use crossterm::event::{Event, KeyCode, KeyModifiers};
use pi_runtime::ThinkingLevel;
use pi_tool::CancellationToken;

use super::selector::{Choice, Selector};
use super::text::{Color, Style};
use super::view::Item;
use super::{Flow, Keys, Purpose, Ui, UiObserver};
use crate::cli::Setup;
use crate::cli::interactive::{FooterParts, footer_parts, session_info};
use crate::cli::model_choice::switchable;
use crate::session::Session;

/// The commands, for the list that `/` opens.
pub(super) const NAMES: &[&str] = &[
    "/compact",
    "/exit",
    "/export",
    "/help",
    "/hotkeys",
    "/model",
    "/name",
    "/new",
    "/quit",
    "/resume",
    "/session",
    "/thinking",
];

/// The footer's parts for the agent as it is now.
pub(super) fn footer(setup: &Setup) -> FooterParts {
    let providers: std::collections::BTreeSet<&str> = setup
        .registry
        .available()
        .into_iter()
        .map(|m| m.provider.as_str())
        .collect();
    footer_parts(&setup.agent, providers.len() > 1)
}

fn note(ui: &RefCell<Ui>, text: impl Into<String>) {
    ui.borrow_mut()
        .conversation
        .note(text, Style::fg(Color::Gray));
}

fn error(ui: &RefCell<Ui>, text: impl Into<String>) {
    ui.borrow_mut()
        .conversation
        .note(text, Style::fg(Color::Red));
}

/// Runs `text` when it is a command; `None` when it is a prompt for the model.
pub(super) async fn run(
    setup: &mut Setup,
    ui: &RefCell<Ui>,
    keys: &mut Keys,
    text: &str,
) -> Option<Flow> {
    let text = text.trim();
    if let Some(command) = text.strip_prefix('!') {
        let (exclude, command) = match command.strip_prefix('!') {
            Some(command) => (true, command.trim()),
            None => (false, command.trim()),
        };
        if command.is_empty() {
            return None;
        }
        bash(setup, ui, keys, command, exclude).await;
        return Some(Flow::Go);
    }
    if !text.starts_with('/') {
        return None;
    }
    let (name, argument) = match text.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (text, ""),
    };
    match name {
        "/quit" | "/exit" => return Some(Flow::Quit),
        "/help" | "/hotkeys" => note(
            ui,
            "Commands: /session, /compact [instructions], /model [pattern], /thinking [level], /new, /resume, /export [file], /name <name>, /quit\n!command runs a shell command and puts its output in the context; !!command runs it only.\nKeys: Enter sends (while the agent works: steers it), Alt+Enter queues a follow-up, Shift+Enter or Ctrl+J adds a line, Escape stops the turn, Ctrl+C clears the editor and twice quits, Ctrl+D quits on an empty editor, Up/Down browse the history, Tab completes a path, @ lists the project's files, Ctrl+O expands tool output, Ctrl+T hides thinking, Shift+Tab changes the thinking level, Ctrl+L picks the model, Ctrl+P switches to the next; Ctrl+A/E/K/U/W/Y, Alt+B/F/D edit the line.",
        ),
        "/session" => note(ui, session_info(&setup.agent)),
        "/compact" => {
            let signal = CancellationToken::new();
            let instructions = (!argument.is_empty()).then_some(argument);
            let mut observer = UiObserver { ui };
            ui.borrow_mut().working = Some(std::time::Instant::now());
            // The renderer shows the outcome, an error included.
            let compaction = setup
                .agent
                .compact(instructions, signal.clone(), &mut observer);
            let _ = until_done(compaction, ui, keys, &signal).await;
            ui.borrow_mut().working = None;
        }
        "/model" => {
            if argument.is_empty() {
                open_model_selector(setup, ui);
            } else {
                match setup.registry.resolve_cli(None, argument) {
                    Ok((info, level, warning)) => {
                        if let Some(warning) = warning {
                            note(ui, format!("Warning: {warning}"));
                        }
                        switch_model(setup, ui, info, level);
                    }
                    Err(err) => error(ui, err),
                }
            }
        }
        "/thinking" => thinking(setup, ui, argument),
        "/new" => {
            let session = Session::create_in(&setup.session_dir, setup.agent.cwd(), None);
            setup.agent.replace_session(session, Vec::new());
            setup.agent.record_start();
            note(ui, "✓ New session started");
        }
        "/resume" => {
            let sessions = Session::list(&setup.session_search);
            if sessions.is_empty() {
                note(ui, "No sessions to resume");
            } else {
                let choices = sessions.iter().map(session_choice).collect();
                let paths = sessions.into_iter().map(|s| s.path).collect();
                ui.borrow_mut().selector = Some((
                    Selector::new("Resume a session", choices, None),
                    Purpose::Resume(paths),
                ));
            }
        }
        "/export" => match setup.agent.session().and_then(Session::file) {
            None => error(
                ui,
                "Failed to export session: Cannot export in-memory session to HTML",
            ),
            Some(file) => {
                let output = (!argument.is_empty()).then(|| std::path::PathBuf::from(argument));
                match crate::export::export_file(file, output.as_deref()) {
                    Ok(path) => note(ui, format!("Session exported to: {}", path.display())),
                    Err(err) => error(ui, format!("Failed to export session: {err}")),
                }
            }
        },
        "/name" => {
            if argument.is_empty() {
                error(ui, "Usage: /name <name>");
            } else {
                setup.agent.set_session_name(argument);
                note(ui, format!("Session name set: {argument}"));
            }
        }
        _ => return None,
    }
    ui.borrow_mut().footer = footer(setup);
    Some(Flow::Go)
}

/// A session in the `/resume` and `-r` lists: its name or first prompt, then when and how long.
pub(crate) fn session_choice(session: &crate::session::SessionSummary) -> Choice {
    let when: chrono::DateTime<chrono::Local> = session.modified.into();
    let title = session.name.as_deref().unwrap_or(&session.first_prompt);
    Choice {
        label: title.chars().take(80).collect(),
        detail: format!(
            "{} · {} messages",
            when.format("%Y-%m-%d %H:%M"),
            session.messages
        ),
    }
}

/// `!command` / `!!command`: its output streams into a box like a tool call's.
async fn bash(setup: &mut Setup, ui: &RefCell<Ui>, keys: &mut Keys, command: &str, exclude: bool) {
    let id = format!("user-bash-{}", fastrand::u64(..));
    {
        let mut ui = ui.borrow_mut();
        ui.conversation.push(Item::Tool {
            id: id.clone(),
            label: format!("$ {}", super::text::sanitize(command)),
            bash: true,
            output: String::new(),
            diff: false,
            done: None,
        });
        ui.working = Some(std::time::Instant::now());
        ui.draw();
    }
    let started = std::time::Instant::now();
    let mut output = String::new();
    let signal = CancellationToken::new();
    let run = setup
        .agent
        .run_user_bash(command, exclude, signal.clone(), |chunk| {
            output.push_str(chunk);
            let mut ui = ui.borrow_mut();
            ui.conversation.tool_output(&id, &output);
            ui.draw_soon();
        });
    let result = until_done(run, ui, keys, &signal).await;
    let mut ui = ui.borrow_mut();
    let mut text = result.output.clone();
    if result.cancelled {
        text.push_str("\n(command cancelled)");
    } else if let Some(code) = result.exit_code.filter(|c| *c != 0) {
        text.push_str(&format!("\nCommand exited with code {code}"));
    }
    if exclude {
        text.push_str("\n(not added to the context)");
    }
    let failed = result.cancelled || result.exit_code.is_some_and(|c| c != 0);
    ui.conversation.tool_done(
        &id,
        &text,
        failed,
        u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    );
    ui.working = None;
}

/// Runs `work` while the spinner turns; Escape (or Ctrl+C) cancels `signal`, and the work
/// ends as its cancellation says.
async fn until_done<T>(
    work: impl Future<Output = T>,
    ui: &RefCell<Ui>,
    keys: &mut Keys,
    signal: &CancellationToken,
) -> T {
    tokio::pin!(work);
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(80));
    loop {
        tokio::select! {
            done = &mut work => return done,
            event = keys.recv() => {
                if let Some(Event::Key(key)) = event {
                    let ctrl_c = key.code == KeyCode::Char('c')
                        && key.modifiers.contains(KeyModifiers::CONTROL);
                    if key.code == KeyCode::Esc || ctrl_c {
                        signal.cancel();
                    }
                }
            }
            _ = tick.tick() => ui.borrow_mut().draw(),
        }
    }
}

/// The model selector: the `--models` set, else every model with a key; `✓` on the current.
pub(super) fn open_model_selector(setup: &Setup, ui: &RefCell<Ui>) {
    let choices = switchable(&setup.registry, &setup.scoped);
    if choices.is_empty() {
        error(
            ui,
            "No models available: set a provider's key, or add models to models.json.",
        );
        return;
    }
    let current = setup.agent.model_info();
    let at = choices
        .iter()
        .position(|(m, _)| m.provider == current.provider && m.id == current.id);
    let shown = choices
        .iter()
        .map(|(m, _)| Choice {
            label: format!("{}/{}", m.provider, m.id),
            detail: if m.name != m.id {
                m.name.clone()
            } else {
                String::new()
            },
        })
        .collect();
    ui.borrow_mut().selector = Some((
        Selector::new("Select model", shown, at),
        Purpose::Model(choices),
    ));
}

/// Ctrl+P: the next model of the `--models` set, else of every model with a key (saved).
pub(super) fn cycle_model(setup: &mut Setup, ui: &RefCell<Ui>) {
    let choices = switchable(&setup.registry, &setup.scoped);
    if choices.len() <= 1 {
        note(ui, "No other model to switch to");
        return;
    }
    let current = setup.agent.model_info();
    let at = choices
        .iter()
        .position(|(m, _)| m.provider == current.provider && m.id == current.id)
        .map_or(0, |i| (i + 1) % choices.len());
    let (info, level) = choices[at].clone();
    switch_model(setup, ui, info, level);
    ui.borrow_mut().footer = footer(setup);
}

/// A selector's choice.
pub(super) fn chosen(setup: &mut Setup, ui: &RefCell<Ui>, purpose: Purpose, index: usize) {
    match purpose {
        Purpose::Model(choices) => {
            if let Some((info, level)) = choices.into_iter().nth(index) {
                switch_model(setup, ui, info, level);
            }
        }
        Purpose::Resume(paths) => {
            let Some(path) = paths.get(index) else { return };
            match Session::resume(path) {
                Ok(resumed) => {
                    let count = resumed.messages.len();
                    setup
                        .agent
                        .replace_session(resumed.session, resumed.messages);
                    setup.agent.record_start();
                    let transcript = setup.agent.transcript().to_vec();
                    let mut ui = ui.borrow_mut();
                    ui.conversation.clear();
                    ui.conversation.replay(&transcript);
                    ui.conversation.note(
                        format!("Resumed {} ({count} messages)", path.display()),
                        Style::fg(Color::Gray),
                    );
                }
                Err(err) => error(ui, format!("pi: session: {err}")),
            }
        }
    }
    ui.borrow_mut().footer = footer(setup);
}

/// Switches the model (and the level a `:level` pattern named) and saves the choice.
fn switch_model(
    setup: &mut Setup,
    ui: &RefCell<Ui>,
    info: crate::models::ModelInfo,
    level: Option<ThinkingLevel>,
) {
    match setup
        .registry
        .build(&info, setup.api_key.as_deref(), setup.strict)
    {
        Ok(model) => {
            setup.agent.set_model(model, info.clone());
            if let Some(level) = level {
                setup.agent.set_thinking(level);
            }
            note(ui, format!("Model: {}/{}", info.provider, info.id));
            save(
                ui,
                &[
                    ("defaultProvider", info.provider.clone().into()),
                    ("defaultModel", info.id.clone().into()),
                ],
            );
            ui.borrow_mut().thinking = setup.agent.thinking();
        }
        Err(err) => error(ui, err),
    }
}

/// Saves settings to the agent directory's settings.json; a failure is shown, not fatal.
fn save(ui: &RefCell<Ui>, changes: &[(&str, serde_json::Value)]) {
    let dir = crate::session::pi_agent_dir();
    if let Err(err) = crate::cli::saved_settings::save(&dir, changes) {
        error(ui, format!("Could not save settings: {err}"));
    }
}

/// Shift+Tab: the next of the model's thinking levels, saved.
pub(super) fn cycle_thinking(setup: &mut Setup, ui: &RefCell<Ui>) {
    let levels = setup.agent.model_info().thinking_levels();
    if levels.len() <= 1 {
        note(ui, "This model has no thinking levels");
        return;
    }
    let now = setup.agent.thinking();
    let next = levels
        .iter()
        .position(|l| *l == now)
        .map_or(levels[0], |i| levels[(i + 1) % levels.len()]);
    set_thinking(setup, ui, next);
}

fn set_thinking(setup: &mut Setup, ui: &RefCell<Ui>, level: ThinkingLevel) -> ThinkingLevel {
    let effective = setup.agent.set_thinking(level);
    save(ui, &[("defaultThinkingLevel", effective.as_str().into())]);
    let mut ui = ui.borrow_mut();
    ui.thinking = effective;
    ui.notice = Some(format!("Thinking level: {effective}"));
    ui.footer = footer(setup);
    effective
}

/// `/thinking [level]`.
fn thinking(setup: &mut Setup, ui: &RefCell<Ui>, argument: &str) {
    let levels: Vec<&str> = setup
        .agent
        .model_info()
        .thinking_levels()
        .into_iter()
        .map(ThinkingLevel::as_str)
        .collect();
    if argument.is_empty() {
        note(
            ui,
            format!(
                "Thinking: {} (this model has: {})",
                setup.agent.thinking(),
                levels.join(", ")
            ),
        );
        return;
    }
    match ThinkingLevel::parse(argument) {
        Some(level) => {
            let effective = set_thinking(setup, ui, level);
            if effective == level {
                note(ui, format!("Thinking: {effective}"));
            } else {
                note(
                    ui,
                    format!(
                        "Thinking: {effective} ({level} is not one of this model's: {})",
                        levels.join(", ")
                    ),
                );
            }
        }
        None => error(
            ui,
            format!(
                "Invalid thinking level \"{argument}\". Valid values: off, minimal, low, medium, high, xhigh"
            ),
        ),
    }
}
