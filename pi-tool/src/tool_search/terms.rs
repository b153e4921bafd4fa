//! Text to search terms, alike for tools and queries: Unicode forms equated (NFKC), identifiers
//! split into words (`get_weather`, `getWeather`, `HTTPServer`), Chinese and Japanese text cut
//! into overlapping two-character terms, lowercased, common English function words dropped,
//! and English words reduced to their stem by the Snowball (Porter 2) stemmer, so that `files`
//! finds `file` and `created` finds `create`.

use rustc_hash::FxHashMap;
use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::UnicodeNormalization;

/// English function words, dropped from tools and queries: NLTK's English stop-word list
/// (`nltk_data/corpora/stopwords/english`, single words and the stems of its contractions)
/// less the words that tell actions or ranges apart in tool names: `up`/`down`, `in`/`out`,
/// `on`/`off`, `over`/`under`, `above`/`below`, `before`/`after`, `between`, `through`, `all`,
/// `no`, `not`, and `won` (a word of its own). Questions are sentences ("can you show me some
/// other ..."): without this, their function words match descriptions written in sentences
/// too.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "again",
    "against",
    "ain",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "being",
    "both",
    "but",
    "by",
    "can",
    "could",
    "couldn",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "ma",
    "me",
    "mightn",
    "more",
    "most",
    "mustn",
    "my",
    "myself",
    "needn",
    "nor",
    "now",
    "o",
    "of",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "own",
    "re",
    "s",
    "same",
    "shan",
    "she",
    "should",
    "shouldn",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "to",
    "too",
    "until",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "wouldn",
    "y",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Turns text into terms, each interned to an id (its position in the analyzer's
/// vocabulary). It keeps the term of each word it has seen, so indexing many tools stems each
/// distinct word once and allocates nothing per occurrence.
pub(crate) struct Analyzer {
    stemmer: Stemmer,
    /// Lowercased word -> its term's id (`None`: a stop word).
    seen: FxHashMap<String, Option<u32>>,
    /// Id -> term.
    vocabulary: Vec<String>,
    /// Term -> id (two words may have one stem).
    ids: FxHashMap<String, u32>,
}

impl Analyzer {
    pub(crate) fn new() -> Self {
        Analyzer {
            stemmer: Stemmer::create(Algorithm::English),
            seen: FxHashMap::default(),
            vocabulary: Vec::new(),
            ids: FxHashMap::default(),
        }
    }

    /// The ids of the terms of `text`, in order, with repeats (term frequency counts them),
    /// appended to `out`.
    ///
    /// Splits on anything not alphanumeric, then at camelCase boundaries: `getHTTPResponse` ->
    /// `get`, `HTTP`, `Response`. Digits stay with the letters before them (`s3`, `ec2`). A run
    /// of Han, Hiragana or Katakana characters (written without spaces) becomes its
    /// overlapping pairs (`天气预报` -> `天气`, `气预`, `预报`), as Lucene's CJK analyzer does;
    /// one such character alone is its own term.
    pub(crate) fn ids_into(&mut self, text: &str, out: &mut Vec<u32>) {
        let text: Cow<'_, str> = if text.is_ascii() {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(text.nfkc().collect())
        };
        for part in text.split(|c: char| !c.is_alphanumeric()) {
            if part.is_ascii() {
                self.split_identifier(part, out);
                continue;
            }
            // Runs of CJK and of other characters, in turn.
            let mut start = 0;
            let mut in_cjk = None;
            for (at, c) in part.char_indices() {
                let cjk = is_cjk(c);
                if in_cjk.is_some_and(|was| was != cjk) {
                    self.run(&part[start..at], !cjk, out);
                    start = at;
                }
                in_cjk = Some(cjk);
            }
            self.run(&part[start..], in_cjk == Some(true), out);
        }
    }

    /// The terms of `text` (see [`ids_into`](Self::ids_into)).
    pub(crate) fn terms(&mut self, text: &str) -> Vec<String> {
        let mut ids = Vec::new();
        self.ids_into(text, &mut ids);
        ids.into_iter().map(|id| self.term(id).to_owned()).collect()
    }

    /// The term of an id this analyzer gave.
    pub(crate) fn term(&self, id: u32) -> &str {
        &self.vocabulary[id as usize]
    }

    /// The terms by id.
    pub(crate) fn into_vocabulary(self) -> Vec<String> {
        self.vocabulary
    }

    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = self.vocabulary.len() as u32;
        self.vocabulary.push(term.to_owned());
        self.ids.insert(term.to_owned(), id);
        id
    }

    fn run(&mut self, run: &str, cjk: bool, out: &mut Vec<u32>) {
        if !cjk {
            self.split_identifier(run, out);
            return;
        }
        let chars: Vec<(usize, char)> = run.char_indices().collect();
        if chars.len() == 1 {
            let id = self.intern(run);
            out.push(id);
            return;
        }
        for pair in chars.windows(2) {
            let end = pair[1].0 + pair[1].1.len_utf8();
            let id = self.intern(&run[pair[0].0..end]);
            out.push(id);
        }
    }

    fn split_identifier(&mut self, part: &str, out: &mut Vec<u32>) {
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
                    self.word(&part[start..at], out);
                    start = at;
                }
            }
            prev = Some(c);
        }
        self.word(&part[start..], out);
    }

    fn word(&mut self, word: &str, out: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        let lower: Cow<'_, str> =
            if word.is_ascii() && !word.bytes().any(|b| b.is_ascii_uppercase()) {
                Cow::Borrowed(word)
            } else {
                Cow::Owned(word.to_lowercase())
            };
        if let Some(id) = self.seen.get(lower.as_ref()) {
            out.extend(*id);
            return;
        }
        let id = self.term_of(&lower).map(|term| self.intern(&term));
        out.extend(id);
        self.seen.insert(lower.into_owned(), id);
    }

    /// A lowercased word's term: `None` for a stop word, its Snowball stem for a word of
    /// letters, the word itself otherwise (`s3`, `ec2`, `2fa`).
    fn term_of<'w>(&self, lower: &'w str) -> Option<Cow<'w, str>> {
        if STOP_WORDS.binary_search(&lower).is_ok() {
            return None;
        }
        if lower.chars().all(char::is_alphabetic) {
            Some(self.stemmer.stem(lower))
        } else {
            Some(Cow::Borrowed(lower))
        }
    }
}

