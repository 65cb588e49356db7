use super::feedback::query_param;
use super::{new_uuid, owned_chatbot};
use crate::app::http::{json_response, success_response};
use crate::app::Call;
use crate::platform::chat_session;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::session::{
    initial_variables, Message, Session, SessionCursor, SessionPage,
};
use edgechat_core::time;
use serde_json::{Map, Value};
use worker::Response;

pub async fn owned_session(call: &Call) -> ApiResult<Session> {
    let uuid = call.uuid_param(0, "session")?;
    call.store
        .get_session(call.account()?, &uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("session"))
}

pub async fn create(mut call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let body = call.json_body().await?;
    let now = time::now();
    let session = Session {
        uuid: new_uuid(),
        chatbot_uuid,
        initial_variables: initial_variables(&body)?,
        meta: Map::new(),
        created_at: now.clone(),
        modified_at: now,
    };
    chat_session::start_ahead(&call.ctx, &call.env, &session.uuid);
    call.store.insert_session(&session, None).await?;
    call.log.record(&session.uuid);
    json_response(&session.to_json())
}

pub async fn get(call: Call) -> ApiResult<Response> {
    let session = owned_session(&call).await?;
    json_response(&session.to_json())
}

/// `?start_timestamp=&end_timestamp=`, both inclusive; either may be left out. A plain date
/// (`2026-01-31`) starts a range at its first second and ends one at its last.
pub(crate) fn time_range_params(call: &Call) -> ApiResult<(Option<String>, Option<String>)> {
    let url = call.req.url()?;
    let read = |name: &str, parse: fn(&str) -> Option<String>| {
        let Some((_, value)) = url.query_pairs().find(|(k, _)| k == name) else {
            return Ok(None);
        };
        if value.trim().is_empty() {
            return Ok(None);
        }
        parse(&value).map(Some).ok_or_else(|| {
            let reason = "must be an ISO 8601 timestamp such as 2026-01-31T12:00:00Z, \
                          or a date such as 2026-01-31.";
            ApiError::invalid(name, format!("`{name}` {reason}"))
        })
    };
    let start = read("start_timestamp", time::parse)?;
    let end = read("end_timestamp", time::parse_end)?;
    // Both are in one normal form, which sorts as time does.
    if let (Some(start), Some(end)) = (&start, &end) {
        if start > end {
            return Err(ApiError::invalid(
                "end_timestamp",
                "`end_timestamp` is before `start_timestamp`.",
            ));
        }
    }
    Ok((start, end))
}

/// `?start_timestamp=&end_timestamp=`: sessions created in that range, both ends inclusive.
pub async fn list(call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let (start, end) = time_range_params(&call)?;
    let page = SessionPage::from_params(
        query_param(&call, "limit")?.as_deref(),
        query_param(&call, "after")?.as_deref(),
    )?;
    let mut sessions = call
        .store
        .list_sessions(&chatbot_uuid, (start.as_deref(), end.as_deref()), &page)
        .await?;
    let more = sessions.len() > page.limit;
    sessions.truncate(page.limit);
    let mut response = json_response(&Value::Array(
        sessions.iter().map(|(s, _)| s.to_json()).collect(),
    ))?;
    if let (true, Some((_, last))) = (more, sessions.last()) {
        let next = next_page(call.req.url()?, last);
        response
            .headers_mut()
            .set("Link", &format!("<{next}>; rel=\"next\""))?;
    }
    Ok(response)
}

/// The list's own URL, its other parameters kept, asking for the page after `cursor`.
fn next_page(mut url: url::Url, cursor: &SessionCursor) -> url::Url {
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| k != "after")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    url.query_pairs_mut()
        .clear()
        .extend_pairs(kept)
        .append_pair("after", &cursor.to_param());
    url
}

pub async fn delete(call: Call) -> ApiResult<Response> {
    let session = owned_session(&call).await?;
    if !call.store.delete_session(&session.uuid).await? {
        return Err(ApiError::not_found("session"));
    }
    // Its object still holds open event streams and the answers kept for readers.
    chat_session::forget(&call.ctx, &call.env, &session.uuid);
    success_response()
}

pub async fn messages(call: Call) -> ApiResult<Response> {
    let session = owned_session(&call).await?;
    let messages = call.store.list_messages(&session.uuid).await?;
    json_response(&Value::Array(
        messages.iter().map(Message::to_json).collect(),
    ))
}
