//! The interactive terminal interface of `pi`, in pi's manner: the conversation stays in the
//! terminal's scrollback, and below it an editor, a spinner while the agent works, the queued
//! messages and a footer that stays put. See the crate README, **The terminal interface**, for
//! the keys and why it is built this way (crossterm and a differential renderer rather than a
//! full-screen framework).
//!
//! - `text`, `markdown`: styled lines, wrapped to the width;
//! - `view`: the conversation built from the agent's events;
//! - `editor`, `history`, `complete`: the prompt editor;
//! - `selector`: the searchable lists of `/model`, `/resume` and `-r`;
//! - `approval`: questions to the user (bash approval);
//! - `elicitation`: an MCP server's questions during a call, answered in the editor;
//! - `screen`: the differential renderer; `terminal`: raw mode and its restoration;
//! - `commands`: the slash commands.

pub(crate) mod approval;
mod commands;
mod complete;
mod editor;
pub(crate) mod elicitation;
mod highlight;
mod history;
mod markdown;
mod screen;
pub(crate) mod selector;
mod terminal;
mod text;
mod view;

use std::cell::RefCell;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use pi_runtime::{AgentEvent, ThinkingLevel};
use pi_tool::{CancellationToken, Content};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc::UnboundedReceiver;

use super::Setup;
use crate::events::{CompactionEnd, Observer};
use approval::{Answer, Question, Questions};
pub(crate) use commands::session_choice;
use complete::{Completion, FileIndex};
use editor::{Edit, Editor};
use elicitation::Elicitations;
use screen::Screen;
use selector::Selector;
use text::{Color, Span, Style, to_ansi, truncate};
use view::{Conversation, Look};

/// pi's spinner.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Two presses of Ctrl+C within this quit (pi's 500 ms, a little more for slow hands).
const DOUBLE_PRESS: Duration = Duration::from_millis(1000);
/// How often the screen is drawn at most while the answer streams.
const FRAME: Duration = Duration::from_millis(16);

/// Whether the interface should run: both standard input and output are terminals, and the
/// terminal is not a dumb one (`TERM` unset or `dumb`: today's line mode).
pub(crate) fn wanted() -> bool {
    use std::io::IsTerminal;
    let term = std::env::var("TERM").unwrap_or_default();
    std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && !term.is_empty()
        && term != "dumb"
}

/// What a key asks of the loop.
enum Action {
    None,
    /// Send this prompt (or run this command).
    Submit(String),
    Steer(String),
    FollowUp(String),
    Abort,
    Quit,
    /// Cycle the thinking level (Shift+Tab).
    CycleThinking,
    /// Open the model selector (Ctrl+L).
    SelectModel,
    /// The next model (Ctrl+P).
    CycleModel,
    /// A selector's choice.
    Chosen(Purpose, usize),
}

/// What an open selector is for.
#[derive(Clone, Debug)]
enum Purpose {
    Model(Vec<(crate::models::ModelInfo, Option<ThinkingLevel>)>),
    Resume(Vec<PathBuf>),
}

/// Everything on the screen.
struct Ui {
    conversation: Conversation,
    editor: Editor,
    completion: Option<Completion>,
    files: FileIndex,
    cwd: PathBuf,
    selector: Option<(Selector, Purpose)>,
    question: Option<Question>,
    /// MCP servers' questions: the one open owns the editor.
    elicitations: elicitation::Queue,
    /// What was in the editor when a server's question took it, given back after.
    draft: Option<String>,
    notice: Option<String>,
    working: Option<Instant>,
    expanded: bool,
    show_thinking: bool,
    footer: crate::cli::interactive::FooterParts,
    thinking: ThinkingLevel,
    queued: (Vec<String>, Vec<String>),
    /// Images pasted (as file paths), with the marker put in the editor for each.
    images: Vec<(String, Content)>,
    last_ctrl_c: Option<Instant>,
    screen: Screen,
    last_draw: Instant,
    dirty: bool,
    /// While a turn runs: the session's usage so far, the model's window and whether
    /// compaction is on, so the footer follows each answer within the turn.
    live_usage: Option<(pi_tool::Usage, u64, bool)>,
}

