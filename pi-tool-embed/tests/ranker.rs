//! The embedding ranker in pi-tool's `ToolSearch`: questions the lexical ranking misses, what it
//! keeps, and bad input. Needs the model (see `common::model`).

mod common;

use std::sync::Arc;

use pi_tool::{AgentTool, ToolSearch};
use pi_tool_embed::{DEFAULT_EMBEDDING_WEIGHT, EmbeddingModel, EmbeddingRanker};
use serde_json::json;

use common::{model, mpnet_model, tool};

fn assistant() -> Vec<Arc<dyn AgentTool>> {
    let id = json!({"draft_id": {"type": "string", "description": "The draft's id."}});
    vec![
        tool(
            "create_draft",
            "Create a new draft email with a subject, recipients and a body.",
            json!({"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}}),
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
            json!({"max_results": {"type": "integer"}}),
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
            json!({"to": {"type": "string"}, "body": {"type": "string"}}),
        ),
        tool(
            "trash_message",
            "Moves the specified message to the trash.",
            json!({"message_id": {"type": "string"}}),
        ),
        tool(
            "archive_thread",
            "Archive a conversation thread, taking it out of the inbox.",
            json!({"thread_id": {"type": "string"}}),
        ),
        tool(
            "get_weather",
            "Current conditions for a city: temperature, wind and precipitation.",
            json!({"city": {"type": "string", "description": "City name"}}),
        ),
        tool(
            "create_event",
            "Add an event to the user's calendar at a date and time.",
            json!({"title": {"type": "string"}, "start": {"type": "string", "description": "ISO 8601 date-time"}}),
        ),
        tool(
            "convert_currency",
            "Convert an amount between two currencies at today's exchange rate.",
            json!({"amount": {"type": "number"}, "from": {"type": "string"}, "to": {"type": "string"}}),
        ),
        tool(
            "read_file",
            "Read a text file from the workspace.",
            json!({"path": {"type": "string"}}),
        ),
        tool(
            "run_tests",
            "Run the project's test suite and report failures.",
            json!({"filter": {"type": "string"}}),
        ),
        tool(
            "translate_text",
            "Translate text into another language.",
            json!({"text": {"type": "string"}, "target_language": {"type": "string"}}),
        ),
    ]
}

fn names(search: &ToolSearch, query: &str, limit: usize) -> Vec<String> {
    search
        .search(query, limit)
        .into_iter()
        .map(|m| m.name)
        .collect()
}

fn searches(model: Arc<EmbeddingModel>) -> (Vec<Arc<dyn AgentTool>>, ToolSearch, ToolSearch) {
    let tools = assistant();
    let lexical = ToolSearch::new(&tools);
    let ranker = EmbeddingRanker::new(model, &tools).unwrap();
    assert_eq!(ranker.len(), tools.len());
    let ranked = ToolSearch::new(&tools).with_ranker(ranker);
    // Embedding a question takes milliseconds: the loop runs the search off its threads.
    assert!(ranked.blocking() && !lexical.blocking());
    (tools, lexical, ranked)
}

/// Questions that share no word (nor a WordNet relative) with their tool: the lexical ranking
/// puts another tool first, or none; the embeddings find it.
#[test]
fn questions_without_a_word_of_their_tool_find_it_with_the_ranker() {
    let Some(model) = model() else { return };
    tools_sharing_no_word_are_found(model);
}

/// The same with all-mpnet-base-v2.
#[test]
fn mpnet_finds_the_tools_of_questions_without_a_word_of_theirs() {
    let Some(model) = mpnet_model() else { return };
    tools_sharing_no_word_are_found(model);
}

fn tools_sharing_no_word_are_found(model: Arc<EmbeddingModel>) {
    let (_, lexical, ranked) = searches(model);
    for (question, tool) in [
        ("is it going to rain in Lisbon", "get_weather"),
        ("will I need an umbrella in Oslo", "get_weather"),
        ("put a dentist appointment in my agenda", "create_event"),
        ("how many yen is 50 dollars", "convert_currency"),
        ("how much is 20 euros in pounds", "convert_currency"),
        ("say this in Spanish", "translate_text"),
        ("what does this sentence mean in French", "translate_text"),
    ] {
        let without = names(&lexical, question, 3);
        assert_ne!(
            without.first().map(String::as_str),
            Some(tool),
            "{question}: lexical {without:?}"
        );
        let with = names(&ranked, question, 3);
        assert_eq!(with[0], tool, "{question}: ranked {with:?}");
    }
}

/// What the lexical ranking gets right stays right: a tool named in the query, a synonym.
#[test]
fn a_tool_named_in_the_question_stays_first() {
    let Some(model) = model() else { return };
    let (_, lexical, ranked) = searches(model);
    for question in ["delete_draft", "remove an old draft", "send_draft please"] {
        assert_eq!(
            names(&lexical, question, 1),
            names(&ranked, question, 1),
            "{question}"
        );
    }
    assert_eq!(names(&ranked, "delete_draft", 1), ["delete_draft"]);
    assert_eq!(names(&ranked, "send_draft please", 1), ["send_draft"]);
}

#[test]
fn an_empty_question_or_weight_zero_is_the_lexical_ranking() {
    let Some(model) = model() else { return };
    let (tools, lexical, ranked) = searches(model.clone());
    assert!(ranked.search("", 5).is_empty());
    assert!(ranked.search("   ", 5).is_empty());
    let lexical_only = ToolSearch::new(&tools).with_ranker(
        EmbeddingRanker::new(model.clone(), &tools)
            .unwrap()
            .with_embedding_weight(0.0),
    );
    for question in [
        "remove an old draft",
        "is it going to rain in Lisbon",
        "read a file",
    ] {
        assert_eq!(
            lexical.search(question, 5),
            lexical_only.search(question, 5),
            "{question}"
        );
    }
    // Weight 1: the embeddings alone; NaN keeps the default; out of range is clamped.
    let ranker = EmbeddingRanker::new(model, &tools).unwrap();
    assert_eq!(ranker.embedding_weight(), DEFAULT_EMBEDDING_WEIGHT);
    assert_eq!(
        ranker.with_embedding_weight(f32::NAN).embedding_weight(),
        DEFAULT_EMBEDDING_WEIGHT
    );
}

#[test]
fn a_huge_question_gets_an_answer() {
    let Some(model) = model() else { return };
    let (_, _, ranked) = searches(model);
    let huge = "will it rain in Lisbon tomorrow ".repeat(40_000);
    assert!(huge.len() > 1_000_000);
    let found = names(&ranked, &huge, 3);
    assert_eq!(found.len(), 3);
    assert_eq!(found[0], "get_weather");
    let unicode = "東京の天気は？".repeat(100_000);
    assert_eq!(names(&ranked, &unicode, 2).len(), 2);
}

/// A ranker built over other tools than the search's: the ones it did not embed are still
/// ranked (by their lexical score), never skipped or mixed up with another tool's embedding.
#[test]
fn tools_the_ranker_did_not_embed_are_ranked_by_their_words() {
    let Some(model) = model() else { return };
    let tools = assistant();
    let embedded: Vec<Arc<dyn AgentTool>> = tools
        .iter()
        .filter(|t| t.spec().name != "convert_currency")
        .cloned()
        .collect();
    let search =
        ToolSearch::new(&tools).with_ranker(EmbeddingRanker::new(model, &embedded).unwrap());
    assert_eq!(
        names(&search, "convert an amount between currencies", 1),
        ["convert_currency"]
    );
    assert_eq!(
        names(&search, "is it going to rain in Lisbon", 1),
        ["get_weather"]
    );
}

/// The question of issue 33 that needs a parameter's description: `commits_between` has a
/// `path` filter; `files_changed` says "changed" too. The fused ranking keeps it first.
#[test]
fn which_commits_changed_the_parser_finds_commits_between() {
    let Some(model) = model() else { return };
    let tools = vec![
        tool(
            "files_changed",
            "List the files changed in the working tree, staged or not.",
            json!({"staged": {"type": "boolean"}}),
        ),
        tool(
            "commits_between",
            "List the commits between two revisions, newest first.",
            json!({
            "from": {"type": "string", "description": "The older revision (a branch, tag or hash)."},
            "to": {"type": "string", "description": "The newer revision."},
            "path": {"type": "string", "description": "Only the commits that changed this file or directory."}}),
        ),
        tool(
            "show_commit",
            "Show a commit's message, author and diff.",
            json!({"hash": {"type": "string"}}),
        ),
        tool(
            "blame_file",
            "Show who last changed each line of a file.",
            json!({"path": {"type": "string"}}),
        ),
        tool(
            "create_branch",
            "Create a branch at a revision.",
            json!({"name": {"type": "string"}}),
        ),
        tool(
            "diff_revisions",
            "The diff between two revisions.",
            json!({"from": {"type": "string"}, "to": {"type": "string"}}),
        ),
    ];
    let search = ToolSearch::new(&tools).with_ranker(EmbeddingRanker::new(model, &tools).unwrap());
    let found = names(&search, "which commits changed the parser?", 3);
    assert_eq!(found[0], "commits_between", "{found:?}");
}
