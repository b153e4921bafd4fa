//! An MCP server's questions during a call (elicitation) in the interface: the handler the
//! MCP clients are given sends each question here; the interface shows it under the running
//! call and the editor takes the answers, field by field, until the form is complete
//! (`Accept`), the user declines (Ctrl+D: `Decline`) or dismisses it (Escape: `Cancel`). A URL
//! question takes one key (`y` accepts, `n` declines); no browser is started. Everything the
//! server sent is shown sanitized (no escape sequences) and wrapped to the width.

use std::collections::VecDeque;

use pi_mcp::{ElicitationHandler, ElicitationKind, ElicitationRequest, ElicitationResponse};
use pi_tool::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use super::text::{self, Color, Span, Style, sanitize, to_ansi};

/// At most this many lines of the server's message are shown (the rest is cut, with `…`).
const MESSAGE_LINES: usize = 12;
/// At most this many lines of a field's description.
const DESCRIPTION_LINES: usize = 4;
/// At most this many questions wait behind the open one; more are cancelled as they come.
const MAX_WAITING: usize = 8;

/// A server's question waiting for the user, and where the answer goes.
pub(crate) struct Elicitation {
    request: ElicitationRequest,
    reply: oneshot::Sender<ElicitationResponse>,
}

/// Where the interface receives the questions.
pub(crate) type Elicitations = mpsc::UnboundedReceiver<Elicitation>;

/// The handler given to the MCP clients while the interface runs; cheap to clone. When the
/// interface is gone, or drops the question (the turn ended), the server is told `cancel`.
#[derive(Clone)]
pub(crate) struct InterfaceQuestions(mpsc::UnboundedSender<Elicitation>);

/// A new channel of server questions.
pub(crate) fn channel() -> (InterfaceQuestions, Elicitations) {
    let (sender, receiver) = mpsc::unbounded_channel();
    (InterfaceQuestions(sender), receiver)
}

impl ElicitationHandler for InterfaceQuestions {
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, ElicitationResponse> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            if self.0.send(Elicitation { request, reply }).is_err() {
                return ElicitationResponse::Cancel;
            }
            answer.await.unwrap_or(ElicitationResponse::Cancel)
        })
    }
}

/// One field of a form, as it is asked.
#[derive(Debug)]
struct Field {
    name: String,
    /// The property's schema, to check an answer against.
    property: Value,
    label: String,
    description: Option<String>,
    /// What kind of answer: `a whole number from 1 to 9`, `text (email)`, `one of:` ...
    kind: String,
    required: bool,
    /// The default, as shown.
    default: Option<String>,
    /// The values it may take, with how each is shown.
    choices: Vec<(Value, String)>,
    /// Several choices (an array of an enum's values).
    many: bool,
}

impl Field {
    fn new(name: &str, property: &Value, required: bool) -> Field {
        let mut choices: Vec<(Value, String)> = crate::mcp::choices(property)
            .into_iter()
            .map(|(value, shown)| (Value::String(value), sanitize(&shown)))
            .collect();
        let many = property["type"] == "array";
        let range = |whole: &str| {
            let (min, max) = (&property["minimum"], &property["maximum"]);
            match (min.is_number(), max.is_number()) {
                (true, true) => format!("{whole} from {min} to {max}"),
                (true, false) => format!("{whole}, at least {min}"),
                (false, true) => format!("{whole}, at most {max}"),
                (false, false) => whole.to_owned(),
            }
        };
        let kind = match property["type"].as_str() {
            _ if !choices.is_empty() && many => {
                "some of (numbers or names, separated by commas):".to_owned()
            }
            _ if !choices.is_empty() => "one of (a number, a name, or ↑/↓):".to_owned(),
            Some("boolean") => {
                choices = vec![
                    (Value::Bool(true), "yes".into()),
                    (Value::Bool(false), "no".into()),
                ];
                "yes or no (y/n, or ↑/↓):".to_owned()
            }
            Some("integer") => range("a whole number"),
            Some("number") => range("a number"),
            _ => match property["format"].as_str() {
                Some(format) => format!("text ({})", sanitize(format)),
                None => "text".to_owned(),
            },
        };
        Field {
            name: name.to_owned(),
            property: property.clone(),
            label: sanitize(property["title"].as_str().unwrap_or(name)),
            description: property["description"].as_str().map(sanitize),
            kind,
            required,
            default: property.get("default").map(|default| match default {
                Value::String(text) => sanitize(text),
                Value::Bool(true) => "yes".to_owned(),
                Value::Bool(false) => "no".to_owned(),
                other => sanitize(&other.to_string()),
            }),
            choices,
            many,
        }
    }