impl Ui {
    /// An answer ended within the turn: its usage into the footer (the agent, busy with the
    /// turn, is asked again when it ends).
    fn answered(&mut self, usage: &pi_tool::Usage) {
        let Some((total, window, auto)) = &mut self.live_usage else {
            return;
        };
        total.add(usage);
        let tokens = if usage.total_tokens > 0 {
            usage.total_tokens
        } else {
            usage.input + usage.output + usage.cache_read + usage.cache_write
        };
        let context = (*window > 0).then(|| crate::agent::ContextUsage {
            tokens: Some(tokens),
            context_window: *window,
            percent: Some(tokens as f64 / *window as f64 * 100.0),
        });
        self.footer.stats = crate::cli::interactive::footer_stats(total, context, *auto);
    }

    fn look(&self, width: usize) -> Look {
        Look {
            width,
            expanded: self.expanded,
            show_thinking: self.show_thinking,
        }
    }

    /// The whole frame: the conversation, then what sits below it.
    fn lines(&mut self, width: usize) -> Vec<String> {
        let mut lines = Vec::new();
        let look = self.look(width);
        self.conversation.lines(look, &mut lines);
        let gray = Style::fg(Color::Gray);
        lines.push(String::new());
        if let Some(started) = self.working {
            let frame = SPINNER[(started.elapsed().as_millis() / 80) as usize % SPINNER.len()];
            lines.push(to_ansi(&truncate(
                &[
                    Span::new(Style::fg(Color::Cyan), format!("{frame} ")),
                    Span::new(gray, "Working... (esc to interrupt)"),
                ],
                width,
            )));
        }
        for (kind, texts) in [("Steering", &self.queued.0), ("Follow-up", &self.queued.1)] {
            for text in texts {
                let one_line = text.replace('\n', " ");
                lines.push(to_ansi(&truncate(
                    &[Span::new(gray, format!("{kind}: {one_line}"))],
                    width,
                )));
            }
        }
        if let Some(notice) = &self.notice {
            lines.push(to_ansi(&truncate(
                &[Span::new(Style::fg(Color::Yellow), notice.clone())],
                width,
            )));
        }
        if let Some(question) = &self.question {
            let style = Style::fg(Color::Yellow).bold();
            for line in text::wrap(&[Span::new(style, question.text.clone())], width) {
                lines.push(to_ansi(&line));
            }
            for line in text::wrap(&[Span::new(gray, question.detail.clone())], width) {
                lines.push(to_ansi(&line));
            }
        } else if let Some(asking) = self.elicitations.open() {
            lines.extend(asking.render(width, self.elicitations.waiting()));
        }
        if let Some((selector, _)) = &self.selector {
            lines.extend(selector.render(width));
        } else {
            let border = Style::fg(match self.thinking {
                ThinkingLevel::Off => Color::Gray,
                ThinkingLevel::Minimal | ThinkingLevel::Low => Color::Blue,
                ThinkingLevel::Medium => Color::Cyan,
                _ => Color::Magenta,
            });
            lines.push(to_ansi(&[Span::new(border, "─".repeat(width))]));
            let cursor = self.question.is_none()
                && self
                    .elicitations
                    .open()
                    .is_none_or(|asking| !asking.is_url());
            for line in self.editor.render(width, cursor) {
                lines.push(to_ansi(&line));
            }
            lines.push(to_ansi(&[Span::new(border, "─".repeat(width))]));
            if let Some(completion) = &self.completion {
                for (i, item) in completion.items.iter().enumerate() {
                    let (marker, style) = if i == completion.selected {
                        ("→ ", Style::fg(Color::Cyan).bold())
                    } else {
                        ("  ", Style::default())
                    };
                    lines.push(to_ansi(&truncate(
                        &[
                            Span::new(Style::fg(Color::Cyan), marker),
                            Span::new(style, item.clone()),
                        ],
                        width,
                    )));
                }
            }
        }
        // The footer: where, then how much (left) and which model (right).
        lines.push(to_ansi(&truncate(
            &[Span::new(gray, self.footer.cwd.clone())],
            width,
        )));
        let stats = text::width(&self.footer.stats);
        let model = text::width(&self.footer.model);
        let line = if stats + 2 + model <= width {
            format!(
                "{}{}{}",
                self.footer.stats,
                " ".repeat(width - stats - model),
                self.footer.model
            )
        } else {
            format!("{}  {}", self.footer.stats, self.footer.model)
        };
        lines.push(to_ansi(&truncate(&[Span::new(gray, line)], width)));
        lines
    }

