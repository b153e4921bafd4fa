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
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in words(text) {
        let lower = word.to_lowercase();
        if STOP_WORDS.contains(&lower.as_str()) {
            continue;
        }
        out.push(stem(&lower));
    }
    out
}

/// Splits on anything not alphanumeric, then at camelCase boundaries: `getHTTPResponse` ->
/// `get`, `HTTP`, `Response`. Digits stay with the letters before them (`s3`, `ec2`).
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|part| !part.is_empty())
        .flat_map(split_camel)
}

fn split_camel(part: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = part.char_indices().collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        // `aB` starts a word at B; `ABc` starts one at B (the end of an acronym).
        let boundary = c.is_uppercase()
            && (prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_lower));
        if boundary {
            pieces.push(&part[start..at]);
            start = at;
        }
    }
    pieces.push(&part[start..]);
    pieces
}

/// A light English suffix stripper (plural `-ies`/`-es`/`-s` after Harman's S-stemmer, then
/// `-ing`, `-ed` and a final `e`), applied alike to tools and queries. It keeps at least three
/// characters, so short words are left alone.
fn stem(word: &str) -> String {
    let mut w = word.to_owned();
    if w.chars().count() <= 3 || !w.is_ascii() {
        return w;
    }
    if let Some(base) = w.strip_suffix("ies") {
        if !base.ends_with('e') && !base.ends_with('a') {
            w = format!("{base}y");
        }
    } else if let Some(base) = w.strip_suffix("es") {
        if !base.ends_with('a') && !base.ends_with('e') && !base.ends_with('o') {
            w = format!("{base}e");
        }
    } else if w.ends_with('s') && !w.ends_with("us") && !w.ends_with("ss") {
        w.pop();
    }
    for suffix in ["ing", "ed"] {
        if let Some(base) = w.strip_suffix(suffix)
            && base.len() >= 3
        {
            w.truncate(base.len());
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
