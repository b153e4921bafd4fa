//! Behaviour and texts of the seven built-in tools, on real files and processes in temp dirs.

mod bash;
mod edit;
mod pi_outputs;
mod read;
mod search;
mod write;

use std::path::Path;
use std::sync::{Arc, Mutex};

use pi_coder::{Workspace, coding_tools};
use pi_tool::{CancellationToken, ToolCall, ToolRegistry, ToolResult};
use serde_json::Value;
use tempfile::TempDir;

/// A temporary project and the seven tools on it (not confined).
pub(crate) fn project() -> (TempDir, ToolRegistry) {
    let dir = tempfile::tempdir().expect("temp dir");
    let tools = coding_tools(Workspace::new(dir.path()).with_temp_dir(dir.path()));
    (dir, tools)
}

/// A temporary project and the seven tools confined to it.
pub(crate) fn confined_project() -> (TempDir, ToolRegistry) {
    let dir = tempfile::tempdir().expect("temp dir");
    let tools = coding_tools(
        Workspace::new(dir.path())
            .confined(true)
            .with_temp_dir(dir.path()),
    );
    (dir, tools)
}

pub(crate) async fn call(tools: &ToolRegistry, name: &str, args: Value) -> ToolResult {
    tools.run(&ToolCall::new("call-1", name, args)).await
}

/// Runs a call with an abort signal and collects its streamed updates.
pub(crate) async fn call_streaming(
    tools: &ToolRegistry,
    name: &str,
    args: Value,
    signal: CancellationToken,
) -> (ToolResult, Arc<Mutex<Vec<ToolResult>>>) {
    let updates = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&updates);
    let ctx = tools
        .context("call-1")
        .with_signal(signal)
        .with_updates(Arc::new(move |update| {
            sink.lock().expect("updates").push(update)
        }));
    let result = tools
        .run_with(&ToolCall::new("call-1", name, args), ctx)
        .await;
    (result, updates)
}

pub(crate) fn write_file(dir: &Path, name: &str, content: impl AsRef<[u8]>) {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, content).expect("write");
}

/// Asserts a successful result and returns its text.
#[track_caller]
pub(crate) fn ok_text(result: &ToolResult) -> String {
    assert!(
        !result.is_error,
        "expected success, got error: {}",
        result.text_content()
    );
    result.text_content()
}

/// Asserts an error result and returns its text.
#[track_caller]
pub(crate) fn err_text(result: &ToolResult) -> String {
    assert!(
        result.is_error,
        "expected an error, got: {}",
        result.text_content()
    );
    result.text_content()
}

#[test]
fn parameter_names_and_sets_match_pi() {
    let (_dir, tools) = project();
    let names: Vec<&str> = tools.names().collect();
    assert_eq!(
        names,
        ["bash", "edit", "find", "grep", "ls", "read", "write"]
    );
    let props = |tool: &str| -> Vec<String> {
        let spec = tools.get(tool).expect("tool").spec().clone();
        spec.parameters["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(
        props("grep"),
        [
            "pattern",
            "path",
            "glob",
            "ignoreCase",
            "literal",
            "context",
            "limit"
        ]
    );
    assert_eq!(props("read"), ["path", "offset", "limit"]);
    assert_eq!(props("bash"), ["command", "timeout"]);
    let edit = tools.get("edit").expect("edit").spec().clone();
    let item = &edit.parameters["properties"]["edits"]["items"];
    assert_eq!(item["required"], serde_json::json!(["oldText", "newText"]));
    assert_eq!(item["additionalProperties"], Value::Bool(false));
    assert!(
        edit.description
            .starts_with("Edit a single file using exact text replacement.")
    );
    assert_eq!(
        tools.get("read").expect("read").spec().parameters["properties"]["offset"]["description"],
        "Line number to start reading from (1-indexed)"
    );
    let default: Vec<String> = pi_coder::default_tools(Workspace::new("/"))
        .names()
        .map(str::to_owned)
        .collect();
    assert_eq!(default, ["bash", "edit", "read", "write"]);
    let read_only: Vec<String> = pi_coder::read_only_tools(Workspace::new("/"))
        .names()
        .map(str::to_owned)
        .collect();
    assert_eq!(read_only, ["find", "grep", "ls", "read"]);
}

#[tokio::test]
async fn a_registry_without_a_workspace_says_what_is_missing() {
    let tools = ToolRegistry::new().with(pi_coder::LsTool);
    let result = call(&tools, "ls", serde_json::json!({})).await;
    assert!(err_text(&result).contains("Workspace"));
}
