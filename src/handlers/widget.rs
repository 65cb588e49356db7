//! Site visitors: the token a widget trades for (`POST /widget/{uuid}/token`), and the
//! visitor's side of the session endpoints, where a visitor reaches only the sessions it
//! created. The rules are in `domain::widget`; the request checks in `crate::app::widget`.

use super::new_uuid;
use crate::app::http::{error_response, json_response};
use crate::app::widget::{
    allow_origin, foreign_origin, now_secs, own_origin, signing_secret, token_secret, Visitor,
};
use crate::app::{Call, Caller};
use crate::platform::chat_session;
use crate::platform::rate_limit::{admit_messages, admit_request, names, Decision, Limit};
use crate::storage::Owner;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::validate::Body;
use edgechat_core::domain::api_key::client_network;
use edgechat_core::domain::chatbot::{Chatbot, ChatbotSettings};
use edgechat_core::domain::session::{initial_variables, Session};
use edgechat_core::domain::widget::{
    admits, embedder_origin, new_visitor_id, normalize_origin, renewed_visitor_id, sign,
    takes_visitors, visitor_message_json, Refusal, VisitorClaims, TOKEN_TTL_SECS,
};
use edgechat_core::time;
use serde_json::{json, Map, Value};
use worker::Response;

/// `POST /widget/{uuid}/token`: a short-lived token for one site visitor, when the chatbot
/// takes visitors from the site the request comes from.
pub async fn token(mut call: Call) -> ApiResult<Response> {
    let uuid = call.uuid_param(0, "chatbot")?;
    let (chatbot, _) = call
        .store
        .chatbot_for_visitors(&uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("chatbot"))?;
    // Before the body is read: a private chatbot must answer exactly as a missing one, even
    // to a malformed request.
    if !takes_visitors(&chatbot.settings.visibility) {
        return Err(Refusal::Private.into());
    }
    let body = call.json_body().await?;
    let body = Body(&body);
    let claimed = body.opt_str("parent_origin", 300)?;
    if claimed
        .as_deref()
        .is_some_and(|c| normalize_origin(c).is_none())
    {
        return Err(ApiError::invalid(
            "parent_origin",
            "`parent_origin` must be an origin such as https://www.example.com.",
        ));
    }
    let previous = body.opt_str("token", 4_096)?;
    let origin_header = call.req.headers().get("Origin")?;
    let own = own_origin(&call.req)?;
    let embedder = embedder_origin(origin_header.as_deref(), &own, claimed.as_deref());
    let settings = &chatbot.settings;
    admits(
        &settings.visibility,
        &settings.allowed_origins,
        embedder.as_deref(),
    )?;
    // From here the calling site is admitted, so its page may read the answer, errors included.
    let grant = foreign_origin(&call.req)?;
    let mut response = match admit_minting(&call).await {
        Ok(()) => mint(&call, &chatbot, embedder, previous.as_deref())
            .and_then(|answer| json_response(&answer)),
        Err(err) => Err(err),
    }
    .unwrap_or_else(|err| error_response(&err));
    response.headers_mut().set("Cache-Control", "no-store")?;
    Ok(match grant {
        Some(origin) => allow_origin(response, &origin),
        None => response,
    })
}

/// Counts one minted token against the client's network (`CF-Connecting-IP`; an IPv6 address
/// by its /64, see `client_network`), so a script cannot mint itself a fresh visitor (and a
/// fresh visitor window) for every message.
async fn admit_minting(call: &Call) -> ApiResult<()> {
    let address = call.req.headers().get("CF-Connecting-IP")?;
    // Without the header (never on Cloudflare's network) every such caller shares one count.
    let client = address
        .as_deref()
        .map_or_else(|| "unknown".into(), client_network);
    let limit = call.config.visitor_token_rate_limit;
    let window = admit_request(&call.env, &names::token_minting(&client), limit).await?;
    if window.admitted {
        return Ok(());
    }
    Err(ApiError::RateLimited {
        message: format!(
            "Too many visitor tokens from this address ({} in {} seconds); try again in {} seconds.",
            limit.count, limit.window_secs, window.reset_secs
        ),
        retry_after_secs: window.reset_secs,
    })
}

fn mint(
    call: &Call,
    chatbot: &Chatbot,
    origin: Option<String>,
    previous: Option<&str>,
) -> ApiResult<Value> {
    let secret = token_secret(&call.config)?;
    let now = now_secs();
    let visitor_id = match previous {
        // A token signed before the last rotation is renewed under the current secret.
        Some(old) => renewed_visitor_id(
            old,
            &signing_secret(&call.config, old, now)?,
            now,
            &chatbot.uuid,
            origin.as_deref(),
        )?,
        None => new_visitor_id().map_err(ApiError::internal)?,
    };
    let claims = VisitorClaims {
        chatbot_uuid: chatbot.uuid.clone(),
        visitor_id,
        origin,
        expires_at: now + TOKEN_TTL_SECS,
    };
    let expires_at = time::format_secs(claims.expires_at);
    Ok(json!({
        "token": sign(&claims, &secret),
        "token_type": "Bearer",
        "expires_in": TOKEN_TTL_SECS,
        "expires_at": expires_at,
        "origin": claims.origin,
        "chatbot": {
            "uuid": chatbot.uuid,
            "name": chatbot.settings.name,
            "show_citations": chatbot.settings.show_citations,
        },
    }))
}

