//! How `tool_search` ranks (issue 33): the cases a new user tried, whole names before words of
//! descriptions, Unicode forms and Chinese and Japanese text, `$ref`ed parameters, keywords an
//! application adds, and an application's own ranker.

use std::sync::Arc;

use pi_tool::{AgentTool, FnTool, RankQuery, Ranked, ToolRanker, ToolSearch};
use serde_json::{Value, json};

fn tool(name: &str, description: &str, parameters: Value) -> Arc<dyn AgentTool> {
    Arc::new(
        FnTool::builder(name, description, parameters)
            .deferred()
            .build(|_: Value, _| async { "ok" })
            .unwrap(),
    )
}

fn object(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

fn names(search: &ToolSearch, query: &str, limit: usize) -> Vec<String> {
    search
        .search(query, limit)
        .into_iter()
        .map(|m| m.name)
        .collect()
}

/// An email client's draft tools, described as such APIs describe them (none says "remove").
fn mail() -> Vec<Arc<dyn AgentTool>> {
    let id = object(json!({"draft_id": {"type": "string", "description": "The draft's id."}}));
    vec![
        tool(
            "create_draft",
            "Create a new draft email with a subject, recipients and a body.",
            object(
                json!({"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}}),
            ),
        ),
        tool(
            "delete_draft",
            "Immediately and permanently deletes the specified draft. Does not simply trash it.",
            id.clone(),
        ),
        tool("get_draft", "Gets the specified draft.", id.clone()),
        tool(
            "list_drafts",
            "Lists the drafts in the user's mailbox.",
            object(json!({"max_results": {"type": "integer"}})),
        ),
        tool(
            "send_draft",
            "Sends the specified, existing draft to its recipients.",
            id.clone(),
        ),
        tool("update_draft", "Replaces a draft's content.", id),
        tool(
            "send_email",
            "Send an email message to one or more recipients.",
            object(json!({"to": {"type": "string"}, "body": {"type": "string"}})),
        ),
        tool(
            "trash_message",
            "Moves the specified message to the trash.",
            object(json!({"message_id": {"type": "string"}})),
        ),
        tool(
            "archive_thread",
            "Archive a conversation thread, taking it out of the inbox.",
            object(json!({"thread_id": {"type": "string"}})),
        ),
    ]
}

/// A repository's history tools; `files_changed` does not mention parsers.
fn git() -> Vec<Arc<dyn AgentTool>> {
    vec![
        tool(
            "files_changed",
            "List the files changed in the working tree, staged or not.",
            object(json!({"staged": {"type": "boolean"}})),
        ),
        tool(
            "commits_between",
            "List the commits between two revisions, newest first.",
            object(json!({
            "from": {"type": "string", "description": "The older revision (a branch, tag or hash)."},
            "to": {"type": "string", "description": "The newer revision."},
            "path": {"type": "string", "description": "Only the commits that changed this file or directory."}})),
        ),
        tool(
            "show_commit",
            "Show a commit's message, author and diff.",
            object(json!({"hash": {"type": "string"}})),
        ),
        tool(
            "blame_file",
            "Show who last changed each line of a file.",
            object(json!({"path": {"type": "string"}})),
        ),
        tool(
            "create_branch",
            "Create a branch at a revision.",
            object(json!({"name": {"type": "string"}})),
        ),
        tool(
            "diff_revisions",
            "The diff between two revisions.",
            object(json!({"from": {"type": "string"}, "to": {"type": "string"}})),
        ),
    ]
}

#[test]
fn a_new_users_questions_find_their_tool() {
    let mail = ToolSearch::new(&mail());
    // "remove" is a general-English synonym of "delete": among the draft tools it decides.
    assert_eq!(names(&mail, "remove an old draft", 3)[0], "delete_draft");
    let found = names(&mail, "send my draft", 3);
    assert_eq!(found[0], "send_draft", "{found:?}");

    let git = ToolSearch::new(&git());
    // The path filter's description says which commits changed a file: that tool comes first.
    let found = names(&git, "which commits changed the parser?", 3);
    assert_eq!(found[0], "commits_between", "{found:?}");
}

#[test]
fn a_whole_name_outranks_words_of_descriptions() {
    let tools = vec![
        tool("send_email", "Send a message.", object(json!({}))),
        tool(
            "compose",
            "Write an email to send later: send email drafts, send email replies, email email email.",
            object(json!({})),
        ),
        tool("search", "Search anything.", object(json!({}))),
        tool("search_hotels", "Find rooms.", object(json!({}))),
    ];
    let search = ToolSearch::new(&tools);
    // Written as the name, as words, or in camelCase.
    for query in ["send_email now", "please send email", "sendEmail"] {
        assert_eq!(names(&search, query, 2)[0], "send_email", "{query}");
    }
    // The longer whole name first.
    assert_eq!(
        names(&search, "search hotels in Rome", 2)[0],
        "search_hotels"
    );
}

#[test]
fn unicode_forms_meet_and_chinese_and_japanese_are_searched() {
    let tools = vec![
        tool(
            "weather_forecast",
            "天气预报：查询城市未来三天的天气。",
            object(json!({})),
        ),
        tool(
            "file_upload",
            "ファイルをアップロードする。",
            object(json!({})),
        ),
        tool("translate", "Translate text.", object(json!({}))),
    ];
    let search = ToolSearch::new(&tools);
    assert_eq!(names(&search, "北京的天气", 1), ["weather_forecast"]);
    assert_eq!(names(&search, "ファイル", 1), ["file_upload"]);
    // Half-width Katakana and full-width Latin letters are the same text (NFKC).
    assert_eq!(names(&search, "ﾌｧｲﾙ", 1), ["file_upload"]);
    assert_eq!(names(&search, "ＴＲＡＮＳＬＡＴＥ", 1), ["translate"]);
}

#[test]
fn referenced_parameters_and_allowed_values_are_searched() {
    let tools = vec![
        tool(
            "export_report",
            "Export a report.",
            json!({
                "type": "object",
                "properties": {"format": {"$ref": "#/$defs/Format"}},
                "$defs": {"Format": {"type": "string", "description": "File format", "enum": ["spreadsheet", "pdf"]}}
            }),
        ),
        tool("print_page", "Print a page.", object(json!({}))),
    ];
    let search = ToolSearch::new(&tools);
    assert_eq!(names(&search, "spreadsheet", 2), ["export_report"]);
}

#[test]
fn keywords_an_application_adds_are_searched() {
    let plain = vec![tool(
        "create_issue",
        "Open an issue in a repository.",
        object(json!({})),
    )];
    assert!(
        ToolSearch::new(&plain)
            .search("file a ticket", 5)
            .is_empty()
    );
    let with_keywords: Vec<Arc<dyn AgentTool>> = vec![Arc::new(
        FnTool::builder(
            "create_issue",
            "Open an issue in a repository.",
            object(json!({})),
        )
        .keywords(["ticket", "bug report"])
        .deferred()
        .build(|_: Value, _| async { "ok" })
        .unwrap(),
    )];
    // Deferring keeps them (the wrapper forwards them).
    assert_eq!(with_keywords[0].keywords(), ["ticket", "bug report"]);
    assert_eq!(
        names(&ToolSearch::new(&with_keywords), "file a ticket", 5),
        ["create_issue"]
    );
}

#[test]
fn an_applications_ranker_decides_and_its_mistakes_are_dropped() {
    let plain = ToolSearch::new(&git());
    let best = plain.search("commits", 1)[0].name.clone();
    let search = plain.with_ranker(|query: &RankQuery<'_>| {
        assert_eq!(query.text(), "commits");
        assert_eq!(query.limit(), 2);
        // The built-in ranking is there to start from.
        let lexical = query.lexical(1);
        assert!(
            query.tools()[lexical[0].index]
                .spec()
                .name
                .contains("commit")
        );
        let blame = query
            .tools()
            .iter()
            .position(|t| t.spec().name == "blame_file")
            .unwrap();
        vec![
            Ranked::new(blame, 9.0),
            Ranked::new(blame, 8.0),  // twice: dropped
            Ranked::new(10_000, 7.0), // no such tool: dropped
            Ranked::new(lexical[0].index, 1.0),
            Ranked::new(0, 0.5), // past the limit
        ]
    });
    let found = search.search("commits", 2);
    let found: Vec<(&str, f32)> = found.iter().map(|m| (m.name.as_str(), m.score)).collect();
    assert_eq!(found, [("blame_file", 9.0), (best.as_str(), 1.0)]);
}

/// A ranker that works the CPU for long makes the search a blocking tool (the agent loop runs
/// it on tokio's blocking pool); the built-in ranking and a ranker that says nothing do not.
#[test]
fn a_search_is_blocking_when_its_ranker_is() {
    struct Slow;
    impl ToolRanker for Slow {
        fn rank(&self, query: &RankQuery<'_>) -> Vec<Ranked> {
            query.lexical(query.limit())
        }
        fn blocking(&self) -> bool {
            true
        }
    }
    let tools = git();
    assert!(!ToolSearch::new(&tools).blocking());
    let closure = |query: &RankQuery<'_>| query.lexical(query.limit());
    assert!(!ToolSearch::new(&tools).with_ranker(closure).blocking());
    let slow = ToolSearch::new(&tools).with_ranker(Slow);
    assert!(slow.blocking());
    // Renamed (a user's tool holds `tool_search`), it still is.
    assert!(slow.named("pi_tool_search").blocking());
}
