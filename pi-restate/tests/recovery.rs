//! Durable sessions through failures, against a real Restate server: the remote tool service
//! killed mid-call, an approval that waits across a restart of the session service, and a
//! restart of the Restate server in the middle of a session.

mod support;

use serde_json::json;
use support::mock_model::{MockModel, Reply};
use support::{
    Service, count, ledger_in, ledger_lines, prompt, prompt_at, start_session_service, transcript,
    wait_for, wait_for_ledger,
};

fn crash_script() -> Vec<Reply> {
    vec![
        Reply::Calls(vec![("c1", "work", json!({"label": "first", "ms": 0}))]),
        Reply::Calls(vec![("c2", "work", json!({"label": "victim", "ms": 1500}))]),
        Reply::Text("finished"),
    ]
}

fn last_text(outcome: &serde_json::Value) -> String {
    let messages = outcome["newMessages"].as_array().expect("messages");
    let last = messages.last().expect("a last message");
    last["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A session service that calls its tools on a separate `PiTools` service, both registered;
/// the tools record into the ledger it returns.
fn start_remote_services(
    restate: &pi_restate::local::LocalRestate,
    dir: &tempfile::TempDir,
    model_url: &str,
) -> (std::path::PathBuf, Service, Service) {
    let ledger = ledger_in(dir);
    let ledger_text = ledger.to_str().expect("utf-8 path");
    let sessions = Service::start(&[
        ("PI_FIXTURE_ROLE", "session-remote"),
        ("PI_FIXTURE_MODEL_URL", model_url),
    ]);
    let tools = Service::start(&[
        ("PI_FIXTURE_ROLE", "tools"),
        ("PI_FIXTURE_LEDGER", ledger_text),
    ]);
    restate.register(&tools.url()).expect("tools registered");
    restate
        .register(&sessions.url())
        .expect("sessions registered");
    (ledger, sessions, tools)
}

#[test]
fn a_remote_tool_service_killed_mid_call_runs_the_call_again_and_nothing_else() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(crash_script());
    let (ledger, _sessions, mut tools) = start_remote_services(&restate, &dir, &model.url());

    std::thread::scope(|scope| {
        let running = scope.spawn(|| prompt(&restate, "remote", "go", None));
        wait_for_ledger(&ledger, "the victim tool to start", |lines| {
            count(lines, "start victim remote/0/c2") == 1
        });
        tools.kill();
        tools.restart();
        let outcome = running
            .join()
            .expect("the prompt thread")
            .expect("the invocation completes after the tool service restarts");
        assert_eq!(last_text(&outcome), "finished");
    });

    let lines = ledger_lines(&ledger);
    assert_eq!(count(&lines, "start first remote/0/c1"), 1, "{lines:?}");
    assert_eq!(count(&lines, "done first remote/0/c1"), 1, "{lines:?}");
    assert_eq!(
        count(&lines, "start victim remote/0/c2"),
        2,
        "run again, same key: {lines:?}"
    );
    assert_eq!(count(&lines, "done victim remote/0/c2"), 1, "{lines:?}");
    assert_eq!(
        model.requests(),
        3,
        "the session's model requests ran once each"
    );
}

/// What a session killed (or whose tool service was killed) in the middle of a `work_once`
/// call ends with: the call ran once, never finished, and its result says the outcome is
/// unknown, with its key; the model was asked again with that result.
fn assert_not_run_again(
    restate: &pi_restate::local::LocalRestate,
    session: &str,
    ledger: &std::path::Path,
) {
    let lines = ledger_lines(ledger);
    let key = format!("{session}/0/c2");
    assert_eq!(
        count(&lines, &format!("start victim {key}")),
        1,
        "{lines:?}"
    );
    assert_eq!(count(&lines, &format!("done victim {key}")), 0, "{lines:?}");
    let results: Vec<(bool, String)> = transcript(restate, session)
        .iter()
        .filter_map(|message| match message {
            pi_runtime::Message::ToolResult(result) => Some((result.is_error, result.text())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(
        results[1],
        (true, pi_tool::outcome_unknown_message("work_once", &key))
    );
}

fn never_twice_script() -> Vec<Reply> {
    vec![
        Reply::Calls(vec![("c1", "work", json!({"label": "first", "ms": 0}))]),
        Reply::Calls(vec![(
            "c2",
            "work_once",
            json!({"label": "victim", "ms": 1500}),
        )]),
        Reply::Text("finished"),
    ]
}

#[test]
fn a_never_replayed_tool_interrupted_by_a_crash_is_answered_not_run_again() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(never_twice_script());
    let (ledger, mut service) = start_session_service(&restate, &dir, &model.url());
    std::thread::scope(|scope| {
        let running = scope.spawn(|| prompt(&restate, "once", "go", None));
        wait_for_ledger(&ledger, "the victim tool to start", |lines| {
            count(lines, "start victim once/0/c2") == 1
        });
        service.kill();
        service.restart();
        let outcome = running
            .join()
            .expect("the prompt thread")
            .expect("the invocation completes after the restart");
        assert_eq!(last_text(&outcome), "finished");
    });
    assert_not_run_again(&restate, "once", &ledger);
}

#[test]
fn a_never_replayed_remote_tool_whose_service_was_killed_is_answered_not_run_again() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(never_twice_script());
    let (ledger, _sessions, mut tools) = start_remote_services(&restate, &dir, &model.url());
    std::thread::scope(|scope| {
        let running = scope.spawn(|| prompt(&restate, "remote-once", "go", None));
        wait_for_ledger(&ledger, "the victim tool to start", |lines| {
            count(lines, "start victim remote-once/0/c2") == 1
        });
        tools.kill();
        tools.restart();
        let outcome = running
            .join()
            .expect("the prompt thread")
            .expect("the invocation completes after the tool service restarts");
        assert_eq!(last_text(&outcome), "finished");
    });
    assert_not_run_again(&restate, "remote-once", &ledger);
}

#[test]
fn an_approval_waits_across_a_restart_of_the_service_and_a_denial_blocks_the_call() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(vec![
        Reply::Calls(vec![(
            "c1",
            "work",
            json!({"label": "approve-deploy", "ms": 0}),
        )]),
        Reply::Text("deployed"),
    ]);
    let ledger = ledger_in(&dir);
    let approvals = dir.path().join("approvals.txt");
    let mut service = Service::start(&[
        ("PI_FIXTURE_MODEL_URL", &model.url()),
        ("PI_FIXTURE_LEDGER", ledger.to_str().expect("utf-8 path")),
        (
            "PI_FIXTURE_APPROVALS",
            approvals.to_str().expect("utf-8 path"),
        ),
    ]);
    restate.register(&service.url()).expect("registered");
    let awakeables = || -> Vec<String> { ledger_lines(&approvals) };

    // Approved, with the service killed and restarted while it waits.
    std::thread::scope(|scope| {
        let running = scope.spawn(|| prompt(&restate, "ok", "deploy", None));
        wait_for("the approval request", || awakeables().len() == 1);
        service.kill();
        service.restart();
        assert!(
            ledger_lines(&ledger).is_empty(),
            "nothing ran before the decision"
        );
        let id = &awakeables()[0];
        let (status, body) = restate
            .ingress_request(
                "POST",
                &format!("/restate/awakeables/{id}/resolve"),
                &[("content-type", "application/json")],
                br#"{"approved": true}"#,
            )
            .expect("the ingress answers");
        assert!(
            (200..300).contains(&status),
            "{status}: {}",
            String::from_utf8_lossy(&body)
        );
        let outcome = running
            .join()
            .expect("the prompt thread")
            .expect("completes");
        assert_eq!(last_text(&outcome), "deployed");
    });
    assert_eq!(
        awakeables().len(),
        1,
        "the request was announced once, not again on replay"
    );
    assert_eq!(
        count(&ledger_lines(&ledger), "done approve-deploy ok/0/c1"),
        1
    );

    // Denied with a reason: the call does not run and the model reads the reason.
    std::thread::scope(|scope| {
        let running = scope.spawn(|| prompt(&restate, "no", "deploy", None));
        wait_for("the second approval request", || awakeables().len() == 2);
        let id = &awakeables()[1];
        let (status, _) = restate
            .ingress_request(
                "POST",
                &format!("/restate/awakeables/{id}/resolve"),
                &[("content-type", "application/json")],
                br#"{"approved": false, "reason": "not on a Friday"}"#,
            )
            .expect("the ingress answers");
        assert!((200..300).contains(&status));
        running
            .join()
            .expect("the prompt thread")
            .expect("completes");
    });
    let denied = transcript(&restate, "no");
    let result = serde_json::to_value(&denied[2]).expect("a message");
    assert_eq!(result["role"], "toolResult");
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0]["text"], "not on a Friday");
    assert_eq!(
        count(&ledger_lines(&ledger), "start approve-deploy no/0/c1"),
        0
    );
}

