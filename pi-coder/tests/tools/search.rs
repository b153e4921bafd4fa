use serde_json::json;

use crate::{call, confined_project, err_text, ok_text, project, write_file};

fn sample() -> (tempfile::TempDir, pi_tool::ToolRegistry) {
    let (dir, tools) = project();
    write_file(dir.path(), "a.txt", "alpha\nHello world\ngamma\n");
    write_file(dir.path(), "src/lib.rs", "fn hello() {}\nfn other() {}\n");
    write_file(dir.path(), "src/nested/deep.rs", "// hello again\n");
    write_file(dir.path(), ".hidden/secret.txt", "hello hidden\n");
    write_file(dir.path(), ".gitignore", "ignored/\n*.log\n");
    write_file(dir.path(), "ignored/x.txt", "hello ignored\n");
    write_file(dir.path(), "debug.log", "hello log\n");
    write_file(dir.path(), ".git/config", "hello git\n");
    write_file(dir.path(), "bin.dat", b"hello\0binary\n");
    (dir, tools)
}

#[tokio::test]
async fn grep_formats_matches_and_respects_gitignore_in_a_git_repository() {
    // `.git/config` makes the folder a git repository, so `.gitignore` applies (as in `rg`).
    let (_dir, tools) = sample();
    let result = call(&tools, "grep", json!({"pattern": "hello"})).await;
    assert_eq!(
        ok_text(&result),
        ".hidden/secret.txt:1: hello hidden\nsrc/lib.rs:1: fn hello() {}\nsrc/nested/deep.rs:1: // hello again"
    );
    let result = call(
        &tools,
        "grep",
        json!({"pattern": "hello", "ignoreCase": true, "glob": "*.txt"}),
    )
    .await;
    assert_eq!(
        ok_text(&result),
        ".hidden/secret.txt:1: hello hidden\na.txt:2: Hello world"
    );
    let result = call(
        &tools,
        "grep",
        json!({"pattern": "hello", "path": "a.txt", "ignoreCase": true}),
    )
    .await;
    assert_eq!(ok_text(&result), "a.txt:2: Hello world");
    let result = call(&tools, "grep", json!({"pattern": "nothing-like-this"})).await;
    assert_eq!(ok_text(&result), "No matches found");
}

#[tokio::test]
async fn grep_literal_context_and_limits() {
    let (dir, tools) = project();
    write_file(dir.path(), "f.txt", "a.c\nabc\nx\ny\nabc\n");
    let result = call(&tools, "grep", json!({"pattern": "a.c", "literal": true})).await;
    assert_eq!(ok_text(&result), "f.txt:1: a.c");
    let result = call(&tools, "grep", json!({"pattern": "x", "context": 1})).await;
    assert_eq!(ok_text(&result), "f.txt-2- abc\nf.txt:3: x\nf.txt-4- y");
    let result = call(&tools, "grep", json!({"pattern": "a.c", "limit": 2})).await;
    assert_eq!(
        ok_text(&result),
        "f.txt:1: a.c\nf.txt:2: abc\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
    );
    assert_eq!(result.details, json!({"matchLimitReached": 2}));
    write_file(
        dir.path(),
        "long.txt",
        format!("needle {}\n", "z".repeat(600)),
    );
    let result = call(&tools, "grep", json!({"pattern": "needle"})).await;
    let out = ok_text(&result);
    assert!(
        out.starts_with(&format!(
            "long.txt:1: needle {}... [truncated]",
            "z".repeat(493)
        )),
        "{out}"
    );
    assert!(
        out.ends_with("\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]")
    );
}

#[tokio::test]
async fn grep_errors() {
    let (dir, tools) = project();
    let result = call(&tools, "grep", json!({"pattern": "x", "path": "nowhere"})).await;
    assert_eq!(
        err_text(&result),
        format!("Path not found: {}", dir.path().join("nowhere").display())
    );
    let result = call(&tools, "grep", json!({"pattern": "(unclosed"})).await;
    assert!(
        err_text(&result).contains("unclosed"),
        "{}",
        result.text_content()
    );
}