    fn draw(&mut self) {
        let (width, height) = terminal::size();
        let lines = self.lines(width);
        self.screen.draw(lines, width, height);
        self.last_draw = Instant::now();
        self.dirty = false;
    }

    /// Draws unless a frame was drawn very recently (then the next tick draws it).
    fn draw_soon(&mut self) {
        if self.last_draw.elapsed() >= FRAME {
            self.draw();
        } else {
            self.dirty = true;
        }
    }

    /// A key or paste. `busy`: a turn runs (Enter steers, Alt+Enter queues a follow-up).
    fn input(&mut self, event: Event, busy: bool) -> Action {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.key(key, busy),
            Event::Paste(text) => {
                if let Some((selector, _)) = &mut self.selector {
                    selector.paste(&text);
                } else if self.elicitations.open().is_some() {
                    if self.question.is_none() {
                        self.editor.insert(&text);
                    }
                } else if self.question.is_none() && !self.paste_image(&text) {
                    self.editor.insert(&text);
                    self.update_completion();
                }
                Action::None
            }
            _ => Action::None,
        }
    }

    fn key(&mut self, key: KeyEvent, busy: bool) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if !(ctrl && key.code == KeyCode::Char('c')) {
            self.notice = None;
        }
        if let Some(question) = self.question.take() {
            let answer = match key.code {
                KeyCode::Char(c) if !ctrl => approval::answer_for(c),
                _ => Answer::No,
            };
            question.answer(answer);
            return Action::None;
        }
        if self.elicitations.open().is_some() {
            if ctrl && key.code == KeyCode::Char('c') {
                // Clears the answer only (the draft's pasted images stay); twice quits.
                if self
                    .last_ctrl_c
                    .is_some_and(|at| at.elapsed() < DOUBLE_PRESS)
                {
                    return Action::Quit;
                }
                self.last_ctrl_c = Some(Instant::now());
                self.editor.take();
                self.notice = Some("Press Ctrl+C again to exit".into());
            } else {
                self.elicitation_key(key);
            }
            return Action::None;
        }
        if let Some((selector, _)) = &mut self.selector {
            return match selector.key(key) {
                selector::Outcome::Open => Action::None,
                selector::Outcome::Cancelled => {
                    self.selector = None;
                    Action::None
                }
                selector::Outcome::Chosen(i) => {
                    let (_, purpose) = self.selector.take().expect("open");
                    Action::Chosen(purpose, i)
                }
            };
        }
        if let Some(completion) = &mut self.completion {
            match key.code {
                KeyCode::Up => {
                    completion.move_by(-1);
                    return Action::None;
                }
                KeyCode::Down => {
                    completion.move_by(1);
                    return Action::None;
                }
                KeyCode::Tab | KeyCode::Enter if !alt => {
                    let completion = self.completion.take().expect("open");
                    if let Some(text) = completion.accepted() {
                        self.editor.replace_before(completion.replace, &text);
                        if text.ends_with('/') {
                            self.update_completion();
                        }
                    }
                    return Action::None;
                }
                KeyCode::Esc => {
                    self.completion = None;
                    return Action::None;
                }
                _ => {}
            }
        }
        match key.code {
            KeyCode::Char('c') if ctrl => {
                let again = self
                    .last_ctrl_c
                    .is_some_and(|at| at.elapsed() < DOUBLE_PRESS);
                if again {
                    return Action::Quit;
                }
                self.last_ctrl_c = Some(Instant::now());
                self.editor.take();
                self.images.clear();
                self.completion = None;
                self.notice = Some("Press Ctrl+C again to exit".into());
                Action::None
            }
            KeyCode::Char('d') if ctrl && self.editor.is_empty() => Action::Quit,
            KeyCode::Esc => {
                if busy {
                    Action::Abort
                } else {
                    Action::None
                }
            }
            KeyCode::Enter if !key.modifiers.contains(KeyModifiers::SHIFT) => {
                let text = self.editor.take().trim().to_owned();
                self.completion = None;
                if text.trim().is_empty() && self.images.is_empty() {
                    return Action::None;
                }
                self.editor.history.add(&text);
                match (busy, alt) {
                    (true, false) => Action::Steer(text),
                    (true, true) => Action::FollowUp(text),
                    (false, _) => Action::Submit(text),
                }
            }
            KeyCode::Tab => {
                let before = self.editor.before_cursor().to_owned();
                if let Some(mut completion) = complete::tab(&self.cwd, &before) {
                    if let Some(common) = completion.common.take() {
                        self.editor.replace_before(completion.replace, &common);
                        completion.replace = common.len();
                    }
                    if completion.items.len() == 1 {
                        if let Some(text) = completion.accepted() {
                            self.editor.replace_before(completion.replace, &text);
                        }
                    } else {
                        self.completion = Some(completion);
                    }
                }
                Action::None
            }
            KeyCode::BackTab => Action::CycleThinking,
            KeyCode::Char('o') if ctrl => {
                self.expanded = !self.expanded;
                Action::None
            }
            KeyCode::Char('t') if ctrl => {
                self.show_thinking = !self.show_thinking;
                Action::None
            }
            KeyCode::Char('l') if ctrl => Action::SelectModel,
            KeyCode::Char('p') if ctrl => Action::CycleModel,
            _ => {
                if self.editor.key(key) == Edit::Changed {
                    self.update_completion();
                }
                Action::None
            }
        }
    }

    /// A server's question arrived: it takes the editor (what was typed is kept for after).
    fn elicitation_arrived(&mut self, pending: elicitation::Elicitation) {
        if self.draft.is_none() {
            self.draft = Some(self.editor.take());
            self.completion = None;
        }
        self.elicitations.push(pending);
        self.elicitations_settled();
    }

    /// Once no server's question is open any more, the editor gets back what was typed.
    fn elicitations_settled(&mut self) {
        if self.elicitations.open().is_none()
            && let Some(draft) = self.draft.take()
        {
            self.editor.set_text(&draft);
        }
    }

    /// A key while a server's question is open: Escape cancels it, Ctrl+D declines it, Enter
    /// answers the field (↑/↓ pick among choices), `y`/`n` answer a URL; the rest edits.
    fn elicitation_key(&mut self, key: KeyEvent) {
        use pi_mcp::ElicitationResponse;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let plain = !ctrl && !key.modifiers.contains(KeyModifiers::ALT);
        let Some(asking) = self.elicitations.open_mut() else {
            return;
        };
        let response = match key.code {
            KeyCode::Esc => Some(ElicitationResponse::Cancel),
            KeyCode::Char('d') if ctrl => Some(ElicitationResponse::Decline),
            KeyCode::Char(c) if plain && asking.is_url() => match c.to_ascii_lowercase() {
                'y' => Some(ElicitationResponse::Accept(serde_json::Value::Null)),
                'n' => Some(ElicitationResponse::Decline),
                _ => None,
            },
            _ if asking.is_url() => None,
            KeyCode::Enter if plain => match asking.enter(&self.editor.text()) {
                elicitation::Step::Next => {
                    self.editor.take();
                    None
                }
                elicitation::Step::Again => None,
                elicitation::Step::Done(response) => {
                    self.editor.take();
                    Some(response)
                }
            },
            KeyCode::Up => {
                asking.move_highlight(-1);
                None
            }
            KeyCode::Down => {
                asking.move_highlight(1);
                None
            }
            _ => {
                self.editor.key(key);
                None
            }
        };
        if let Some(response) = response {
            self.editor.take();
            self.elicitations.answer(response);
            self.elicitations_settled();
        }
    }

    /// The `@` list follows what is typed after `@`; a `/` at the start lists the commands.
    fn update_completion(&mut self) {
        let text = self.editor.text();
        if text.starts_with('/') && !text.contains(char::is_whitespace) {
            let items: Vec<String> = commands::NAMES
                .iter()
                .filter(|name| name.starts_with(&text) && **name != text)
                .map(|name| (*name).to_owned())
                .collect();
            self.completion = (!items.is_empty()).then(|| Completion {
                items,
                selected: 0,
                replace: self.editor.before_cursor().len(),
                at: false,
                common: None,
            });
            return;
        }
        match complete::at_query(self.editor.before_cursor()).map(str::to_owned) {
            Some(query) => {
                let items = self.files.matches(&self.cwd, &query);
                self.completion = (!items.is_empty()).then(|| Completion {
                    items,
                    selected: 0,
                    replace: query.len() + 1,
                    at: true,
                    common: None,
                });
            }
            // Typing closes Tab's list too: it was for the text as it was.
            None => self.completion = None,
        }
    }

    /// A pasted path to an image file attaches the image (pi's image paste) and puts a marker
    /// in the editor; `false` when the paste is not one.
    fn paste_image(&mut self, pasted: &str) -> bool {
        let path = pasted.trim().trim_matches(|c| c == '\'' || c == '"');
        let path = path
            .strip_prefix("file://")
            .unwrap_or(path)
            .replace("\\ ", " ");
        if path.is_empty() || path.contains('\n') {
            return false;
        }
        let full = if path.starts_with('/') {
            PathBuf::from(&path)
        } else if let Some(rest) = path.strip_prefix("~/") {
            match std::env::var_os("HOME") {
                Some(home) => PathBuf::from(home).join(rest),
                None => return false,
            }
        } else {
            self.cwd.join(&path)
        };
        let Ok(meta) = std::fs::metadata(&full) else {
            return false;
        };
        if !meta.is_file() || meta.len() > 50 * 1024 * 1024 {
            return false;
        }
        let Ok(bytes) = std::fs::read(&full) else {
            return false;
        };
        let Some(mime) = crate::tools::image::sniff_mime(&bytes) else {
            return false;
        };
        let Some(image) = crate::tools::image::prepare(&bytes, mime) else {
            self.notice = Some(format!(
                "{path}: the image could not be made small enough to send"
            ));
            return true;
        };
        let name = full
            .file_name()
            .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
        let marker = format!("[image #{}: {name}]", self.images.len() + 1);
        self.editor.insert(&format!("{marker} "));
        self.images
            .push((marker, Content::image(image.data, image.mime_type)));
        true
    }

    /// The prompt's content: the text, then the pasted images whose marker is still in it.
    fn content(&mut self, text: &str) -> Vec<Content> {
        let mut content = vec![Content::text(text)];
        for (marker, image) in self.images.drain(..) {
            if text.contains(&marker) {
                content.push(image);
            }
        }
        content
    }
}

