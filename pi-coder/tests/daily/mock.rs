//! A scripted OpenAI-compatible server (Chat Completions, streamed) on 127.0.0.1, the same for
//! the real pi and for ours: what it answers depends only on the request, so both get the same
//! answers, and it records every request for the tests to compare.
//!
//! - a summarization request (pi's summarization system prompt) gets `MOCK SUMMARY of N
//!   messages`;
//! - a request larger than the overflow limit gets HTTP 400 with OpenAI's context-length error;
//! - after tool results: `MOCK FINAL: the tool said: <the first result's text, 60 chars>`;
//! - a prompt `READ <path>`: `Let me look.` and a `read` call; `BASH <command>`: a `bash`
//!   call; `SLOW <ms> <text>`: waits, then answers like any other prompt;
//! - anything else: `MOCK TEXT: <the prompt>`.
//!
//! Usage reports the request's size: `prompt_tokens` is the body's length / 4.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// A request the mock received.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The messages after the system prompt, as `(role, text)`.
    pub(crate) fn conversation(&self) -> Vec<(String, String)> {
        self.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] != "system" && m["role"] != "developer")
            .map(|m| {
                (
                    m["role"].as_str().unwrap_or_default().to_owned(),
                    text_of(&m["content"]),
                )
            })
            .collect()
    }

    /// The system prompt.
    pub(crate) fn system(&self) -> String {
        self.body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub(crate) fn is_summary(&self) -> bool {
        self.system()
            .starts_with("You are a context summarization assistant")
    }
}

pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

pub(crate) struct Mock {
    pub(crate) url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    overflow_bytes: Arc<AtomicUsize>,
}

impl Mock {
    pub(crate) fn start() -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let overflow_bytes = Arc::new(AtomicUsize::new(0));
        let (record, overflow) = (Arc::clone(&requests), Arc::clone(&overflow_bytes));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (record, overflow) = (Arc::clone(&record), Arc::clone(&overflow));
                std::thread::spawn(move || serve(stream, &record, &overflow));
            }
        });
        Mock {
            url,
            requests,
            overflow_bytes,
        }
    }

    /// Requests whose body is longer than this get the context-length error (0: never).
    pub(crate) fn overflow_above(&self, bytes: usize) {
        self.overflow_bytes.store(bytes, Ordering::SeqCst);
    }

    pub(crate) fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    pub(crate) fn clear(&self) {
        self.requests.lock().unwrap().clear();
    }

    /// `models.json` naming this server as pi's provider `mock` (model `mock-model`), with
    /// the fields of `model` added to the model.
    pub(crate) fn models_json(&self, model: Value) -> String {
        let mut definition = json!({"id": "mock-model"});
        if let (Value::Object(d), Value::Object(extra)) = (&mut definition, model) {
            d.extend(extra);
        }
        json!({"providers": {"mock": {
            "baseUrl": self.url, "api": "openai-completions", "apiKey": "MOCK_KEY_LITERAL",
            "models": [definition],
        }}})
        .to_string()
    }
}

fn serve(mut stream: std::net::TcpStream, record: &Mutex<Vec<Request>>, overflow: &AtomicUsize) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut length = 0;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            if name == "content-length" {
                length = value.trim().parse().unwrap_or(0);
            }
            headers.push((name, value.trim().to_owned()));
        }
    }
    if headers.is_empty() {
        return; // a connection check without a request
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let request = Request {
        headers,
        body: request,
    };
    record.lock().unwrap().push(request.clone());
    let limit = overflow.load(Ordering::SeqCst);
    if limit > 0 && body.len() > limit && !request.is_summary() {
        let error = json!({"error": {"message": format!("This model's maximum context length is 8192 tokens. However, you requested about {} tokens", body.len() / 4), "type": "invalid_request_error", "code": "context_length_exceeded"}}).to_string();
        let _ = write!(
            stream,
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{error}",
            error.len()
        );
        return;
    }
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let last = messages.last().cloned().unwrap_or_default();
    let model = request.body["model"].clone();
    let chunk = |delta: Value, finish: Option<&str>| {
        let event = json!({"id": "mock-1", "object": "chat.completion.chunk", "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {event}\n\n")
    };
    let mut events = String::new();
    let say = |text: String, events: &mut String| {
        *events += &chunk(json!({"role": "assistant", "content": text}), None);
        *events += &chunk(json!({}), Some("stop"));
    };
    if request.is_summary() {
        let prompt = text_of(&last["content"]);
        let count = prompt.matches("[User]: ").count();
        say(
            format!("MOCK SUMMARY of {count} user messages"),
            &mut events,
        );
    } else if last["role"] == "tool" {
        let text: String = text_of(&last["content"]).chars().take(60).collect();
        say(format!("MOCK FINAL: the tool said: {text}"), &mut events);
    } else {
        let mut prompt = text_of(&last["content"]);
        if let Some(rest) = prompt.strip_prefix("SLOW ") {
            let (ms, text) = rest.split_once(' ').unwrap_or((rest, ""));
            std::thread::sleep(Duration::from_millis(ms.parse().unwrap_or(0)));
            prompt = text.to_owned();
        }
        let call = |name: &str, args: Value| {
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                "function": {"name": name, "arguments": args.to_string()}}]})
        };
        if let Some(path) = prompt.strip_prefix("READ ") {
            events += &chunk(
                json!({"role": "assistant", "content": "Let me look."}),
                None,
            );
            events += &chunk(call("read", json!({"path": path.trim()})), None);
            events += &chunk(json!({}), Some("tool_calls"));
        } else if let Some(command) = prompt.strip_prefix("BASH ") {
            events += &chunk(call("bash", json!({"command": command})), None);
            events += &chunk(json!({}), Some("tool_calls"));
        } else {
            let shown: String = prompt.chars().take(80).collect();
            say(format!("MOCK TEXT: {shown}"), &mut events);
        }
    }
    let prompt_tokens = body.len() / 4;
    events += &format!(
        "data: {}\n\n",
        json!({"id": "mock-1", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 10, "total_tokens": prompt_tokens + 10}})
    );
    events += "data: [DONE]\n\n";
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{events}",
        events.len()
    );
}
