//! A script's call that needs approval waits like the model's calls (issue 32 part 4): in
//! process for the approver; else the run pauses, and on resume (in this process, or from a
//! JSON file store or SQLite as a new process would) the script runs again with its completed
//! calls answered from the journal (not run twice), `Math.random` and `Date` giving the same
//! values, and the approved call run once. A denial is an error the script catches; a journal
//! that does not match the replay is a clear error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pi_codemode::CodeTool;
use pi_runtime::{
    AgentContext, AgentEvent, AgentLoopConfig, ApprovalTimeout, AssistantContent, AssistantMessage,
    Decision, JsonFileStore, Message, Resume, RunState, RunStore, ScriptedModel, SqliteRunStore,
    StopReason, agent_loop, agent_loop_resume,
};
use pi_tool::{AgentTool, CancellationToken, FnTool, ToolContext, ToolRegistry};
use serde_json::{Value, json};

/// The calls each tool ran, with their arguments.
#[derive(Default)]
struct Ran {
    lookup: AtomicUsize,
    note: AtomicUsize,
    refund: AtomicUsize,
    noted: Mutex<Vec<Value>>,
}

/// `lookup` and `note` run freely (`note` keeps what it was given); `refund` needs approval.
fn tools(ran: &Arc<Ran>) -> ToolRegistry {
    let lookup = {
        let ran = Arc::clone(ran);
        FnTool::builder("lookup", "Look an order up.", json!({"type": "object"}))
            .build(move |args: Value, _: ToolContext| {
                let n = ran.lookup.fetch_add(1, Ordering::SeqCst) + 1;
                async move { format!("order {} (lookup #{n})", args["order"]) }
            })
            .unwrap()
    };
    let note = {
        let ran = Arc::clone(ran);
        FnTool::builder("note", "Keep a note.", json!({"type": "object"}))
            .build(move |args: Value, _: ToolContext| {
                ran.note.fetch_add(1, Ordering::SeqCst);
                ran.noted.lock().unwrap().push(args);
                async move { "noted".to_owned() }
            })
            .unwrap()
    };
    let refund = {
        let ran = Arc::clone(ran);
        FnTool::builder("refund", "Refund an order.", json!({"type": "object"}))
            .approval()
            .build(move |args: Value, _: ToolContext| {
                let n = ran.refund.fetch_add(1, Ordering::SeqCst) + 1;
                async move { format!("refunded {} (refund #{n})", args["cents"]) }
            })
            .unwrap()
    };
    let tools: ToolRegistry = [lookup, note, refund]
        .into_iter()
        .map(|tool| Arc::new(tool) as Arc<dyn AgentTool>)
        .collect();
    tools.clone().with(CodeTool::new(&tools))
}

/// Two calls that complete (the second carries the script's random number and time), then one
/// that needs approval; returns what all of them said, and the random number and time again.
const SCRIPT: &str = "const r = Math.random();
const t = Date.now();
const d = new Date().getTime();
const order = await tools.lookup({order: 7});
await tools.note({r, t, d});
let refund;
try { refund = await tools.refund({order: 7, cents: 500}); } catch (e) { refund = 'refused: ' + e.message; }
return {order, refund, r, t, d, again: Math.random()};";

fn context(ran: &Arc<Ran>) -> AgentContext {
    AgentContext::new("test").with_tools(tools(ran).tools().cloned())
}

fn code_call() -> AssistantMessage {
    AssistantMessage::new(
        vec![AssistantContent::tool_call(
            "k1",
            "code",
            json!({ "script": SCRIPT }),
        )],
        StopReason::ToolUse,
    )
}

fn done() -> AssistantMessage {
    AssistantMessage::new(vec![AssistantContent::text("done")], StopReason::Stop)
}

async fn paused(ran: &Arc<Ran>) -> RunState {
    let model = Arc::new(ScriptedModel::new([code_call(), done()]));
    let stream = agent_loop(
        vec![Message::user("refund order 7")],
        context(ran),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    );
    let (_, paused) = stream.outcome().await;
    // The clock moves on before any resume: a replay that read it again would see it.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    paused.expect("the run paused on the script's refund")
}