/// The agent's events, into the conversation on the screen.
struct UiObserver<'a> {
    ui: &'a RefCell<Ui>,
}

impl Observer for UiObserver<'_> {
    fn agent_event(&mut self, event: &AgentEvent) {
        let mut ui = self.ui.borrow_mut();
        ui.conversation.event(event);
        if let AgentEvent::MessageEnd { message } = event
            && let Some(assistant) = message.as_assistant()
        {
            ui.answered(&assistant.usage);
        }
        ui.draw_soon();
    }

    fn compaction_start(&mut self, reason: crate::compaction::CompactionReason) {
        use crate::compaction::CompactionReason;
        let why = match reason {
            CompactionReason::Manual => "",
            CompactionReason::Threshold => " (the context is nearly full)",
            CompactionReason::Overflow => " (the model refused the context as too long)",
        };
        let mut ui = self.ui.borrow_mut();
        ui.conversation.note(
            format!("Compacting the conversation{why}..."),
            Style::fg(Color::Gray),
        );
        ui.draw_soon();
    }

    fn compaction_end(&mut self, end: &CompactionEnd) {
        let (text, style) = match (&end.result, &end.error_message) {
            (_, Some(error)) => (format!("Error: {error}"), Style::fg(Color::Red)),
            (Some(result), None) => (
                format!(
                    "Compacted: {} tokens summarized{}",
                    result.tokens_before,
                    if end.will_retry { "; retrying" } else { "" }
                ),
                Style::fg(Color::Gray),
            ),
            (None, None) if end.aborted => ("Compaction cancelled".into(), Style::fg(Color::Gray)),
            (None, None) => ("Nothing to compact".into(), Style::fg(Color::Gray)),
        };
        let mut ui = self.ui.borrow_mut();
        ui.conversation.note(text, style);
        ui.draw_soon();
    }

    fn approval_wait(&mut self, call_id: &str, ms: u64) {
        self.ui.borrow_mut().conversation.approval_wait(call_id, ms);
    }
}