/// Whether `c` is written without spaces between words: Han (CJK ideographs and their
/// extensions and compatibility forms), Hiragana, Katakana.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x20000..=0x3134F) // CJK extensions B-G
}

/// The terms of `text` (a fresh [`Analyzer`]: for one query).
pub(crate) fn terms(text: &str) -> Vec<String> {
    Analyzer::new().terms(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(terms("get_weather"), ["get", "weather"]);
        assert_eq!(terms("getHTTPResponse"), ["get", "http", "respons"]);
        assert_eq!(terms("list-s3-buckets"), ["list", "s3", "bucket"]);
        assert_eq!(terms("ec2Instance"), ["ec2", "instanc"]);
        assert_eq!(terms("The name of the file."), ["name", "file"]);
        // Direction words stay: they tell `log_in` from `log_out`.
        assert_eq!(terms("log out"), ["log", "out"]);
        assert_eq!(terms("commits between tags"), ["commit", "between", "tag"]);
    }

    #[test]
    fn function_words_of_questions_are_dropped() {
        // None of these says what a tool does; each matched descriptions written in sentences
        // ("for any state", "some other tools") before.
        assert_eq!(
            terms("Could you find any other files, or some more of the same ones only once?"),
            ["find", "file", "one"]
        );
        assert_eq!(terms("I haven't and couldn't"), Vec::<String>::new());
    }

    #[test]
    fn inflections_meet() {
        for (a, b) in [
            ("files", "file"),
            ("created", "create"),
            ("creating", "creates"),
            ("listing", "list"),
            ("queries", "query"),
            ("processes", "process"),
            ("Issues", "issue"),
            ("deleted", "delete"),
            ("running", "run"),
        ] {
            assert_eq!(terms(a), terms(b), "{a} / {b}");
        }
        assert_eq!(terms("bus gas"), ["bus", "gas"]);
    }

    #[test]
    fn unicode_forms_are_equated() {
        // Full-width letters and a ligature are the same words as their plain forms (NFKC).
        assert_eq!(terms("ＦＩＬＥＳ"), terms("files"));
        assert_eq!(terms("ﬁle"), terms("file"));
        // Accented words are kept, lowercased.
        assert_eq!(terms("Résumé"), ["résumé"]);
    }

    #[test]
    fn chinese_and_japanese_are_cut_into_pairs() {
        assert_eq!(terms("天气预报"), ["天气", "气预", "预报"]);
        assert_eq!(terms("查询天气 API"), ["查询", "询天", "天气", "api"]);
        assert_eq!(terms("ファイル"), ["ファ", "ァイ", "イル"]);
        assert_eq!(terms("雨"), ["雨"]);
        // Mixed in one word: the Latin part is a word of its own.
        assert_eq!(terms("GitHub仓库"), ["git", "hub", "仓库"]);
        // Full-width forms of Katakana become the usual ones (NFKC).
        assert_eq!(terms("ﾌｧｲﾙ"), terms("ファイル"));
        // Korean is written with spaces: its words are kept whole.
        assert_eq!(terms("날씨 예보"), ["날씨", "예보"]);
    }
}
