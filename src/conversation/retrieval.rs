//! Retrieval as the Worker runs it: the query's phrases, gated by their frequencies when the
//! candidate set must be bounded, one ranked FTS5 query, then the re-ranking in
//! `knowledge::retrieve`.

use crate::storage::Store;
use edgechat_core::api::error::ApiResult;
use edgechat_core::domain::agent::Agent;
use edgechat_core::knowledge::query::{gated_expression, phrases, CANDIDATE_BUDGET};
use edgechat_core::knowledge::retrieve::{rank, Ranked, CANDIDATES};

/// The best chunks of a chatbot's sources for `query`, honouring the agent's sources.
/// `frequencies` are the index-wide counts of the query's phrases, read by the caller in the
/// same round trip as its other reads (see `Store::phrase_count_statement`).
pub async fn retrieve(
    store: &Store,
    chatbot_uuid: &str,
    agent: Option<&Agent>,
    query: &str,
    limit: usize,
    frequencies: &[i64],
) -> ApiResult<Vec<Ranked>> {
    let phrases = phrases(query);
    let allowed = agent.and_then(Agent::allowed_sources);
    if phrases.is_empty() || allowed.as_ref().is_some_and(Vec::is_empty) {
        return Ok(Vec::new());
    }
    let Some(expression) = gated_expression(&phrases, frequencies, CANDIDATE_BUDGET) else {
        return Ok(Vec::new());
    };
    let hits = store
        .search_chunks(chatbot_uuid, &expression, allowed.as_deref(), CANDIDATES)
        .await?;
    Ok(rank(query, hits, limit))
}
