//! Requests that recover from a refusal of strict tools, as pi 1.6's `prefer` mode does.
//!
//! Anthropic (and Bedrock, which serves Anthropic's models) compiles every strict tool of a
//! request into one grammar and refuses the whole request past its limits (20 strict tools, 24
//! optional parameters, 16 union-typed parameters, or a grammar "too large"); OpenAI refuses a
//! strict schema it does not support. Such a refusal is a 400 before anything streamed, so the
//! request is sent once more with the tools that may fall back sent without `strict`, and the
//! model remembers, per session, that those tools go without it from then on. A tool marked
//! [`StrictPreference::Require`] is never sent without `strict`: a refusal that only such tools
//! could answer ends the request with the API's error and a note naming them.
// Without the HTTP clients only the policy's public side is used.
#![cfg_attr(not(feature = "http"), allow(dead_code))]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use pi_tool::ToolSpec;
use serde_json::{Value, json};

use super::lowering::{CompatibilityReport, SchemaMode};
use super::root_union::object_root;
use crate::model::StreamOptions;

/// Whether a tool that is sent strict may be sent without `strict` when the API refuses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StrictPreference {
    /// Strict while the API takes it; without `strict` after a refusal (the default).
    #[default]
    Prefer,
    /// Always strict: a refusal ends the request instead.
    Require,
}

/// What fell back in one session: the tools now sent without `strict`, and the refusal that
/// made them.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StrictFallback {
    /// The tools sent without `strict` from now on, by name.
    pub tools: BTreeSet<String>,
    /// The API's error message that refused them (the first one).
    pub refusal: String,
}

/// A model's strict-tool policy: which tools must stay strict, and (shared by the model's
/// clones) which tools each session sent without `strict` after a refusal.
///
/// Set it on a provider with `.strict_tools(..)`; ask it what happened with
/// [`fallback`](Self::fallback) or [`report`](Self::report).
///
/// ```
/// use pi_runtime::providers::{StrictPreference, StrictTools};
///
/// let policy = StrictTools::new().require("edit");
/// assert_eq!(policy.preference("edit"), StrictPreference::Require);
/// assert_eq!(policy.preference("read"), StrictPreference::Prefer);
/// assert!(policy.fallback(Some("session-1")).is_none(), "nothing refused yet");
/// ```
#[derive(Clone, Debug, Default)]
pub struct StrictTools {
    required: BTreeSet<String>,
    /// By session id (`""` for requests without one).
    sessions: Arc<Mutex<BTreeMap<String, StrictFallback>>>,
}

impl StrictTools {
    /// Every tool may fall back (pi's `prefer`).
    pub fn new() -> Self {
        StrictTools::default()
    }

    /// Marks a tool as always strict (pi's `require`).
    pub fn require(mut self, tool: impl Into<String>) -> Self {
        self.required.insert(tool.into());
        self
    }

    /// The preference of a tool.
    pub fn preference(&self, tool: &str) -> StrictPreference {
        if self.required.contains(tool) {
            StrictPreference::Require
        } else {
            StrictPreference::Prefer
        }
    }

    /// What fell back in a session (`None` for requests without a session id), if anything.
    pub fn fallback(&self, session: Option<&str>) -> Option<StrictFallback> {
        self.lock().get(session.unwrap_or_default()).cloned()
    }

    /// Forgets a session's fallback: its next request tries strict tools again.
    pub fn forget(&self, session: Option<&str>) {
        self.lock().remove(session.unwrap_or_default());
    }