#[tokio::test]
async fn grep_output_is_capped_at_50kb() {
    let (dir, tools) = project();
    let body: String = (0..2000)
        .map(|i| format!("match line {i:04} {}\n", "p".repeat(40)))
        .collect();
    write_file(dir.path(), "big.txt", body);
    let result = call(&tools, "grep", json!({"pattern": "match", "limit": 5000})).await;
    let out = ok_text(&result);
    assert!(
        out.ends_with("\n\n[50.0KB limit reached]"),
        "{}",
        &out[out.len() - 60..]
    );
    assert_eq!(result.details["truncation"]["truncatedBy"], "bytes");
}

#[tokio::test]
async fn find_matches_names_and_paths_like_fd() {
    let (_dir, tools) = sample();
    let result = call(&tools, "find", json!({"pattern": "*.rs"})).await;
    assert_eq!(ok_text(&result), "src/lib.rs\nsrc/nested/deep.rs");
    let result = call(&tools, "find", json!({"pattern": "src/*.rs"})).await;
    assert_eq!(ok_text(&result), "src/lib.rs");
    let result = call(&tools, "find", json!({"pattern": "nest*"})).await;
    assert_eq!(ok_text(&result), "src/nested/");
    let result = call(&tools, "find", json!({"pattern": "*.txt"})).await;
    assert_eq!(ok_text(&result), ".hidden/secret.txt\na.txt");
    let result = call(&tools, "find", json!({"pattern": "*", "limit": 2})).await;
    assert_eq!(
        ok_text(&result),
        ".gitignore\n.hidden/\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    );
    let result = call(&tools, "find", json!({"pattern": "*.zig"})).await;
    assert_eq!(ok_text(&result), "No files found matching pattern");
    let result = call(
        &tools,
        "find",
        json!({"pattern": "*.rs", "path": "src/nested"}),
    )
    .await;
    assert_eq!(ok_text(&result), "deep.rs");
}

#[tokio::test]
async fn ls_lists_sorted_with_dotfiles_and_limits() {
    let (dir, tools) = project();
    write_file(dir.path(), "a.txt", "");
    write_file(dir.path(), "big.txt", "");
    write_file(dir.path(), "Cap.txt", "");
    write_file(dir.path(), ".env", "");
    std::fs::create_dir(dir.path().join("dir")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("loop2"), dir.path().join("loop1")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("loop1"), dir.path().join("loop2")).unwrap();
    let result = call(&tools, "ls", json!({})).await;
    assert_eq!(ok_text(&result), ".env\na.txt\nbig.txt\nCap.txt\ndir/");
    let result = call(&tools, "ls", json!({"path": ".", "limit": 2})).await;
    assert_eq!(
        ok_text(&result),
        ".env\na.txt\n\n[2 entries limit reached. Use limit=4 for more]"
    );
    let result = call(&tools, "ls", json!({"path": "dir"})).await;
    assert_eq!(ok_text(&result), "(empty directory)");
    let result = call(&tools, "ls", json!({"path": "a.txt"})).await;
    assert_eq!(
        err_text(&result),
        format!("Not a directory: {}", dir.path().join("a.txt").display())
    );
    let result = call(&tools, "ls", json!({"path": "missing"})).await;
    assert_eq!(
        err_text(&result),
        format!("Path not found: {}", dir.path().join("missing").display())
    );
}

#[tokio::test]
async fn symlink_loops_do_not_hang_grep_or_find() {
    let (dir, tools) = project();
    write_file(dir.path(), "f.txt", "hit\n");
    std::fs::create_dir_all(dir.path().join("d")).unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("d/up")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("l2"), dir.path().join("l1")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("l1"), dir.path().join("l2")).unwrap();
    assert_eq!(
        ok_text(&call(&tools, "grep", json!({"pattern": "hit"})).await),
        "f.txt:1: hit"
    );
    assert_eq!(
        ok_text(&call(&tools, "find", json!({"pattern": "*"})).await),
        "d/\nd/up\nf.txt\nl1\nl2"
    );
}

#[tokio::test]
async fn confined_search_tools_refuse_outside_paths() {
    let (_dir, tools) = confined_project();
    for (name, args) in [
        ("grep", json!({"pattern": "x", "path": "/"})),
        ("find", json!({"pattern": "*", "path": ".."})),
        ("ls", json!({"path": "/etc"})),
    ] {
        let result = call(&tools, name, args).await;
        assert!(
            err_text(&result).contains("is outside the working directory"),
            "{name}"
        );
    }
}