fn visitor(call: &Call) -> ApiResult<&Visitor> {
    match &call.caller {
        Caller::Visitor(visitor) => Ok(visitor),
        _ => Err(ApiError::Unauthorized(
            "This endpoint needs a visitor token.".into(),
        )),
    }
}

/// The path's session, if this visitor created it; else 404, as for any session not yours.
async fn visitor_session(call: &Call, visitor: &Visitor) -> ApiResult<Session> {
    let uuid = call.uuid_param(0, "session")?;
    call.store
        .get_visitor_session(&visitor.chatbot.uuid, &visitor.visitor_id, &uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("session"))
}

/// Whose records a chat turn reads: the caller's own, or for a site visitor the chatbot
/// owner's, once the session is known to be one the visitor created (else 404, as for any
/// session not yours).
pub async fn turn_owner<'a>(call: &'a Call, session_uuid: &str) -> ApiResult<Owner<'a>> {
    match &call.caller {
        Caller::Visitor(visitor) => {
            call.store
                .get_visitor_session(&visitor.chatbot.uuid, &visitor.visitor_id, session_uuid)
                .await?
                .ok_or_else(|| ApiError::not_found("session"))?;
            Ok(Owner::Account(&visitor.account_uuid))
        }
        _ => call.owner(),
    }
}

/// `POST /chatbot/{uuid}/session/create` with a visitor token. New visitor sessions count
/// against the visitor's window and the chatbot's `rate_limit` like messages do (in logs of
/// their own), so visitors cannot fill the database with empty sessions.
pub async fn create_session(mut call: Call) -> ApiResult<Response> {
    let visitor = visitor(&call)?.clone();
    let uuid = call.uuid_param(0, "chatbot")?;
    if uuid != visitor.chatbot.uuid {
        return Err(ApiError::Forbidden(
            "This visitor token is for another chatbot.".into(),
        ));
    }
    let body = call.json_body().await?;
    let variables = initial_variables(&body)?;
    admit_session(&call, &visitor).await?;
    let now = time::now();
    let session = Session {
        uuid: new_uuid(),
        chatbot_uuid: uuid,
        initial_variables: variables,
        meta: Map::new(),
        created_at: now.clone(),
        modified_at: now,
    };
    chat_session::start_ahead(&call.ctx, &call.env, &session.uuid);
    call.store
        .insert_session(&session, Some(&visitor.visitor_id))
        .await?;
    json_response(&session.to_json())
}

/// Counts a new session of `visitor` against the visitor's window and the chatbot's
/// `rate_limit`, in logs of their own: a 429 once either is full. Every way a visitor opens a
/// session asks this (`create_session`, a chat completion naming none).
pub async fn admit_session(call: &Call, visitor: &Visitor) -> ApiResult<()> {
    let settings = &visitor.chatbot.settings;
    let chatbot_uuid = &visitor.chatbot.uuid;
    let logs = visitor_logs(
        settings,
        &names::visitor_own_sessions(chatbot_uuid, &visitor.visitor_id),
        &names::visitor_sessions(chatbot_uuid),
    );
    within_limits(settings, admit_messages(&call.env, &logs).await?)
}

/// The logs a site visitor's message (or new session) must fit: the visitor's own window
/// (`visitor_rate_limit`, counted under `visitor_name`) and the chatbot's `rate_limit` (under
/// `shared_name`), which every visitor and key share. Both are asked at once
/// (`admit_messages`); a visitor over its own share uses up nothing of everyone's.
pub fn visitor_logs(
    settings: &ChatbotSettings,
    visitor_name: &str,
    shared_name: &str,
) -> Vec<(String, Limit)> {
    vec![
        (visitor_name.to_string(), as_limit(settings.visitor_limit())),
        (shared_name.to_string(), chatbot_limit(settings)),
    ]
}

/// The chatbot's own `rate_limit`, as its log counts it.
pub fn chatbot_limit(settings: &ChatbotSettings) -> Limit {
    as_limit((settings.rate_limit_count, settings.rate_limit_window))
}

fn as_limit((count, window): (i64, i64)) -> Limit {
    Limit {
        count: count.clamp(0, i64::from(u32::MAX)) as u32,
        window_secs: window.clamp(0, i64::from(u32::MAX)) as u32,
    }
}

/// A decision of the chatbot's logs as a result: a refusal in the chatbot's own words.
pub fn within_limits(settings: &ChatbotSettings, decision: Decision) -> ApiResult<()> {
    match decision {
        Decision::Admitted { .. } => Ok(()),
        Decision::Limited { retry_after_secs } => Err(ApiError::RateLimited {
            message: settings.rate_limit_message.clone(),
            retry_after_secs,
        }),
    }
}

/// `GET /session/{uuid}/messages` with a visitor token: the visitor's view of each message.
pub async fn session_messages(call: Call) -> ApiResult<Response> {
    let visitor = visitor(&call)?;
    let session = visitor_session(&call, visitor).await?;
    let messages = call.store.list_messages(&session.uuid).await?;
    let show_citations = visitor.chatbot.settings.show_citations;
    json_response(&Value::Array(
        messages
            .iter()
            .map(|m| visitor_message_json(m, show_citations))
            .collect(),
    ))
}
