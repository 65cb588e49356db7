//! Search by meaning beside search by words: what an embedding model returns, how vectors are
//! kept small ([`vector`]), how lexical and vector candidates are fused ([`fusion`]), and each
//! provider's wire format for embeddings and reranking ([`openai`], [`workers_ai`]).
//!
//! Nothing here calls anyone: the shell sends the bodies built here and hands the answers back
//! to the decoders, which check them (count, dimensions, finite numbers) so a model server
//! answering nonsense degrades search to the lexical path instead of poisoning the index.

pub mod fusion;
pub mod hybrid;
pub mod index;
pub mod openai;
pub mod vector;
pub mod workers_ai;

/// The most texts one embedding call carries: servers cap batches (OpenAI at 2,048 inputs,
/// Workers AI's bge-m3 at 100), and a smaller call fails and retries more cheaply.
pub const EMBED_BATCH: usize = 32;

/// Vectors longer than this are refused as nonsense: the widest served models have 4,096.
pub const MAX_DIMENSIONS: usize = 8192;

/// Why an embedding or rerank answer was not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn wire_error(message: impl Into<String>) -> WireError {
    WireError(message.into())
}

/// Checks a batch of embeddings answered for `expected` inputs: one per input, all of one
/// width, within bounds, with finite components and not all zero.
pub fn check_embeddings(
    vectors: Vec<Vec<f32>>,
    expected: usize,
) -> Result<Vec<Vec<f32>>, WireError> {
    if vectors.len() != expected {
        return Err(wire_error(format!(
            "{} embeddings answered for {expected} inputs",
            vectors.len()
        )));
    }
    let width = vectors.first().map(Vec::len).unwrap_or(0);
    if expected > 0 && (width == 0 || width > MAX_DIMENSIONS) {
        return Err(wire_error(format!("embeddings of {width} dimensions")));
    }
    for v in &vectors {
        if v.len() != width {
            return Err(wire_error(format!(
                "embeddings of {} and {width} dimensions in one answer",
                v.len()
            )));
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(wire_error("an embedding holds a number that is not finite"));
        }
        if v.iter().all(|x| *x == 0.0) {
            return Err(wire_error("an embedding is all zeros"));
        }
    }
    Ok(vectors)
}

/// One reranked document: its index in the list sent, and the reranker's score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RerankScore {
    pub index: usize,
    pub score: f64,
}

/// Checks a rerank answer for `documents` documents: indexes in range and unique, scores
/// finite. Returned best first.
pub fn check_rerank(
    mut scores: Vec<RerankScore>,
    documents: usize,
) -> Result<Vec<RerankScore>, WireError> {
    let mut seen = vec![false; documents];
    for s in &scores {
        if s.index >= documents {
            return Err(wire_error(format!(
                "the reranker named document {} of {documents}",
                s.index
            )));
        }
        if std::mem::replace(&mut seen[s.index], true) {
            return Err(wire_error(format!(
                "the reranker scored document {} twice",
                s.index
            )));
        }
        if !s.score.is_finite() {
            return Err(wire_error(
                "the reranker answered a score that is not finite",
            ));
        }
    }
    scores.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
    Ok(scores)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_must_match_inputs_and_agree_on_width() {
        assert!(check_embeddings(vec![vec![1.0, 0.0]], 1).is_ok());
        assert!(check_embeddings(vec![vec![1.0, 0.0]], 2).is_err());
        assert!(check_embeddings(vec![vec![1.0, 0.0], vec![1.0]], 2).is_err());
        assert!(check_embeddings(vec![vec![f32::NAN, 1.0]], 1).is_err());
        assert!(check_embeddings(vec![vec![0.0, 0.0]], 1).is_err());
        assert!(check_embeddings(vec![vec![]], 1).is_err());
        assert_eq!(check_embeddings(vec![], 0), Ok(vec![]));
    }

    #[test]
    fn rerank_scores_are_checked_and_sorted() {
        let s = |index, score| RerankScore { index, score };
        assert_eq!(
            check_rerank(vec![s(0, 0.1), s(1, 0.9)], 2),
            Ok(vec![s(1, 0.9), s(0, 0.1)])
        );
        assert!(check_rerank(vec![s(2, 0.1)], 2).is_err());
        assert!(check_rerank(vec![s(0, 0.1), s(0, 0.2)], 2).is_err());
        assert!(check_rerank(vec![s(0, f64::INFINITY)], 2).is_err());
    }
}
