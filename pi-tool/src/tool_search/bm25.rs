//! Okapi BM25 (k1 = 1.2, b = 0.75, idf raised to the power 1.5) over a fixed set of documents,
//! built once.
//!
//! Written here rather than taken from the `bm25` crate (2.3.2, the one maintained BM25 crate
//! on crates.io), which was checked: it hashes terms to 32-bit ids (two terms can collide), it
//! gathers candidates in a `HashSet`, so equal scores come back in an order that changes from
//! run to run, and its tokenizer, which neither splits identifiers nor can be kept without its
//! five dependencies (`cached`, `stop-words`, `rust-stemmers`, ...), is most of what it offers.
//! What remains is the 100 lines below: exact terms, each posting's weight computed once at
//! build time, and ties broken by document order (the tools' names), so a search is
//! deterministic.

use rustc_hash::FxHashMap;

/// Term-frequency saturation.
const K1: f32 = 1.2;
/// Length normalization.
const B: f32 = 0.75;
/// The power idf is raised to: the rarer words of a question decide more than in textbook BM25
/// (1). Questions are sentences of many words, most of them common in tool descriptions too
/// ("current", "information", "find"); the one rare word usually names what is wanted. Same
/// session, same code otherwise, top 5: MetaTool 63.1% -> 63.6% (63.7% at 2, 62.3% at 3),
/// ToolLens 9.2% -> 10.0%, the generated catalog of `tests/tool_search.rs` 45 -> 47 of 50.
const IDF_POWER: f32 = 1.5;

/// Lucene's idf (never negative, even for a term in every document), raised to [`IDF_POWER`].
fn idf(documents: f32, with_term: f32) -> f32 {
    (1.0 + (documents - with_term + 0.5) / (with_term + 0.5))
        .ln()
        .powf(IDF_POWER)
}

/// An inverted index whose postings carry their finished BM25 weight (idf × saturated tf).
#[derive(Debug, Default)]
pub(crate) struct Bm25 {
    /// Term -> its id (its position in `postings`).
    vocabulary: FxHashMap<String, u32>,
    /// Per term id: (document, weight), in document order.
    postings: Vec<Vec<(u32, f32)>>,
    documents: usize,
}

impl Bm25 {
    /// Indexes documents given as (term, field) lists, a term of each field counting
    /// `weights[field]` times in the term frequency and in the document's length (the simple
    /// form of BM25F; normalizing each field by its own length instead, as BM25F proper does,
    /// ranked the generated catalog of `tests/tool_search.rs` worse, 41 of 50 against 44, and
    /// the public set no better); a document's id is its position. Terms come as ids into
    /// `terms` (interned by the analyzer, so the build allocates nothing per occurrence). A
    /// field past `weights` counts 0.
    pub(crate) fn build_interned<D>(documents: D, terms: Vec<String>, weights: &[f32]) -> Self
    where
        D: IntoIterator<Item = Vec<(u32, u8)>>,
    {
        let fields = weights.len();
        // Per term id: (document, field, how many times).
        let mut frequencies: Vec<Vec<(u32, u8, f32)>> = vec![Vec::new(); terms.len()];
        // Per document, per field: its length in terms.
        let mut lengths: Vec<f32> = Vec::new();
        let mut counts: Vec<(u32, u8)> = Vec::new();
        let mut count = 0;
        for (doc, terms) in documents.into_iter().enumerate() {
            count += 1;
            counts.clear();
            lengths.resize(lengths.len() + fields, 0.0);
            let own = &mut lengths[doc * fields..];
            for (id, field) in terms {
                if usize::from(field) >= fields || id as usize >= frequencies.len() {
                    continue;
                }
                own[usize::from(field)] += 1.0;
                counts.push((id, field));
            }
            counts.sort_unstable();
            let mut i = 0;
            while i < counts.len() {
                let (id, field) = counts[i];
                let mut tf = 0.0;
                while i < counts.len() && counts[i] == (id, field) {
                    tf += 1.0;
                    i += 1;
                }
                frequencies[id as usize].push((doc as u32, field, tf));
            }
        }
        let documents = count;
        // A document's length: its fields' lengths, weighted.
        let lengths: Vec<f32> = lengths
            .chunks(fields.max(1))
            .map(|own| own.iter().zip(weights).map(|(n, w)| n * w).sum())
            .collect();
        let average = if documents == 0 {
            1.0
        } else {
            (lengths.iter().sum::<f32>() / documents as f32).max(1.0)
        };
        let n = documents as f32;
        let postings: Vec<Vec<(u32, f32)>> = frequencies
            .into_iter()
            .map(|entries| {
                // (document, weighted term frequency), one per document.
                let mut per_doc: Vec<(u32, f32)> = Vec::with_capacity(entries.len());
                for (doc, field, tf) in entries {
                    let weighted = weights[usize::from(field)] * tf;
                    match per_doc.last_mut() {
                        Some((last, sum)) if *last == doc => *sum += weighted,
                        _ => per_doc.push((doc, weighted)),
                    }
                }
                let df = per_doc.len() as f32;
                let idf = idf(n, df);
                per_doc
                    .into_iter()
                    .map(|(doc, tf)| {
                        let norm = K1 * (1.0 - B + B * lengths[doc as usize] / average);
                        (doc, idf * tf * (K1 + 1.0) / (tf + norm))
                    })
                    .collect()
            })
            .collect();
        // Terms no document kept (their field counts 0) are left out of the vocabulary.
        let vocabulary = terms
            .into_iter()
            .enumerate()
            .filter(|(id, _)| !postings[*id].is_empty())
            .map(|(id, term)| (term, id as u32))
            .collect();
        Bm25 {
            vocabulary,
            postings,
            documents,
        }
    }

