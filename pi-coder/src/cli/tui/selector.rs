//! pi's searchable selectors (`/model`, `/resume`, `-r`): a list with a search line; typing
//! filters it (every word typed must appear, in any case), Up/Down move, Enter chooses,
//! Escape or Ctrl+C leaves; `✓` marks the current choice.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::screen::Screen;
use super::terminal::{self, Guard};
use super::text::{Color, Span, Style, to_ansi, truncate};

/// Most rows listed at once.
const ROWS: usize = 10;

/// One choice: what is shown, and a grey detail after it.
#[derive(Clone, Debug)]
pub(crate) struct Choice {
    pub(crate) label: String,
    pub(crate) detail: String,
}

/// What a key did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Open,
    Chosen(usize),
    Cancelled,
}

/// An open selector.
pub(crate) struct Selector {
    title: String,
    choices: Vec<Choice>,
    query: String,
    /// Indexes into `choices` that match the query.
    shown: Vec<usize>,
    selected: usize,
    current: Option<usize>,
}

impl Selector {
    pub(crate) fn new(
        title: impl Into<String>,
        choices: Vec<Choice>,
        current: Option<usize>,
    ) -> Selector {
        let mut selector = Selector {
            title: title.into(),
            shown: (0..choices.len()).collect(),
            choices,
            query: String::new(),
            selected: 0,
            current,
        };
        if let Some(current) = current {
            selector.selected = selector
                .shown
                .iter()
                .position(|&i| i == current)
                .unwrap_or(0);
        }
        selector
    }

    fn filter(&mut self) {
        let words: Vec<String> = self
            .query
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        self.shown = self
            .choices
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                let text = format!("{} {}", c.label, c.detail).to_lowercase();
                words.iter().all(|w| text.contains(w.as_str()))
            })
            .map(|(i, _)| i)
            .collect();
        self.selected = 0;
    }

    pub(crate) fn key(&mut self, key: KeyEvent) -> Outcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => return Outcome::Cancelled,
            KeyCode::Char('c') if ctrl => return Outcome::Cancelled,
            KeyCode::Enter => {
                return match self.shown.get(self.selected) {
                    Some(&i) => Outcome::Chosen(i),
                    None => Outcome::Open,
                };
            }
            KeyCode::Up if !self.shown.is_empty() => {
                self.selected = (self.selected + self.shown.len() - 1) % self.shown.len();
            }
            KeyCode::Down | KeyCode::Tab if !self.shown.is_empty() => {
                self.selected = (self.selected + 1) % self.shown.len();
            }
            KeyCode::Char('p') if ctrl => {
                return self.key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE));
            }
            KeyCode::Char('n') if ctrl => {
                return self.key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
            }
            KeyCode::Backspace => {
                self.query.pop();
                self.filter();
            }
            KeyCode::Char('u') if ctrl => {
                self.query.clear();
                self.filter();
            }
            KeyCode::Char(c) if !ctrl => {
                self.query.push(c);
                self.filter();
            }
            _ => {}
        }
        Outcome::Open
    }

    /// A paste goes into the search.
    pub(crate) fn paste(&mut self, text: &str) {
        self.query.push_str(&text.replace(['\n', '\r'], " "));
        self.filter();
    }

    /// The selector's lines, `width` cells wide at most.
    pub(crate) fn render(&self, width: usize) -> Vec<String> {
        let accent = Style::fg(Color::Cyan);
        let gray = Style::fg(Color::Gray);
        let mut out = vec![
            to_ansi(&[Span::new(accent, "─".repeat(width))]),
            to_ansi(&truncate(
                &[Span::new(accent.bold(), self.title.clone())],
                width,
            )),
            to_ansi(&truncate(
                &[
                    Span::new(gray, "Search: "),
                    Span::plain(self.query.clone()),
                    Span::new(
                        Style {
                            reverse: true,
                            ..Style::default()
                        },
                        " ",
                    ),
                ],
                width,
            )),
        ];
        if self.shown.is_empty() {
            out.push(to_ansi(&[Span::new(gray, "  No matches")]));
        }
        let start = self.selected.saturating_sub(ROWS - 1);
        for (row, &i) in self.shown.iter().enumerate().skip(start).take(ROWS) {
            let choice = &self.choices[i];
            let selected = row == self.selected;
            let marker = if selected { "→ " } else { "  " };
            let check = if Some(i) == self.current { " ✓" } else { "" };
            let style = if selected {
                accent.bold()
            } else {
                Style::default()
            };
            out.push(to_ansi(&truncate(
                &[
                    Span::new(accent, marker),
                    Span::new(style, format!("{}{check}", choice.label)),
                    Span::new(gray, format!("  {}", choice.detail)),
                ],
                width,
            )));
        }
        out.push(to_ansi(&truncate(
            &[Span::new(
                gray,
                format!(
                    "  ({}/{})  type to search · ↑↓ move · enter select · esc cancel",
                    if self.shown.is_empty() {
                        0
                    } else {
                        self.selected + 1
                    },
                    self.shown.len()
                ),
            )],
            width,
        )));
        out.push(to_ansi(&[Span::new(accent, "─".repeat(width))]));
        out
    }
}

/// A selector on its own (`pi -r`, before the conversation starts): the terminal is taken for
/// it and given back after. `None` when the user left it.
pub(crate) async fn pick(
    title: &str,
    choices: Vec<Choice>,
    current: Option<usize>,
) -> Option<usize> {
    let Ok((guard, mut keys)) = Guard::enter() else {
        return None;
    };
    let mut selector = Selector::new(title, choices, current);
    let mut screen = Screen::default();
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let chosen = loop {
        let (width, height) = terminal::size();
        screen.draw(selector.render(width), width, height);
        let event = tokio::select! {
            event = keys.recv() => event,
            _ = async { match hangup.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {
                drop(guard);
                std::process::exit(129);
            }
            _ = async { match term.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {
                drop(guard);
                std::process::exit(143);
            }
        };
        match event {
            Some(Event::Key(key)) if key.kind != KeyEventKind::Release => match selector.key(key) {
                Outcome::Open => {}
                Outcome::Chosen(i) => break Some(i),
                Outcome::Cancelled => break None,
            },
            Some(Event::Paste(text)) => selector.paste(&text),
            Some(_) => {}
            None => break None,
        }
    };
    // The selector's lines are left as they are; the conversation starts below them.
    drop(guard);
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choices() -> Vec<Choice> {
        ["mock/mock-model", "mock/mock-two", "openai/gpt-5"]
            .iter()
            .map(|l| Choice {
                label: (*l).to_owned(),
                detail: String::new(),
            })
            .collect()
    }

    fn typed(selector: &mut Selector, text: &str) {
        for c in text.chars() {
            selector.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
    }

    #[test]
    fn typing_filters_and_enter_chooses() {
        let mut selector = Selector::new("Select model", choices(), Some(0));
        typed(&mut selector, "two");
        assert_eq!(selector.shown, [1]);
        assert_eq!(
            selector.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
            Outcome::Chosen(1)
        );
        let mut selector = Selector::new("Select model", choices(), Some(0));
        typed(&mut selector, "MOCK model");
        assert_eq!(selector.shown, [0]);
        selector.key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE));
        selector.key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        selector.key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(
            selector.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
            Outcome::Chosen(2),
            "Up from the first wraps to the last"
        );
        assert_eq!(
            selector.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)),
            Outcome::Cancelled
        );
        let lines = Selector::new("Select model", choices(), Some(1)).render(30);
        assert!(
            lines.iter().any(|l| l.contains("mock/mock-two ✓")),
            "{lines:?}"
        );
    }
}
