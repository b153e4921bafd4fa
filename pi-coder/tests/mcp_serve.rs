//! `pi mcp serve`: the seven coding tools over MCP (stdio), with their annotations, working in
//! `--cwd` and honouring `--confine`. Driven by rmcp's client against the real `pi` binary.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

async fn serve(cwd: &std::path::Path, confine: bool) -> RunningService<rmcp::RoleClient, ()> {
    serve_with(cwd, confine, None).await
}

/// [`serve`] with `TMPDIR` set for the server, when `temp` is given.
async fn serve_with(
    cwd: &std::path::Path,
    confine: bool,
    temp: Option<&std::path::Path>,
) -> RunningService<rmcp::RoleClient, ()> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"));
    command.args(["mcp", "serve", "--cwd"]).arg(cwd);
    if let Some(temp) = temp {
        command.env("TMPDIR", temp);
    }
    if confine {
        command.arg("--confine");
    }
    command.stderr(std::process::Stdio::null());
    ().serve(TokioChildProcess::new(command).expect("spawn pi"))
        .await
        .expect("pi mcp serve answers the handshake")
}

async fn call(
    client: &RunningService<rmcp::RoleClient, ()>,
    name: &'static str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name).with_arguments(JsonObject::from_iter(args)))
        .await
        .expect("tools/call")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_the_seven_tools_annotated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let client = serve(dir.path(), false).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["bash", "edit", "find", "grep", "ls", "read", "write"]
    );
    for tool in &tools {
        let hints = tool
            .annotations
            .as_ref()
            .expect("every coding tool is annotated");
        let read_only = matches!(tool.name.as_ref(), "read" | "grep" | "find" | "ls");
        assert_eq!(hints.read_only_hint, Some(read_only), "{}", tool.name);
        if !read_only {
            assert_eq!(hints.destructive_hint, Some(true), "{}", tool.name);
        }
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
    }
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_work_in_cwd_and_confine_keeps_them_there() {
    let dir = tempfile::tempdir().expect("temp dir");
    let client = serve(dir.path(), true).await;

    let written = call(
        &client,
        "write",
        json!({"path": "notes.txt", "content": "hello\n"}),
    )
    .await;
    assert_eq!(written.is_error, Some(false), "{}", text(&written));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).expect("written in --cwd"),
        "hello\n"
    );
    let read = call(&client, "read", json!({"path": "notes.txt"})).await;
    assert_eq!(text(&read), "hello\n");
    let listed = call(&client, "ls", json!({})).await;
    assert_eq!(text(&listed), "notes.txt");

    let outside = call(&client, "read", json!({"path": "/etc/hostname"})).await;
    assert_eq!(outside.is_error, Some(true), "{}", text(&outside));

    let invalid = call(&client, "read", json!({"path": 5, "limit": "x"})).await;
    assert_eq!(invalid.is_error, Some(true));
    assert!(
        text(&invalid).starts_with("Validation failed for tool \"read\":"),
        "{}",
        text(&invalid)
    );
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_runs_in_the_workspace_write_sandbox() {
    // Both outside the temporary directory, which the sandbox may write: the server gets one
    // of its own, so that `outside` stays outside wherever the target folder is.
    let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir_in(base).expect("temp dir");
    let outside = tempfile::tempdir_in(base).expect("temp dir");
    let temp = tempfile::tempdir_in(base).expect("temp dir");
    let client = serve_with(dir.path(), false, Some(temp.path())).await;
    let command = format!(
        "touch inside; touch {}/escaped; echo done",
        outside.path().display()
    );
    let result = call(&client, "bash", json!({ "command": command })).await;
    assert!(text(&result).ends_with("done\n"), "{}", text(&result));
    assert!(dir.path().join("inside").exists());
    assert!(!outside.path().join("escaped").exists());
    client.cancel().await.expect("close");
}
