//! Reading the recorded provider streams and decoding them.
//!
//! The recordings are other projects' files, so they are not in this repository: they live in
//! `shared/recordings/` beside it (`../shared/recordings` from the repository root), or in the
//! folder `PI_RECORDINGS` names. Two sets, each with the origin of every file:
//!
//! - `providers/<origin>/<api>/<name>` (origins in `providers/README.md`). Recordings named
//!   `*.chunks.txt` hold one JSON chunk per line, as the Vercel AI SDK keeps them, and are
//!   framed as server-sent events here; every other one is a raw `text/event-stream` body as
//!   the server sent it.
//! - `providers-more/<api>/<name>.sse`, each a `text/event-stream` body (origins in
//!   `providers-more/SOURCES.md`); a `.json` file there is an HTTP error body, not a stream.
//!
//! When the folder is missing, [`present`] says so and the test skips; in CI (`CI` set) it
//! fails instead.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

use pi_runtime::providers::{
    AnthropicMessages, GoogleGenerativeAi, OpenAiCompletions, OpenAiResponses, ResponseDecoder,
};
use pi_runtime::{AssistantContent, AssistantEvent, AssistantMessage};

/// The wire API a recording speaks: the name of the folder it is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Completions,
    Responses,
    Anthropic,
    Google,
}

impl Api {
    fn from_folder(name: &str) -> Option<Api> {
        match name {
            "openai-completions" => Some(Api::Completions),
            "openai-responses" => Some(Api::Responses),
            "anthropic" => Some(Api::Anthropic),
            "google" => Some(Api::Google),
            _ => None,
        }
    }

    pub fn decoder(self) -> ResponseDecoder {
        match self {
            Api::Completions => OpenAiCompletions::new("recorded").decoder(),
            Api::Responses => OpenAiResponses::new("recorded").decoder(),
            Api::Anthropic => AnthropicMessages::new("recorded").decoder(),
            Api::Google => GoogleGenerativeAi::new("recorded").decoder(),
        }
    }
}

/// One recorded response body.
#[derive(Debug)]
pub struct Recording {
    /// Its path under the recordings folder (`providers/..` or `providers-more/..`).
    pub name: String,
    pub api: Api,
    /// The body as a server would send it.
    pub body: Vec<u8>,
}

impl Recording {
    /// The recording at `path` (relative to the recordings folder, e.g.
    /// `providers/vercel-ai/anthropic/anthropic-text.chunks.txt`). Call [`present`] first.
    pub fn open(path: &str) -> Recording {
        let full = root().join(path);
        let api = full
            .parent()
            .and_then(Path::file_name)
            .and_then(|folder| Api::from_folder(&folder.to_string_lossy()))
            .unwrap_or_else(|| panic!("{path}: not in an API folder"));
        Recording {
            name: path.to_owned(),
            api,
            body: read_body(&full),
        }
    }

    /// Every recorded stream of both sets, in path order; empty when the recordings are missing
    /// outside CI (see [`present`]).
    pub fn all() -> Vec<Recording> {
        if !present() {
            return Vec::new();
        }
        let mut paths = Vec::new();
        for origin in read_dir(&root().join("providers")) {
            for api in read_dir(&origin).into_iter().filter(|p| p.is_dir()) {
                paths.extend(read_dir(&api));
            }
        }
        for api in read_dir(&root().join("providers-more")) {
            if api.is_dir() {
                let streams = read_dir(&api).into_iter();
                paths.extend(streams.filter(|p| p.extension().is_some_and(|e| e == "sse")));
            }
        }
        paths.sort();
        paths
            .iter()
            .map(|path| {
                let relative = path.strip_prefix(root()).expect("under the root");
                Recording::open(&relative.to_string_lossy())
            })
            .collect()
    }

