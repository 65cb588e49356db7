//! Retrieval as the Worker runs it: the query's phrases, gated by their frequencies when the
//! candidate set must be bounded, one ranked FTS5 query, then the re-ranking in
//! `knowledge::retrieve`.

use crate::providers::{ChatProvider, ChatTurn, Grounding};
use crate::storage::{SearchIndex, Store};
use edgechat_core::api::error::ApiResult;
use edgechat_core::chat::completion::{CompletionEvent, CompletionRequest};
use edgechat_core::chat::followup::Context;
use edgechat_core::chat::followup::{
    parse_rewrite, previous_exchange, refers_back, rewrite_messages,
};
use edgechat_core::chat::routing::agent_model;
use edgechat_core::config::Config;
use edgechat_core::domain::agent::Agent;
use edgechat_core::domain::session::Message;
use edgechat_core::knowledge::query::{gated_expression_with, phrases, CANDIDATE_BUDGET};
use edgechat_core::knowledge::retrieve::{rank_in_context, Ranked, CANDIDATES};
use futures::future::{select, Either};
use std::time::Duration;
use worker::{Delay, Env};

/// The best chunks of a chatbot's sources for `query` (with the conversation's `context`
/// terms, weighted down), honouring the agent's sources.
/// `frequencies` are the index-wide counts of the query's phrases, read by the caller in the
/// same round trip as its other reads (see `Store::phrase_count_statement`).
pub async fn retrieve(
    store: &Store,
    chatbot_uuid: &str,
    agent: Option<&Agent>,
    query: &str,
    context: &Context,
    limit: usize,
    frequencies: &[i64],
) -> ApiResult<Vec<Ranked>> {
    let phrases = phrases(query);
    // Context terms are alphanumeric words (`content_terms`), so quoting them is safe.
    let context_phrases: Vec<String> = context.terms.iter().map(|t| format!("\"{t}\"")).collect();
    let allowed = agent.and_then(Agent::allowed_sources);
    if phrases.is_empty() || allowed.as_ref().is_some_and(Vec::is_empty) {
        return Ok(Vec::new());
    }
    let Some(expression) =
        gated_expression_with(&phrases, frequencies, &context_phrases, CANDIDATE_BUDGET)
    else {
        return Ok(Vec::new());
    };
    let hits = store
        .search_chunks(
            SearchIndex::for_query(query),
            chatbot_uuid,
            &expression,
            allowed.as_deref(),
            CANDIDATES,
        )
        .await?;
    Ok(rank_in_context(query, context, hits, limit))
}

/// How long a follow-up's rewrite may take before the rule-based context is used instead.
const REWRITE_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest reply a rewrite may write.
const REWRITE_MAX_TOKENS: usize = 80;

/// With a model provider, a follow-up `query` rewritten by the agent's model as a standalone
/// question, to search with. `None` without a model, for a question that is not a follow-up,
/// and when the model fails, takes longer than `REWRITE_TIMEOUT` or replies with no question:
/// the caller then searches with the rule-based context (`chat::followup`).
pub async fn standalone_question(
    env: &Env,
    config: &Config,
    agent: &Agent,
    query: &str,
    history: &[Message],
) -> Option<String> {
    let previous = previous_exchange(query, history).filter(|_| refers_back(query))?;
    let model = agent_model(agent);
    let provider = ChatProvider::for_model(config, model);
    if !provider.is_model() {
        return None;
    }
    let messages = rewrite_messages(previous, query);
    let turn = ChatTurn {
        request: CompletionRequest {
            model: model.upstream,
            messages: &messages,
            tools: &[],
            temperature: 0.0,
            max_tokens: REWRITE_MAX_TOKENS,
        },
        grounding: Grounding {
            query: "",
            ranked: &[],
            show_citations: false,
        },
    };
    let ask = async {
        let mut answer = provider.open(env, config, &turn).await.ok()?;
        let mut text = String::new();
        while let Some(Ok(event)) = answer.next().await {
            match event {
                CompletionEvent::Text(t) => text.push_str(&t),
                CompletionEvent::Done => break,
                _ => {}
            }
        }
        parse_rewrite(&text)
    };
    futures::pin_mut!(ask);
    match select(ask, Delay::from(REWRITE_TIMEOUT)).await {
        Either::Left((rewritten, _)) => rewritten,
        Either::Right(_) => None,
    }
}
