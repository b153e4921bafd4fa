use serde_json::json;

use crate::{call, confined_project, err_text, ok_text, project};

#[tokio::test]
async fn writes_create_parents_and_report_real_bytes() {
    let (dir, tools) = project();
    let result = call(
        &tools,
        "write",
        json!({"path": "deep/er/h.txt", "content": "héllo"}),
    )
    .await;
    assert_eq!(
        ok_text(&result),
        "Successfully wrote 6 bytes to deep/er/h.txt"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("deep/er/h.txt")).unwrap(),
        "héllo"
    );
    let result = call(
        &tools,
        "write",
        json!({"path": "deep/er/h.txt", "content": ""}),
    )
    .await;
    assert_eq!(
        ok_text(&result),
        "Successfully wrote 0 bytes to deep/er/h.txt"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("deep/er/h.txt")).unwrap(),
        ""
    );
}

#[tokio::test]
async fn filesystem_errors_pass_through() {
    let (dir, tools) = project();
    std::fs::write(dir.path().join("file"), "x").unwrap();
    let result = call(
        &tools,
        "write",
        json!({"path": "file/child.txt", "content": "x"}),
    )
    .await;
    let text = err_text(&result);
    assert!(
        text.starts_with("EEXIST: ") || text.starts_with("ENOTDIR: "),
        "{text}"
    );
}

#[tokio::test]
async fn confined_writes_cannot_escape_even_through_a_dangling_symlink() {
    let (dir, tools) = confined_project();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("planted.txt");
    std::os::unix::fs::symlink(&target, dir.path().join("trap.txt")).unwrap();
    let result = call(&tools, "write", json!({"path": "trap.txt", "content": "x"})).await;
    assert!(err_text(&result).contains("is outside the working directory"));
    assert!(!target.exists());
    let result = call(
        &tools,
        "write",
        json!({"path": "../escape.txt", "content": "x"}),
    )
    .await;
    assert!(err_text(&result).contains("is outside the working directory"));
    let result = call(
        &tools,
        "write",
        json!({"path": "new/inside.txt", "content": "ok"}),
    )
    .await;
    ok_text(&result);
}
