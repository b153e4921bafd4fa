//! pi's flags and print mode through the binary: the two-letter short forms, `-v`,
//! `--list-models`, `--export`, the package commands, piped stdin merged into the prompt,
//! `@file` arguments inlined, and only the last answer on stdout.

use serde_json::json;

use super::mock::Mock;
use super::{Home, run_with_stdin, text};

#[test]
fn short_forms_version_list_models_and_packages() {
    let mock = Mock::start();
    let home = Home::new(&mock, json!({}));
    std::fs::write(home.project.join("AGENTS.md"), "CONTEXT-FILE-MARKER").unwrap();
    let output = home.ours().arg("-v").output().unwrap();
    assert!(output.status.success());
    assert!(
        text(&output.stdout).starts_with("pi "),
        "{}",
        text(&output.stdout)
    );

    let output = home.ours().arg("--list-models").output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "provider  model       context  max-out  thinking  images\nmock      mock-model  128K     16.4K    no        no    \n"
    );
    let output = home
        .ours()
        .args(["--list-models", "nothing-like-it"])
        .output()
        .unwrap();
    assert_eq!(
        text(&output.stdout),
        "No models matching \"nothing-like-it\"\n"
    );

    let base = [
        "--no-session",
        "--provider",
        "mock",
        "--model",
        "mock-model",
    ];
    let output = home
        .ours()
        .args(base)
        .args(["-nc", "-nt", "-p", "x"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let request = &mock.requests()[0];
    assert!(!request.system().contains("CONTEXT-FILE-MARKER"), "-nc");
    assert!(request.body.get("tools").is_none(), "-nt");
    assert!(request.system().contains("Available tools:\n(none)"));
    let output = home.ours().args(base).args(["-p", "x"]).output().unwrap();
    assert!(output.status.success());
    assert!(mock.requests()[1].system().contains("CONTEXT-FILE-MARKER"));

    for command in ["install", "list"] {
        let output = home
            .ours()
            .args([command, "npm:some-ext"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1));
        assert!(
            text(&output.stderr).starts_with(&format!(
                "pi: packages are not supported: `pi {command}` manages pi's TypeScript extensions"
            )),
            "{}",
            text(&output.stderr)
        );
    }
    assert_eq!(mock.requests().len(), 2, "nothing was sent to the model");
    let output = home
        .ours()
        .args(base)
        .args(["-e", "ext.ts", "-p", "x"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("--extension"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn print_mode_merges_stdin_inlines_files_and_prints_only_the_last_answer() {
    let mock = Mock::start();
    let home = Home::new(&mock, json!({}));
    let base = [
        "--no-session",
        "--provider",
        "mock",
        "--model",
        "mock-model",
    ];
    // Piped stdin comes first, joined to the prompt as pi joins them (with nothing between).
    let output = run_with_stdin(
        home.ours().args(base).args(["-p", "summarize this"]),
        "PIPED\n",
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "MOCK TEXT: PIPEDsummarize this\n");
    // Only stdin, no prompt argument, no -p: stdin is the prompt, print mode.
    let output = run_with_stdin(home.ours().args(base), "just stdin\n");
    assert_eq!(text(&output.stdout), "MOCK TEXT: just stdin\n");
    // `@file` is inlined before the first prompt.
    let output = home
        .ours()
        .args(base)
        .args(["-p", "@notes.txt", "summarize"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let sent = mock.requests().last().unwrap().conversation();
    assert_eq!(
        sent.last().unwrap().1,
        format!(
            "<file name=\"{}\">\nhello from notes\n\n</file>\nsummarize",
            home.project.join("notes.txt").display()
        )
    );
    let output = home
        .ours()
        .args(base)
        .args(["-p", "@missing.txt", "x"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        format!(
            "Error: File not found: {}\n",
            home.project.join("missing.txt").display()
        )
    );
    // Text between tool calls goes nowhere; the last answer alone is on stdout.
    let output = home
        .ours()
        .args(base)
        .args(["-p", "READ notes.txt"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(
        text(&output.stdout),
        "MOCK FINAL: the tool said: hello from notes\n\n"
    );
    assert!(text(&output.stderr).contains("● read notes.txt"));
    assert!(!text(&output.stderr).contains("Let me look."));
    // A model error: its message on stderr, status 1.
    mock.overflow_above(10);
    let output = home.ours().args(base).args(["-p", "x"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("maximum context length is 8192 tokens"),
        "{}",
        text(&output.stderr)
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn export_writes_the_session_as_html() {
    let mock = Mock::start();
    let home = Home::new(&mock, json!({}));
    let output = home
        .ours()
        .args([
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-p",
            "fix <this>",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let file = home.session_files().pop().unwrap();
    let output = home
        .ours()
        .arg("--export")
        .arg(&file)
        .arg("out.html")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Exported to: out.html\n");
    let html = std::fs::read_to_string(home.project.join("out.html")).unwrap();
    assert!(html.contains("fix &lt;this&gt;") && html.contains("MOCK TEXT: fix &lt;this&gt;"));
    // Without an output name: pi's.
    let output = home.ours().arg("--export").arg(&file).output().unwrap();
    let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        text(&output.stdout),
        format!("Exported to: pi-session-{stem}.html\n")
    );
    assert!(
        home.project
            .join(format!("pi-session-{stem}.html"))
            .exists()
    );
}
