//! The text of a tool that is embedded: its name in words, its description, its keywords, and
//! its parameters' names and descriptions.

use pi_tool::AgentTool;
use serde_json::Value;

/// `delete_draft: Delete a draft. Keywords: discard. Parameters: draft id: The draft's id`.
pub(crate) fn tool_text(tool: &dyn AgentTool) -> String {
    let spec = tool.spec();
    let mut text = format!("{}: {}", name_words(&spec.name), spec.description.trim());
    let keywords = tool.keywords();
    if !keywords.is_empty() {
        text.push_str(" Keywords: ");
        text.push_str(&keywords.join(", "));
        text.push('.');
    }
    let parameters: Vec<String> = spec
        .parameters
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, schema)| {
            let description = schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            if description.is_empty() {
                name_words(name)
            } else {
                format!("{}: {description}", name_words(name))
            }
        })
        .collect();
    if !parameters.is_empty() {
        text.push_str(" Parameters: ");
        text.push_str(&parameters.join("; "));
    }
    text
}

/// A name as words: `delete_draft`, `delete-draft`, `deleteDraft` -> `delete draft`
/// (`deleteDraft` keeps its capital: the tokenizer lowercases).
pub(crate) fn name_words(name: &str) -> String {
    let mut words = String::with_capacity(name.len() + 4);
    let mut previous: Option<char> = None;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.') {
            if !words.is_empty() && !words.ends_with(' ') {
                words.push(' ');
            }
        } else {
            if c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit())
            {
                words.push(' ');
            }
            words.push(c);
        }
        previous = Some(c);
    }
    words.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_tool::tool_fn;
    use serde_json::json;

    #[test]
    fn names_become_words() {
        assert_eq!(name_words("delete_draft"), "delete draft");
        assert_eq!(name_words("deleteDraft"), "delete Draft");
        assert_eq!(name_words("ResearchHelper"), "Research Helper");
        assert_eq!(name_words("get__weather.v2-beta_"), "get weather v2 beta");
        assert_eq!(name_words("HTTPServer"), "HTTPServer");
        assert_eq!(name_words("utf8Decode"), "utf8 Decode");
    }

    #[test]
    fn the_text_has_name_description_keywords_and_parameters() {
        let tool = pi_tool::FnTool::builder(
            "delete_draft",
            "Delete a draft.",
            json!({"type": "object", "properties": {
                "draft_id": {"type": "string", "description": "The draft's id"},
                "force": {"type": "boolean"}
            }}),
        )
        .keywords(["discard", "trash"])
        .build(|_, _| async { "" })
        .unwrap();
        assert_eq!(
            tool_text(&tool),
            "delete draft: Delete a draft. Keywords: discard, trash. Parameters: draft id: The draft's id; force"
        );
        let bare = tool_fn(
            "ping",
            " Answer pong. ",
            json!({"type": "object"}),
            |_, _| async { "pong" },
        )
        .unwrap();
        assert_eq!(tool_text(&bare), "ping: Answer pong.");
    }
}