    /// The body with every `data:` payload passed through `edit` (`None` drops the event): for
    /// tests that change one thing in a real recording.
    pub fn edited(
        &self,
        mut edit: impl FnMut(serde_json::Value) -> Option<serde_json::Value>,
    ) -> Vec<u8> {
        let mut body = String::new();
        for payload in self.payloads() {
            if let Some(value) = edit(payload) {
                body.push_str(&format!("data: {value}\n\n"));
            }
        }
        body.into_bytes()
    }

    /// The JSON payloads of the `data:` lines (for reading what a recording holds, without our
    /// decoders).
    pub fn payloads(&self) -> Vec<serde_json::Value> {
        String::from_utf8_lossy(&self.body)
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect()
    }

    /// Decodes the body fed in pieces of `piece` bytes.
    pub fn decode(&self, piece: usize) -> Vec<AssistantEvent> {
        decode(self.api, &self.body, piece)
    }
}

/// Decodes `body` fed in pieces of `piece` bytes; the events, timestamps zeroed.
pub fn decode(api: Api, body: &[u8], piece: usize) -> Vec<AssistantEvent> {
    let mut decoder = api.decoder();
    let mut events = Vec::new();
    for chunk in body.chunks(piece.max(1)) {
        events.extend(decoder.push(chunk));
    }
    events.extend(decoder.finish());
    events.into_iter().map(normalize).collect()
}

/// The message an event stream ended with (`Done` or `Error`).
pub fn final_message(events: &[AssistantEvent]) -> &AssistantMessage {
    match events.last() {
        Some(AssistantEvent::Done { message, .. }) => message,
        Some(AssistantEvent::Error { error, .. }) => error,
        other => panic!("the stream did not end: {other:?}"),
    }
}

/// The events fit together: `Start` first, exactly one `Done` or `Error`, last; applying them
/// one by one rebuilds the final message; and for a `Done`, the events before it alone rebuild
/// its text, thinking and calls.
pub fn check_event_grammar(name: &str, events: &[AssistantEvent]) {
    assert!(
        matches!(events.first(), Some(AssistantEvent::Start { .. })),
        "{name}: {events:?}"
    );
    let ends = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AssistantEvent::Done { .. } | AssistantEvent::Error { .. }
            )
        })
        .count();
    assert_eq!(ends, 1, "{name}: one end");
    let last = final_message(events);
    let mut rebuilt = AssistantMessage::empty();
    for event in events {
        if let Some(index) = block_index(event) {
            assert!(
                index <= rebuilt.content.len(),
                "{name}: an event at block {index} skips a block (the listener has {})",
                rebuilt.content.len()
            );
        }
        rebuilt.apply(event);
    }
    assert_eq!(
        rebuilt, *last,
        "{name}: the events rebuild the final message"
    );
    if let Some(AssistantEvent::Done { .. }) = events.last() {
        let mut streamed = AssistantMessage::empty();
        for event in &events[..events.len() - 1] {
            streamed.apply(event);
        }
        assert_eq!(text(&streamed), text(last), "{name}: streamed text");
        assert_eq!(
            thinking(&streamed),
            thinking(last),
            "{name}: streamed thinking"
        );
        let calls =
            |m: &AssistantMessage| m.tool_calls().map(|c| c.call.clone()).collect::<Vec<_>>();
        assert_eq!(
            calls(&streamed),
            calls(last),
            "{name}: the end events carry the calls"
        );
    }
}

/// The kinds of a message's blocks, in order: `text`, `thinking`, `toolCall`, and a provider
/// block by its own `type` (`server_tool_use`, `program`, ...).
pub fn kinds(message: &AssistantMessage) -> Vec<String> {
    message
        .content
        .iter()
        .map(|block| match block {
            AssistantContent::Text { .. } => "text".to_owned(),
            AssistantContent::Thinking { .. } => "thinking".to_owned(),
            AssistantContent::ToolCall(_) => "toolCall".to_owned(),
            AssistantContent::Provider(block) => block.kind().to_owned(),
            other => panic!("a kind of block these tests do not know: {other:?}"),
        })
        .collect()
}

