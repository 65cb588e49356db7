use super::{new_uuid, owned_chatbot};
use crate::app::http::{json_response, success_response};
use crate::app::Call;
use crate::storage::Store;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::data_source::{source_tag_change, SourceTag};
use edgechat_core::time;
use serde_json::Value;
use worker::Response;

/// Every uuid must be a source of this chatbot.
pub async fn check_sources_of_chatbot(
    store: &Store,
    chatbot_uuid: &str,
    uuids: &[String],
    field: &str,
) -> ApiResult<()> {
    if uuids.is_empty() {
        return Ok(());
    }
    let found = store.existing_source_uuids(chatbot_uuid, uuids).await?;
    if let Some(missing) = uuids.iter().find(|u| !found.contains(u)) {
        return Err(ApiError::invalid(
            field,
            format!("`{field}` names {missing}, which is not a data source of this chatbot."),
        ));
    }
    Ok(())
}

async fn owned_tag(call: &Call) -> ApiResult<SourceTag> {
    let uuid = call.uuid_param(0, "source tag")?;
    call.store
        .get_source_tag(call.account()?, &uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("source tag"))
}

pub async fn create(mut call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let body = call.json_body().await?;
    let change = source_tag_change(&body, true)?;
    let data_source_uuids = change.data_source_uuids.unwrap_or_default();
    check_sources_of_chatbot(
        &call.store,
        &chatbot_uuid,
        &data_source_uuids,
        "data_source_uuids",
    )
    .await?;
    let now = time::now();
    let tag = SourceTag {
        uuid: new_uuid(),
        chatbot_uuid,
        name: change.name.unwrap_or_default(),
        color: change.color.unwrap_or_default(),
        data_source_uuids,
        created_at: now.clone(),
        modified_at: now,
    };
    call.store.insert_source_tag(&tag).await?;
    call.log.record(&tag.uuid);
    json_response(&tag.to_json())
}

pub async fn list(call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let tags = call.store.list_source_tags(&chatbot_uuid).await?;
    json_response(&Value::Array(tags.iter().map(SourceTag::to_json).collect()))
}

pub async fn update(mut call: Call) -> ApiResult<Response> {
    let before = owned_tag(&call).await?;
    let mut tag = before.clone();
    let body = call.json_body().await?;
    let change = source_tag_change(&body, false)?;
    if let Some(uuids) = change.data_source_uuids {
        check_sources_of_chatbot(&call.store, &tag.chatbot_uuid, &uuids, "data_source_uuids")
            .await?;
        tag.data_source_uuids = uuids;
    }
    if let Some(name) = change.name {
        tag.name = name;
    }
    if let Some(color) = change.color {
        tag.color = color;
    }
    tag.modified_at = time::now();
    call.store.update_source_tag(&before, &tag).await?;
    json_response(&tag.to_json())
}

pub async fn delete(call: Call) -> ApiResult<Response> {
    let tag = owned_tag(&call).await?;
    if !call.store.delete_source_tag(&tag.uuid).await? {
        return Err(ApiError::not_found("source tag"));
    }
    success_response()
}
