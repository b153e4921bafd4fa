//! Fusing two rankings' scores: each turned into z-scores (how many standard deviations above
//! the catalog's average a tool is), then weighted. Cosines and BM25 scores live on different
//! scales; z-scores put them on one, per query.

/// `weight * z(similarity) + (1 - weight) * z(lexical)` per tool; a tool without a similarity
/// (not embedded) has `z(lexical)` alone. A side where every tool scores the same adds nothing.
pub(crate) fn fuse(similarities: &[Option<f32>], lexical: &[f32], weight: f32) -> Vec<f32> {
    let semantic = z_scores(similarities.iter().copied());
    let lexical = z_scores(lexical.iter().copied().map(Some));
    similarities
        .iter()
        .zip(semantic.iter().zip(&lexical))
        .map(|(similarity, (s, l))| match similarity {
            Some(_) => weight * s + (1.0 - weight) * l,
            None => *l,
        })
        .collect()
}

fn z_scores(values: impl Iterator<Item = Option<f32>> + Clone) -> Vec<f32> {
    let (count, sum) = values
        .clone()
        .flatten()
        .fold((0usize, 0f64), |(n, s), v| (n + 1, s + f64::from(v)));
    if count == 0 {
        return values.map(|_| 0.0).collect();
    }
    let mean = sum / count as f64;
    let variance = values
        .clone()
        .flatten()
        .map(|v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / count as f64;
    let deviation = variance.sqrt();
    values
        .map(|v| match v {
            Some(v) if deviation > 1e-12 => ((f64::from(v) - mean) / deviation) as f32,
            _ => 0.0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_count_by_their_spread_not_their_scale() {
        // Cosines differ by hundredths, BM25 scores by units: the weight decides, not the scale.
        let cosines = [Some(0.50), Some(0.52), Some(0.48)];
        let mostly_lexical = fuse(&cosines, &[0.0, 0.0, 9.0], 0.3);
        assert!(mostly_lexical[2] > mostly_lexical[1] && mostly_lexical[1] > mostly_lexical[0]);
        assert_eq!(mostly_lexical, fuse(&cosines, &[0.0, 0.0, 900.0], 0.3));
        let semantic_only = fuse(&cosines, &[0.0, 0.0, 9.0], 1.0);
        assert!(semantic_only[1] > semantic_only[0] && semantic_only[0] > semantic_only[2]);
    }

    #[test]
    fn flat_or_missing_scores_add_nothing() {
        assert_eq!(fuse(&[None, None], &[1.0, 1.0], 0.7), vec![0.0, 0.0]);
        assert_eq!(fuse(&[], &[], 0.7), Vec::<f32>::new());
        let one_missing = fuse(&[Some(1.0), None, Some(0.0)], &[0.0, 0.0, 0.0], 1.0);
        assert_eq!(one_missing, vec![1.0, 0.0, -1.0]);
        // A tool not embedded counts by its words alone, whatever the weight.
        let words_only = fuse(&[Some(1.0), None, Some(0.0)], &[0.0, 3.0, 0.0], 1.0);
        assert!(words_only[1] > words_only[0], "{words_only:?}");
    }
}
