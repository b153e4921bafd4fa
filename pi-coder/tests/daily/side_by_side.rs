//! The same command lines, run with the real pi 0.73.1 and with ours against the same scripted
//! server: the requests the model gets, what is printed, the JSON events, the RPC answers, and
//! sessions written by one tool and continued by the other (compacted ones included).
//!
//! pi starts in about 2.7 s, so its runs are batched: every independent command line runs at
//! once, each pair (pi's, ours) in its own thread. Skipped outside CI when pi is not installed
//! (`.ci/install-test-deps`), a failure in CI.

use std::process::{Command, Output};

use serde_json::{Value, json};

use super::mock::{Mock, Request};
use super::modes::Rpc;
use super::{Home, run_with_stdin, test_deps, text};

/// One command line for both tools: its arguments and piped stdin.
struct Case {
    args: &'static [&'static str],
    stdin: Option<&'static str>,
}

fn run(mut command: Command, case: &Case) -> Output {
    command.args(case.args);
    match case.stdin {
        Some(stdin) => run_with_stdin(&mut command, stdin),
        None => command.output().unwrap(),
    }
}

/// The requests one tool sent: pi's OpenAI client or ours, told apart by `User-Agent`.
fn requests_of(mock: &Mock, ours: bool) -> Vec<Request> {
    mock.requests()
        .into_iter()
        .filter(|r| {
            r.header("user-agent")
                .is_some_and(|a| a.starts_with("pi-tool/"))
                == ours
        })
        .collect()
}

/// What must be the same in two requests: the conversation, the tools offered, the model, the
/// key, and pi's request fields.
fn essentials(request: &Request) -> Value {
    let tools: Vec<&str> = request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    json!({
        "conversation": request.conversation(),
        "tools": tools,
        "model": request.body["model"],
        "store": request.body["store"],
        "max_completion_tokens": request.body["max_completion_tokens"],
        "stream_options": request.body["stream_options"],
        "reasoning_effort": request.body["reasoning_effort"],
        "authorization": request.header("authorization"),
    })
}

/// The event types of a JSON stream without the streamed deltas (pi's providers and ours
/// split a response into deltas differently), and the messages of its `agent_end`.
fn json_summary(stdout: &str) -> (Vec<String>, Value) {
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let kinds = events
        .iter()
        .filter(|e| e["type"] != "message_update")
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    let end = events.iter().find(|e| e["type"] == "agent_end").unwrap();
    let messages: Vec<Value> = end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            json!({
                "role": m["role"],
                "text": super::mock::text_of(&m["content"]),
                "stopReason": m["stopReason"],
                "toolName": m["toolName"],
                "isError": m["isError"],
            })
        })
        .collect();
    (kinds, json!(messages))
}

