//! The OpenAI-compatible embeddings API (`POST {base}/embeddings`), served by OpenAI, Ollama,
//! llama.cpp's server and vLLM, and the rerank API those servers share (`POST {base}/rerank`,
//! the shape Jina and Cohere introduced and llama.cpp and vLLM serve).

use super::{check_embeddings, check_rerank, wire_error, RerankScore, WireError};
use serde::Deserialize;
use serde_json::{json, Value};

pub fn embeddings_body(model: &str, inputs: &[&str]) -> Value {
    json!({"model": model, "input": inputs})
}

#[derive(Deserialize)]
struct EmbeddingsJson {
    data: Vec<EmbeddingJson>,
}

#[derive(Deserialize)]
struct EmbeddingJson {
    index: Option<usize>,
    embedding: Vec<f32>,
}

/// Reads an embeddings answer for `expected` inputs, in input order (servers may answer out of
/// order and say so by `index`).
pub fn decode_embeddings(body: &str, expected: usize) -> Result<Vec<Vec<f32>>, WireError> {
    let parsed: EmbeddingsJson = serde_json::from_str(body)
        .map_err(|e| wire_error(format!("unreadable embeddings answer ({e})")))?;
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; parsed.data.len()];
    for (position, item) in parsed.data.into_iter().enumerate() {
        let index = item.index.unwrap_or(position);
        match slots.get_mut(index) {
            Some(slot @ None) => *slot = Some(item.embedding),
            _ => return Err(wire_error(format!("embedding index {index} out of place"))),
        }
    }
    check_embeddings(slots.into_iter().flatten().collect(), expected)
}

pub fn rerank_body(model: &str, query: &str, documents: &[&str], top_n: usize) -> Value {
    json!({"model": model, "query": query, "documents": documents, "top_n": top_n})
}

#[derive(Deserialize)]
struct RerankJson {
    results: Vec<RerankResultJson>,
}

#[derive(Deserialize)]
struct RerankResultJson {
    index: usize,
    #[serde(alias = "score")]
    relevance_score: f64,
}

/// Reads a rerank answer for `documents` documents, best first.
pub fn decode_rerank(body: &str, documents: usize) -> Result<Vec<RerankScore>, WireError> {
    let parsed: RerankJson = serde_json::from_str(body)
        .map_err(|e| wire_error(format!("unreadable rerank answer ({e})")))?;
    check_rerank(
        parsed
            .results
            .into_iter()
            .map(|r| RerankScore {
                index: r.index,
                score: r.relevance_score,
            })
            .collect(),
        documents,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_are_put_back_in_input_order() {
        let body = r#"{"object":"list","data":[
            {"object":"embedding","index":1,"embedding":[0.0,1.0]},
            {"object":"embedding","index":0,"embedding":[1.0,0.0]}],"model":"m"}"#;
        assert_eq!(
            decode_embeddings(body, 2),
            Ok(vec![vec![1.0, 0.0], vec![0.0, 1.0]])
        );
        assert!(decode_embeddings(body, 3).is_err());
        assert!(decode_embeddings("not json", 1).is_err());
        let twice = r#"{"data":[{"index":0,"embedding":[1.0]},{"index":0,"embedding":[1.0]}]}"#;
        assert!(decode_embeddings(twice, 2).is_err());
        let request = embeddings_body("m", &["a", "b"]);
        assert_eq!(request["input"][1], "b");
    }

    #[test]
    fn rerank_answers_accept_both_score_names() {
        let body = r#"{"results":[{"index":0,"relevance_score":0.2},{"index":1,"score":0.7}]}"#;
        let scores = decode_rerank(body, 2).unwrap();
        assert_eq!(scores[0].index, 1);
        assert!(decode_rerank(body, 1).is_err());
        assert_eq!(rerank_body("r", "q", &["x"], 1)["top_n"], 1);
    }
}
