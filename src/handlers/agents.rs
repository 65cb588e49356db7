use super::source_tags::check_sources_of_chatbot;
use super::{new_uuid, owned_agent, owned_chatbot};
use crate::app::http::{json_response, success_response};
use crate::app::Call;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::agent::{apply_update, config_for_create, Agent, EnabledAs};
use edgechat_core::time;
use serde_json::Value;
use worker::Response;

async fn tool_functions(call: &Call, agent: &Agent) -> ApiResult<Vec<Value>> {
    Ok(call
        .store
        .list_tool_functions(&agent.uuid)
        .await?
        .iter()
        .map(|f| f.to_json_for(call.may_configure()))
        .collect())
}

pub async fn list(call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    let Some((agents, mut functions)) = call
        .store
        .agents_of_owned_chatbot(call.owner()?, &chatbot_uuid)
        .await?
    else {
        return Err(call.missing("chatbot").await);
    };
    let records = agents
        .iter()
        .map(|a| {
            let tools = functions.remove(&a.uuid).unwrap_or_default();
            a.to_json(
                EnabledAs::Integer,
                tools
                    .iter()
                    .map(|f| f.to_json_for(call.may_configure()))
                    .collect(),
            )
        })
        .collect();
    json_response(&Value::Array(records))
}

pub async fn create(mut call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let body = call.json_body().await?;
    let config = config_for_create(&body)?;
    check_sources_of_chatbot(
        &call.store,
        &chatbot_uuid,
        &config.data_source_uuids,
        "data_source_uuids",
    )
    .await?;
    let now = time::now();
    let agent = Agent {
        uuid: new_uuid(),
        chatbot_uuid,
        created_at: now.clone(),
        modified_at: now,
        config,
    };
    call.store.insert_agent(&agent).await?;
    call.log.record(&agent.uuid);
    // A new agent has no tool functions yet.
    json_response(&agent.to_json(EnabledAs::Boolean, Vec::new()))
}

pub async fn update(mut call: Call) -> ApiResult<Response> {
    let before = owned_agent(&call).await?;
    let body = call.json_body().await?;
    let mut agent = before.clone();
    agent.config = apply_update(&body, agent.config)?;
    if body.contains_key("data_source_uuids") {
        check_sources_of_chatbot(
            &call.store,
            &agent.chatbot_uuid,
            &agent.config.data_source_uuids,
            "data_source_uuids",
        )
        .await?;
    }
    agent.modified_at = time::now();
    call.store.update_agent(&before, &agent).await?;
    json_response(&agent.to_json(EnabledAs::Boolean, tool_functions(&call, &agent).await?))
}

pub async fn delete(call: Call) -> ApiResult<Response> {
    let agent = owned_agent(&call).await?;
    if !call.store.delete_agent(&agent).await? {
        return Err(ApiError::Conflict(
            "This is the chatbot's only user-facing agent; create another before deleting it."
                .into(),
        ));
    }
    success_response()
}
