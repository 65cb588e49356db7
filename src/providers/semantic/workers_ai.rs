//! Workers AI's embedding and reranking models through the `AI` binding.

use super::{within, Failure};
use edgechat_core::config::bindings;
use edgechat_core::knowledge::semantic::{workers_ai, RerankScore};
use serde_json::Value;
use std::time::Duration;
use worker::Env;

async fn run(env: &Env, model: &str, input: Value, timeout: Duration) -> Result<Value, Failure> {
    let ai = env.ai(bindings::AI).map_err(|e| e.to_string())?;
    within(timeout, async {
        ai.run::<Value, Value>(model, input)
            .await
            .map_err(|e| format!("Workers AI refused the call ({e})"))
    })
    .await
}

pub async fn embed(
    env: &Env,
    model: &str,
    texts: &[&str],
    timeout: Duration,
) -> Result<Vec<Vec<f32>>, Failure> {
    let output = run(env, model, workers_ai::embeddings_input(texts), timeout).await?;
    workers_ai::decode_embeddings(&output, texts.len()).map_err(|e| e.to_string())
}

pub async fn rerank(
    env: &Env,
    model: &str,
    query: &str,
    documents: &[&str],
    timeout: Duration,
) -> Result<Vec<RerankScore>, Failure> {
    let input = workers_ai::rerank_input(query, documents, documents.len());
    let output = run(env, model, input, timeout).await?;
    workers_ai::decode_rerank(&output, documents.len()).map_err(|e| e.to_string())
}
