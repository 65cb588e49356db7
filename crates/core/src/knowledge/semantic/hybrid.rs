//! Hybrid retrieval: the lexical ranking and the vector neighbours fused by reciprocal rank,
//! optionally reordered by a reranker, then spread over sources by the same rule the lexical
//! path uses. Each result says how it was found, for `POST /chatbot/{uuid}/search`.

use super::fusion::fuse;
use super::RerankScore;
use crate::knowledge::retrieve::{pick_diverse, ChunkHit, Ranked};
use std::collections::HashMap;

/// How many fused candidates a reranker sees: enough to lift a passage from the second page,
/// few enough for one short call.
pub const RERANK_CANDIDATES: usize = 20;

/// The vector list weighs as much as the lexical one: neither knows the other's failures, and
/// equal weights were best on the evaluation (see README, Evaluation).
pub const VECTOR_WEIGHT: f64 = 1.0;

#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub ranked: Ranked,
    /// 1-based place in the lexical ranking, when the words found it.
    pub lexical_rank: Option<usize>,
    /// 1-based place among the vector neighbours, when the meaning found it.
    pub vector_rank: Option<usize>,
    pub vector_similarity: Option<f32>,
    pub rerank_score: Option<f64>,
}

impl Found {
    /// A result of the lexical path alone (no embeddings configured, or they failed).
    pub fn lexical(ranked: Vec<Ranked>) -> Vec<Found> {
        ranked
            .into_iter()
            .enumerate()
            .map(|(i, ranked)| Found {
                ranked,
                lexical_rank: Some(i + 1),
                vector_rank: None,
                vector_similarity: None,
                rerank_score: None,
            })
            .collect()
    }
}

fn vector_only(hit: ChunkHit) -> Ranked {
    Ranked {
        hit,
        score: 0.0,
        coverage: 0.0,
        weighted_coverage: 0.0,
        known_share: 0.0,
        question_match: 0.0,
        misses_follow_up: false,
    }
}

/// Fuses `lexical` (every lexical candidate, best first) with `vector` (neighbours, most
/// similar first). Scores become the fused score scaled so the best is 1.
pub fn fuse_candidates(lexical: Vec<Ranked>, vector: Vec<(ChunkHit, f32)>) -> Vec<Found> {
    let lexical_ids: Vec<i64> = lexical.iter().map(|r| r.hit.id).collect();
    let vector_ids: Vec<i64> = vector.iter().map(|(h, _)| h.id).collect();
    let fused = fuse(&lexical_ids, &vector_ids, VECTOR_WEIGHT);
    let best = fused
        .first()
        .map_or(1.0, |f| f.score)
        .max(f64::MIN_POSITIVE);
    let mut by_id: HashMap<i64, Ranked> = lexical.into_iter().map(|r| (r.hit.id, r)).collect();
    let mut similarity: HashMap<i64, f32> = HashMap::new();
    for (hit, s) in vector {
        similarity.insert(hit.id, s);
        by_id.entry(hit.id).or_insert_with(|| vector_only(hit));
    }
    fused
        .into_iter()
        .filter_map(|f| {
            let mut ranked = by_id.remove(&f.id)?;
            ranked.score = f.score / best;
            Some(Found {
                ranked,
                lexical_rank: f.lexical_rank,
                vector_rank: f.vector_rank,
                vector_similarity: similarity.get(&f.id).copied(),
                rerank_score: None,
            })
        })
        .collect()
}

/// Reorders the first `scores.len()`-or-so candidates by a reranker's scores (indexes into
/// `found`); candidates it did not score keep their order after the scored ones.
pub fn apply_rerank(found: Vec<Found>, scores: &[RerankScore]) -> Vec<Found> {
    let mut slots: Vec<Option<Found>> = found.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    let top = scores.first().map_or(1.0, |s| s.score);
    let bottom = scores.last().map_or(0.0, |s| s.score);
    let span = (top - bottom).max(f64::EPSILON);
    for s in scores {
        if let Some(mut f) = slots.get_mut(s.index).and_then(Option::take) {
            f.rerank_score = Some(s.score);
            // Scaled to 0.5..1 so every reranked result stays above the ones it did not see.
            f.ranked.score = 0.5 + 0.5 * (s.score - bottom) / span;
            out.push(f);
        }
    }
    for mut f in slots.into_iter().flatten() {
        f.ranked.score = f.ranked.score.min(0.5) * 0.99;
        out.push(f);
    }
    out
}

/// The best `limit`, spread over sources.
pub fn finish(found: Vec<Found>, limit: usize) -> Vec<Found> {
    pick_diverse(
        found,
        limit,
        |f| &f.ranked.hit.data_source_uuid,
        |f| f.ranked.score,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::data_source::SourceType;

    fn hit(id: i64, source: &str) -> ChunkHit {
        ChunkHit {
            id,
            data_source_uuid: source.into(),
            position: 0,
            heading: String::new(),
            text: format!("chunk {id}"),
            tokens: 3,
            source_type: SourceType::Qa,
            title: source.into(),
            file_name: String::new(),
            meta_json: "{}".into(),
            rank: -1.0,
        }
    }

    fn lexical(ids: &[(i64, &str)]) -> Vec<Ranked> {
        ids.iter().map(|(id, s)| vector_only(hit(*id, s))).collect()
    }

    #[test]
    fn a_chunk_found_by_meaning_alone_joins_with_its_rank() {
        let found = fuse_candidates(
            lexical(&[(1, "a"), (2, "b")]),
            vec![(hit(3, "c"), 0.9), (hit(1, "a"), 0.5)],
        );
        assert_eq!(found[0].ranked.hit.id, 1);
        assert_eq!(found[0].lexical_rank, Some(1));
        assert_eq!(found[0].vector_rank, Some(2));
        assert!((found[0].ranked.score - 1.0).abs() < 1e-9);
        let three = found.iter().find(|f| f.ranked.hit.id == 3).unwrap();
        assert_eq!(three.lexical_rank, None);
        assert_eq!(three.vector_rank, Some(1));
        assert_eq!(three.vector_similarity, Some(0.9));
        assert_eq!(found.len(), 3);
    }

    #[test]
    fn the_reranker_decides_the_order_of_what_it_saw() {
        let found = Found::lexical(lexical(&[(1, "a"), (2, "b"), (3, "c")]));
        let scores = vec![
            RerankScore {
                index: 2,
                score: 0.9,
            },
            RerankScore {
                index: 0,
                score: 0.1,
            },
        ];
        let out = apply_rerank(found, &scores);
        let ids: Vec<i64> = out.iter().map(|f| f.ranked.hit.id).collect();
        assert_eq!(ids, vec![3, 1, 2]);
        assert_eq!(out[0].rerank_score, Some(0.9));
        assert_eq!(out[2].rerank_score, None);
        assert!(out[1].ranked.score > out[2].ranked.score);
        let picked = finish(out, 2);
        assert_eq!(picked.len(), 2);
        assert_eq!(picked[0].ranked.hit.id, 3);
    }
}
