//! Ratings of answers: given by the account or by the visitor whose session it is, one per
//! message and changeable, and listed for the owner.

use super::messages::readable_message;
use super::owned_chatbot;
use super::sessions::time_range_params;
use crate::app::http::json_response;
use crate::app::Call;
use crate::storage::{EARLIEST, LATEST};
use crate::webhooks;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::validate::Body;
use edgechat_core::domain::feedback::{self, Feedback, Rating};
use edgechat_core::domain::session::MessageKind;
use edgechat_core::domain::webhook::Event;
use edgechat_core::time;
use serde_json::Value;
use worker::Response;

/// `POST /message/{uuid}/feedback {rating, comment?}`
pub async fn create(mut call: Call) -> ApiResult<Response> {
    let message = readable_message(&call).await?;
    let body = call.json_body().await?;
    let (rating, comment) = feedback::from_body(&Body(&body))?;
    if message.kind != MessageKind::Answer {
        return Err(ApiError::invalid_request(
            "Only an answer can be rated; this message is live-chat traffic.",
        ));
    }
    let now = time::now();
    let (stored, changed) = call
        .store
        .save_feedback(
            &Feedback {
                message_uuid: message.uuid.clone(),
                chatbot_uuid: message.chatbot_uuid.clone(),
                session_uuid: message.session_uuid.clone(),
                rating,
                comment,
                created_at: now.clone(),
                modified_at: now,
            },
            body.contains_key("comment"),
        )
        .await?;
    // Receivers hear of a rating given or changed, not of the same one sent again.
    if changed {
        let mut data = stored.to_json();
        if let Some(fields) = data.as_object_mut() {
            fields.insert("query".into(), Value::String(message.query.clone()));
            fields.insert("response".into(), Value::String(message.response.clone()));
        }
        call.ctx.wait_until(webhooks::notify(
            call.env.clone(),
            message.chatbot_uuid.clone(),
            Event::FeedbackCreated,
            data,
        ));
    }
    json_response(&stored.to_json())
}

/// `GET /chatbot/{uuid}/feedback?rating=&start_timestamp=&end_timestamp=`: newest first.
pub async fn list(call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let rating =
        match query_param(&call, "rating")? {
            None => None,
            Some(text) => Some(Rating::parse(&text).ok_or_else(|| {
                ApiError::invalid("rating", "`rating` must be \"up\" or \"down\".")
            })?),
        };
    let (start, end) = time_range_params(&call)?;
    let list = call
        .store
        .list_feedback(
            &chatbot_uuid,
            rating,
            start.as_deref().unwrap_or(EARLIEST),
            end.as_deref().unwrap_or(LATEST),
        )
        .await?;
    json_response(&Value::Array(list))
}

/// A query-string parameter; empty counts as absent.
pub fn query_param(call: &Call, name: &str) -> ApiResult<Option<String>> {
    let url = call.req.url()?;
    Ok(url
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty()))
}
