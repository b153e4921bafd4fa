//! Text to search terms: identifiers split into words (`get_weather`, `getWeather`,
//! `HTTPServer`), lowercased, common English words dropped, and a light suffix stripping so
//! that `files` finds `file` and `created` finds `create`.

/// Words too common in tool descriptions to tell tools apart (BM25's idf would weigh them near
/// zero anyway; dropping them keeps postings short).
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "if", "in", "into", "is", "it",
    "its", "of", "on", "or", "the", "this", "that", "to", "with",
];

/// The terms of `text`, in order, with repeats (term frequency counts them).
///
/// Splits on anything not alphanumeric, then at camelCase boundaries: `getHTTPResponse` ->
/// `get`, `HTTP`, `Response`. Digits stay with the letters before them (`s3`, `ec2`). One
/// allocation per term (its lowercase form), none for the splitting.
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in text.split(|c: char| !c.is_alphanumeric()) {
        let mut start = 0;
        let mut prev: Option<char> = None;
        let mut chars = part.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            if let Some(p) = prev {
                let next_lower = chars.peek().is_some_and(|(_, n)| n.is_lowercase());
                // `aB` starts a word at B; `ABc` starts one at B (the end of an acronym).
                let boundary = c.is_uppercase()
                    && (p.is_lowercase() || p.is_numeric() || (p.is_uppercase() && next_lower));
                if boundary {
                    push_term(&part[start..at], &mut out);
                    start = at;
                }
            }
            prev = Some(c);
        }
        push_term(&part[start..], &mut out);
    }
    out
}

fn push_term(word: &str, out: &mut Vec<String>) {
    if word.is_empty() {
        return;
    }
    let lower = if word.is_ascii() {
        word.to_ascii_lowercase()
    } else {
        word.to_lowercase()
    };
    if STOP_WORDS.contains(&lower.as_str()) {
        return;
    }
    out.push(stem(lower));
}

/// A light English suffix stripper (plural `-ies`/`-es`/`-s` after Harman's S-stemmer, then
/// `-ing`, `-ed` and a final `e`), applied alike to tools and queries. It keeps at least three
/// characters, so short words are left alone.
fn stem(word: String) -> String {
    let mut w = word;
    if w.len() <= 3 || !w.is_ascii() {
        return w;
    }
    if w.ends_with("ies") {
        if !w.ends_with("eies") && !w.ends_with("aies") {
            w.truncate(w.len() - 3);
            w.push('y');
        }
    } else if w.ends_with("es") {
        if !w.ends_with("aes") && !w.ends_with("ees") && !w.ends_with("oes") {
            w.pop(); // -es -> -e
        }
    } else if w.ends_with('s') && !w.ends_with("us") && !w.ends_with("ss") {
        w.pop();
    }
    for suffix in ["ing", "ed"] {
        if w.ends_with(suffix) && w.len() - suffix.len() >= 3 {
            w.truncate(w.len() - suffix.len());
            break;
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(terms("get_weather"), ["get", "weather"]);
        assert_eq!(terms("getHTTPResponse"), ["get", "http", "respons"]);
        assert_eq!(terms("list-s3-buckets"), ["list", "s3", "bucket"]);
        assert_eq!(terms("ec2Instance"), ["ec2", "instanc"]);
        assert_eq!(terms("The name of the file."), ["nam", "fil"]);
    }

    #[test]
    fn inflections_meet() {
        for (a, b) in [
            ("files", "file"),
            ("created", "create"),
            ("listing", "list"),
            ("queries", "query"),
            ("processes", "process"),
            ("Issues", "issue"),
        ] {
            assert_eq!(terms(a), terms(b), "{a} / {b}");
        }
        // Short words and non-ASCII words are kept whole.
        assert_eq!(terms("bus gas"), ["bus", "gas"]);
        assert_eq!(terms("résumés"), ["résumés"]);
    }
}
