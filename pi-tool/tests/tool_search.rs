//! The built-in `tool_search`: ranking quality over a generated 1,000-tool catalog, determinism,
//! and bad input answered with an error result (never a panic).

#[path = "support/catalog.rs"]
mod catalog;

use std::sync::Arc;

use pi_tool::{
    AgentTool, FnTool, MAX_QUERY_BYTES, TOOL_SEARCH_NAME, ToolCall, ToolRegistry, ToolSearch,
    loaded_by_search,
};
use serde_json::{Value, json};

fn tools(servers: usize) -> Vec<Arc<dyn AgentTool>> {
    catalog::catalog(servers)
        .into_iter()
        .map(|t| {
            let tool = FnTool::builder(t.name, t.description, t.parameters)
                .deferred()
                .build(|_: Value, _| async { "ok" })
                .expect("catalog tools are valid");
            Arc::new(tool) as Arc<dyn AgentTool>
        })
        .collect()
}

/// A regression guard on the project's own generated catalog. Its queries were written against
/// the first ranker (48 of 50 then); since issue 33 the ranking is measured on a public set of
/// real tools and human-checked questions (`cargo bench -p pi-tool --bench retrieval`, see the
/// README), where it went from 58% to 64% in the top 5, and this catalog, whose ten tools per
/// resource differ by one verb, finds 47 of 50 (44 before the stop words, one-word names and
/// idf power of the second round).
#[test]
fn the_expected_tool_is_in_the_top_five_for_most_queries() {
    let tools = tools(10);
    assert_eq!(tools.len(), 1_000);
    let search = ToolSearch::new(&tools);
    let mut misses = Vec::new();
    for (query, expected) in catalog::QUERIES {
        let found: Vec<String> = search
            .search(query, 5)
            .into_iter()
            .map(|m| m.name)
            .collect();
        if !found.iter().any(|name| name == expected) {
            misses.push(format!("{query:?}: wanted {expected}, got {found:?}"));
        }
    }
    let hits = catalog::QUERIES.len() - misses.len();
    println!(
        "{hits}/{} queries found their tool in the top 5",
        catalog::QUERIES.len()
    );
    assert!(
        hits * 100 >= catalog::QUERIES.len() * 94,
        "only {hits}/{} in the top 5; misses:\n{}",
        catalog::QUERIES.len(),
        misses.join("\n")
    );
}

#[test]
fn searches_are_deterministic_and_ties_go_by_name() {
    let tools = tools(3);
    let a = ToolSearch::new(&tools);
    let mut reversed = tools.clone();
    reversed.reverse();
    let b = ToolSearch::new(&reversed);
    for (query, _) in catalog::QUERIES {
        assert_eq!(a.search(query, 10), b.search(query, 10), "{query}");
    }
    // Among equal scores, names ascend.
    let found = a.search("archive", 20);
    for pair in found.windows(2) {
        assert!(
            pair[0].score > pair[1].score
                || (pair[0].score == pair[1].score && pair[0].name < pair[1].name),
            "{pair:?}"
        );
    }
}

#[test]
fn parameter_names_and_their_docs_are_searched() {
    let tools = tools(10);
    let search = ToolSearch::new(&tools);
    // Only a parameter's description says "RFC 5545".
    let found = search.search("rfc 5545", 3);
    assert_eq!(found[0].name, "calendar_create_recurrence", "{found:?}");
    // Only a parameter's name says "percent_off" (split into its words).
    let found = search.search("percent off", 3);
    assert!(
        found.iter().any(|m| m.name == "stripe_create_coupon"),
        "{found:?}"
    );
}

async fn call(registry: &ToolRegistry, args: Value) -> pi_tool::ToolResult {
    registry
        .run(&ToolCall::new("c1", TOOL_SEARCH_NAME, args))
        .await
}

#[tokio::test]
async fn a_search_answers_names_and_descriptions_and_loads_them() {
    let search = ToolSearch::new(&tools(10));
    let registry = ToolRegistry::new().with(search);
    let result = call(&registry, json!({"query": "refund a charge", "limit": 3})).await;
    assert!(!result.is_error, "{}", result.text_content());
    let text = result.text_content();
    assert!(
        text.contains("stripe_create_refund: Create a new refund in Stripe"),
        "{text}"
    );
    let loaded: Vec<&str> = loaded_by_search(&result.details).collect();
    assert_eq!(loaded.len(), 3);
    assert_eq!(result.added_tool_names, loaded);
    let none = call(&registry, json!({"query": "zzzz qqqq"})).await;
    assert!(!none.is_error);
    assert!(none.text_content().starts_with("No tool matches"));
    assert_eq!(loaded_by_search(&none.details).count(), 0);
}

#[tokio::test]
async fn bad_input_is_an_error_result() {
    let registry = ToolRegistry::new().with(ToolSearch::new(&tools(1)));
    let huge = "file ".repeat(MAX_QUERY_BYTES);
    for (args, says) in [
        (json!({"query": ""}), "the query is empty"),
        (json!({"query": "   "}), "the query is empty"),
        (json!({"query": huge}), "bytes long"),
        // (A number is coerced to its text, as for every tool; an object is not.)
        (json!({"query": {"text": "file"}}), "query"),
        (json!({"query": null}), "query"),
        (json!({}), "query: missing required property"),
        (json!({"query": "file", "limit": 0}), "limit"),
        (json!({"query": "file", "limit": 1000}), "limit"),
        (json!({"query": "file", "limit": "three"}), "limit"),
        (json!({"query": "file", "limit": -1}), "limit"),
        (json!(["file"]), "expected object"),
    ] {
        let result = call(&registry, args.clone()).await;
        assert!(result.is_error, "{args}: {}", result.text_content());
        assert!(
            result.text_content().contains(says),
            "{args}: {}",
            result.text_content()
        );
    }
    // Called directly, without the pipeline's validation, it still answers an error.
    let search = ToolSearch::new(&tools(1));
    let direct = search
        .execute(json!({"query": ["x"]}), pi_tool::ToolContext::new("c"))
        .await;
    assert!(direct.is_err());
    // Control characters, unicode and odd punctuation are just text.
    let odd = call(
        &registry,
        json!({"query": "\u{0}\u{202e}💥 ../../etc/passwd ' OR 1=1 --"}),
    )
    .await;
    assert!(!odd.is_error, "{}", odd.text_content());
}

#[test]
fn an_empty_index_finds_nothing() {
    let search = ToolSearch::new(&[]);
    assert!(search.is_empty());
    assert!(search.search("anything", 5).is_empty());
}
