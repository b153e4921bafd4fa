//! `--mode json` and `--mode rpc` through the binary, with pi's shapes (`modes/print-mode.ts`,
//! `modes/rpc/rpc-mode.ts`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::mock::Mock;
use super::{Home, text};

#[test]
fn json_mode_prints_the_header_and_every_event_as_pi_does() {
    let mock = Mock::start();
    let home = Home::new(&mock, json!({}));
    let output = home
        .ours()
        .args([
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "json",
            "READ notes.txt",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let lines: Vec<Value> = text(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["version"], 3);
    let session_file = &home.session_files()[0];
    assert!(
        session_file
            .to_string_lossy()
            .contains(lines[0]["id"].as_str().unwrap()),
        "the header is the session's"
    );
    let kinds: Vec<&str> = lines[1..]
        .iter()
        .filter(|e| e["type"] != "message_update")
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "turn_start",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    let updates: Vec<&Value> = lines
        .iter()
        .filter(|e| e["type"] == "message_update")
        .collect();
    let delta = updates
        .iter()
        .find(|e| e["assistantMessageEvent"]["type"] == "text_delta")
        .unwrap();
    assert_eq!(delta["assistantMessageEvent"]["delta"], "Let me look.");
    assert_eq!(
        delta["assistantMessageEvent"]["partial"]["content"][0]["text"],
        "Let me look."
    );
    assert_eq!(delta["message"], delta["assistantMessageEvent"]["partial"]);
    let end = lines
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(
        end,
        &json!({"type": "tool_execution_end", "toolCallId": "call_1", "toolName": "read",
                "result": {"content": [{"type": "text", "text": "hello from notes\n"}]}, "isError": false})
    );
    let agent_end = lines.last().unwrap();
    let roles: Vec<&str> = agent_end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    assert!(
        agent_end["messages"][2].get("details").is_none(),
        "no details: left out, as pi leaves it out"
    );
}

/// Our `pi --mode rpc`, fed and read line by line.
pub(crate) struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Rpc {
    pub(crate) fn start(command: &mut std::process::Command) -> Rpc {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let value: Value =
                    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Rpc {
            child,
            stdin,
            lines,
        }
    }

    pub(crate) fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The lines up to and including the first for which `done` holds.
    pub(crate) fn until(&self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no line in 60 s after {seen:?}"));
            let stop = done(&line);
            seen.push(line);
            if stop {
                return seen;
            }
        }
    }

    /// The response to the command `kind`.
    pub(crate) fn response(&self, kind: &str) -> Value {
        self.until(|l| l["type"] == "response" && l["command"] == kind)
            .pop()
            .unwrap()
    }

    /// Sends `line` and returns the response to it.
    pub(crate) fn call(&mut self, line: Value) -> Value {
        let kind = line["type"].as_str().unwrap().to_owned();
        self.send(&line.to_string());
        self.response(&kind)
    }

    pub(crate) fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().unwrap()
    }
}

