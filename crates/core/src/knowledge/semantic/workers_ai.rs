//! Workers AI's embedding and reranking models through the `AI` binding: `@cf/baai/bge-m3`
//! (multilingual, 1,024 dimensions) and `@cf/baai/bge-reranker-base`.

use super::{check_embeddings, check_rerank, wire_error, RerankScore, WireError};
use serde::Deserialize;
use serde_json::{json, Value};

pub const DEFAULT_EMBEDDINGS_MODEL: &str = "@cf/baai/bge-m3";
pub const DEFAULT_RERANK_MODEL: &str = "@cf/baai/bge-reranker-base";

pub fn embeddings_input(inputs: &[&str]) -> Value {
    json!({"text": inputs})
}

#[derive(Deserialize)]
struct EmbeddingsJson {
    data: Vec<Vec<f32>>,
}

pub fn decode_embeddings(output: &Value, expected: usize) -> Result<Vec<Vec<f32>>, WireError> {
    let parsed = EmbeddingsJson::deserialize(output)
        .map_err(|e| wire_error(format!("unreadable embeddings answer ({e})")))?;
    check_embeddings(parsed.data, expected)
}

pub fn rerank_input(query: &str, documents: &[&str], top_n: usize) -> Value {
    let contexts: Vec<Value> = documents.iter().map(|d| json!({"text": d})).collect();
    json!({"query": query, "contexts": contexts, "top_k": top_n})
}

#[derive(Deserialize)]
struct RerankJson {
    response: Vec<RerankItemJson>,
}

#[derive(Deserialize)]
struct RerankItemJson {
    id: usize,
    score: f64,
}

pub fn decode_rerank(output: &Value, documents: usize) -> Result<Vec<RerankScore>, WireError> {
    let parsed = RerankJson::deserialize(output)
        .map_err(|e| wire_error(format!("unreadable rerank answer ({e})")))?;
    check_rerank(
        parsed
            .response
            .into_iter()
            .map(|r| RerankScore {
                index: r.id,
                score: r.score,
            })
            .collect(),
        documents,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_binding_shapes() {
        let out = json!({"shape": [2, 2], "data": [[1.0, 0.0], [0.0, 1.0]], "pooling": "cls"});
        assert_eq!(decode_embeddings(&out, 2).unwrap().len(), 2);
        assert!(decode_embeddings(&json!({"data": "x"}), 1).is_err());
        let ranked = json!({"response": [{"id": 1, "score": 0.3}, {"id": 0, "score": 0.8}]});
        let scores = decode_rerank(&ranked, 2).unwrap();
        assert_eq!(scores[0].index, 0);
        assert_eq!(rerank_input("q", &["a"], 1)["contexts"][0]["text"], "a");
    }
}
