use crate::app::http::json_response;
use crate::app::Call;
use crate::conversation::retrieval::{search as find, search_owned, Searched, Searcher};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::validate::{canonical_uuid, Body, MAX_PROMPT_CHARS};
use edgechat_core::domain::agent::AgentType;
use edgechat_core::knowledge::retrieve::Ranked;
use edgechat_core::knowledge::semantic::hybrid::Found;
use serde_json::{json, Map, Value};
use worker::Response;

pub const MAX_SEARCH_RESULTS: usize = 20;

pub fn ranked_json(r: &Ranked) -> Value {
    json!({
        "data_source_uuid": r.hit.data_source_uuid,
        "title": r.hit.title,
        "type": r.hit.source_type,
        "file_name": r.hit.file_name,
        "heading": r.hit.heading,
        "text": r.hit.text,
        "position": r.hit.position,
        "score": (r.score * 1000.0).round() / 1000.0,
    })
}

/// A search result with how it was found (what Cloudflare's AI Search calls
/// `scoring_details`): its 1-based place in the lexical and the vector list (null when that
/// list did not hold it), the cosine similarity, and the reranker's score when one ran.
fn found_json(found: &Found) -> Value {
    let mut out = ranked_json(&found.ranked);
    out["lexical_rank"] = json!(found.lexical_rank);
    out["vector_rank"] = json!(found.vector_rank);
    out["vector_similarity"] = json!(found
        .vector_similarity
        .map(|s| (f64::from(s) * 1000.0).round() / 1000.0));
    out["rerank_score"] = json!(found.rerank_score);
    out
}

/// `POST /chatbot/{uuid}/search {query, agent_uuid?, limit?}`: what retrieval finds, ranked.
pub async fn search(mut call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    // Read before the chatbot, but judged after it: someone else's chatbot is a 404 whatever
    // the body says.
    let body = call.json_body().await;
    let searcher = Searcher {
        store: &call.store,
        env: &call.env,
        config: &call.config,
    };
    // The usual search (a valid body, no agent) checks the chatbot in the same round trip.
    let usual = body
        .as_ref()
        .ok()
        .and_then(|b| parse(b).ok())
        .filter(|request| request.agent_uuid.is_none());
    if let Some(request) = usual {
        let found = search_owned(
            &searcher,
            call.owner()?,
            &chatbot_uuid,
            &request.query,
            request.limit,
        )
        .await?;
        return match found {
            Some(results) => results_json(&results),
            None => Err(call.missing("chatbot").await),
        };
    }
    if call
        .store
        .get_owned_chatbot(call.owner()?, &chatbot_uuid)
        .await?
        .is_none()
    {
        return Err(call.missing("chatbot").await);
    }
    let request = parse(&body?)?;
    let agent = match request.agent_uuid {
        None => None,
        Some(uuid) => {
            let agent = call
                .store
                .get_owned_agent(call.owner()?, &uuid)
                .await?
                .filter(|a| {
                    a.chatbot_uuid == chatbot_uuid && a.config.agent_type == AgentType::UserFacing
                })
                .ok_or_else(|| {
                    ApiError::invalid(
                        "agent_uuid",
                        "`agent_uuid` must name a user-facing agent of this chatbot.",
                    )
                })?;
            Some(agent)
        }
    };
    let results = find(
        &searcher,
        &chatbot_uuid,
        agent.as_ref(),
        &request.query,
        request.limit,
    )
    .await?;
    results_json(&results)
}

/// A search request's fields, validated.
struct SearchRequest {
    query: String,
    limit: usize,
    agent_uuid: Option<String>,
}

fn parse(body: &Map<String, Value>) -> ApiResult<SearchRequest> {
    let b = Body(body);
    let query = b.req_str("query", MAX_PROMPT_CHARS)?;
    let limit = b
        .opt_whole("limit", 1, MAX_SEARCH_RESULTS as i64)?
        .map_or(5, |l| l as usize);
    let agent_uuid = match b.opt_str("agent_uuid", 64)? {
        None => None,
        Some(raw) => Some(
            canonical_uuid(&raw)
                .ok_or_else(|| ApiError::invalid("agent_uuid", "`agent_uuid` must be a uuid."))?,
        ),
    };
    Ok(SearchRequest {
        query,
        limit,
        agent_uuid,
    })
}

/// The results, and `search_query`, the question as it was searched, when that differs from
/// the one asked (a misspelled word searched as the index spells it).
fn results_json((results, corrected): &Searched) -> ApiResult<Response> {
    let mut body = json!({ "results": results.iter().map(found_json).collect::<Vec<_>>() });
    if let Some(corrected) = corrected {
        body["search_query"] = json!(corrected);
    }
    json_response(&body)
}
