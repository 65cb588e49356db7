//! After an answer: every enabled background agent judges the exchange against its tags, and
//! matches are recorded on the session (`meta.tags`, each with the message that earned it).
//! With a model the judgement is one call per agent (`edgechat_core::chat::tagging`); without
//! one, or when its reply cannot be read, text similarity decides.

use crate::providers::ChatProvider;
use crate::storage::Store;
use edgechat_core::api::error::ApiResult;
use edgechat_core::chat::models::ModelInfo;
use edgechat_core::chat::routing::{agent_model, matches_criteria};
use edgechat_core::chat::tagging::{judged, judging_messages, parse_judged_tags};
use edgechat_core::config::Config;
use edgechat_core::domain::agent::{Agent, AgentType, Tag};
use edgechat_core::domain::session::Message;
use edgechat_core::time;
use serde_json::json;
use worker::Env;

/// The longest reply a judging model may write.
const JUDGE_MAX_TOKENS: usize = 200;

async fn judge_with_model(
    env: &Env,
    config: &Config,
    provider: &ChatProvider,
    model: &'static ModelInfo,
    tags: &[Tag],
    message: &Message,
) -> Option<Vec<String>> {
    let messages = judging_messages(tags, &message.query, &message.response);
    let text = provider
        .reply_text(env, config, model, &messages, JUDGE_MAX_TOKENS)
        .await?;
    parse_judged_tags(&text)
}

/// Judges `message` with every enabled background agent; the tag records added.
pub async fn tag_session(
    env: &Env,
    config: &Config,
    store: &Store,
    agents: &[Agent],
    message: &Message,
) -> ApiResult<Vec<serde_json::Value>> {
    let mut added = Vec::new();
    for agent in agents
        .iter()
        .filter(|a| a.config.agent_type == AgentType::Background && a.config.enabled)
    {
        let tags = agent.config.meta.tags.clone().unwrap_or_default();
        if tags.is_empty() {
            continue;
        }
        let model = agent_model(agent);
        let provider = ChatProvider::for_model(config, model);
        let judgement = if provider.is_model() {
            judge_with_model(env, config, &provider, model, &tags, message).await
        } else {
            None
        };
        let matched: Vec<&Tag> = match judgement {
            Some(names) => judged(&tags, &names),
            None => tags
                .iter()
                .filter(|t| matches_criteria(&t.criteria, &message.query, &message.response))
                .collect(),
        };
        for tag in matched {
            let now = time::now();
            let record = json!({
                "name": tag.name,
                "color": tag.color,
                "agent_uuid": agent.uuid,
                "message_uuid": message.uuid,
                "tagged_at": now,
            });
            if store
                .add_session_tag(&message.session_uuid, &record, &now)
                .await?
            {
                added.push(record);
            }
        }
    }
    Ok(added)
}