#[test]
fn a_restate_server_restart_mid_session_loses_no_completed_step() {
    let Some(mut restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(crash_script());
    let (ledger, _service) = start_session_service(&restate, &dir, &model.url());

    let ingress = restate.ingress;
    let first_try = std::thread::spawn(move || prompt_at(ingress, "server", "go", Some("run-1")));
    wait_for_ledger(&ledger, "the victim tool to start", |lines| {
        count(lines, "start victim server/0/c2") == 1
    });
    // The server dies with the invocation in flight (the client's connection with it) and
    // starts again on its base directory.
    restate.restart().expect("the server starts again");
    assert!(
        first_try.join().expect("the first client").is_err(),
        "its connection broke"
    );
    // The same idempotency key attaches to the invocation Restate kept.
    let outcome = prompt(&restate, "server", "go", Some("run-1")).expect("the session completes");
    assert_eq!(last_text(&outcome), "finished");

    let lines = ledger_lines(&ledger);
    assert_eq!(count(&lines, "start first server/0/c1"), 1, "{lines:?}");
    assert_eq!(count(&lines, "done first server/0/c1"), 1, "{lines:?}");
    assert!(count(&lines, "start victim server/0/c2") >= 1, "{lines:?}");
    assert!(
        lines
            .iter()
            .filter(|l| l.contains("victim"))
            .all(|l| l.ends_with("server/0/c2")),
        "one key for every attempt: {lines:?}"
    );
    assert_eq!(
        model.requests(),
        3,
        "completed model requests were not sent again"
    );
    assert_eq!(transcript(&restate, "server").len(), 6);
}

#[test]
fn abort_cancels_the_running_prompt_and_the_session_takes_the_next_one() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(vec![
        Reply::Calls(vec![("c1", "work", json!({"label": "long", "ms": 3000}))]),
        Reply::Text("never reached"),
        Reply::Text("after the abort"),
    ]);
    let (ledger, _service) = start_session_service(&restate, &dir, &model.url());

    std::thread::scope(|scope| {
        let running = scope.spawn(|| prompt(&restate, "stop", "go", None));
        wait_for_ledger(&ledger, "the long tool to start", |lines| {
            count(lines, "start long stop/0/c1") == 1
        });
        let (status, body) = restate
            .ingress_request("POST", "/PiSession/stop/abort", &[], b"")
            .expect("the ingress answers");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        assert_eq!(body, b"true", "a run was going");
        let outcome = running
            .join()
            .expect("the prompt thread")
            .expect("the aborted prompt answers with what it did");
        let messages = outcome["newMessages"].as_array().expect("messages");
        assert_eq!(messages[2]["role"], "toolResult", "{messages:#?}");
        assert_eq!(messages[2]["isError"], true, "{messages:#?}");
    });
    assert_eq!(model.requests(), 1, "no model request after the abort");
    assert!(
        transcript(&restate, "stop").len() >= 3,
        "what the run did is kept"
    );
    // The session is free again.
    let next = prompt(&restate, "stop", "next", None).expect("the next prompt runs");
    assert!(next["newMessages"].is_array());
    assert_eq!(model.requests(), 2);
}