    /// The choice a typed word means: its number, its value, or the start of how it is shown.
    fn pick(&self, typed: &str) -> Option<Value> {
        if let Ok(number) = typed.parse::<usize>()
            && (1..=self.choices.len()).contains(&number)
        {
            return Some(self.choices[number - 1].0.clone());
        }
        let lower = typed.to_lowercase();
        self.choices
            .iter()
            .find(|(value, shown)| {
                let plain = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                plain.eq_ignore_ascii_case(typed) || shown.to_lowercase().starts_with(&lower)
            })
            .map(|(value, _)| value.clone())
    }

    /// What a typed answer means, before it is checked: a choice (or several), else the text
    /// (the form's schema makes numbers of it, or says what is wrong).
    fn value(&self, typed: &str) -> Value {
        if self.many {
            return Value::Array(
                typed
                    .split(',')
                    .map(str::trim)
                    .filter(|item| !item.is_empty())
                    .map(|item| {
                        self.pick(item)
                            .unwrap_or_else(|| Value::String(item.to_owned()))
                    })
                    .collect(),
            );
        }
        if self.choices.is_empty() {
            return Value::String(typed.to_owned());
        }
        self.pick(typed)
            .unwrap_or_else(|| Value::String(typed.to_owned()))
    }

    /// The value checked against this field's schema (and normalized: `"36"` for an integer
    /// becomes 36), or what does not fit.
    fn check(&self, value: Value) -> Result<Value, String> {
        let alone = ElicitationRequest::new(
            "",
            "",
            ElicitationKind::Form {
                schema: json!({
                    "type": "object",
                    "properties": {self.name.clone(): self.property.clone()},
                    "required": [self.name.clone()],
                }),
            },
        );
        let mut checked = alone.complete(json!({self.name.clone(): value}))?;
        Ok(checked[&self.name].take())
    }
}

/// What an answer did to the question.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// The next field is asked (the editor is emptied).
    Next,
    /// The same field is asked again, with what was wrong (the typed text stays to fix).
    Again,
    /// The question is answered.
    Done(ElicitationResponse),
}

/// The open question: the server's request, the fields still to answer and those answered.
pub(crate) struct Asking {
    pending: Elicitation,
    fields: Vec<Field>,
    at: usize,
    content: Map<String, Value>,
    /// The highlighted choice of the field asked (↑/↓).
    highlighted: Option<usize>,
    /// Why the last answer was refused.
    problem: Option<String>,
}