#[test]
fn rpc_mode_answers_pi_s_commands_and_streams_the_events() {
    let mock = Mock::start();
    let home = Home::new(&mock, json!({"reasoning": true}));
    let mut rpc = Rpc::start(home.ours().args([
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "rpc",
    ]));
    // A prompt: the response first, then its events.
    rpc.send(r#"{"id":"1","type":"prompt","message":"READ notes.txt"}"#);
    let seen = rpc.until(|l| l["type"] == "agent_end");
    assert_eq!(
        seen[0],
        json!({"id": "1", "type": "response", "command": "prompt", "success": true})
    );
    assert_eq!(seen[1]["type"], "agent_start");
    assert!(seen.iter().any(|l| l["type"] == "tool_execution_end"));

    let text = rpc.call(json!({"id": "2", "type": "get_last_assistant_text"}));
    assert_eq!(
        text["data"],
        json!({"text": "MOCK FINAL: the tool said: hello from notes"}),
        "trimmed, as pi's"
    );
    let state = rpc.call(json!({"type": "get_state"}));
    assert!(state.get("id").is_none(), "no id when the command had none");
    let data = &state["data"];
    assert_eq!(data["model"]["id"], "mock-model");
    assert_eq!(data["model"]["contextWindow"], 128000);
    assert_eq!(
        data["thinkingLevel"], "medium",
        "pi's default for a reasoning model"
    );
    assert_eq!(data["isStreaming"], false);
    assert_eq!(data["messageCount"], 4);
    assert_eq!(data["steeringMode"], "one-at-a-time");
    assert_eq!(data["autoCompactionEnabled"], true);
    assert!(
        data["sessionFile"]
            .as_str()
            .unwrap()
            .starts_with(&home.sessions().display().to_string())
    );
    let messages = rpc.call(json!({"type": "get_messages"}));
    assert_eq!(messages["data"]["messages"].as_array().unwrap().len(), 4);
    let bash = rpc.call(json!({"type": "bash", "command": "echo rpc-bash"}));
    assert_eq!(
        bash["data"],
        json!({"output": "rpc-bash\n", "exitCode": 0, "cancelled": false, "truncated": false})
    );
    assert_eq!(
        rpc.call(json!({"type": "set_thinking_level", "level": "high"}))["success"],
        true
    );
    let cycled = rpc.call(json!({"type": "cycle_thinking_level"}));
    assert_eq!(
        cycled["data"],
        json!({"level": "off"}),
        "high wraps to off (no xhigh)"
    );
    assert_eq!(
        rpc.call(json!({"type": "set_session_name", "name": " "}))["error"],
        "Session name cannot be empty"
    );
    assert_eq!(
        rpc.call(json!({"type": "set_session_name", "name": "daily"}))["success"],
        true
    );
    let stats = rpc.call(json!({"type": "get_session_stats"}));
    assert_eq!(stats["data"]["assistantMessages"], 2);
    assert_eq!(stats["data"]["toolCalls"], 1);
    let unknown = rpc.call(json!({"id": "u", "type": "nope"}));
    assert_eq!(
        unknown,
        json!({"type": "response", "command": "nope", "success": false, "error": "Unknown command: nope"})
    );
    rpc.send("not json");
    let parse = rpc.response("parse");
    assert!(
        parse["error"]
            .as_str()
            .unwrap()
            .starts_with("Failed to parse command: ")
    );

    // While a turn runs: a prompt without streamingBehavior is refused, one with it is queued,
    // get_state says the agent streams, and abort ends the turn.
    rpc.send(r#"{"type":"prompt","message":"SLOW 3000 long one"}"#);
    rpc.until(|l| l["type"] == "agent_start");
    let busy = rpc.call(json!({"type": "prompt", "message": "again"}));
    assert_eq!(
        busy["error"],
        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
    );
    assert_eq!(
        rpc.call(json!({"type": "get_state"}))["data"]["isStreaming"],
        true
    );
    rpc.send(r#"{"type":"prompt","message":"queued","streamingBehavior":"followUp"}"#);
    let queued = rpc.until(|l| l["type"] == "response" && l["command"] == "prompt");
    assert!(
        queued
            .iter()
            .any(|l| l["type"] == "queue_update" && l["followUp"] == json!(["queued"])),
        "{queued:?}"
    );
    assert_eq!(queued.last().unwrap()["success"], true);
    let seen = rpc.until(|l| l["type"] == "agent_end");
    let prompts: Vec<String> = seen
        .iter()
        .filter(|l| l["type"] == "message_start" && l["message"]["role"] == "user")
        .map(|l| super::mock::text_of(&l["message"]["content"]))
        .collect();
    assert_eq!(
        prompts,
        ["queued"],
        "the follow-up ran after the slow answer"
    );

    rpc.send(r#"{"type":"prompt","message":"SLOW 20000 never answered"}"#);
    rpc.until(|l| l["type"] == "agent_start");
    rpc.send(r#"{"id":"a","type":"abort"}"#);
    let seen = rpc.until(|l| l["type"] == "response" && l["command"] == "abort");
    let stopped = seen
        .iter()
        .find(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .expect("the turn ended before abort answered");
    assert_eq!(stopped["message"]["stopReason"], "aborted");

    let fresh = rpc.call(json!({"type": "new_session"}));
    assert_eq!(fresh["data"], json!({"cancelled": false}));
    assert_eq!(
        rpc.call(json!({"type": "get_state"}))["data"]["messageCount"],
        0
    );
    assert!(rpc.finish().success());
    // The session file holds the named session's entries, the bash run among them.
    let first = &home.session_files()[0];
    let entries = super::lines(first);
    assert!(
        entries
            .iter()
            .any(|e| e["type"] == "session_info" && e["name"] == "daily")
    );
    assert!(
        entries
            .iter()
            .any(|e| e["message"]["role"] == "bashExecution"
                && e["message"]["command"] == "echo rpc-bash")
    );
}
