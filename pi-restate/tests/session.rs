//! The durable session against a real Restate server (from `.ci/install-test-deps`) and a local
//! OpenAI-compatible mock model: the transcript matches the in-process `Agent`'s, a `kill -9`
//! of the service mid-tool loses and repeats nothing that completed, and an idempotency key on
//! the prompt runs it once. Each test has its own server (deployments would collide).

mod support;
#[path = "fixture/tools.rs"]
mod tools;

use std::sync::Arc;

use pi_runtime::Agent;
use pi_runtime::providers::OpenAiCompletions;
use serde_json::json;
use support::mock_model::{MockModel, Reply};
use support::{
    Service, count, ledger_in, ledger_lines, prompt, start_session_service, transcript,
    wait_for_ledger,
};

fn multi_turn_script() -> Vec<Reply> {
    vec![
        // A parallel batch: two calls in one message.
        Reply::Calls(vec![
            ("c1", "add", json!({"a": 2, "b": 3})),
            ("c2", "work", json!({"label": "p", "ms": 50})),
        ]),
        Reply::Calls(vec![("c3", "work", json!({"label": "q", "ms": 0}))]),
        Reply::Text("all done"),
        // The second prompt's answer.
        Reply::Text("second answer"),
    ]
}

#[test]
fn a_durable_multi_turn_session_has_the_in_process_agents_transcript() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");

    let durable_model = MockModel::start(multi_turn_script());
    let durable_ledger = ledger_in(&dir);
    let service = Service::start(&[
        ("PI_FIXTURE_MODEL_URL", &durable_model.url()),
        (
            "PI_FIXTURE_LEDGER",
            durable_ledger.to_str().expect("utf-8 path"),
        ),
    ]);
    restate.register(&service.url()).expect("registered");
    let first = prompt(&restate, "multi", "go", None).expect("the first prompt completes");
    let second = prompt(&restate, "multi", "again", None).expect("the second prompt completes");
    let durable = transcript(&restate, "multi");

    let local_model = MockModel::start(multi_turn_script());
    let local_ledger = dir.path().join("local-ledger.txt");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let in_process = runtime.block_on(async {
        let model = OpenAiCompletions::new("mock-model")
            .base_url(local_model.url())
            .api_key("test-key")
            .max_retries(0);
        let agent = Agent::new(Arc::new(model))
            .with_system_prompt("You are a test.")
            .with_tools(tools::fixture_tools(local_ledger.clone()));
        agent.prompt("go").await.expect("in-process prompt");
        agent.prompt("again").await.expect("in-process prompt");
        agent.messages()
    });
    let in_process: Vec<pi_runtime::Message> = in_process.iter().map(|m| (**m).clone()).collect();

    assert_eq!(durable.len(), 9, "{durable:#?}");
    assert_eq!(
        support::without_clock(&durable),
        support::without_clock(&in_process)
    );
    assert_eq!(durable_model.requests(), 4, "one request per model turn");
    assert_eq!(local_model.requests(), 4);
    // What the handlers returned is what the transcript holds.
    let returned: Vec<pi_runtime::Message> = [first, second]
        .into_iter()
        .flat_map(|outcome| {
            serde_json::from_value::<Vec<pi_runtime::Message>>(outcome["newMessages"].clone())
                .expect("new messages")
        })
        .collect();
    assert_eq!(returned, durable, "timestamps included");
    // Each tool ran once, with the session's idempotency key.
    let lines = ledger_lines(&durable_ledger);
    assert_eq!(count(&lines, "start p multi/0/c2"), 1, "{lines:?}");
    assert_eq!(count(&lines, "done q multi/0/c3"), 1, "{lines:?}");
    assert_eq!(
        count(&ledger_lines(&local_ledger), "done q -"),
        1,
        "no key in process"
    );
}

