//! One module per resource. Handlers validate input, call the storage layer and shape answers.

pub mod agents;
pub mod api_keys;
pub mod chatbots;
pub mod crawls;
pub mod data_sources;
pub mod feedback;
pub mod health;
pub mod insights;
pub mod live_chat;
pub mod messages;
pub mod openai_compat;
pub mod openapi;
pub mod search;
pub mod sessions;
pub mod source_tags;
pub mod tool_functions;
pub mod webhooks;
pub mod widget;

use crate::storage::Store;
use edgechat_core::api::error::ApiError;
use edgechat_core::api::error::ApiResult;
use edgechat_core::domain::chatbot::Chatbot;

/// The caller's chatbot, or 404 (also when it belongs to another account).
pub async fn owned_chatbot(store: &Store, account_uuid: &str, uuid: &str) -> ApiResult<Chatbot> {
    store
        .get_chatbot(account_uuid, uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("chatbot"))
}

/// The agent named by the path's uuid, if its chatbot is the caller's; else 404.
pub async fn owned_agent(
    call: &crate::app::Call,
) -> ApiResult<edgechat_core::domain::agent::Agent> {
    let uuid = call.uuid_param(0, "agent")?;
    call.store
        .get_agent(call.account()?, &uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("agent"))
}

pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}
