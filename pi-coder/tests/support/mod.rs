//! A local OpenAI-compatible server speaking Chat Completions, scripted for the `pi` binary's
//! tests.
#![allow(dead_code, unreachable_pub)]

/// A local OpenAI-compatible server: the first request of a turn gets a `bash` call running
/// `command`, a request answering a tool result gets `Saw: <the tool's output>`.
pub fn fake_openai(command: &'static str) -> String {
    FakeServer::start(Script::new(&[command])).address
}

/// What the fake model answers: text streamed first (`lead`), then one `bash` call per command
/// (several make a parallel batch); once the tool results are in, `Saw: <their outputs>`.
#[derive(Clone)]
pub struct Script {
    lead: String,
    commands: Vec<String>,
    echo: bool,
    /// The tool called instead of `bash`, each command being its JSON arguments.
    tool: Option<String>,
}

impl Script {
    pub fn new(commands: &[&str]) -> Self {
        Script {
            lead: String::new(),
            commands: commands.iter().map(|c| (*c).to_owned()).collect(),
            echo: false,
            tool: None,
        }
    }

    /// The terminal interface's tests: the answer depends on the prompt. `MARKDOWN` gets a
    /// heading, bold, inline code, a list, a code block and a table; `SLOW` 40 words 50 ms
    /// apart; `THINK` reasoning (`pondering deeply`) then `Done thinking`; `BASH` the `bash`
    /// calls of `commands`; anything else `Echo: <the prompt>` (lines joined by ` | `, `[+image]`
    /// per image). Every answer reports usage (200 in, 40 out).
    pub fn echo(commands: &[&str]) -> Self {
        Script {
            echo: true,
            ..Script::new(commands)
        }
    }

    /// Calls `tool` (an MCP server's, say) instead of `bash`: each command is its arguments'
    /// JSON text.
    pub fn tool(mut self, tool: &str) -> Self {
        self.tool = Some(tool.to_owned());
        self
    }

    pub fn lead(mut self, text: &str) -> Self {
        self.lead = text.to_owned();
        self
    }
}

