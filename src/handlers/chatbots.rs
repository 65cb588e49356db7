use super::{new_uuid, owned_chatbot};
use crate::app::http::{json_response, success_response};
use crate::app::Call;
use crate::platform::files;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::agent::{Agent, AgentConfig};
use edgechat_core::domain::chatbot::{settings_for_create, settings_for_update, Chatbot};
use edgechat_core::time;
use serde_json::Value;
use worker::Response;

pub async fn create(mut call: Call) -> ApiResult<Response> {
    let body = call.json_body().await?;
    let settings = settings_for_create(&body)?;
    let now = time::now();
    let chatbot = Chatbot {
        uuid: new_uuid(),
        created_at: now.clone(),
        modified_at: now.clone(),
        settings,
    };
    let general_qa = Agent {
        uuid: new_uuid(),
        chatbot_uuid: chatbot.uuid.clone(),
        created_at: now.clone(),
        modified_at: now,
        config: AgentConfig::general_qa(),
    };
    if !call
        .store
        .insert_chatbot(call.owner()?, &chatbot, &general_qa)
        .await?
    {
        return Err(call.missing("account").await);
    }
    call.log.record(&chatbot.uuid);
    json_response(&chatbot.to_json())
}

pub async fn list(call: Call) -> ApiResult<Response> {
    let chatbots = call.store.list_chatbots(call.account()?).await?;
    json_response(&Value::Array(
        chatbots.iter().map(Chatbot::to_json).collect(),
    ))
}

pub async fn get(call: Call) -> ApiResult<Response> {
    let uuid = call.uuid_param(0, "chatbot")?;
    match call.store.get_owned_chatbot(call.owner()?, &uuid).await? {
        Some(chatbot) => json_response(&chatbot.to_json()),
        None => Err(call.missing("chatbot").await),
    }
}

pub async fn update(mut call: Call) -> ApiResult<Response> {
    let uuid = call.uuid_param(0, "chatbot")?;
    let account = call.account()?.to_string();
    let before = owned_chatbot(&call.store, &account, &uuid).await?;
    let body = call.json_body().await?;
    let mut chatbot = before.clone();
    chatbot.settings = settings_for_update(&body, &before.settings)?;
    chatbot.modified_at = time::now();
    if !call
        .store
        .update_chatbot(&account, &before, &chatbot)
        .await?
    {
        // Deleted between the read and the write.
        return Err(ApiError::not_found("chatbot"));
    }
    json_response(&chatbot.to_json())
}

pub async fn delete(call: Call) -> ApiResult<Response> {
    let uuid = call.uuid_param(0, "chatbot")?;
    if !call.store.delete_chatbot(call.account()?, &uuid).await? {
        return Err(ApiError::not_found("chatbot"));
    }
    crate::ingestion::vectors::sync_later(&call.ctx, &call.env, &call.config);
    // Rows first, files after: an interrupted delete leaves orphan files for the scheduled
    // sweep, never records that point at nothing.
    files::delete_prefix(&call.env, &files::chatbot_prefix(&uuid)).await?;
    success_response()
}