impl Asking {
    fn new(pending: Elicitation) -> Asking {
        let fields = match &pending.request.kind {
            ElicitationKind::Form { schema } => {
                let required: Vec<&str> = schema["required"]
                    .as_array()
                    .map(|names| names.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                schema["properties"]
                    .as_object()
                    .map(|properties| {
                        properties
                            .iter()
                            .map(|(name, property)| {
                                Field::new(name, property, required.contains(&name.as_str()))
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            }
            _ => Vec::new(),
        };
        let mut asking = Asking {
            pending,
            fields,
            at: 0,
            content: Map::new(),
            highlighted: None,
            problem: None,
        };
        asking.highlight_default();
        asking
    }

    /// A URL to visit rather than a form.
    pub(crate) fn is_url(&self) -> bool {
        matches!(self.pending.request.kind, ElicitationKind::Url { .. })
    }

    /// The field's highlighted choice starts at its default.
    fn highlight_default(&mut self) {
        self.highlighted = self.fields.get(self.at).and_then(|field| {
            let default = field.property.get("default")?;
            field.choices.iter().position(|(value, _)| value == default)
        });
    }

    /// ↑/↓ on a field with choices (`false` when it has none).
    pub(crate) fn move_highlight(&mut self, by: isize) -> bool {
        let Some(field) = self.fields.get(self.at) else {
            return false;
        };
        let count = field.choices.len();
        if count == 0 || field.many {
            return false;
        }
        let next = match self.highlighted {
            None if by < 0 => count - 1,
            None => 0,
            Some(at) => (at as isize + by).rem_euclid(count as isize) as usize,
        };
        self.highlighted = Some(next);
        true
    }

    /// Enter with `typed` in the editor. An empty answer takes the highlighted choice, else the
    /// default (filled in when the form is complete), else leaves an optional field out. A form
    /// with no fields is answered at once.
    pub(crate) fn enter(&mut self, typed: &str) -> Step {
        if self.is_url() {
            return Step::Again;
        }
        let typed = typed.trim();
        if let Some(field) = self.fields.get(self.at) {
            let value = if !typed.is_empty() {
                Some(field.value(typed))
            } else if let Some(at) = self.highlighted {
                Some(field.choices[at].0.clone())
            } else if field.default.is_none() && field.required {
                self.problem = Some(format!("{}: an answer is needed", field.label));
                return Step::Again;
            } else {
                None
            };
            if let Some(value) = value {
                match field.check(value) {
                    Ok(value) => {
                        self.content.insert(field.name.clone(), value);
                    }
                    Err(problem) => {
                        self.problem = Some(sanitize(&problem));
                        return Step::Again;
                    }
                }
            }
            self.at += 1;
        }
        self.problem = None;
        if self.at < self.fields.len() {
            self.highlight_default();
            return Step::Next;
        }
        match self
            .pending
            .request
            .complete(Value::Object(self.content.clone()))
        {
            Ok(content) => Step::Done(ElicitationResponse::Accept(content)),
            Err(problem) => {
                // Each field fit alone but not the whole form: from the first field again.
                self.problem = Some(format!(
                    "{}; once more from the first field",
                    sanitize(&problem)
                ));
                self.at = 0;
                self.content.clear();
                self.highlight_default();
                Step::Next
            }
        }
    }

    /// The lines shown under the running call.
    pub(crate) fn render(&self, width: usize, waiting: usize) -> Vec<String> {
        let gray = Style::fg(Color::Gray);
        let mut lines = Vec::new();
        let mut push = |spans: &[Span], most: usize| {
            let wrapped = text::wrap(spans, width);
            let cut = wrapped.len() > most;
            for (i, line) in wrapped.into_iter().take(most).enumerate() {
                if cut && i + 1 == most {
                    let mut line = text::truncate(&line, width.saturating_sub(1));
                    line.push(Span::plain("…"));
                    lines.push(to_ansi(&line));
                } else {
                    lines.push(to_ansi(&line));
                }
            }
        };
        let request = &self.pending.request;
        let more = if waiting > 0 {
            format!(" ({waiting} more question{} waiting)", plural(waiting))
        } else {
            String::new()
        };
        push(
            &[Span::new(
                Style::fg(Color::Yellow).bold(),
                format!("{} asks:{more}", sanitize(&request.server)),
            )],
            3,
        );
        push(&[Span::plain(sanitize(&request.message))], MESSAGE_LINES);
        if let ElicitationKind::Url { url } = &request.kind {
            push(
                &[
                    Span::new(gray, "It wants you to open "),
                    Span::new(Style::fg(Color::Cyan), sanitize(url)),
                ],
                6,
            );
            push(
                &[Span::new(
                    gray,
                    "pi does not start a browser: open the page yourself.",
                )],
                2,
            );
            push(
                &[Span::new(
                    gray,
                    "y: accept (done there) · n: decline · esc: cancel",
                )],
                2,
            );
            return lines;
        }
        if let Some(field) = self.fields.get(self.at) {
            let mut about = vec![format!("{} of {}", self.at + 1, self.fields.len())];
            if let Some(default) = &field.default {
                about.push(format!("default {default}"));
            } else if field.required {
                about.push("required".to_owned());
            } else {
                about.push("optional".to_owned());
            }
            push(
                &[
                    Span::new(Style::default().bold(), field.label.clone()),
                    Span::new(gray, format!(" ({}): {}", about.join(", "), field.kind)),
                ],
                3,
            );
            if let Some(description) = &field.description {
                push(&[Span::new(gray, description.clone())], DESCRIPTION_LINES);
            }
            for (i, (_, shown)) in field.choices.iter().enumerate() {
                let (marker, style) = if Some(i) == self.highlighted {
                    ("→ ", Style::fg(Color::Cyan).bold())
                } else {
                    ("  ", Style::default())
                };
                push(
                    &[
                        Span::new(Style::fg(Color::Cyan), marker),
                        Span::new(style, format!("{}. {shown}", i + 1)),
                    ],
                    2,
                );
            }
        }
        if let Some(problem) = &self.problem {
            push(
                &[Span::new(
                    Style::fg(Color::Red),
                    format!("That does not fit: {problem}"),
                )],
                4,
            );
        }
        push(
            &[Span::new(
                gray,
                "enter: answer (empty: the default, or left out) · esc: cancel · ctrl+d: decline",
            )],
            4,
        );
        lines
    }
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// The questions of the servers: the one open, and those that came while it was.
#[derive(Default)]
pub(crate) struct Queue {
    open: Option<Asking>,
    waiting: VecDeque<Elicitation>,
}

impl Queue {
    /// A question arrived: opened, or kept until those before it are answered. Beyond
    /// [`MAX_WAITING`] waiting, a server that floods the user is told `cancel` at once.
    pub(crate) fn push(&mut self, pending: Elicitation) {
        self.waiting.retain(|waiting| !waiting.reply.is_closed());
        if self.waiting.len() >= MAX_WAITING {
            let _ = pending.reply.send(ElicitationResponse::Cancel);
            return;
        }
        self.waiting.push_back(pending);
        self.next();
    }

    pub(crate) fn open(&self) -> Option<&Asking> {
        self.open.as_ref()
    }

    pub(crate) fn open_mut(&mut self) -> Option<&mut Asking> {
        self.open.as_mut()
    }

    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Sends the open question's answer; the next one opens.
    pub(crate) fn answer(&mut self, response: ElicitationResponse) {
        if let Some(asking) = self.open.take() {
            let _ = asking.pending.reply.send(response);
        }
        self.next();
    }

    /// Drops the questions nobody waits for any more (the call was aborted or ended); whether
    /// the open one changed.
    pub(crate) fn prune(&mut self) -> bool {
        self.waiting.retain(|pending| !pending.reply.is_closed());
        let gone = self
            .open
            .as_ref()
            .is_some_and(|asking| asking.pending.reply.is_closed());
        if gone {
            self.open = None;
            self.next();
        }
        gone
    }

    /// Every question dropped (the turn ended): the servers are told `cancel`.
    pub(crate) fn clear(&mut self) {
        self.open = None;
        self.waiting.clear();
    }

    fn next(&mut self) {
        while self.open.is_none() {
            let Some(pending) = self.waiting.pop_front() else {
                return;
            };
            if !pending.reply.is_closed() {
                self.open = Some(Asking::new(pending));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> ElicitationRequest {
        ElicitationRequest::new(
            "MCP server \"crm\"",
            "Who \x1b[31mare\x1b[0m you?\x1b]0;pwned\x07",
            ElicitationKind::Form {
                schema: json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "title": "Name", "description": "what to call you"},
                        "age": {"type": "integer", "title": "Age", "default": 36, "minimum": 0},
                        "plan": {"type": "string", "oneOf": [{"const": "p1", "title": "Free"}, {"const": "p2", "title": "Team"}]},
                        "verified": {"type": "boolean", "default": false},
                        "tools": {"type": "array", "items": {"type": "string", "enum": ["Guitar", "Drums", "Piano"]}}
                    },
                    "required": ["name", "plan"]
                }),
            },
        )
    }

    fn asking(request: ElicitationRequest) -> (Asking, oneshot::Receiver<ElicitationResponse>) {
        let (reply, answer) = oneshot::channel();
        (Asking::new(Elicitation { request, reply }), answer)
    }

    fn shown(asking: &Asking, width: usize) -> String {
        asking
            .render(width, 0)
            .iter()
            .map(|line| sanitize(line))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_form_is_answered_field_by_field_with_defaults_choices_and_refusals() {
        let (mut asking, _) = asking(form());
        // The server's escape sequences are not passed on (the title it would set, nor colors).
        let raw = asking.render(80, 0).concat();
        assert!(!raw.contains("pwned") && !raw.contains("\x1b]"), "{raw:?}");
        let screen = shown(&asking, 80);
        assert!(screen.contains("MCP server \"crm\" asks:"), "{screen}");
        assert!(screen.contains("Who are you?"), "{screen}");
        assert!(screen.contains("Name (1 of 5, required): text"), "{screen}");
        assert!(screen.contains("what to call you"), "{screen}");
        // A required field without an answer is asked again.
        assert_eq!(asking.enter(""), Step::Again);
        assert!(shown(&asking, 80).contains("Name: an answer is needed"));
        assert_eq!(asking.enter("Ada"), Step::Next);
        assert!(
            shown(&asking, 80).contains("Age (2 of 5, default 36): a whole number, at least 0")
        );
        // A wrong type is refused with the schema's reason, and the field asked again.
        assert_eq!(asking.enter("old"), Step::Again);
        assert!(
            shown(&asking, 80).contains("That does not fit: "),
            "{}",
            shown(&asking, 80)
        );
        assert_eq!(asking.enter("-1"), Step::Again);
        // Empty: the default (filled in at the end).
        assert_eq!(asking.enter(""), Step::Next);
        let screen = shown(&asking, 80);
        assert!(
            screen.contains("  1. Free (p1)") && screen.contains("  2. Team (p2)"),
            "{screen}"
        );
        assert!(asking.move_highlight(1));
        assert!(shown(&asking, 80).contains("→ 1. Free (p1)"));
        assert!(asking.move_highlight(1));
        assert_eq!(asking.enter(""), Step::Next);
        // The boolean's default is highlighted; `y` answers it.
        assert!(shown(&asking, 80).contains("→ 2. no"));
        assert_eq!(asking.enter("y"), Step::Next);
        assert_eq!(
            asking.enter("1, drums"),
            Step::Done(ElicitationResponse::Accept(json!({
                "name": "Ada", "plan": "p2", "verified": true, "tools": ["Guitar", "Drums"], "age": 36
            })))
        );
    }

    #[test]
    fn a_url_is_shown_and_long_text_is_cut_to_the_width() {
        let (asking_url, _) = asking(ElicitationRequest::new(
            "MCP server \"pay\"",
            "Confirm the payment",
            ElicitationKind::Url {
                url: "https://pay.example/confirm".into(),
            },
        ));
        assert!(asking_url.is_url());
        let screen = shown(&asking_url, 80);
        assert!(screen.contains("It wants you to open https://pay.example/confirm"));
        assert!(screen.contains("pi does not start a browser"));
        let long = "word ".repeat(400);
        let (long, _) = asking(ElicitationRequest::new(
            "s",
            long,
            ElicitationKind::Form {
                schema: json!({"type": "object", "properties": {}}),
            },
        ));
        let lines = long.render(30, 2);
        assert!(lines.iter().all(|line| text::width(&sanitize(line)) <= 30));
        assert!(lines.len() < 20, "{}", lines.len());
        let head = format!("{} {}", sanitize(&lines[0]), sanitize(&lines[1]));
        assert!(head.contains("(2 more questions waiting)"), "{head}");
        assert!(sanitize(lines.last().unwrap()).contains("decline"));
    }

    #[tokio::test]
    async fn the_handler_gets_the_answer_and_cancel_when_the_question_is_dropped() {
        let (handler, mut questions) = channel();
        let asked = tokio::spawn(async move {
            let first = handler.elicit(form()).await;
            let second = handler.elicit(form()).await;
            (first, second)
        });
        let mut queue = Queue::default();
        queue.push(questions.recv().await.unwrap());
        assert!(queue.open().is_some());
        queue.answer(ElicitationResponse::Decline);
        assert!(queue.open().is_none());
        queue.push(questions.recv().await.unwrap());
        queue.clear();
        assert_eq!(
            asked.await.unwrap(),
            (ElicitationResponse::Decline, ElicitationResponse::Cancel)
        );
        // A question whose call went away is dropped.
        let (reply, answer) = oneshot::channel();
        queue.push(Elicitation {
            request: form(),
            reply,
        });
        drop(answer);
        assert!(queue.prune());
        assert!(queue.open().is_none());
    }

    #[test]
    fn a_server_that_floods_questions_is_told_cancel_beyond_the_waiting_ones() {
        let mut queue = Queue::default();
        let answers: Vec<_> = (0..=MAX_WAITING + 1)
            .map(|_| {
                let (reply, answer) = oneshot::channel();
                queue.push(Elicitation {
                    request: form(),
                    reply,
                });
                answer
            })
            .collect();
        assert!(queue.open().is_some());
        assert_eq!(queue.waiting(), MAX_WAITING);
        let mut answers = answers;
        let last = answers.pop().unwrap();
        assert_eq!(last.blocking_recv(), Ok(ElicitationResponse::Cancel));
        // The others still wait for the user.
        assert!(answers.iter_mut().all(|answer| answer.try_recv().is_err()));
    }
}
