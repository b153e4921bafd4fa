//! One way to say "needs approval" on every host: a tool marked with pi-tool's common approval
//! (here `ToolRegistry::require_approval`; `#[tool(approval)]` is the same mark) waits on a
//! Restate awakeable in a durable session, across a restart of the service, and is settled by a
//! `Decision` resolving it; without an `Approval` the call is refused, never run unapproved.

mod support;

use serde_json::json;
use support::mock_model::{MockModel, Reply};
use support::{Service, count, ledger_in, ledger_lines, prompt, transcript, wait_for};

fn script() -> Vec<Reply> {
    vec![
        Reply::Calls(vec![("c1", "work", json!({"label": "deploy", "ms": 0}))]),
        Reply::Text("deployed"),
    ]
}

/// Resolves the awakeable `id` with `body` through the ingress.
fn resolve(restate: &pi_restate::local::LocalRestate, id: &str, body: &serde_json::Value) {
    let (status, answer) = restate
        .ingress_request(
            "POST",
            &format!("/restate/awakeables/{id}/resolve"),
            &[("content-type", "application/json")],
            body.to_string().as_bytes(),
        )
        .expect("the ingress answers");
    assert!(
        (200..300).contains(&status),
        "{status}: {}",
        String::from_utf8_lossy(&answer)
    );
}

/// The text of the tool result in a session's stored transcript.
fn tool_result(restate: &pi_restate::local::LocalRestate, session: &str) -> serde_json::Value {
    let messages = transcript(restate, session);
    messages
        .iter()
        .map(|message| serde_json::to_value(message).expect("a message"))
        .find(|message| message["role"] == "toolResult")
        .expect("a tool result")
}

#[test]
fn a_marked_tool_waits_on_an_awakeable_and_a_decision_settles_it() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(script());
    let ledger = ledger_in(&dir);
    let approvals = dir.path().join("approvals.txt");
    let mut service = Service::start(&[
        ("PI_FIXTURE_MODEL_URL", &model.url()),
        ("PI_FIXTURE_LEDGER", ledger.to_str().expect("utf-8 path")),
        (
            "PI_FIXTURE_APPROVALS",
            approvals.to_str().expect("utf-8 path"),
        ),
        ("PI_FIXTURE_MARKED", "1"),
    ]);
    restate.register(&service.url()).expect("registered");
    let awakeables = || -> Vec<String> { ledger_lines(&approvals) };

    // Approved with a `Decision`, the service killed and restarted while the call waits.
    std::thread::scope(|scope| {
        let running = scope.spawn(|| prompt(&restate, "ok", "deploy", None));
        wait_for("the approval request", || awakeables().len() == 1);
        service.kill();
        service.restart();
        assert!(
            ledger_lines(&ledger).is_empty(),
            "nothing ran before the decision"
        );
        resolve(&restate, &awakeables()[0], &json!({"decision": "approve"}));
        let outcome = running
            .join()
            .expect("the prompt thread")
            .expect("completes");
        let last = outcome["newMessages"]
            .as_array()
            .and_then(|m| m.last())
            .cloned();
        assert_eq!(
            last.expect("a last message")["content"][0]["text"],
            "deployed"
        );
    });
    assert_eq!(awakeables().len(), 1, "announced once, not again on replay");
    assert_eq!(count(&ledger_lines(&ledger), "done deploy ok/0/c1"), 1);
    assert_eq!(
        tool_result(&restate, "ok")["content"][0]["text"],
        "deploy finished"
    );

    // Denied: the model reads the denial, and the call never starts.
    std::thread::scope(|scope| {
        let running = scope.spawn(|| prompt(&restate, "no", "deploy", None));
        wait_for("the second approval request", || awakeables().len() == 2);
        resolve(
            &restate,
            &awakeables()[1],
            &json!({"decision": "deny", "reason": "not on a Friday"}),
        );
        running
            .join()
            .expect("the prompt thread")
            .expect("completes");
    });
    let denied = tool_result(&restate, "no");
    assert_eq!(denied["isError"], true);
    assert_eq!(
        denied["content"][0]["text"],
        "Tool work was not run: the call was denied: not on a Friday"
    );
    assert_eq!(count(&ledger_lines(&ledger), "start deploy no/0/c1"), 0);
}

#[test]
fn without_an_approval_a_marked_tools_call_is_refused() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(script());
    let ledger = ledger_in(&dir);
    let service = Service::start(&[
        ("PI_FIXTURE_MODEL_URL", &model.url()),
        ("PI_FIXTURE_LEDGER", ledger.to_str().expect("utf-8 path")),
        ("PI_FIXTURE_MARKED", "1"),
    ]);
    restate.register(&service.url()).expect("registered");
    prompt(&restate, "s", "deploy", None).expect("completes");
    let refused = tool_result(&restate, "s");
    assert_eq!(refused["isError"], true);
    assert_eq!(
        refused["content"][0]["text"],
        "Tool work was not run: tool work needs approval before it runs, and this session has \
         no approval configured (PiSession::with_approval)"
    );
    assert!(ledger_lines(&ledger).is_empty(), "nothing ran");
    drop(service);
}
