//! pi's RPC setters save the choice to settings.json, as pi's do: the next start uses the model
//! and thinking level last set.

use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn rpc_setters_save_the_model_and_thinking_level() {
    let home = tempfile::tempdir().unwrap();
    let agent = home.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("models.json"),
        r#"{"providers": {"mock": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "KEY",
            "models": [{"id": "mock-model"}, {"id": "mock-two", "reasoning": true}]}}}"#,
    )
    .unwrap();
    std::fs::write(
        agent.join("settings.json"),
        r#"{"defaultProvider": "mock", "defaultModel": "mock-model", "theme": "dark"}"#,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pi"))
        .env_clear()
        .env("HOME", home.path())
        .env("PI_CODING_AGENT_DIR", &agent)
        .args(["--mode", "rpc", "--no-session"])
        .current_dir(home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            b"{\"type\":\"set_model\",\"provider\":\"mock\",\"modelId\":\"mock-two\"}\n{\"type\":\"set_thinking_level\",\"level\":\"high\"}\n",
        )
        .unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.matches("\"success\":true").count(), 2, "{stdout}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(agent.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        saved,
        serde_json::json!({"defaultProvider": "mock", "defaultModel": "mock-two",
            "theme": "dark", "defaultThinkingLevel": "high"})
    );
}
