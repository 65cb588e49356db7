//! Webhooks of a chatbot: created with a signing secret shown only then, listed, updated,
//! given a new secret, deleted, their deliveries read, and a test event sent on request.

use super::{new_uuid, owned_chatbot};
use crate::app::http::{json_response, success_response};
use crate::app::Call;
use crate::webhooks::test_delivery;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::validate::Body;
use edgechat_core::config::Config;
use edgechat_core::domain::webhook::{
    new_secret, Webhook, WebhookChanges, MAX_WEBHOOKS_PER_CHATBOT,
};
use edgechat_core::knowledge::url_guard::check_url;
use edgechat_core::time;
use serde_json::Value;
use worker::Response;

async fn owned_webhook(call: &Call) -> ApiResult<Webhook> {
    let uuid = call.uuid_param(0, "webhook")?;
    call.store
        .get_webhook(call.account()?, &uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook"))
}

/// The outbound guard, as for tool functions and web pages: a private or loopback address is
/// refused unless the operator allowed it.
fn guarded(config: &Config, url: &str) -> ApiResult<()> {
    check_url(url, &config.private_access)
        .map(|_| ())
        .map_err(|reason| ApiError::invalid("url", reason))
}

fn secret() -> ApiResult<String> {
    new_secret().map_err(|e| ApiError::internal(format!("no randomness for a secret: {e}")))
}

/// `POST /chatbot/{uuid}/webhook/create {url, events, description?, enabled?}`: the record
/// with its `secret`, which is never shown again.
pub async fn create(mut call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let body = call.json_body().await?;
    let now = time::now();
    let webhook = WebhookChanges::from_body(&Body(&body))?.create(
        new_uuid(),
        chatbot_uuid.clone(),
        secret()?,
        &now,
    )?;
    guarded(&call.config, &webhook.url)?;
    if call.store.list_webhooks(&chatbot_uuid).await?.len() >= MAX_WEBHOOKS_PER_CHATBOT {
        return Err(ApiError::Conflict(format!(
            "A chatbot may have at most {MAX_WEBHOOKS_PER_CHATBOT} webhooks."
        )));
    }
    call.store.insert_webhook(&webhook).await?;
    call.log.record(&webhook.uuid);
    json_response(&webhook.with_secret())
}

/// `GET /chatbot/{uuid}/webhooks`
pub async fn list(call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let webhooks = call.store.list_webhooks(&chatbot_uuid).await?;
    json_response(&Value::Array(
        webhooks.iter().map(Webhook::to_json).collect(),
    ))
}

/// `POST /webhook/{uuid}/update {url?, events?, description?, enabled?}`
pub async fn update(mut call: Call) -> ApiResult<Response> {
    let before = owned_webhook(&call).await?;
    let body = call.json_body().await?;
    let changes = WebhookChanges::from_body(&Body(&body))?;
    if let Some(url) = &changes.url {
        guarded(&call.config, url)?;
    }
    let mut webhook = before.clone();
    changes.apply(&mut webhook, &time::now());
    call.store.update_webhook(&before, &webhook).await?;
    json_response(&webhook.to_json())
}

/// `POST /webhook/{uuid}/rotate-secret`: a new secret, shown this once; the old one signs
/// nothing from now on.
pub async fn rotate_secret(call: Call) -> ApiResult<Response> {
    let before = owned_webhook(&call).await?;
    let mut webhook = before.clone();
    webhook.secret = secret()?;
    webhook.modified_at = time::now();
    call.store.update_webhook(&before, &webhook).await?;
    json_response(&webhook.with_secret())
}

/// `DELETE /webhook/{uuid}/delete`: with its deliveries.
pub async fn delete(call: Call) -> ApiResult<Response> {
    let webhook = owned_webhook(&call).await?;
    if !call.store.delete_webhook(&webhook.uuid).await? {
        return Err(ApiError::not_found("webhook"));
    }
    success_response()
}

/// `GET /webhook/{uuid}/deliveries`: the newest 50, newest first.
pub async fn deliveries(call: Call) -> ApiResult<Response> {
    let webhook = owned_webhook(&call).await?;
    let rows = call.store.list_deliveries(&webhook.uuid).await?;
    json_response(&Value::Array(rows.iter().map(|d| d.to_json()).collect()))
}

/// `POST /webhook/{uuid}/test`: sends a `webhook.test` event after the response; answers the
/// delivery as recorded (`pending`), to follow in the deliveries list.
pub async fn test(call: Call) -> ApiResult<Response> {
    let webhook = owned_webhook(&call).await?;
    if !webhook.enabled {
        return Err(ApiError::Conflict(
            "This webhook is disabled; enable it to send a test event.".into(),
        ));
    }
    let (delivery, send) = test_delivery(call.env.clone(), webhook);
    call.store
        .insert_deliveries(std::slice::from_ref(&delivery))
        .await?;
    call.ctx.wait_until(send);
    json_response(&delivery.to_json())
}
