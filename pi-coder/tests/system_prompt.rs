//! The system prompt and the context files against pi 0.73.1's own `buildSystemPrompt` and
//! `loadProjectContextFiles` (recorded by `system_prompt/pi-0.73.1/record.mjs`).

use std::path::{Path, PathBuf};

use pi_coder::system_prompt::{ContextFile, PromptParts, build, load_context_files};
use serde_json::Value;

fn recording() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/system_prompt/pi-0.73.1/prompts.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// pi's prompt without its "Pi documentation" section, which points into pi's npm package.
fn without_pi_docs(prompt: &str) -> String {
    let Some(start) = prompt.find("\n\nPi documentation (") else {
        return prompt.to_owned();
    };
    let end_marker = "(e.g., tui.md for TUI API details)";
    let end = prompt.find(end_marker).unwrap() + end_marker.len();
    format!("{}{}", &prompt[..start], &prompt[end..])
}

#[test]
fn prompts_match_pi_for_each_tool_set() {
    let recording = recording();
    for case in recording["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let expected = without_pi_docs(case["prompt"].as_str().unwrap());
        let date = expected
            .rsplit_once("\nCurrent date: ")
            .unwrap()
            .1
            .lines()
            .next()
            .unwrap()
            .to_owned();
        let tools: Vec<&str> = case["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        let context_files = case["contextFiles"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| ContextFile {
                path: PathBuf::from(f["path"].as_str().unwrap()),
                content: f["content"].as_str().unwrap().to_owned(),
            })
            .collect();
        let parts = PromptParts {
            custom: case["customPrompt"].as_str().map(str::to_owned),
            append: case["appendSystemPrompt"]
                .as_str()
                .map(|a| vec![a.to_owned()])
                .unwrap_or_default(),
            context_files,
            date: Some(date),
        };
        let ours = build(&tools, Path::new("/home/user/project"), &parts);
        assert_eq!(ours, expected, "case {name}");
    }
}

#[test]
fn context_files_are_found_as_pi_finds_them() {
    let recording = recording();
    let discovery = &recording["discovery"];
    let base = tempfile::tempdir().unwrap();
    let base = base.path().canonicalize().unwrap();
    for (path, text) in [
        ("agent/AGENTS.md", "global"),
        ("repo/AGENTS.md", "repo agents"),
        ("repo/CLAUDE.md", "repo claude (AGENTS.md wins)"),
        ("repo/crates/CLAUDE.md", "crate claude"),
        ("repo/crates/core/src/.keep", ""),
        ("repo/crates/core/AGENTS.MD", "upper-case name"),
    ] {
        let path = base.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut warnings = Vec::new();
    let found: Vec<Value> = load_context_files(
        &base.join(discovery["agentDir"].as_str().unwrap()),
        &base.join(discovery["cwd"].as_str().unwrap()),
        |w| warnings.push(w),
    )
    .into_iter()
    .filter(|f| f.path.starts_with(&base))
    .map(|f| {
        serde_json::json!({
            "path": f.path.strip_prefix(&base).unwrap().display().to_string(),
            "content": f.content,
        })
    })
    .collect();
    assert_eq!(Value::Array(found), discovery["files"]);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn an_unreadable_context_file_is_skipped_with_a_warning_and_the_next_name_tried() {
    let dir = tempfile::tempdir().unwrap();
    // A directory named AGENTS.md exists but cannot be read as a file: pi warns and tries the
    // next name.
    std::fs::create_dir_all(dir.path().join("AGENTS.md")).unwrap();
    std::fs::write(dir.path().join("CLAUDE.md"), "claude").unwrap();
    let mut warnings = Vec::new();
    let found = load_context_files(&dir.path().join("none"), dir.path(), |w| warnings.push(w));
    let ours: Vec<_> = found
        .iter()
        .filter(|f| f.path.starts_with(dir.path()))
        .collect();
    assert_eq!(ours.len(), 1, "{found:?}");
    assert!(ours[0].path.ends_with("CLAUDE.md"), "{found:?}");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("Could not read "), "{warnings:?}");
}
