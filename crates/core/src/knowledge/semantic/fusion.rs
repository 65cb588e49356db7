//! Reciprocal rank fusion: a candidate's fused score is the sum, over the lists that hold it,
//! of `weight / (K + rank)`. It needs no calibration between BM25's scores and cosine
//! similarities, which live on unrelated scales, and a candidate both lists agree on rises
//! above one that only a single list ranks high.

use std::collections::HashMap;

/// The usual constant: it flattens the difference between ranks 1 and 2 enough that one list
/// cannot dictate the order alone.
pub const K: f64 = 60.0;

/// Where a fused candidate came from: its 1-based rank in each list that held it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fused {
    pub id: i64,
    pub lexical_rank: Option<usize>,
    pub vector_rank: Option<usize>,
    pub score: f64,
}

/// Fuses two ranked id lists (best first), `vector_weight` weighing the vector list against
/// the lexical one (1.0 = equal). Ties keep the lexical order, then the vector order.
pub fn fuse(lexical: &[i64], vector: &[i64], vector_weight: f64) -> Vec<Fused> {
    let mut by_id: HashMap<i64, Fused> = HashMap::new();
    let mut order: Vec<i64> = Vec::new();
    for (i, id) in lexical.iter().enumerate() {
        by_id.entry(*id).or_insert_with(|| {
            order.push(*id);
            Fused {
                id: *id,
                lexical_rank: Some(i + 1),
                vector_rank: None,
                score: 1.0 / (K + (i + 1) as f64),
            }
        });
    }
    for (i, id) in vector.iter().enumerate() {
        let add = vector_weight / (K + (i + 1) as f64);
        match by_id.get_mut(id) {
            Some(f) if f.vector_rank.is_none() => {
                f.vector_rank = Some(i + 1);
                f.score += add;
            }
            Some(_) => {}
            None => {
                order.push(*id);
                by_id.insert(
                    *id,
                    Fused {
                        id: *id,
                        lexical_rank: None,
                        vector_rank: Some(i + 1),
                        score: add,
                    },
                );
            }
        }
    }
    let mut fused: Vec<Fused> = order
        .iter()
        .filter_map(|id| by_id.get(id).copied())
        .collect();
    // A stable sort keeps first-seen order among equal scores.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_beats_a_single_list() {
        let f = fuse(&[1, 2, 3], &[3, 4, 1], 1.0);
        assert_eq!(f[0].id, 1);
        assert_eq!(f[0].lexical_rank, Some(1));
        assert_eq!(f[0].vector_rank, Some(3));
        assert_eq!(f[1].id, 3);
        let ids: Vec<i64> = f.iter().map(|x| x.id).collect();
        assert_eq!(ids, vec![1, 3, 2, 4]);
    }

    #[test]
    fn a_vector_only_candidate_is_kept_with_its_rank() {
        let f = fuse(&[], &[7, 8], 1.0);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].id, 7);
        assert_eq!(f[0].lexical_rank, None);
        assert_eq!(f[0].vector_rank, Some(1));
    }

    #[test]
    fn weight_tilts_the_order_and_duplicates_count_once() {
        let even = fuse(&[1, 2], &[2, 1], 1.0);
        assert_eq!(even[0].id, 1);
        let vector_heavy = fuse(&[1, 2], &[2, 1], 2.0);
        assert_eq!(vector_heavy[0].id, 2);
        let dup = fuse(&[1, 1], &[1, 1], 1.0);
        assert_eq!(dup.len(), 1);
        assert!((dup[0].score - 2.0 / (K + 1.0)).abs() < 1e-12);
    }
}
