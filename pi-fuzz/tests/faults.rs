//! Fault injection through the agent loop (see `pi_fuzz::faults`): 2,000 seeded random runs
//! by default; `PI_FAULT_RUNS=<n>` and `PI_FAULT_SEED=<n>` change the count and the seed
//! (`PI_FAULT_RUNS=100000 cargo test -p pi-fuzz --release --test faults` is the long run).

use pi_fuzz::faults::{FaultReport, check_run, run_faults, silence_fault_panics};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn randomized_runs_keep_one_result_per_call_the_event_order_and_end() {
    silence_fault_panics();
    let runs = env("PI_FAULT_RUNS", 2_000) as usize;
    let report = run_faults(env("PI_FAULT_SEED", 0xFA_0175), runs);
    eprintln!("{report:?}");
    assert_eq!(report.runs, runs);
    // The faults were exercised, not skipped.
    assert!(report.tool_calls > runs, "{report:?}");
    assert!(report.error_results > 0 && report.aborted_runs > 0 && report.model_failures > 0);
}

#[test]
fn the_checker_rejects_a_run_without_its_end() {
    let report = check_run(&[pi_runtime::AgentEvent::AgentStart]);
    assert!(report.unwrap_err().contains("does not end with agent_end"));
    assert_eq!(
        check_run(&[
            pi_runtime::AgentEvent::AgentStart,
            pi_runtime::AgentEvent::AgentEnd { messages: vec![] }
        ]),
        Ok(FaultReport::default())
    );
}