    /// Indexes documents of string terms (interned here): for tests.
    #[cfg(test)]
    pub(crate) fn build<D, T>(documents: D, weights: &[f32]) -> Self
    where
        D: IntoIterator<Item = T>,
        T: IntoIterator<Item = (String, u8)>,
    {
        let mut ids: FxHashMap<String, u32> = FxHashMap::default();
        let mut terms: Vec<String> = Vec::new();
        let documents: Vec<Vec<(u32, u8)>> = documents
            .into_iter()
            .map(|doc| {
                doc.into_iter()
                    .map(|(term, field)| {
                        let next = terms.len() as u32;
                        let id = *ids.entry(term.clone()).or_insert_with(|| {
                            terms.push(term);
                            next
                        });
                        (id, field)
                    })
                    .collect()
            })
            .collect();
        Bm25::build_interned(documents, terms, weights)
    }

    /// Whether `term` is in some document.
    pub(crate) fn contains(&self, term: &str) -> bool {
        self.vocabulary.contains_key(term)
    }

    /// How many documents have `term` (in any field).
    pub(crate) fn document_frequency(&self, term: &str) -> usize {
        self.vocabulary
            .get(term)
            .map_or(0, |&id| self.postings[id as usize].len())
    }

    /// The `limit` best documents for these query terms, each with how much it counts (a
    /// synonym counts less than a word of the query), best first. A document's `tiers` entry
    /// ranks it above every document of a lower tier (0 when absent), whatever their scores;
    /// within a tier, scores decide, then document order. Only documents that match some term
    /// or have a tier come back. A term given twice counts once, with its larger weight.
    pub(crate) fn search(
        &self,
        query: &[(String, f32)],
        tiers: &[(u32, u32)],
        limit: usize,
    ) -> Vec<Hit> {
        let mut ids: Vec<(u32, f32)> = query
            .iter()
            .filter_map(|(term, weight)| Some((*self.vocabulary.get(term.as_str())?, *weight)))
            .collect();
        ids.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        ids.dedup_by_key(|(id, _)| *id);
        if (ids.is_empty() && tiers.is_empty()) || limit == 0 {
            return Vec::new();
        }
        let mut scores = vec![0.0_f32; self.documents];
        for (id, boost) in ids {
            for &(doc, weight) in &self.postings[id as usize] {
                scores[doc as usize] += boost * weight;
            }
        }
        let mut hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .filter(|(_, score)| **score > 0.0)
            .map(|(doc, &score)| Hit {
                doc: doc as u32,
                score,
                tier: 0,
            })
            .collect();
        for &(doc, tier) in tiers {
            match hits.binary_search_by_key(&doc, |hit| hit.doc) {
                Ok(at) => hits[at].tier = hits[at].tier.max(tier),
                Err(at) => hits.insert(
                    at,
                    Hit {
                        doc,
                        score: scores.get(doc as usize).copied().unwrap_or(0.0),
                        tier,
                    },
                ),
            }
        }
        let by_rank = |a: &Hit, b: &Hit| {
            b.tier
                .cmp(&a.tier)
                .then(b.score.total_cmp(&a.score))
                .then(a.doc.cmp(&b.doc))
        };
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit, by_rank);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(by_rank);
        hits
    }
}

