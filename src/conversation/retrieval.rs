//! Retrieval as the Worker runs it: the query's phrases, gated by their frequencies when the
//! candidate set must be bounded, one ranked FTS5 query, then the re-ranking in
//! `knowledge::retrieve`. With an embedding model configured, the question's vector is asked
//! of the chatbot's vector index at the same time, and the two lists are fused (and reranked
//! when a reranker is configured) by `knowledge::semantic::hybrid`. Search by meaning only
//! ever adds: when its calls fail or time out, the words' answer stands alone.

use crate::platform::vector_index;
use crate::providers::semantic;
use crate::storage::Store;
use edgechat_core::api::error::ApiResult;
use edgechat_core::config::Config;
use edgechat_core::domain::agent::Agent;
use edgechat_core::knowledge::query::{gated_expression, phrases, CANDIDATE_BUDGET};
use edgechat_core::knowledge::retrieve::{rank, ChunkHit, Ranked, CANDIDATES};
use edgechat_core::knowledge::semantic::hybrid::{
    apply_rerank, finish, fuse_candidates, Found, RERANK_CANDIDATES,
};
use edgechat_core::knowledge::semantic::index::IndexCommand;
use edgechat_core::knowledge::semantic::vector::{Neighbour, Quantised};
use std::collections::HashSet;
use worker::Env;

/// What a search reads beside D1: the runtime (for the vector index and the models) and the
/// settings saying which models, if any, search by meaning.
pub struct Searcher<'a> {
    pub store: &'a Store,
    pub env: &'a Env,
    pub config: &'a Config,
}

/// The best chunks of a chatbot's sources for `query`, honouring the agent's sources.
/// `frequencies` are the index-wide counts of the query's phrases, read by the caller in the
/// same round trip as its other reads (see `Store::phrase_count_statement`).
pub async fn retrieve(
    searcher: &Searcher<'_>,
    chatbot_uuid: &str,
    agent: Option<&Agent>,
    query: &str,
    limit: usize,
    frequencies: &[i64],
) -> ApiResult<Vec<Ranked>> {
    let found = search(searcher, chatbot_uuid, agent, query, limit, frequencies).await?;
    Ok(found.into_iter().map(|f| f.ranked).collect())
}

/// `retrieve`, saying for each result how it was found.
pub async fn search(
    searcher: &Searcher<'_>,
    chatbot_uuid: &str,
    agent: Option<&Agent>,
    query: &str,
    limit: usize,
    frequencies: &[i64],
) -> ApiResult<Vec<Found>> {
    let allowed = agent.and_then(Agent::allowed_sources);
    if allowed.as_ref().is_some_and(Vec::is_empty) {
        return Ok(Vec::new());
    }
    let (hits, neighbours) = futures::join!(
        lexical_hits(searcher.store, chatbot_uuid, allowed.as_deref(), query, frequencies),
        neighbours(searcher, chatbot_uuid, allowed.as_deref(), query),
    );
    let hits = hits?;
    if neighbours.is_empty() {
        return Ok(Found::lexical(rank(query, hits, limit)));
    }

    // Neighbours the words did not find are read from D1 (one query); a neighbour whose chunk
    // is gone (deleted, its removal not yet applied to the index) is simply skipped.
    let known: HashSet<i64> = hits.iter().map(|h| h.id).collect();
    let missing: Vec<i64> = neighbours
        .iter()
        .map(|n| n.id)
        .filter(|id| !known.contains(id))
        .collect();
    let mut extra = if missing.is_empty() {
        Vec::new()
    } else {
        searcher
            .store
            .chunks_by_id(chatbot_uuid, &missing, allowed.as_deref())
            .await?
    };
    let mut vector: Vec<(ChunkHit, f32)> = Vec::with_capacity(neighbours.len());
    for n in &neighbours {
        let hit = hits
            .iter()
            .find(|h| h.id == n.id)
            .cloned()
            .or_else(|| {
                let at = extra.iter().position(|h| h.id == n.id)?;
                Some(extra.swap_remove(at))
            });
        if let Some(hit) = hit {
            vector.push((hit, n.similarity));
        }
    }
    let every = hits.len();
    let fused = fuse_candidates(rank(query, hits, every), vector);
    let fused = rerank(searcher, query, fused).await;
    Ok(finish(fused, limit))
}

async fn lexical_hits(
    store: &Store,
    chatbot_uuid: &str,
    allowed: Option<&[String]>,
    query: &str,
    frequencies: &[i64],
) -> ApiResult<Vec<ChunkHit>> {
    let phrases = phrases(query);
    let Some(expression) = (!phrases.is_empty())
        .then(|| gated_expression(&phrases, frequencies, CANDIDATE_BUDGET))
        .flatten()
    else {
        return Ok(Vec::new());
    };
    store
        .search_chunks(chatbot_uuid, &expression, allowed, CANDIDATES)
        .await
}

/// The question's nearest chunks by meaning: one embedding call, one call to the index. Empty
/// when search by meaning is off, or failed (logged once per incident).
async fn neighbours(
    searcher: &Searcher<'_>,
    chatbot_uuid: &str,
    allowed: Option<&[String]>,
    query: &str,
) -> Vec<Neighbour> {
    let semantic_config = &searcher.config.semantic;
    let Some(service) = semantic_config.embeddings.as_ref() else {
        return Vec::new();
    };
    if query.trim().is_empty() {
        return Vec::new();
    }
    let vectors = match semantic::embed(searcher.env, service, &[query], semantic_config.timeout).await {
        Ok(v) => {
            semantic::recovered("embedding questions");
            v
        }
        Err(failure) => {
            semantic::failed("embedding questions", &failure);
            return Vec::new();
        }
    };
    let Some(vector) = vectors.first().and_then(|v| Quantised::from_f32(v)) else {
        return Vec::new();
    };
    let command = IndexCommand::Query {
        model: crate::ingestion::vectors::model_key(service),
        vector: (&vector).into(),
        k: CANDIDATES,
        sources: allowed.map(<[String]>::to_vec),
    };
    match vector_index::nearest(searcher.env, chatbot_uuid, &command).await {
        Ok(found) => found,
        Err(err) => {
            semantic::failed("reading a vector index", &err.to_string());
            Vec::new()
        }
    }
}

/// Reorders the first candidates by the reranker's scores, when one is configured and answers.
async fn rerank(searcher: &Searcher<'_>, query: &str, fused: Vec<Found>) -> Vec<Found> {
    let semantic_config = &searcher.config.semantic;
    let Some(service) = semantic_config.rerank.as_ref() else {
        return fused;
    };
    let texts: Vec<String> = fused
        .iter()
        .take(RERANK_CANDIDATES)
        .map(|f| {
            let hit = &f.ranked.hit;
            if hit.heading.is_empty() {
                hit.text.clone()
            } else {
                format!("{}\n{}", hit.heading, hit.text)
            }
        })
        .collect();
    if texts.len() < 2 {
        return fused;
    }
    let documents: Vec<&str> = texts.iter().map(String::as_str).collect();
    match semantic::rerank(searcher.env, service, query, &documents, semantic_config.timeout).await {
        Ok(scores) => {
            semantic::recovered("reranking");
            apply_rerank(fused, &scores)
        }
        Err(failure) => {
            semantic::failed("reranking", &failure);
            fused
        }
    }
}