/// A model that reuses a call id in a later prompt (some OpenAI-compatible servers number their
/// calls `call_0`, ...): each prompt's call is its own durable request to the tool service, not
/// the first prompt's answered again from Restate's idempotency store.
#[test]
fn two_prompts_whose_remote_calls_share_an_id_each_run_their_own_call() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(vec![
        Reply::Calls(vec![("c1", "work", json!({"label": "one", "ms": 0}))]),
        Reply::Text("first done"),
        Reply::Calls(vec![("c1", "work", json!({"label": "two", "ms": 0}))]),
        Reply::Text("second done"),
    ]);
    let (ledger, _sessions, _tools) = start_remote_services(&restate, &dir, &model.url());
    prompt(&restate, "reuse", "go", None).expect("the first prompt completes");
    let second = prompt(&restate, "reuse", "again", None).expect("the second prompt completes");
    assert_eq!(last_text(&second), "second done");

    let lines = ledger_lines(&ledger);
    // The first prompt began on an empty transcript, the second after its four messages.
    assert_eq!(count(&lines, "done one reuse/0/c1"), 1, "{lines:?}");
    assert_eq!(count(&lines, "done two reuse/4/c1"), 1, "{lines:?}");
    let results: Vec<String> = transcript(&restate, "reuse")
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| r.text())
        .collect();
    assert_eq!(results.len(), 2);
    assert_ne!(
        results[0], results[1],
        "each call has its own result: {results:?}"
    );
}