/// The signals that end the interface: the terminal is given back before the exit.
struct Signals {
    hangup: Option<Signal>,
    terminate: Option<Signal>,
}

impl Signals {
    fn new() -> Signals {
        Signals {
            hangup: signal(SignalKind::hangup()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
        }
    }

    /// The exit code for the next of them (128 + the signal's number).
    async fn next(&mut self, interrupts: &mut Signal) -> u8 {
        async fn wait(signal: &mut Option<Signal>) {
            match signal {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            () = wait(&mut self.hangup) => 129,
            () = wait(&mut self.terminate) => 143,
            _ = interrupts.recv() => 130,
        }
    }
}

/// Gives the terminal back and exits with `code` (a signal ended the interface).
fn exit_on_signal(code: u8) -> ! {
    terminal::restore();
    std::process::exit(i32::from(code));
}

/// The keys and pastes read from the terminal.
type Keys = UnboundedReceiver<Event>;

/// How a turn ended for the loop.
enum Flow {
    Go,
    Quit,
}

/// The conversation in the terminal interface until the user quits.
pub(super) async fn run(
    setup: &mut Setup,
    first: Option<Vec<Content>>,
    rest: Vec<String>,
    mut questions: Questions,
    mut elicitations: Elicitations,
) -> Result<ExitCode, String> {
    let (guard, mut keys) =
        terminal::Guard::enter().map_err(|err| format!("pi: cannot use the terminal: {err}"))?;
    let mut signals = Signals::new();
    let agent_dir = crate::session::pi_agent_dir();
    let history = history::History::load(agent_dir.join(history::FILE));
    let ui = RefCell::new(Ui {
        conversation: Conversation::default(),
        editor: Editor::new(history),
        completion: None,
        files: FileIndex::default(),
        cwd: setup.agent.cwd().to_path_buf(),
        selector: None,
        question: None,
        elicitations: elicitation::Queue::default(),
        draft: None,
        notice: None,
        working: None,
        expanded: false,
        show_thinking: true,
        footer: commands::footer(setup),
        thinking: setup.agent.thinking(),
        queued: (Vec::new(), Vec::new()),
        images: Vec::new(),
        last_ctrl_c: None,
        screen: Screen::default(),
        last_draw: Instant::now(),
        dirty: false,
        live_usage: None,
    });
    {
        let mut ui = ui.borrow_mut();
        let gray = Style::fg(Color::Gray);
        ui.conversation.note(
            format!(
                "pi {} · {}/{}",
                env!("CARGO_PKG_VERSION"),
                setup.agent.model().provider(),
                setup.agent.model().id()
            ),
            Style::default().bold(),
        );
        ui.conversation.note(
            "escape interrupts · ctrl+c clears, twice quits · ctrl+d quits · / commands · ! runs bash · ctrl+j new line · alt+enter queues a follow-up · ctrl+o expands tools · ctrl+t hides thinking · shift+tab thinking level · ctrl+l/ctrl+p model · tab and @ complete paths",
            gray,
        );
        let transcript = setup.agent.transcript().to_vec();
        ui.conversation.replay(&transcript);
        ui.draw();
    }
    let initial = first
        .into_iter()
        .chain(rest.into_iter().map(|m| vec![Content::text(m)]));
    for prompt in initial {
        setup.tools.refresh(&mut setup.agent);
        let flow = turn(
            setup,
            &ui,
            &mut keys,
            (&mut questions, &mut elicitations),
            &mut signals,
            prompt,
        )
        .await;
        if let Flow::Quit = flow {
            drop(guard);
            return Ok(ExitCode::SUCCESS);
        }
    }
    loop {
        let action = tokio::select! {
            event = keys.recv() => match event {
                Some(event) => {
                    let resized = matches!(event, Event::Resize(..));
                    let action = ui.borrow_mut().input(event, false);
                    if resized { ui.borrow_mut().draw(); }
                    action
                }
                None => Action::Quit,
            },
            Some(question) = questions.recv() => {
                ui.borrow_mut().question = Some(question);
                Action::None
            }
            Some(pending) = elicitations.recv() => {
                ui.borrow_mut().elicitation_arrived(pending);
                Action::None
            }
            code = signals.next(&mut setup.interrupts) => exit_on_signal(code),
        };
        let flow = match action {
            Action::Submit(text) => {
                if let Some(flow) = commands::run(setup, &ui, &mut keys, &text).await {
                    flow
                } else {
                    let content = ui.borrow_mut().content(&text);
                    setup.tools.refresh(&mut setup.agent);
                    let asked = (&mut questions, &mut elicitations);
                    turn(setup, &ui, &mut keys, asked, &mut signals, content).await
                }
            }
            Action::Quit => Flow::Quit,
            Action::CycleThinking => {
                commands::cycle_thinking(setup, &ui);
                Flow::Go
            }
            Action::SelectModel => {
                commands::open_model_selector(setup, &ui);
                Flow::Go
            }
            Action::CycleModel => {
                commands::cycle_model(setup, &ui);
                Flow::Go
            }
            Action::Chosen(purpose, index) => {
                commands::chosen(setup, &ui, purpose, index);
                Flow::Go
            }
            Action::None | Action::Steer(_) | Action::FollowUp(_) | Action::Abort => Flow::Go,
        };
        if let Flow::Quit = flow {
            break;
        }
        ui.borrow_mut().draw();
    }
    drop(guard);
    Ok(ExitCode::SUCCESS)
}

/// One prompt, with the keys still read: Escape aborts, Enter steers, Alt+Enter queues a
/// follow-up, Ctrl+C twice quits; the spinner turns and the queued messages are shown.
async fn turn(
    setup: &mut Setup,
    ui: &RefCell<Ui>,
    keys: &mut Keys,
    (questions, elicitations): (&mut Questions, &mut Elicitations),
    signals: &mut Signals,
    content: Vec<Content>,
) -> Flow {
    let signal = CancellationToken::new();
    let control = setup.agent.control();
    {
        let mut ui = ui.borrow_mut();
        ui.working = Some(Instant::now());
        ui.live_usage = Some((
            setup.agent.session_usage(),
            setup.agent.model_info().context_window,
            setup.agent.compaction_settings().enabled,
        ));
        ui.draw();
    }
    let mut quit = false;
    let mut observer = UiObserver { ui };
    {
        let interrupts = &mut setup.interrupts;
        let prompt = setup
            .agent
            .prompt_content(content, signal.clone(), &mut observer);
        tokio::pin!(prompt);
        let mut tick = tokio::time::interval(Duration::from_millis(80));
        loop {
            tokio::select! {
                _ = &mut prompt => break,
                event = keys.recv() => {
                    let Some(event) = event else { continue };
                    let mut ui = ui.borrow_mut();
                    match ui.input(event, true) {
                        Action::Abort => signal.cancel(),
                        Action::Steer(text) => control.steer(&text),
                        Action::FollowUp(text) => control.follow_up(&text),
                        Action::Quit => {
                            quit = true;
                            signal.cancel();
                        }
                        Action::Submit(_) | Action::None => {}
                        Action::CycleThinking
                        | Action::SelectModel
                        | Action::CycleModel
                        | Action::Chosen(..) => {
                            ui.notice = Some("Wait for the answer to end (or press Escape) first".into());
                        }
                    }
                    ui.queued = control.queued();
                    ui.draw();
                }
                Some(question) = questions.recv() => {
                    let mut ui = ui.borrow_mut();
                    ui.question = Some(question);
                    ui.draw();
                }
                Some(pending) = elicitations.recv() => {
                    let mut ui = ui.borrow_mut();
                    ui.elicitation_arrived(pending);
                    ui.draw();
                }
                _ = tick.tick() => {
                    let mut ui = ui.borrow_mut();
                    // A question whose call was aborted or ended is gone from the screen.
                    if ui.elicitations.prune() {
                        ui.elicitations_settled();
                    }
                    ui.queued = control.queued();
                    ui.draw();
                }
                code = signals.next(interrupts) => exit_on_signal(code),
            }
        }
    }
    let mut ui = ui.borrow_mut();
    ui.working = None;
    ui.live_usage = None;
    ui.question = None;
    // A server still asking when the turn ended is told `cancel`.
    ui.elicitations.clear();
    ui.elicitations_settled();
    if signal.is_cancelled() {
        // As pi does: what was queued for the stopped turn comes back into the editor (before
        // what is being typed), to send again or not.
        let mut texts = control.take_queued();
        if !texts.is_empty() {
            if !ui.editor.is_empty() {
                texts.push(ui.editor.text());
            }
            ui.editor.set_text(&texts.join("\n\n"));
        }
    }
    ui.queued = control.queued();
    ui.footer = commands::footer(setup);
    ui.draw();
    if quit { Flow::Quit } else { Flow::Go }
}
