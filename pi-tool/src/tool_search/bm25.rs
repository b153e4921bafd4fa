//! Okapi BM25 (k1 = 1.2, b = 0.75) over a fixed set of documents, built once.
//!
//! Written here rather than taken from the `bm25` crate (2.3.2, the one maintained BM25 crate
//! on crates.io), which was checked: it hashes terms to 32-bit ids (two terms can collide), it
//! gathers candidates in a `HashSet`, so equal scores come back in an order that changes from
//! run to run, and its tokenizer, which neither splits identifiers nor can be kept without its
//! five dependencies (`cached`, `stop-words`, `rust-stemmers`, ...), is most of what it offers.
//! What remains is the 100 lines below: exact terms, each posting's weight computed once at
//! build time, and ties broken by document order (the tools' names), so a search is
//! deterministic.

use std::collections::HashMap;

/// Term-frequency saturation.
const K1: f32 = 1.2;
/// Length normalization.
const B: f32 = 0.75;

/// An inverted index whose postings carry their finished BM25 weight (idf × saturated tf).
#[derive(Debug, Default)]
pub(crate) struct Bm25 {
    /// Term -> its id (its position in `postings`).
    vocabulary: HashMap<String, u32>,
    /// Per term id: (document, weight), in document order.
    postings: Vec<Vec<(u32, f32)>>,
    documents: usize,
}

impl Bm25 {
    /// Indexes documents given as (term, how many times it counts) lists; a document's id is
    /// its position. Terms are interned as they come, so the build allocates once per distinct
    /// term, not per occurrence.
    pub(crate) fn build<D, T>(documents: D) -> Self
    where
        D: IntoIterator<Item = T>,
        T: IntoIterator<Item = (String, u32)>,
    {
        let mut vocabulary: HashMap<String, u32> = HashMap::new();
        let mut frequencies: Vec<Vec<(u32, u32)>> = Vec::new();
        let mut lengths: Vec<f32> = Vec::new();
        let mut counts: Vec<(u32, u32)> = Vec::new();
        for (doc, terms) in documents.into_iter().enumerate() {
            counts.clear();
            for (term, n) in terms {
                let id = match vocabulary.get(term.as_str()) {
                    Some(&id) => id,
                    None => {
                        let id = frequencies.len() as u32;
                        vocabulary.insert(term, id);
                        frequencies.push(Vec::new());
                        id
                    }
                };
                counts.push((id, n));
            }
            lengths.push(counts.iter().map(|(_, n)| *n as f32).sum());
            counts.sort_unstable_by_key(|(id, _)| *id);
            let mut i = 0;
            while i < counts.len() {
                let (id, mut tf) = counts[i];
                i += 1;
                while i < counts.len() && counts[i].0 == id {
                    tf += counts[i].1;
                    i += 1;
                }
                frequencies[id as usize].push((doc as u32, tf));
            }
        }
        let documents = lengths.len();
        let average = if documents == 0 {
            1.0
        } else {
            (lengths.iter().sum::<f32>() / documents as f32).max(1.0)
        };
        let n = documents as f32;
        let postings = frequencies
            .into_iter()
            .map(|docs| {
                let df = docs.len() as f32;
                // Lucene's idf: never negative, even for a term in every document.
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                docs.into_iter()
                    .map(|(doc, tf)| {
                        let tf = tf as f32;
                        let norm = K1 * (1.0 - B + B * lengths[doc as usize] / average);
                        (doc, idf * tf * (K1 + 1.0) / (tf + norm))
                    })
                    .collect()
            })
            .collect();
        Bm25 {
            vocabulary,
            postings,
            documents,
        }
    }

    /// The `limit` best documents for these query terms, best first: (document, score), only
    /// those that match some term. Equal scores come in document order. A repeated query term
    /// counts once.
    pub(crate) fn search(&self, query: &[String], limit: usize) -> Vec<(u32, f32)> {
        let mut ids: Vec<u32> = query
            .iter()
            .filter_map(|term| self.vocabulary.get(term.as_str()).copied())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Vec::new();
        }
        let mut scores = vec![0.0_f32; self.documents];
        for id in ids {
            for &(doc, weight) in &self.postings[id as usize] {
                scores[doc as usize] += weight;
            }
        }
        let mut hits: Vec<(u32, f32)> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, score)| *score > 0.0)
            .map(|(doc, score)| (doc as u32, score))
            .collect();
        let by_rank = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit, by_rank);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(by_rank);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(words: &str) -> Vec<(String, u32)> {
        words.split(' ').map(|w| (w.to_owned(), 1)).collect()
    }

    #[test]
    fn matches_the_formula() {
        // Two documents; "cat" in one of them, once, in a document of average length.
        let index = Bm25::build([doc("cat dog"), doc("dog bird")]);
        let hits = index.search(&["cat".to_owned()], 10);
        let idf = (1.0_f32 + (2.0 - 1.0 + 0.5) / (1.0 + 0.5)).ln();
        let expected = idf * (K1 + 1.0) / (1.0 + K1);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, 0);
        assert!(
            (hits[0].1 - expected).abs() < 1e-6,
            "{hits:?} vs {expected}"
        );
    }

    #[test]
    fn rare_terms_and_short_documents_rank_higher() {
        let index = Bm25::build([
            doc("read file from disk"),
            doc("read file"),
            doc("write file to disk now please"),
        ]);
        // "read" is rarer than "file"; the shorter of the two documents with it wins.
        let hits = index.search(&["read".to_owned(), "file".to_owned()], 10);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [1, 0, 2]);
    }

    #[test]
    fn ties_break_by_document_order_and_limit_applies() {
        let index = Bm25::build([doc("x a"), doc("x b"), doc("x c"), doc("y")]);
        let hits = index.search(&["x".to_owned(), "x".to_owned()], 2);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [0, 1]);
        assert!(index.search(&["zzz".to_owned()], 5).is_empty());
        assert!(index.search(&[], 5).is_empty());
        assert!(
            Bm25::build(Vec::<Vec<(String, u32)>>::new())
                .search(&["x".to_owned()], 5)
                .is_empty()
        );
    }
}
