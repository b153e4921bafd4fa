//! Compaction through the binary: automatic past the threshold (the summary written as pi
//! writes it, the next request starting from it), on a context-overflow error (compact, then
//! the turn retried), and by hand (RPC's `compact`, with instructions).

use serde_json::{Value, json};

use super::mock::Mock;
use super::{Home, lines, text};

/// A 1600-character prompt, numbered.
fn long_prompt(n: usize) -> String {
    format!("prompt {n}: {}", "word ".repeat(320))
}

fn events(stdout: &[u8]) -> Vec<Value> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn home_with_small_window(mock: &Mock) -> Home {
    let home = Home::new(mock, json!({"contextWindow": 3000}));
    home.settings(json!({"compaction": {"reserveTokens": 1000, "keepRecentTokens": 300}}));
    home
}

#[test]
fn past_the_threshold_the_session_is_compacted_as_pi_compacts_it() {
    let mock = Mock::start();
    let home = home_with_small_window(&mock);
    let prompts: Vec<String> = (1..=5)
        .map(long_prompt)
        .chain(["after".to_owned()])
        .collect();
    let output = home
        .ours()
        .args([
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-nt",
            "--mode",
            "json",
        ])
        .args(&prompts)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let events = events(&output.stdout);
    let start = events
        .iter()
        .position(|e| e["type"] == "compaction_start")
        .expect("a compaction");
    assert_eq!(events[start]["reason"], "threshold");
    let end = &events[start + 1];
    assert_eq!(end["type"], "compaction_end");
    assert_eq!(end["result"]["summary"], "MOCK SUMMARY of 4 user messages");
    assert_eq!(
        (end["aborted"].clone(), end["willRetry"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "compaction_start")
            .count(),
        1
    );

    // The summary request: pi's system prompt, the conversation as text, 80% of the reserve.
    let requests = mock.requests();
    let summary = requests
        .iter()
        .find(|r| r.is_summary())
        .expect("a summary request");
    assert_eq!(summary.body["max_completion_tokens"], 800);
    let asked = &summary.conversation()[0].1;
    assert!(
        asked.starts_with("<conversation>\n[User]: prompt 1: word"),
        "{asked}"
    );
    assert!(
        asked.contains("\n\n[Assistant]: MOCK TEXT: prompt 1"),
        "{asked}"
    );
    assert!(
        !asked.contains("prompt 5"),
        "the kept tail is not summarized"
    );
    assert!(asked.ends_with("Preserve exact file paths, function names, and error messages."));
    assert!(summary.body.get("tools").is_none());

    // The entry, as pi writes it.
    let files = home.session_files();
    assert_eq!(files.len(), 1);
    let entries = lines(&files[0]);
    let compaction = entries.iter().find(|e| e["type"] == "compaction").unwrap();
    assert_eq!(compaction["summary"], "MOCK SUMMARY of 4 user messages");
    assert_eq!(compaction["fromHook"], false);
    assert_eq!(
        compaction["details"],
        json!({"readFiles": [], "modifiedFiles": []})
    );
    assert!(
        compaction["tokensBefore"].as_u64().unwrap() > 2000,
        "{compaction}"
    );
    let kept = entries
        .iter()
        .find(|e| e["id"] == compaction["firstKeptEntryId"])
        .unwrap();
    assert_eq!(kept["message"]["role"], "user");
    assert!(
        super::mock::text_of(&kept["message"]["content"]).starts_with("prompt 5:"),
        "{kept}"
    );

    // The next request starts from the summary, then the kept turn.
    let last = requests.last().unwrap();
    let conversation = last.conversation();
    assert_eq!(conversation.len(), 4, "{conversation:?}");
    assert_eq!(
        conversation[0].1,
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\nMOCK SUMMARY of 4 user messages\n</summary>"
    );
    assert!(conversation[1].1.starts_with("prompt 5:"));
    assert_eq!(conversation[3], ("user".to_owned(), "after".to_owned()));
}

#[test]
fn a_context_overflow_is_compacted_and_the_turn_retried() {
    let mock = Mock::start();
    let home = home_with_small_window(&mock);
    let ours = |extra: &[&str]| {
        let mut command = home.ours();
        command.args(["--provider", "mock", "--model", "mock-model", "-nt"]);
        command.args(extra);
        command
    };
    let first = ours(&["-p", &long_prompt(1), &long_prompt(2)])
        .output()
        .unwrap();
    assert!(first.status.success(), "{}", text(&first.stderr));
    let second_size = mock.requests()[1].body.to_string().len();
    mock.overflow_above(second_size + 500);
    mock.clear();
    let output = ours(&["-c", "--mode", "json", &long_prompt(3)])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let events = events(&output.stdout);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let start = kinds.iter().position(|k| *k == "compaction_start").unwrap();
    assert_eq!(events[start]["reason"], "overflow");
    let end = &events[start + 1];
    assert_eq!(end["willRetry"], true, "{end}");
    assert!(end.get("errorMessage").is_none(), "{end}");
    // The failed answer, then the retried one that succeeded.
    let answers: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .map(|e| &e["message"])
        .collect();
    assert_eq!(answers.len(), 2, "{kinds:?}");
    assert_eq!(answers[0]["stopReason"], "error");
    assert!(
        answers[0]["errorMessage"]
            .as_str()
            .unwrap()
            .contains("maximum context length is 8192 tokens"),
        "{}",
        answers[0]
    );
    assert_eq!(answers[1]["stopReason"], "stop");
    assert!(
        answers[1]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("MOCK TEXT: prompt 3:")
    );
    // The retry carried the summary and the prompt that overflowed, not the failed answer.
    let retry = mock.requests().last().unwrap().conversation();
    assert!(
        retry[0]
            .1
            .contains("<summary>\nMOCK SUMMARY of 2 user messages"),
        "{retry:?}"
    );
    assert_eq!(retry.last().unwrap().0, "user");
    assert!(retry.last().unwrap().1.starts_with("prompt 3:"));
    // The session keeps the whole story: the error, the compaction, the answer.
    let entries = lines(&home.session_files()[0]);
    let kinds: Vec<String> = entries
        .iter()
        .map(|e| match e["type"].as_str().unwrap() {
            "message" => e["message"]["role"].as_str().unwrap().to_owned(),
            other => other.to_owned(),
        })
        .collect();
    assert_eq!(
        kinds[kinds.len() - 4..],
        ["user", "assistant", "compaction", "assistant"],
        "{kinds:?}"
    );
}

#[test]
fn compact_by_hand_takes_instructions_and_says_when_there_is_nothing_to_do() {
    use std::io::{BufRead, BufReader, Write};

    let mock = Mock::start();
    let home = Home::new(&mock, json!({}));
    home.settings(json!({"compaction": {"keepRecentTokens": 5}}));
    let mut child = home
        .ours()
        .args([
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-nt",
            "--mode",
            "rpc",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |line: Value| {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    };
    let mut until = |kind: &str| -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let line = out.next().expect("a line").unwrap();
            let value: Value = serde_json::from_str(&line).unwrap();
            let done = value["type"] == kind || value["command"] == kind;
            seen.push(value);
            if done {
                return seen;
            }
        }
    };
    send(json!({"id": "0", "type": "compact"}));
    let response = until("compact").pop().unwrap();
    assert_eq!(response["success"], false);
    assert_eq!(response["error"], "Nothing to compact (session too small)");
    for n in 1..=3 {
        send(json!({"type": "prompt", "message": format!("question {n}")}));
        until("agent_end");
    }
    send(json!({"id": "c", "type": "compact", "customInstructions": "keep the numbers"}));
    let seen = until("compact");
    let response = seen.last().unwrap();
    assert_eq!(response["id"], "c");
    assert_eq!(response["success"], true, "{response}");
    assert!(
        response["data"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("MOCK SUMMARY")
    );
    assert!(
        seen.iter()
            .any(|e| e["type"] == "compaction_start" && e["reason"] == "manual")
    );
    // A cut inside a turn asks for the history's summary and the turn prefix's at once (as pi
    // does, in parallel), so their order is not fixed: the history's carries the instructions.
    let summaries: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| r.is_summary())
        .map(|r| r.conversation())
        .collect();
    assert!(
        summaries
            .iter()
            .any(|c| c[0].1.ends_with("\n\nAdditional focus: keep the numbers")),
        "{summaries:?}"
    );
    send(json!({"id": "again", "type": "compact"}));
    let response = until("compact").pop().unwrap();
    assert_eq!(response["error"], "Already compacted");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