/// Resumes `resume` in a context of `ran`'s tools; the code call's result (as JSON when the
/// script returned, else its error text) and whether the run paused again.
async fn resume(resume: Resume, ran: &Arc<Ran>) -> (Result<Value, String>, bool) {
    let model = Arc::new(ScriptedModel::new([done()]));
    let mut stream = agent_loop_resume(
        resume,
        context(ran),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    )
    .map_err(|refused| refused.error)
    .expect("the resume starts");
    let mut result = None;
    while let Some(event) = stream.next_event().await {
        if let AgentEvent::ToolExecutionEnd {
            call,
            result: message,
            is_error,
            ..
        } = event
            && call.id() == "k1"
        {
            let message = message.as_tool_result().unwrap();
            result = Some(if is_error {
                Err(message.content.iter().filter_map(|c| c.as_text()).collect())
            } else {
                Ok(message.details["result"].clone())
            });
        }
    }
    (
        result.expect("the code call ended"),
        stream.take_paused().is_some(),
    )
}

/// The replayed script saw what it saw the first time: `note` got the same random number and
/// times (it ran once, the first time), and the script returned them.
fn assert_same_values(value: &Value, ran: &Ran) {
    let noted = ran.noted.lock().unwrap().clone();
    assert_eq!(noted.len(), 1, "note ran once: {noted:?}");
    for key in ["r", "t", "d"] {
        assert_eq!(
            value[key], noted[0][key],
            "{key}: {value} against {noted:?}"
        );
    }
    assert_ne!(
        value["r"], value["again"],
        "the generator goes on after the replayed draws"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_pauses_on_a_call_that_needs_approval_and_resumes_in_this_process() {
    let ran = Arc::new(Ran::default());
    let mut state = paused(&ran).await;
    let nested = &state.nested["k1"];
    assert_eq!(nested.call.tool, "refund");
    assert_eq!(
        nested
            .journal
            .iter()
            .map(|entry| entry.tool.as_str())
            .collect::<Vec<_>>(),
        ["lookup", "note"]
    );
    assert!(
        nested.values.contains_key("k1"),
        "the seed and clock are recorded"
    );
    assert_eq!(state.waiting()[0].tool, "code");
    assert_eq!(ran.refund.load(Ordering::SeqCst), 0);

    state.approve("k1").unwrap();
    let (result, paused_again) = resume(Resume::new(state), &ran).await;
    assert!(!paused_again);
    let value = result.unwrap();
    assert_eq!(value["order"], "order 7 (lookup #1)");
    assert_eq!(value["refund"], "refunded 500 (refund #1)");
    assert_eq!(
        ran.lookup.load(Ordering::SeqCst),
        1,
        "lookup is not run again"
    );
    assert_eq!(ran.note.load(Ordering::SeqCst), 1, "note is not run again");
    assert_eq!(ran.refund.load(Ordering::SeqCst), 1);
    assert_same_values(&value, &ran);
}

/// Pauses in one "process", stores the run, and resumes it from a store opened afresh, with
/// tools of their own (their counters start at zero): nothing the first process ran runs again.
async fn resumes_from(store: impl Fn() -> Box<dyn RunStore>) {
    let first = Arc::new(Ran::default());
    let run = store().create(&paused(&first).await).unwrap();

    let store = store();
    let mut state = store.load(&run).unwrap();
    assert_eq!(state.nested["k1"].journal.len(), 2);
    state.approve("k1").unwrap();
    let claim = store.claim(&run, &state).unwrap();
    let second = Arc::new(Ran::default());
    let (result, paused_again) = resume(Resume::new(state).with_claim(claim), &second).await;
    assert!(!paused_again);
    let value = result.unwrap();
    assert_eq!(
        value["order"], "order 7 (lookup #1)",
        "the first process's answer"
    );
    assert_eq!(value["refund"], "refunded 500 (refund #1)");
    assert_eq!(second.lookup.load(Ordering::SeqCst), 0);
    assert_eq!(second.note.load(Ordering::SeqCst), 0);
    assert_eq!(second.refund.load(Ordering::SeqCst), 1);
    assert_eq!(first.refund.load(Ordering::SeqCst), 0);
    // `note` ran in the first process only, with the values the replay saw.
    assert_same_values(&value, &first);
    let stored = store.load(&run).unwrap();
    assert!(stored.waiting().is_empty() && stored.nested.is_empty());
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pi-codemode-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_script_resumes_from_a_json_file_store_as_a_new_process_would() {
    let dir = temp_dir("json");
    resumes_from(|| Box::new(JsonFileStore::open(&dir).unwrap())).await;
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_script_resumes_from_sqlite_as_a_new_process_would() {
    let dir = temp_dir("sqlite");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("runs.sqlite");
    resumes_from(|| Box::new(SqliteRunStore::open(&file).unwrap())).await;
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_is_an_error_the_script_catches() {
    let ran = Arc::new(Ran::default());
    let mut state = paused(&ran).await;
    state.deny("k1", "refunds over 100 need a manager").unwrap();
    let (result, _) = resume(Resume::new(state), &ran).await;
    let value = result.unwrap();
    assert_eq!(
        value["refund"],
        "refused: refund: Tool refund was not run: the call was denied: refunds over 100 need a manager"
    );
    assert_eq!(ran.refund.load(Ordering::SeqCst), 0);
    assert_eq!(ran.lookup.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_that_does_not_match_the_script_is_a_clear_error() {
    let ran = Arc::new(Ran::default());
    let mut state = paused(&ran).await;
    // The journal says the script's second call was another tool.
    state.nested.get_mut("k1").unwrap().journal[1].tool = "lookup".into();
    state.approve("k1").unwrap();
    let (result, _) = resume(Resume::new(state), &ran).await;
    let error = result.unwrap_err();
    assert!(error.contains("could not be replayed"), "{error}");
    assert!(error.contains("k1/2 was lookup"), "{error}");
    assert_eq!(
        ran.note.load(Ordering::SeqCst),
        1,
        "not run on the mismatch"
    );
    assert_eq!(
        ran.refund.load(Ordering::SeqCst),
        0,
        "nothing after it runs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_process_approver_approves_a_scripts_call() {
    let ran = Arc::new(Ran::default());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let config = AgentLoopConfig::new().approver(
        move |waiting: pi_runtime::WaitingCall| {
            seen.lock()
                .unwrap()
                .push((waiting.id.clone(), waiting.arguments.clone()));
            async { Decision::Approve }
        },
        ApprovalTimeout::WaitForever,
    );
    let model = Arc::new(ScriptedModel::new([code_call(), done()]));
    let stream = agent_loop(
        vec![Message::user("refund order 7")],
        context(&ran),
        config,
        model,
        CancellationToken::new(),
    );
    let (messages, paused) = stream.outcome().await;
    assert!(paused.is_none());
    assert_eq!(
        *asked.lock().unwrap(),
        [("k1/3".to_owned(), json!({"order": 7, "cents": 500}))]
    );
    let result = messages
        .iter()
        .find_map(|m| m.as_tool_result())
        .expect("the code call's result");
    assert_eq!(
        result.details["result"]["refund"],
        "refunded 500 (refund #1)"
    );
    assert_eq!(ran.refund.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn date_and_math_random_behave_as_usual_in_a_host_that_replays() {
    // In the agent loop `Date` and `Math.random` are the host's (so that a replay gives the
    // same values); a script sees the usual ones.
    let script = "const before = Date.now();
         const now = new Date();
         const draws = Array.from({length: 1000}, () => Math.random());
         return {
           epoch: new Date(0).toISOString(),
           parts: new Date(2020, 1, 3, 4, 5, 6).getMonth(),
           utc: Date.UTC(2020, 0, 1),
           parsed: Date.parse('2020-01-01T00:00:00Z'),
           isDate: now instanceof Date && Object.prototype.toString.call(now) === '[object Date]',
           ctor: now.constructor === Date && Date.name === 'Date',
           called: typeof Date(),
           recent: now.getTime() >= before && before > 1.7e12,
           inRange: draws.every(x => x >= 0 && x < 1),
           distinct: new Set(draws).size,
           mean: draws.reduce((a, b) => a + b) / draws.length,
         };";
    let call = AssistantMessage::new(
        vec![AssistantContent::tool_call(
            "k1",
            "code",
            json!({ "script": script }),
        )],
        StopReason::ToolUse,
    );
    let model = Arc::new(ScriptedModel::new([call, done()]));
    let stream = agent_loop(
        vec![Message::user("what time is it")],
        context(&Arc::new(Ran::default())),
        AgentLoopConfig::new(),
        model,
        CancellationToken::new(),
    );
    let (messages, _) = stream.outcome().await;
    let result = messages.iter().find_map(|m| m.as_tool_result()).unwrap();
    assert!(!result.is_error, "{:?}", result.content);
    let value = &result.details["result"];
    assert_eq!(value["epoch"], "1970-01-01T00:00:00.000Z");
    assert_eq!(value["parts"], 1);
    assert_eq!(value["utc"], 1_577_836_800_000_i64);
    assert_eq!(value["parsed"], 1_577_836_800_000_i64);
    for key in ["isDate", "ctor", "recent", "inRange"] {
        assert_eq!(value[key], true, "{key}: {value}");
    }
    assert_eq!(value["called"], "string");
    assert_eq!(value["distinct"], 1000);
    let mean = value["mean"].as_f64().unwrap();
    assert!((0.4..0.6).contains(&mean), "{mean}");
}