/// The text blocks of a message, joined without a separator.
pub fn text(message: &AssistantMessage) -> String {
    blocks(message, |b| match b {
        AssistantContent::Text { text, .. } => Some(text),
        _ => None,
    })
}

/// The thinking blocks of a message, joined without a separator.
pub fn thinking(message: &AssistantMessage) -> String {
    blocks(message, |b| match b {
        AssistantContent::Thinking { thinking, .. } => Some(thinking),
        _ => None,
    })
}

fn blocks(
    message: &AssistantMessage,
    pick: impl Fn(&AssistantContent) -> Option<&String>,
) -> String {
    message
        .content
        .iter()
        .filter_map(pick)
        .map(String::as_str)
        .collect()
}

/// The recordings folder: `$PI_RECORDINGS`, else `shared/recordings` beside the repository
/// (this file is compiled into crates one level below the repository root).
pub fn root() -> PathBuf {
    match std::env::var_os("PI_RECORDINGS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/recordings"),
    }
}

/// Whether the recordings are there. When they are not: outside CI, says so on stderr and
/// returns `false` (the test then skips); in CI (`CI` set) fails the test, as the interop tests
/// do with missing test dependencies.
pub fn present() -> bool {
    let root = root();
    if root.join("providers").is_dir() && root.join("providers-more").is_dir() {
        return true;
    }
    let why = format!(
        "the recorded provider streams are missing: no providers/ and providers-more/ in {} \
         (they live in shared/recordings beside the repository; set PI_RECORDINGS to their folder)",
        root.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipped: {why}");
    false
}

fn read_dir(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    entries
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.file_name().is_some_and(|n| n != "README.md"))
        .collect()
}

fn read_body(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if !path.to_string_lossy().ends_with(".chunks.txt") {
        return bytes;
    }
    let text = String::from_utf8(bytes).expect("a chunk file is UTF-8");
    let mut body = String::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        body.push_str("data: ");
        body.push_str(line);
        body.push_str("\n\n");
    }
    body.into_bytes()
}

/// Zeroes timestamps and the time part of ids generated for Gemini calls without one
/// (`<name>_<ms>_<n>`), so that two decodes compare equal.
pub fn normalize(event: AssistantEvent) -> AssistantEvent {
    fn id(id: &mut String) {
        let mut parts: Vec<&str> = id.rsplitn(3, '_').collect();
        if parts.len() == 3 && parts[1].len() >= 12 && parts[1].bytes().all(|b| b.is_ascii_digit())
        {
            parts[1] = "T";
            parts.reverse();
            *id = parts.join("_");
        }
    }
    fn message(m: &mut AssistantMessage) {
        m.timestamp = 0;
        for block in &mut m.content {
            if let AssistantContent::ToolCall(call) = block {
                id(&mut call.call.id);
            }
        }
    }
    let mut event = event;
    match &mut event {
        AssistantEvent::Start { partial: m }
        | AssistantEvent::Done { message: m, .. }
        | AssistantEvent::Error { error: m, .. } => message(m),
        AssistantEvent::ToolCallStart { id: call_id, .. } => id(call_id),
        AssistantEvent::ToolCallEnd { tool_call, .. } => id(&mut tool_call.call.id),
        _ => {}
    }
    event
}

/// The block an event is about: a listener that applies the events in order must already
/// have every block before it.
fn block_index(event: &AssistantEvent) -> Option<usize> {
    use AssistantEvent as E;
    match event {
        E::TextStart { content_index }
        | E::TextDelta { content_index, .. }
        | E::TextEnd { content_index, .. }
        | E::ThinkingStart { content_index }
        | E::ThinkingDelta { content_index, .. }
        | E::ThinkingEnd { content_index, .. }
        | E::ToolCallStart { content_index, .. }
        | E::ToolCallDelta { content_index, .. }
        | E::ToolCallEnd { content_index, .. }
        | E::ProviderBlock { content_index, .. } => Some(*content_index),
        E::Start { .. } | E::Done { .. } | E::Error { .. } => None,
        other => panic!("an event these tests do not know: {other:?}"),
    }
}