/// One document found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hit {
    pub(crate) doc: u32,
    /// Its BM25 score.
    pub(crate) score: f32,
    /// Its tier: ranks above all hits of lower tiers.
    pub(crate) tier: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(words: &str) -> Vec<(String, u8)> {
        words.split(' ').map(|w| (w.to_owned(), 0)).collect()
    }

    fn build(docs: Vec<Vec<(String, u8)>>) -> Bm25 {
        Bm25::build(docs, &[1.0])
    }

    fn query(words: &[&str]) -> Vec<(String, f32)> {
        words.iter().map(|w| ((*w).to_owned(), 1.0)).collect()
    }

    fn docs_of(hits: &[Hit]) -> Vec<u32> {
        hits.iter().map(|h| h.doc).collect()
    }

    #[test]
    fn matches_the_formula() {
        // Two documents; "cat" in one of them, once, in a document of average length.
        let index = build(vec![doc("cat dog"), doc("dog bird")]);
        let hits = index.search(&query(&["cat"]), &[], 10);
        let idf = (1.0_f32 + (2.0 - 1.0 + 0.5) / (1.0 + 0.5)).ln().powf(1.5);
        let expected = idf * (K1 + 1.0) / (1.0 + K1);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].doc, 0);
        assert!(
            (hits[0].score - expected).abs() < 1e-6,
            "{hits:?} vs {expected}"
        );
    }

    #[test]
    fn rare_terms_and_short_documents_rank_higher() {
        let index = build(vec![
            doc("read file from disk"),
            doc("read file"),
            doc("write file to disk now please"),
        ]);
        // "read" is rarer than "file"; the shorter of the two documents with it wins.
        let hits = index.search(&query(&["read", "file"]), &[], 10);
        assert_eq!(docs_of(&hits), [1, 0, 2]);
    }

    #[test]
    fn ties_break_by_document_order_and_limit_applies() {
        let index = build(vec![doc("x a"), doc("x b"), doc("x c"), doc("y")]);
        let hits = index.search(&query(&["x", "x"]), &[], 2);
        assert_eq!(docs_of(&hits), [0, 1]);
        assert!(index.search(&query(&["zzz"]), &[], 5).is_empty());
        assert!(index.search(&[], &[], 5).is_empty());
        assert!(build(Vec::new()).search(&query(&["x"]), &[], 5).is_empty());
    }

    #[test]
    fn one_rare_word_outweighs_two_common_ones() {
        // Ten documents of two words; c1 and c2 are in three each, r in one.
        let index = build(vec![
            doc("c1 c2"),
            doc("r x"),
            doc("c1 y"),
            doc("c1 z"),
            doc("c2 w"),
            doc("c2 v"),
            doc("f1 f2"),
            doc("f3 f4"),
            doc("f5 f6"),
            doc("f7 f8"),
        ]);
        // Textbook idf: 2 x 1.15 for the common pair against 1.99 for the rare word; raised to
        // 1.5: 2 x 1.23 against 2.81.
        let hits = index.search(&query(&["r", "c1", "c2"]), &[], 2);
        assert_eq!(docs_of(&hits), [1, 0]);
    }

    #[test]
    fn a_fields_weight_counts_in_frequency_and_length() {
        // Field 0 weighs 3: "x" there counts as three, in a document of length 3 + 1.
        let docs = vec![
            vec![("x".to_owned(), 0), ("y".to_owned(), 1)],
            vec![("v".to_owned(), 0), ("x".to_owned(), 1)],
        ];
        let index = Bm25::build(docs, &[3.0, 1.0]);
        let hits = index.search(&query(&["x"]), &[], 5);
        assert_eq!(docs_of(&hits), [0, 1]);
        let idf = (1.0_f32 + (2.0 - 2.0 + 0.5) / (2.0 + 0.5)).ln().powf(1.5);
        let expected = idf * 3.0 * (K1 + 1.0) / (3.0 + K1);
        assert!((hits[0].score - expected).abs() < 1e-6, "{hits:?}");
    }

    #[test]
    fn weights_scale_terms_and_tiers_come_first() {
        let index = build(vec![doc("a b"), doc("a c"), doc("d")]);
        // `b` at a tenth of its weight loses to `c` at full weight.
        let hits = index.search(&[("b".into(), 0.1), ("c".into(), 1.0)], &[], 5);
        assert_eq!(docs_of(&hits), [1, 0]);
        assert!((hits[1].score * 10.0 - hits[0].score).abs() < 1e-5);
        // A tier ranks a document first, matching or not.
        let hits = index.search(&query(&["a", "c"]), &[(2, 1)], 5);
        assert_eq!(docs_of(&hits), [2, 1, 0]);
        assert_eq!(hits[0].tier, 1);
        let hits = index.search(&query(&["a", "c"]), &[(0, 1)], 5);
        assert_eq!(docs_of(&hits), [0, 1]);
    }
}
