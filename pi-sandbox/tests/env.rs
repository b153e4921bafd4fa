//! Secrets in this process's environment do not reach a confined command unless allowed (a
//! test binary of its own: it sets variables, which no other test thread may read meanwhile).
#![cfg(target_os = "linux")]

use std::process::Stdio;

use pi_sandbox::{Sandbox, SandboxPolicy};

fn printed_env(policy: &SandboxPolicy) -> String {
    let mut sandbox = Sandbox::new(policy).unwrap();
    let output = sandbox
        .command("/bin/bash")
        .unwrap()
        .args(["-c", "env"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn api_keys_and_named_variables_are_hidden_unless_allowed() {
    // SAFETY: the only test of this binary; nothing else reads the environment meanwhile.
    #[allow(unsafe_code)]
    unsafe {
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-secret");
        std::env::set_var("OPENAI_API_KEY", "sk-secret");
        std::env::set_var("SOME_SERVICE_TOKEN", "tok-secret");
        std::env::set_var("DATABASE_URL", "postgres://secret");
        std::env::set_var("PI_SANDBOX_TEST_PLAIN", "plain-value");
    }
    let cwd = tempfile::tempdir().unwrap();
    let policy = SandboxPolicy::workspace_write(cwd.path()).with_hidden_env("DATABASE_URL");
    let env = printed_env(&policy);
    for value in [
        "sk-ant-secret",
        "sk-secret",
        "tok-secret",
        "postgres://secret",
    ] {
        assert!(!env.contains(value), "{value} passed: {env}");
    }
    assert!(env.contains("PI_SANDBOX_TEST_PLAIN=plain-value"), "{env}");
    // Allowed by name; and full access hides secrets too.
    let env = printed_env(&policy.clone().with_allowed_env("OPENAI_API_KEY"));
    assert!(
        env.contains("OPENAI_API_KEY=sk-secret") && !env.contains("sk-ant-secret"),
        "{env}"
    );
    let env = printed_env(&SandboxPolicy::full_access());
    assert!(
        !env.contains("sk-ant-secret") && env.contains("DATABASE_URL"),
        "{env}"
    );
}