#[test]
fn a_service_killed_mid_tool_resumes_without_repeating_completed_steps() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(vec![
        Reply::Calls(vec![("c1", "work", json!({"label": "first", "ms": 0}))]),
        Reply::Calls(vec![("c2", "work", json!({"label": "victim", "ms": 1500}))]),
        Reply::Text("finished"),
    ]);
    let (ledger, mut service) = start_session_service(&restate, &dir, &model.url());

    std::thread::scope(|scope| {
        let running = scope.spawn(|| prompt(&restate, "crash", "go", None));
        wait_for_ledger(&ledger, "the victim tool to start", |lines| {
            count(lines, "start victim crash/0/c2") == 1
        });
        service.kill();
        assert_eq!(count(&ledger_lines(&ledger), "done victim crash/0/c2"), 0);
        service.restart();
        let outcome = running
            .join()
            .expect("the prompt thread")
            .expect("the invocation completes after the restart");
        let messages = outcome["newMessages"].as_array().expect("messages").clone();
        assert_eq!(
            messages.last().expect("a last message")["content"][0]["text"],
            "finished"
        );
    });

    let lines = ledger_lines(&ledger);
    assert_eq!(count(&lines, "start first crash/0/c1"), 1, "{lines:?}");
    assert_eq!(count(&lines, "done first crash/0/c1"), 1, "{lines:?}");
    assert_eq!(
        count(&lines, "start victim crash/0/c2"),
        2,
        "run again: {lines:?}"
    );
    assert_eq!(count(&lines, "done victim crash/0/c2"), 1, "{lines:?}");
    assert_eq!(
        model.requests(),
        3,
        "completed model requests were not sent again"
    );
    assert_eq!(transcript(&restate, "crash").len(), 6);
}

#[test]
fn the_same_prompt_sent_twice_with_one_idempotency_key_runs_once() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(vec![
        Reply::Calls(vec![("c1", "work", json!({"label": "once", "ms": 0}))]),
        Reply::Text("ok"),
    ]);
    let (ledger, _service) = start_session_service(&restate, &dir, &model.url());

    let first = prompt(&restate, "idem", "go", Some("prompt-1")).expect("first");
    let second = prompt(&restate, "idem", "go", Some("prompt-1")).expect("second");
    assert_eq!(first, second, "the second answer is the first one's");
    assert_eq!(model.requests(), 2);
    assert_eq!(count(&ledger_lines(&ledger), "start once idem/0/c1"), 1);
    assert_eq!(
        transcript(&restate, "idem").len(),
        4,
        "one prompt's messages"
    );

    // A new key is a new prompt.
    prompt(&restate, "idem", "go", Some("prompt-2")).expect("third");
    assert_eq!(transcript(&restate, "idem").len(), 6);
}

#[test]
fn a_steering_message_sent_while_a_tool_runs_reaches_the_next_model_request() {
    let Some(restate) = support::restate() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let model = MockModel::start(vec![
        Reply::Calls(vec![("c1", "work", json!({"label": "slow", "ms": 1000}))]),
        Reply::Text("steered"),
    ]);
    let (ledger, _service) = start_session_service(&restate, &dir, &model.url());

    std::thread::scope(|scope| {
        let running = scope.spawn(|| prompt(&restate, "steer", "go", None));
        wait_for_ledger(&ledger, "the slow tool to start", |lines| {
            count(lines, "start slow steer/0/c1") == 1
        });
        let (status, body) = restate
            .ingress_request(
                "POST",
                "/PiSession/steer/steer",
                &[("content-type", "application/json")],
                br#""use metric units""#,
            )
            .expect("the ingress answers");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        running
            .join()
            .expect("the prompt thread")
            .expect("completes");
    });
    let messages = support::without_clock(&transcript(&restate, "steer"));
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "user", "assistant"]
    );
    assert_eq!(messages[3]["content"][0]["text"], "use metric units");
    assert_eq!(messages[4]["content"][0]["text"], "steered");
    assert_eq!(model.requests(), 2);
}
