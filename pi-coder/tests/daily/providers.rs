//! pi's built-in providers beyond OpenAI, Anthropic and Google, through the binary: Mistral's API
//! (`--provider mistral`, its base URL moved to the scripted server by `models.json`, as pi
//! allows for a built-in provider).

use serde_json::json;

use crate::mock::Mock;
use crate::{Home, text};

/// A home whose `models.json` sends pi's built-in `mistral` provider to the mock.
fn mistral_home(mock: &Mock) -> Home {
    let home = Home::new(mock, json!({}));
    let root = mock.url.trim_end_matches("/v1");
    std::fs::write(
        home.agent_dir().join("models.json"),
        json!({"providers": {"mistral": {"baseUrl": root}}}).to_string(),
    )
    .unwrap();
    home
}

#[test]
fn mistral_runs_a_tool_with_nine_character_call_ids() {
    let mock = Mock::start();
    let home = mistral_home(&mock);
    let output = home
        .ours()
        .env("MISTRAL_API_KEY", "test-mistral-key")
        .args([
            "--no-session",
            "--provider",
            "mistral",
            "--model",
            "mistral-large-latest",
        ])
        .args(["-p", "READ notes.txt"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("MOCK FINAL: the tool said:"),
        "{}",
        text(&output.stdout)
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer test-mistral-key")
    );
    let first = &requests[0].body;
    assert_eq!(first["model"], "mistral-large-latest");
    assert_eq!(first["tools"][0]["function"]["strict"], false);
    // The mock's call id `call_1` goes back as one id of Mistral's form, the same in the call
    // and its result.
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let call = messages
        .iter()
        .find_map(|m| m["tool_calls"][0]["id"].as_str())
        .unwrap();
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["tool_call_id"].as_str())
        .unwrap();
    assert_eq!(call, result);
    assert!(
        call.len() == 9 && call.chars().all(|c| c.is_ascii_alphanumeric()),
        "{call}"
    );
}

#[test]
fn mistral_without_its_key_says_what_to_set() {
    let mock = Mock::start();
    let home = mistral_home(&mock);
    let output = home
        .ours()
        .args(["--no-session", "--provider", "mistral", "-p", "hi"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        text(&output.stderr)
            .contains("--provider mistral needs MISTRAL_API_KEY, which is not set."),
        "{}",
        text(&output.stderr)
    );
    assert!(mock.requests().is_empty());
}
