//! A local OpenAI-compatible chat-completions server that answers from a script and counts
//! the requests it receives (they outlive any service process the tests kill).
//!
//! The answer to a request depends only on the request: the number of assistant messages in
//! it picks the script entry. So a request sent again after a crash gets the same answer, and
//! the count shows whether it was sent again.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

/// One scripted answer.
#[derive(Clone, Debug)]
pub(crate) enum Reply {
    /// A text answer (`finish_reason: stop`).
    Text(&'static str),
    /// Tool calls `(id, name, arguments)` (`finish_reason: tool_calls`).
    Calls(Vec<(&'static str, &'static str, Value)>),
}

/// The running server; it lives as long as the test process.
pub(crate) struct MockModel {
    addr: SocketAddr,
    requests: Arc<AtomicUsize>,
}

impl MockModel {
    /// Serves `script` on a free loopback port.
    pub(crate) fn start(script: Vec<Reply>) -> MockModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let addr = listener.local_addr().expect("an address");
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&requests);
        let script = Arc::new(script);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let counter = Arc::clone(&counter);
                let script = Arc::clone(&script);
                std::thread::spawn(move || {
                    let _ = serve(stream, &script, &counter);
                });
            }
        });
        MockModel { addr, requests }
    }

    /// The base URL for `OpenAiCompletions::base_url`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// How many chat-completion requests arrived so far.
    pub(crate) fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

fn serve(stream: TcpStream, script: &[Reply], counter: &AtomicUsize) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut content_length = 0;
    let mut line = String::new();
    reader.read_line(&mut line)?;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            content_length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; content_length];
    reader.read_exact(&mut body)?;
    counter.fetch_add(1, Ordering::SeqCst);
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let turn = request["messages"].as_array().map_or(0, |messages| {
        messages.iter().filter(|m| m["role"] == "assistant").count()
    });
    let reply = script
        .get(turn)
        .cloned()
        .unwrap_or(Reply::Text("(script exhausted)"));
    let sse = sse_body(&reply, turn);
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{sse}",
        sse.len()
    )?;
    stream.flush()
}

fn chunk(turn: usize, delta: Value, finish: Value) -> String {
    let chunk = json!({
        "id": format!("chatcmpl-mock{turn}"),
        "object": "chat.completion.chunk",
        "created": 1_731_000_000,
        "model": "mock-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {chunk}\n\n")
}

fn sse_body(reply: &Reply, turn: usize) -> String {
    let mut body = chunk(
        turn,
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    );
    let finish = match reply {
        Reply::Text(text) => {
            body.push_str(&chunk(turn, json!({"content": text}), Value::Null));
            "stop"
        }
        Reply::Calls(calls) => {
            for (index, (id, name, arguments)) in calls.iter().enumerate() {
                let delta = json!({"tool_calls": [{
                    "index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()},
                }]});
                body.push_str(&chunk(turn, delta, Value::Null));
            }
            "tool_calls"
        }
    };
    body.push_str(&chunk(turn, json!({}), json!(finish)));
    body.push_str(&format!(
        "data: {}\n\n",
        json!({"id": format!("chatcmpl-mock{turn}"), "object": "chat.completion.chunk", "created": 1_731_000_000, "model": "mock-model", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    ));
    body.push_str("data: [DONE]\n\n");
    body
}