#[test]
fn the_same_command_lines_give_the_same_requests_output_and_events() {
    if test_deps().is_none() {
        return;
    }
    let mock = Mock::start();
    let home = Home::new(&mock, json!({}));
    let cases = [
        Case {
            args: &[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--no-session",
                "-p",
                "hello there",
            ],
            stdin: None,
        },
        Case {
            args: &[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--no-session",
                "-p",
                "READ notes.txt",
            ],
            stdin: None,
        },
        Case {
            args: &[
                "--model",
                "mock-model:high",
                "--no-session",
                "-p",
                "a thinking suffix",
            ],
            stdin: None,
        },
        Case {
            args: &[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--no-session",
                "-p",
                "summarize this",
            ],
            stdin: Some("PIPED-STDIN-MARKER\n"),
        },
        Case {
            args: &[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--no-session",
                "-p",
                "@notes.txt",
                "inline it",
            ],
            stdin: None,
        },
        Case {
            args: &[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--no-session",
                "-nc",
                "-nt",
                "-p",
                "no tools at all",
            ],
            stdin: None,
        },
        Case {
            args: &[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--no-session",
                "-t",
                "ls,read,grep",
                "-p",
                "three tools",
            ],
            stdin: None,
        },
        Case {
            args: &[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--no-session",
                "--tools",
                "read,nosuch",
                "-p",
                "a name that is no tool",
            ],
            stdin: None,
        },
        Case {
            args: &[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--no-session",
                "--mode",
                "json",
                "READ notes.txt",
            ],
            stdin: None,
        },
        Case {
            args: &["--list-models"],
            stdin: None,
        },
    ];
    let outputs: Vec<(Output, Output)> = std::thread::scope(|scope| {
        let runs: Vec<_> = cases
            .iter()
            .map(|case| {
                let (home, case) = (&home, case);
                scope.spawn(move || {
                    let pi = scope.spawn(move || run(home.pi().unwrap(), case));
                    let ours = run(home.ours(), case);
                    (pi.join().unwrap(), ours)
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for (case, (pi, ours)) in cases.iter().zip(&outputs) {
        let label = format!("{:?} (stdin {:?})", case.args, case.stdin);
        assert!(pi.status.success(), "pi {label}: {}", text(&pi.stderr));
        assert!(
            ours.status.success(),
            "ours {label}: {}",
            text(&ours.stderr)
        );
        if case.args.contains(&"json") {
            let (pi_kinds, pi_messages) = json_summary(&text(&pi.stdout));
            let (our_kinds, our_messages) = json_summary(&text(&ours.stdout));
            assert_eq!(our_kinds, pi_kinds, "{label}");
            assert_eq!(our_messages, pi_messages, "{label}");
        } else if case.args == ["--list-models"] {
            // pi prints the table on stderr when it is not on a terminal.
            assert_eq!(text(&ours.stdout), text(&pi.stderr), "{label}");
        } else {
            assert_eq!(text(&ours.stdout), text(&pi.stdout), "{label}");
        }
    }
    // Request by request: each prompt is unique to its case, so the requests pair up.
    let (pi_requests, our_requests) = (requests_of(&mock, false), requests_of(&mock, true));
    assert_eq!(pi_requests.len(), our_requests.len());
    let key = |r: &Request| serde_json::to_string(&r.conversation()).unwrap();
    for ours in &our_requests {
        let pi = pi_requests
            .iter()
            .find(|p| key(p) == key(ours))
            .unwrap_or_else(|| panic!("pi sent no request like {:?}", ours.conversation()));
        assert_eq!(essentials(ours), essentials(pi));
    }
    let piped = our_requests
        .iter()
        .find(|r| key(r).contains("PIPED"))
        .unwrap();
    assert_eq!(
        piped.conversation()[0].1,
        "PIPED-STDIN-MARKERsummarize this",
        "stdin and the prompt joined as pi joins them"
    );
}

#[test]
fn sessions_cross_both_ways_and_a_compaction_of_ours_reads_the_same_in_pi() {
    if test_deps().is_none() {
        return;
    }
    let mock = Mock::start();
    let (crossing, compacted) = std::thread::scope(|scope| {
        // Each tool continues the other's session in turn (`-c`: the newest of the project).
        let crossing = scope.spawn(|| {
            let home = Home::new(&mock, json!({}));
            let base = ["--provider", "mock", "--model", "mock-model", "-p"];
            let steps = [
                (false, vec!["step one in ours"]),
                (true, vec!["-c", "step two in pi"]),
                (false, vec!["-c", "step three in ours"]),
                (true, vec!["-c", "step four in pi"]),
            ];
            for (pi, extra) in steps {
                let mut command = if pi { home.pi().unwrap() } else { home.ours() };
                let (prompt, flags) = extra.split_last().unwrap();
                let output = command.args(flags).args(base).arg(prompt).output().unwrap();
                assert!(output.status.success(), "{}", text(&output.stderr));
            }
            home
        });
        // A session of ours compacted past its threshold, then continued by each tool from a
        // copy of the same file.
        let compacted = scope.spawn(|| {
            let home = Home::new(&mock, json!({"contextWindow": 3000}));
            home.settings(json!({"compaction": {"reserveTokens": 1000, "keepRecentTokens": 300}}));
            let prompts: Vec<String> = (1..=5)
                .map(|n| format!("long prompt {n}: {}", "word ".repeat(320)))
                .collect();
            let output = home
                .ours()
                .args(["--provider", "mock", "--model", "mock-model", "-nt", "-p"])
                .args(&prompts)
                .output()
                .unwrap();
            assert!(output.status.success(), "{}", text(&output.stderr));
            let file = home.session_files().pop().unwrap();
            assert!(
                super::lines(&file)
                    .iter()
                    .any(|e| e["type"] == "compaction")
            );
            let (for_pi, for_ours) = (
                home.project.join("for-pi.jsonl"),
                home.project.join("for-ours.jsonl"),
            );
            std::fs::copy(&file, &for_pi).unwrap();
            std::fs::copy(&file, &for_ours).unwrap();
            let args = [
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "-nt",
                "-p",
                "continued after the summary",
            ];
            let (pi, ours) = std::thread::scope(|inner| {
                let pi = inner.spawn(|| {
                    home.pi()
                        .unwrap()
                        .arg("--session")
                        .arg(&for_pi)
                        .args(args)
                        .output()
                        .unwrap()
                });
                let ours = home
                    .ours()
                    .arg("--session")
                    .arg(&for_ours)
                    .args(args)
                    .output()
                    .unwrap();
                (pi.join().unwrap(), ours)
            });
            assert!(pi.status.success(), "{}", text(&pi.stderr));
            assert!(ours.status.success(), "{}", text(&ours.stderr));
            home
        });
        (crossing.join().unwrap(), compacted.join().unwrap())
    });
    // The crossing: one file, and every request carried the whole conversation so far.
    assert_eq!(crossing.session_files().len(), 1);
    let lengths: Vec<usize> = mock
        .requests()
        .iter()
        .filter(|r| r.conversation().iter().any(|(_, t)| t.starts_with("step ")))
        .map(|r| r.conversation().len())
        .collect();
    assert_eq!(
        lengths,
        [1, 3, 5, 7],
        "each continued the other's whole transcript"
    );
    // The compacted file: pi and ours sent the model the same context from it.
    let continued: Vec<Request> = mock
        .requests()
        .into_iter()
        .filter(|r| {
            r.conversation()
                .last()
                .is_some_and(|(_, t)| t == "continued after the summary")
        })
        .collect();
    assert_eq!(continued.len(), 2);
    assert_eq!(continued[0].conversation(), continued[1].conversation());
    let first = &continued[0].conversation()[0].1;
    assert!(
        first.contains("<summary>\nMOCK SUMMARY of 4 user messages"),
        "{first}"
    );
    drop(compacted);
}

#[test]
fn the_same_rpc_script_gets_the_same_answers() {
    if test_deps().is_none() {
        return;
    }
    let mock = Mock::start();
    let home = Home::new(&mock, json!({}));
    let script = |rpc: &mut Rpc| -> Vec<Value> {
        let mut answers = Vec::new();
        rpc.send(r#"{"id":"1","type":"prompt","message":"READ notes.txt"}"#);
        let events = rpc.until(|l| l["type"] == "agent_end");
        let kinds: Vec<Value> = events
            .iter()
            .filter(|e| e["type"] != "message_update")
            .map(|e| e["type"].clone())
            .collect();
        answers.push(json!(kinds));
        answers.push(rpc.call(json!({"id": "2", "type": "get_last_assistant_text"})));
        let state = rpc.call(json!({"id": "3", "type": "get_state"}));
        let data = &state["data"];
        answers.push(json!({
            "model": [data["model"]["provider"], data["model"]["id"], data["model"]["contextWindow"], data["model"]["maxTokens"]],
            "thinkingLevel": data["thinkingLevel"],
            "isStreaming": data["isStreaming"],
            "isCompacting": data["isCompacting"],
            "steeringMode": data["steeringMode"],
            "followUpMode": data["followUpMode"],
            "autoCompactionEnabled": data["autoCompactionEnabled"],
            "messageCount": data["messageCount"],
            "pendingMessageCount": data["pendingMessageCount"],
        }));
        answers.push(rpc.call(json!({"id": "4", "type": "bash", "command": "echo rpc-bash"})));
        let messages = rpc.call(json!({"id": "5", "type": "get_messages"}));
        let roles: Vec<Value> = messages["data"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].clone())
            .collect();
        answers.push(json!(roles));
        answers.push(rpc.call(json!({"id": "6", "type": "set_thinking_level", "level": "high"})));
        answers.push(rpc.call(json!({"id": "7", "type": "cycle_thinking_level"})));
        answers.push(rpc.call(json!({"id": "8", "type": "no_such_command"})));
        let stats = rpc.call(json!({"id": "9", "type": "get_session_stats"}));
        answers.push(json!([
            stats["data"]["assistantMessages"],
            stats["data"]["toolCalls"],
            stats["data"]["toolResults"]
        ]));
        answers.push(rpc.call(json!({"id": "10", "type": "set_session_name", "name": ""})));
        answers
    };
    let args = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--no-session",
        "--mode",
        "rpc",
    ];
    let (pi, ours) = std::thread::scope(|scope| {
        let pi = scope.spawn(|| {
            let mut rpc = Rpc::start(home.pi().unwrap().args(args));
            let answers = script(&mut rpc);
            let _ = rpc.finish();
            answers
        });
        let mut rpc = Rpc::start(home.ours().args(args));
        let ours = script(&mut rpc);
        assert!(rpc.finish().success());
        (pi.join().unwrap(), ours)
    });
    assert_eq!(ours.len(), pi.len());
    for (ours, pi) in ours.iter().zip(&pi) {
        assert_eq!(ours, pi);
    }
}