/// A request the fake server received: its header lines (lower-cased names) and JSON body.
#[derive(Clone, Debug)]
pub struct Seen {
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub struct FakeServer {
    pub address: String,
    seen: std::sync::Arc<std::sync::Mutex<Vec<Seen>>>,
}

impl FakeServer {
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn start(script: Script) -> FakeServer {
        use std::io::{BufRead, BufReader, Read, Write};

        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = format!("http://{}/v1", listener.local_addr().expect("address"));
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = std::sync::Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut length = 0;
                let mut headers = Vec::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':') {
                        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
                    }
                    if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                // `pi` checks that the server listens by connecting without a request.
                if headers.is_empty() {
                    continue;
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    continue;
                }
                let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                record.lock().unwrap().push(Seen {
                    headers,
                    body: request.clone(),
                });
                let last = request["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .cloned()
                    .unwrap_or_default();
                let chunk = |delta: serde_json::Value, finish: Option<&str>| {
                    let event = serde_json::json!({"id": "r1", "object": "chat.completion.chunk", "model": "fake",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                    format!("data: {event}\n\n")
                };
                let user_text = match &last["content"] {
                    serde_json::Value::String(text) => text.clone(),
                    other => other
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|p| match p["type"].as_str() {
                            Some("text") => p["text"].as_str().unwrap_or("").to_owned(),
                            _ => "[+image]".to_owned(),
                        })
                        .collect::<Vec<_>>()
                        .join(" "),
                };
                if script.echo && last["role"] != "tool" && !user_text.contains("BASH") {
                    let mut parts: Vec<(serde_json::Value, u64)> = Vec::new();
                    if user_text.contains("MARKDOWN") {
                        parts.push((serde_json::json!({"role": "assistant", "content": "# Heading One\n\nSome **bold** and `code`.\n\n- item one\n- item two\n\n```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 22 |\n"}), 0));
                    } else if user_text.contains("SLOW") {
                        for i in 0..40 {
                            parts.push((serde_json::json!({"role": "assistant", "content": format!("word{i} ")}), 50));
                        }
                    } else if user_text.contains("THINK") {
                        parts.push((serde_json::json!({"role": "assistant", "reasoning_content": "pondering deeply"}), 0));
                        parts.push((serde_json::json!({"content": "Done thinking"}), 0));
                    } else {
                        let echo = format!("Echo: {}", user_text.replace('\n', " | "));
                        parts.push((serde_json::json!({"role": "assistant", "content": echo}), 0));
                    }
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                    if stream.write_all(head.as_bytes()).is_err() {
                        continue;
                    }
                    let mut gone = false;
                    for (delta, pause) in parts {
                        std::thread::sleep(std::time::Duration::from_millis(pause));
                        if stream.write_all(chunk(delta, None).as_bytes()).is_err() {
                            gone = true;
                            break;
                        }
                        let _ = stream.flush();
                    }
                    if !gone {
                        let end = serde_json::json!({"id": "r1", "object": "chat.completion.chunk", "model": "fake",
                            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 200, "completion_tokens": 40, "total_tokens": 240}});
                        let _ =
                            stream.write_all(format!("data: {end}\n\ndata: [DONE]\n\n").as_bytes());
                    }
                    continue;
                }
                let mut events = String::new();
                if last["role"] == "tool" {
                    // The outputs of every tool result after the last assistant message.
                    let messages = request["messages"].as_array().cloned().unwrap_or_default();
                    let results = messages.iter().rev().take_while(|m| m["role"] == "tool");
                    let mut outputs: Vec<String> = results
                        .map(|m| match &m["content"] {
                            serde_json::Value::String(text) => text.clone(),
                            other => other
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|p| p["text"].as_str())
                                .collect(),
                        })
                        .collect();
                    outputs.reverse();
                    events += &chunk(
                        serde_json::json!({"role": "assistant", "content": format!("Saw: {}", outputs.join(" | "))}),
                        None,
                    );
                    events += &chunk(serde_json::json!({}), Some("stop"));
                } else {
                    if !script.lead.is_empty() {
                        events += &chunk(
                            serde_json::json!({"role": "assistant", "content": script.lead}),
                            None,
                        );
                    }
                    let calls: Vec<serde_json::Value> = script.commands.iter().enumerate().map(|(i, command)| {
                    let (name, arguments) = match &script.tool {
                        Some(tool) => (tool.clone(), command.clone()),
                        None => ("bash".to_owned(), serde_json::json!({"command": command}).to_string()),
                    };
                    serde_json::json!({"index": i, "id": format!("call_{}", i + 1), "type": "function",
                        "function": {"name": name, "arguments": arguments}})
                }).collect();
                    events += &chunk(
                        serde_json::json!({"role": "assistant", "tool_calls": calls}),
                        None,
                    );
                    events += &chunk(serde_json::json!({}), Some("tool_calls"));
                }
                events += "data: [DONE]\n\n";
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(events.as_bytes());
            }
        });
        FakeServer { address, seen }
    }
}

/// `pi` against the fake server at `server` (`--model fake`), working in `dir` (`--cwd`), with
/// no provider keys or pi settings from the environment, `HOME` in `dir/home`, and no input.
pub fn pi_against(server: &str, dir: &std::path::Path) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_pi"));
    for name in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "PI_MODEL",
        "PI_PROVIDER",
        "PI_CODING_AGENT_DIR",
        "PI_SESSION_DIR",
    ] {
        command.env_remove(name);
    }
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    command
        .env("HOME", &home)
        .args(["--base-url", server, "--model", "fake", "--cwd"])
        .arg(dir)
        .stdin(std::process::Stdio::null());
    command
}

/// `command` in `--mode rpc`, given `lines` (one command each), its input then closed: pi
/// finishes what runs and leaves.
pub fn rpc_output(command: &mut std::process::Command, lines: &[&str]) -> std::process::Output {
    use std::io::Write;
    let mut child = command
        .args(["--mode", "rpc"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run pi");
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    child.wait_with_output().expect("wait for pi")
}
