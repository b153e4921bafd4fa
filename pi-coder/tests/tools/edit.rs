use serde_json::json;

use crate::{call, err_text, ok_text, project, write_file};

fn edit_args(path: &str, edits: &[(&str, &str)]) -> serde_json::Value {
    let edits: Vec<_> = edits
        .iter()
        .map(|(old, new)| json!({"oldText": old, "newText": new}))
        .collect();
    json!({"path": path, "edits": edits})
}

#[tokio::test]
async fn a_replacement_reports_pis_diff() {
    let (dir, tools) = project();
    write_file(dir.path(), "a.txt", "line1\nline2\nline3\n");
    let result = call(&tools, "edit", edit_args("a.txt", &[("line2", "LINE2")])).await;
    assert_eq!(
        ok_text(&result),
        "Successfully replaced 1 block(s) in a.txt."
    );
    assert_eq!(
        result.details,
        json!({"diff": " 1 line1\n-2 line2\n+2 LINE2\n 3 line3", "firstChangedLine": 2})
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "line1\nLINE2\nline3\n"
    );
}

#[tokio::test]
async fn several_edits_match_the_original_file() {
    let (dir, tools) = project();
    write_file(dir.path(), "a.txt", "alpha\nbeta\ngamma\n");
    let result = call(
        &tools,
        "edit",
        edit_args("a.txt", &[("gamma", "alpha"), ("alpha", "ALPHA")]),
    )
    .await;
    assert_eq!(
        ok_text(&result),
        "Successfully replaced 2 block(s) in a.txt."
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "ALPHA\nbeta\nalpha\n"
    );
}

#[tokio::test]
async fn errors_read_like_pi() {
    let (dir, tools) = project();
    write_file(dir.path(), "a.txt", "one two one\nthree\n");
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (
            edit_args("a.txt", &[("four", "4")]),
            "Could not find the exact text in a.txt. The old text must match exactly including all whitespace and newlines.",
        ),
        (
            edit_args("a.txt", &[("two", "2"), ("four", "4")]),
            "Could not find edits[1] in a.txt. The oldText must match exactly including all whitespace and newlines.",
        ),
        (
            edit_args("a.txt", &[("one", "1")]),
            "Found 2 occurrences of the text in a.txt. The text must be unique. Please provide more context to make it unique.",
        ),
        (
            edit_args("a.txt", &[("three", "3"), ("one", "1")]),
            "Found 2 occurrences of edits[1] in a.txt. Each oldText must be unique. Please provide more context to make it unique.",
        ),
        (
            edit_args("a.txt", &[("one two", "x"), ("two one", "y")]),
            "edits[0] and edits[1] overlap in a.txt. Merge them into one edit or target disjoint regions.",
        ),
        (
            edit_args("a.txt", &[("three", "three")]),
            "No changes made to a.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.",
        ),
        (
            edit_args("a.txt", &[("three", "three"), ("two", "two")]),
            "No changes made to a.txt. The replacements produced identical content.",
        ),
        (
            edit_args("a.txt", &[("", "x")]),
            "oldText must not be empty in a.txt.",
        ),
        (
            edit_args("a.txt", &[("two", "2"), ("", "x")]),
            "edits[1].oldText must not be empty in a.txt.",
        ),
        (
            json!({"path": "a.txt", "edits": []}),
            "Edit tool input is invalid. edits must contain at least one replacement.",
        ),
        (
            edit_args("missing.txt", &[("a", "b")]),
            "Could not edit file: missing.txt. Error code: ENOENT.",
        ),
    ];
    for (args, expected) in cases {
        let result = call(&tools, "edit", args.clone()).await;
        assert_eq!(err_text(&result), expected, "{args}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one two one\nthree\n"
    );
    let extra = call(
        &tools,
        "edit",
        json!({"path": "a.txt", "edits": [{"oldText": "two", "newText": "2", "extra": 1}]}),
    )
    .await;
    assert!(err_text(&extra).starts_with("Validation failed for tool \"edit\""));
}

#[tokio::test]
async fn bom_and_crlf_survive_an_lf_edit() {
    let (dir, tools) = project();
    write_file(
        dir.path(),
        "win.txt",
        "\u{FEFF}first\r\nsecond\r\nthird\r\n",
    );
    let result = call(
        &tools,
        "edit",
        edit_args("win.txt", &[("first\nsecond", "FIRST\nSECOND")]),
    )
    .await;
    ok_text(&result);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("win.txt")).unwrap(),
        "\u{FEFF}FIRST\r\nSECOND\r\nthird\r\n"
    );
}

#[tokio::test]
async fn fuzzy_matching_forgives_quotes_dashes_and_trailing_spaces() {
    let (dir, tools) = project();
    write_file(
        dir.path(),
        "q.txt",
        "say \u{201C}hello\u{201D} \u{2014} now   \nnext\n",
    );
    let result = call(
        &tools,
        "edit",
        edit_args("q.txt", &[("say \"hello\" - now", "say hi")]),
    )
    .await;
    ok_text(&result);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("q.txt")).unwrap(),
        "say hi\nnext\n"
    );
}

#[tokio::test]
async fn legacy_and_stringified_arguments_are_accepted() {
    let (dir, tools) = project();
    write_file(dir.path(), "a.txt", "abc\n");
    let result = call(
        &tools,
        "edit",
        json!({"path": "a.txt", "oldText": "b", "newText": "B"}),
    )
    .await;
    ok_text(&result);
    let result = call(
        &tools,
        "edit",
        json!({"path": "a.txt", "edits": "[{\"oldText\":\"c\",\"newText\":\"C\"}]"}),
    )
    .await;
    ok_text(&result);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "aBC\n"
    );
}

#[tokio::test]
async fn concurrent_edits_to_one_file_are_serialized() {
    let (dir, tools) = project();
    let original: String = (0..24).map(|i| format!("marker-{i}\n")).collect();
    write_file(dir.path(), "shared.txt", &original);
    let calls = (0..24).map(|i| {
        let tools = tools.clone();
        tokio::spawn(async move {
            call(
                &tools,
                "edit",
                edit_args(
                    "shared.txt",
                    &[(&format!("marker-{i}\n"), &format!("done-{i}\n"))],
                ),
            )
            .await
        })
    });
    for handle in calls.collect::<Vec<_>>() {
        ok_text(&handle.await.unwrap());
    }
    let expected: String = (0..24).map(|i| format!("done-{i}\n")).collect();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("shared.txt")).unwrap(),
        expected
    );
}

#[tokio::test]
async fn an_unknown_top_level_key_is_refused_like_pi() {
    let (dir, tools) = project();
    write_file(dir.path(), "a.txt", "one\n");
    let mut args = edit_args("a.txt", &[("one", "two")]);
    args["path_hint"] = json!("a.txt");
    let result = call(&tools, "edit", args).await;
    assert!(
        err_text(&result).contains("  - path_hint: unknown property (did you mean \"path\"?)\n"),
        "{}",
        err_text(&result)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one\n"
    );
}