    /// A tool's [`CompatibilityReport`], saying also whether the tool is sent without `strict`
    /// in this session and which refusal made it so.
    pub fn report(&self, spec: &ToolSpec, session: Option<&str>) -> CompatibilityReport {
        let report = CompatibilityReport::of(spec);
        match self.fallback(session) {
            Some(fallback) if fallback.tools.contains(&spec.name) => {
                report.with_strict_fallback(fallback.refusal)
            }
            _ => report,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, StrictFallback>> {
        // A panic elsewhere while holding the lock leaves a map that is still whole.
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records tools that fell back in a session.
    fn remember(&self, session: Option<&str>, tools: &[String], refusal: &str) {
        let mut sessions = self.lock();
        let entry = sessions
            .entry(session.unwrap_or_default().to_owned())
            .or_insert_with(|| StrictFallback {
                tools: BTreeSet::new(),
                refusal: refusal.to_owned(),
            });
        entry.tools.extend(tools.iter().cloned());
    }
}

/// Where a request body keeps its tools' `strict` flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// `tools[] = {name, input_schema, strict}` (Anthropic Messages, Claude on Vertex).
    Anthropic,
    /// `tools[] = {type: "function", name, parameters, strict}` (OpenAI Responses).
    OpenAiResponses,
    /// `tools[] = {type: "function", function: {name, parameters, strict}}` (Chat Completions).
    OpenAiCompletions,
    /// `toolConfig.tools[] = {toolSpec: {name, inputSchema: {json}, strict}}` (Bedrock).
    #[cfg_attr(not(feature = "bedrock"), allow(dead_code))]
    Bedrock,
}

/// What a refusal of strict tools names: one tool (OpenAI's "Invalid schema for function
/// 'x'"), or the request's strict set as a whole (Anthropic's limits).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    Tool(String),
    All,
}

/// Whether an error message is an API's refusal of strict tools (a 400 with one of Anthropic's,
/// Bedrock's or OpenAI's texts for it).
pub(crate) fn refusal(message: &str) -> Option<Refused> {
    if !message.starts_with("400 ") {
        return None;
    }
    let lower = message.to_ascii_lowercase();
    const ANTHROPIC_TEXTS: [&str; 5] = [
        // "The compiled grammar is too large, which would cause performance issues. Simplify
        // your tool schemas or reduce the number of strict tools."
        "compiled grammar is too large",
        // "Schema is too complex for compilation. Try reducing the number of tools or
        // simplifying tool schemas."
        "schema is too complex for compilation",
        // "Too many strict tools (21). The maximum number of strict tools supported is 20"
        "too many strict tools",
        // "Schemas contains too many optional parameters (87), which would make grammar
        // compilation inefficient. ..."
        "too many optional parameters",
        // The union-typed parameter limit (16) of the same grammar.
        "parameters with union types",
    ];
    if ANTHROPIC_TEXTS.iter().any(|text| lower.contains(text)) {
        return Some(Refused::All);
    }
    // "Invalid schema for function 'get_me': In context=(), object schema missing properties."
    const OPENAI_TEXT: &str = "invalid schema for function '";
    if let Some(at) = lower.find(OPENAI_TEXT) {
        let rest = &message[at + OPENAI_TEXT.len()..];
        return Some(match rest.split_once('\'') {
            Some((name, _)) if !name.is_empty() => Refused::Tool(name.to_owned()),
            _ => Refused::All,
        });
    }
    None
}

/// The tools a body sends strict, by name.
fn strict_tools(body: &Value, dialect: Dialect) -> Vec<String> {
    tools(body)
        .iter()
        .filter_map(|tool| {
            let holder = holder(tool, dialect)?;
            (holder.get("strict") == Some(&Value::Bool(true)))
                .then(|| holder.get("name")?.as_str().map(str::to_owned))
                .flatten()
        })
        .collect()
}

fn tools(body: &Value) -> &[Value] {
    body.get("tools")
        .or_else(|| body.pointer("/toolConfig/tools"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The object holding a tool's name, schema and `strict`.
fn holder(tool: &Value, dialect: Dialect) -> Option<&Value> {
    match dialect {
        Dialect::OpenAiCompletions => tool.get("function"),
        Dialect::Bedrock => tool.get("toolSpec"),
        _ => Some(tool),
    }
}

/// Sends the named tools of a body without `strict`, with the schema the API takes for a tool
/// that is not strict (Anthropic's object root, or the tool's own schema). Returns the names
/// it changed.
fn relax(
    body: &mut Value,
    dialect: Dialect,
    names: &BTreeSet<String>,
    specs: &[ToolSpec],
    options: &StreamOptions,
) -> Vec<String> {
    let mut changed = Vec::new();
    let tools = match dialect {
        Dialect::Bedrock => body.pointer_mut("/toolConfig/tools"),
        _ => body.get_mut("tools"),
    };
    let Some(tools) = tools.and_then(Value::as_array_mut) else {
        return changed;
    };
    for tool in tools {
        let holder = match dialect {
            Dialect::OpenAiCompletions => tool.get_mut("function"),
            Dialect::Bedrock => tool.get_mut("toolSpec"),
            _ => Some(tool),
        };
        let Some(Value::Object(holder)) = holder else {
            continue;
        };
        let Some(name) = holder.get("name").and_then(Value::as_str) else {
            continue;
        };
        if holder.get("strict") != Some(&Value::Bool(true)) || !names.contains(name) {
            continue;
        }
        let Some(spec) = specs.iter().find(|spec| spec.name == name) else {
            continue;
        };
        changed.push(name.to_owned());
        match dialect {
            Dialect::Anthropic => {
                holder.remove("strict");
                let lowered = options.tools.lowered(spec, SchemaMode::Anthropic);
                holder.insert("input_schema".into(), lowered.schema.clone());
            }
            Dialect::Bedrock => {
                holder.remove("strict");
                let lowered = options.tools.lowered(spec, SchemaMode::Anthropic);
                holder.insert(
                    "inputSchema".into(),
                    json!({"json": lowered.schema.clone()}),
                );
            }
            Dialect::OpenAiResponses | Dialect::OpenAiCompletions => {
                holder.insert("strict".into(), json!(false));
                holder.insert(
                    "parameters".into(),
                    object_root(&spec.parameters).into_owned(),
                );
            }
        }
    }
    changed
}

impl StrictTools {
    /// Sends the tools this session already fell back on without `strict` (before the first
    /// attempt of a request).
    pub(crate) fn apply_remembered(
        &self,
        body: &mut Value,
        dialect: Dialect,
        specs: &[ToolSpec],
        options: &StreamOptions,
    ) {
        if let Some(fallback) = self.fallback(options.session_id.as_deref()) {
            relax(body, dialect, &fallback.tools, specs, options);
        }
    }

    /// After a refusal of `body`'s strict tools: the body to send once more (the tools that may
    /// fall back sent without `strict`, remembered for the session), or, when only required
    /// tools could answer the refusal, the note to add to the error.
    pub(crate) fn recover(
        &self,
        body: &Value,
        dialect: Dialect,
        refused: &Refused,
        refusal: &str,
        specs: &[ToolSpec],
        options: &StreamOptions,
    ) -> Result<Value, String> {
        let strict = strict_tools(body, dialect);
        let candidates: Vec<&String> = match refused {
            Refused::All => strict.iter().collect(),
            Refused::Tool(name) => strict.iter().filter(|s| *s == name).collect(),
        };
        let (required, relaxable): (Vec<&String>, Vec<&String>) = candidates
            .into_iter()
            .partition(|name| self.required.contains(name.as_str()));
        if relaxable.is_empty() {
            let names: Vec<&str> = required.iter().map(|s| s.as_str()).collect();
            return Err(if names.is_empty() {
                String::new()
            } else {
                format!(
                    " (not retried without strict: required strict tools {})",
                    names.join(", ")
                )
            });
        }
        let names: BTreeSet<String> = relaxable.into_iter().cloned().collect();
        let mut retry = body.clone();
        let changed = relax(&mut retry, dialect, &names, specs, options);
        tracing::warn!(
            tools = ?changed,
            %refusal,
            "the API refused strict tools; sending them without strict for this session"
        );
        self.remember(options.session_id.as_deref(), &changed, refusal);
        Ok(retry)
    }
}

/// A provider's stream with the fallback: the remembered tools relaxed before the first
/// attempt, and one more attempt after a refusal of strict tools.
#[cfg(feature = "http")]
pub(crate) fn stream<'a>(
    policy: &'a StrictTools,
    dialect: Dialect,
    mut request: Result<super::http::WireRequest, String>,
    specs: &'a [ToolSpec],
    options: &'a StreamOptions,
    send: impl Fn(
        Result<super::http::WireRequest, String>,
    ) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent>
    + Send
    + Sync
    + 'a,
) -> futures_util::stream::BoxStream<'a, crate::model::AssistantEvent> {
    use crate::model::AssistantEvent;
    use futures_util::StreamExt;

    if let Ok(request) = &mut request {
        policy.apply_remembered(&mut request.body, dialect, specs, options);
    }
    let template = request.as_ref().ok().and_then(|request| {
        (!strict_tools(&request.body, dialect).is_empty()).then(|| request.clone())
    });
    let first = send(request);
    let Some(template) = template else {
        return first;
    };
    // Watch the first attempt's opening: a refusal comes as `Start` then `Error`, before any
    // content; anything else passes through as it came.
    struct Watch<'a, F> {
        events: futures_util::stream::BoxStream<'a, AssistantEvent>,
        held: Option<AssistantEvent>,
        template: Option<super::http::WireRequest>,
        send: F,
    }
    let state = Watch {
        events: first,
        held: None,
        template: Some(template),
        send,
    };
    futures_util::stream::unfold(state, move |mut state| async move {
        loop {
            let event = state.events.next().await;
            let Some(template) = state.template.take() else {
                return event.map(|event| (event, state));
            };
            match event {
                Some(start @ AssistantEvent::Start { .. }) if state.held.is_none() => {
                    state.held = Some(start);
                    state.template = Some(template);
                }
                Some(AssistantEvent::Error { reason, mut error }) => {
                    let message = error.error_message.clone().unwrap_or_default();
                    if let Some(refused) = refusal(&message) {
                        match policy.recover(
                            &template.body,
                            dialect,
                            &refused,
                            &message,
                            specs,
                            options,
                        ) {
                            Ok(body) => {
                                state.held = None;
                                state.events =
                                    (state.send)(Ok(super::http::WireRequest { body, ..template }));
                                continue;
                            }
                            Err(note) => {
                                error.error_message = Some(format!("{message}{note}"));
                            }
                        }
                    }
                    let error = AssistantEvent::Error { reason, error };
                    return Some(match state.held.take() {
                        Some(start) => {
                            state.events = futures_util::stream::once(async { error })
                                .chain(state.events)
                                .boxed();
                            (start, state)
                        }
                        None => (error, state),
                    });
                }
                Some(other) => {
                    return Some(match state.held.take() {
                        Some(start) => {
                            state.events = futures_util::stream::once(async { other })
                                .chain(state.events)
                                .boxed();
                            (start, state)
                        }
                        None => (other, state),
                    });
                }
                None => return state.held.take().map(|start| (start, state)),
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_told_from_other_errors() {
        assert_eq!(
            refusal(
                "400 Bad Request: The compiled grammar is too large, which would cause performance \
                 issues. Simplify your tool schemas or reduce the number of strict tools."
            ),
            Some(Refused::All)
        );
        assert_eq!(
            refusal(
                "400 Bad Request: Too many strict tools (21). The maximum number of strict tools supported is 20"
            ),
            Some(Refused::All)
        );
        assert_eq!(
            refusal(
                "400 Bad Request: Invalid schema for function 'get_me': In context=(), object schema missing properties."
            ),
            Some(Refused::Tool("get_me".into()))
        );
        assert_eq!(
            refusal("429 Too Many Requests: too many strict tools"),
            None
        );
        assert_eq!(refusal("400 Bad Request: max_tokens: Field required"), None);
    }
}
