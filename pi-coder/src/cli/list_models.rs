//! `--list-models [search]`, as pi prints it (`cli/list-models.ts`): the models with a key
//! configured, sorted by provider and id, in aligned columns.

use crate::models::{ModelRegistry, format_token_count};

/// Prints the table (or why there is none) on stdout.
pub(super) fn print(registry: &ModelRegistry, search: &str) {
    let mut models = registry.available();
    if models.is_empty() {
        println!(
            "No models available. Set a provider's key (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, MISTRAL_API_KEY, AZURE_OPENAI_API_KEY, AWS_BEARER_TOKEN_BEDROCK or AWS credentials, Vertex AI's GOOGLE_APPLICATION_CREDENTIALS with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION) or add providers and models to ~/.pi/agent/models.json."
        );
        return;
    }
    if !search.is_empty() {
        models.retain(|m| fuzzy_match(&format!("{} {}", m.provider, m.id), search));
        if models.is_empty() {
            println!("No models matching \"{search}\"");
            return;
        }
    }
    models.sort_by(|a, b| a.provider.cmp(&b.provider).then_with(|| a.id.cmp(&b.id)));
    let rows: Vec<[String; 6]> = models
        .iter()
        .map(|m| {
            [
                m.provider.clone(),
                m.id.clone(),
                format_token_count(m.context_window),
                format_token_count(m.max_tokens),
                yes_no(m.reasoning),
                yes_no(m.accepts_images()),
            ]
        })
        .collect();
    let headers = [
        "provider", "model", "context", "max-out", "thinking", "images",
    ];
    let mut widths = headers.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| -> String {
        cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    println!("{}", line(&headers));
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        println!("{}", line(&cells));
    }
}

fn yes_no(flag: bool) -> String {
    if flag { "yes" } else { "no" }.to_owned()
}

/// pi-tui's `fuzzyFilter`, the part `--list-models` needs: every whitespace-separated word of
/// the query appears in the text in order, letter by letter, ignoring case.
fn fuzzy_match(text: &str, query: &str) -> bool {
    let text = text.to_lowercase();
    query.split_whitespace().all(|word| {
        let mut letters = text.chars();
        word.to_lowercase()
            .chars()
            .all(|wanted| letters.any(|c| c == wanted))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_search_takes_letters_in_order() {
        assert!(fuzzy_match("anthropic claude-sonnet-4-5", "sonnet"));
        assert!(fuzzy_match("anthropic claude-sonnet-4-5", "ant snt"));
        assert!(!fuzzy_match("openai gpt-5", "sonnet"));
    }
}
