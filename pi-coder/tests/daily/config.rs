//! pi's configuration through the binary: `models.json` (a custom provider, its key sent as pi
//! sends it), `settings.json` (default model, thinking level, session directory), thinking
//! levels per request, `.pi/SYSTEM.md` and `APPEND_SYSTEM.md`, `PI_CODING_AGENT_SESSION_DIR`,
//! and `--session` / `--fork` with a partial session id.

use serde_json::json;

use super::mock::Mock;
use super::{Home, lines, text};

#[test]
fn models_json_and_settings_choose_the_model_and_the_request_is_pi_s() {
    let mock = Mock::start();
    let home = Home::new(&mock, json!({"reasoning": true}));
    home.settings(json!({"defaultProvider": "mock", "defaultModel": "mock-model"}));
    // No model flag at all: settings.json's default, the key from models.json.
    let output = home
        .ours()
        .args(["--no-session", "-p", "hello"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "MOCK TEXT: hello\n");
    let request = &mock.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some("Bearer MOCK_KEY_LITERAL")
    );
    let body = &request.body;
    assert_eq!(body["model"], "mock-model");
    assert_eq!(body["store"], false);
    assert_eq!(body["max_completion_tokens"], 16384);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    // A reasoning model: the system prompt as `developer`, pi's default thinking level.
    assert_eq!(body["messages"][0]["role"], "developer");
    assert_eq!(body["reasoning_effort"], "medium");

    let effort = |args: &[&str]| {
        mock.clear();
        let output = home
            .ours()
            .args(["--no-session", "--provider", "mock"])
            .args(args)
            .args(["-p", "x"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        let body = mock.requests()[0].body.clone();
        assert_eq!(
            body["model"], "mock-model",
            "the level is not part of the id"
        );
        body.get("reasoning_effort").cloned()
    };
    assert_eq!(
        effort(&["--model", "mock-model", "--thinking", "high"]),
        Some(json!("high"))
    );
    assert_eq!(effort(&["--model", "mock-model:low"]), Some(json!("low")));
    assert_eq!(
        effort(&["--model", "mock-model:low", "--thinking", "minimal"]),
        Some(json!("minimal")),
        "--thinking beats the suffix"
    );
    assert_eq!(
        effort(&["--model", "mock-model", "--thinking", "xhigh"]),
        Some(json!("high")),
        "xhigh is clamped to high for a model whose map does not name it"
    );
    assert_eq!(
        effort(&["--model", "mock-model", "--thinking", "off"]),
        None
    );
    home.settings(json!({"defaultThinkingLevel": "low"}));
    assert_eq!(effort(&["--model", "mock-model"]), Some(json!("low")));
    let output = home
        .ours()
        .args([
            "--no-session",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--thinking",
            "max",
            "-p",
            "x",
        ])
        .output()
        .unwrap();
    assert!(
        text(&output.stderr).contains(
            "Warning: Invalid thinking level \"max\". Valid values: off, minimal, low, medium, high, xhigh"
        ),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_model_that_does_not_reason_gets_no_thinking_and_unknown_names_are_said() {
    let mock = Mock::start();
    let home = Home::new(&mock, json!({}));
    let output = home
        .ours()
        .args(["--no-session", "--model", "mock/mock-model:high", "-p", "x"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let body = &mock.requests()[0].body;
    assert_eq!(body["model"], "mock-model");
    assert!(body.get("reasoning_effort").is_none());
    assert_eq!(body["messages"][0]["role"], "system");
    let output = home
        .ours()
        .args(["--no-session", "--model", "mock/nope", "-p", "x"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(
        text(&output.stderr).contains(
            "Warning: Model \"nope\" not found for provider \"mock\". Using custom model id."
        ),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(mock.requests().last().unwrap().body["model"], "nope");
    let output = home
        .ours()
        .args(["--no-session", "--provider", "nope", "-p", "x"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("unknown provider \"nope\": use one of openai, anthropic, google, mistral, openai-compatible, amazon-bedrock, azure-openai-responses, google-vertex, google-vertex-anthropic, mock."),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn system_md_replaces_the_prompt_and_append_system_md_extends_it() {
    let mock = Mock::start();
    let home = Home::new(&mock, json!({}));
    std::fs::create_dir_all(home.project.join(".pi")).unwrap();
    std::fs::write(home.project.join(".pi/SYSTEM.md"), "PROJECT-SYSTEM-MARKER").unwrap();
    std::fs::write(
        home.agent_dir().join("APPEND_SYSTEM.md"),
        "GLOBAL-APPEND-MARKER",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        mock.clear();
        let output = home
            .ours()
            .args([
                "--no-session",
                "--provider",
                "mock",
                "--model",
                "mock-model",
            ])
            .args(extra)
            .args(["-p", "x"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        mock.requests()[0].system()
    };
    let system = run(&[]);
    assert!(
        system.starts_with("PROJECT-SYSTEM-MARKER\n\nGLOBAL-APPEND-MARKER"),
        "{system}"
    );
    assert!(
        !system.contains("You are an expert coding assistant"),
        "{system}"
    );
    assert!(system.contains("\nCurrent working directory: "));
    // The flags beat the files.
    let system = run(&[
        "--system-prompt",
        "FLAG-PROMPT",
        "--append-system-prompt",
        "FLAG-APPEND",
    ]);
    assert!(system.starts_with("FLAG-PROMPT\n\nFLAG-APPEND"), "{system}");
    assert!(!system.contains("MARKER"), "{system}");
}

#[test]
fn sessions_go_where_pi_s_variable_says_and_partial_ids_find_them() {
    let mock = Mock::start();
    let home = Home::new(&mock, json!({}));
    let elsewhere = home.home.path().join("sessions-here");
    let ours = || {
        let mut command = home.ours();
        command
            .args(["--provider", "mock", "--model", "mock-model"])
            .env("PI_CODING_AGENT_SESSION_DIR", &elsewhere);
        command
    };
    let output = ours().args(["-p", "first"]).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let files: Vec<_> = std::fs::read_dir(&elsewhere)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    assert!(
        home.session_files().is_empty(),
        "not in pi's default directory"
    );
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    // pi's file name: `<ISO time>_<uuid v7>.jsonl`.
    let (stamp, id) = name.trim_end_matches(".jsonl").split_once('_').unwrap();
    assert_eq!(stamp.len(), "2026-12-01T12-31-57-049Z".len(), "{name}");
    assert_eq!(&id[14..15], "7", "a version 7 uuid: {id}");
    assert_eq!(lines(&files[0])[0]["id"], id);

    // `--session <the start of the id>` continues it, as pi looks ids up.
    let output = ours()
        .args(["--session", &id[..13], "-p", "second"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let conversation = mock.requests().last().unwrap().conversation();
    assert_eq!(conversation.len(), 3, "{conversation:?}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 1);
    let output = ours()
        .args(["--session", "zzzz", "-p", "x"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(text(&output.stderr), "No session found matching 'zzzz'\n");

    // `--fork <id>` continues a copy, which names its parent.
    let output = ours()
        .args(["--fork", &id[..13], "-p", "third"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mut files: Vec<_> = std::fs::read_dir(&elsewhere)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.retain(|f| f.file_name().unwrap().to_string_lossy() != name);
    assert_eq!(files.len(), 1);
    let header = &lines(&files[0])[0];
    assert_eq!(
        header["parentSession"]
            .as_str()
            .map(std::path::PathBuf::from),
        Some(elsewhere.join(&name))
    );
    assert_eq!(mock.requests().last().unwrap().conversation().len(), 5);
    let output = ours()
        .args(["--fork", &id[..13], "-c", "-p", "x"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "Error: --fork cannot be combined with --continue\n"
    );
}
