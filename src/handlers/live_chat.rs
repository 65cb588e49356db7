//! Live chat: a person takes over a session. While it is on, the AI does not answer; the
//! user's messages are stored as they come, and the operator writes through the API. Starting
//! and ending adds the escalation agent's announcements to the conversation.

use super::new_uuid;
use super::sessions::owned_session;
use crate::app::http::json_response;
use crate::app::Call;
use crate::platform::chat_session;
use crate::storage::Store;
use crate::webhooks;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::validate::Body;
use edgechat_core::domain::agent::{AgentType, HumanEscalationSettings};
use edgechat_core::domain::session::{
    FinishReason, Message, MessageKind, Session, MAX_QUERY_CHARS,
};
use edgechat_core::domain::webhook::Event;
use edgechat_core::domain::widget::visitor_message_json;
use edgechat_core::time;
use serde_json::{json, Value};
use worker::Response;

pub fn is_active(session: &Session) -> bool {
    session
        .meta
        .get("live_chat")
        .and_then(|l| l.get("active"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn live_message(session: &Session, kind: MessageKind, query: &str, response: &str) -> Message {
    let now = time::now();
    Message {
        uuid: new_uuid(),
        kind,
        session_uuid: session.uuid.clone(),
        chatbot_uuid: session.chatbot_uuid.clone(),
        started_ms: time::now_ms(),
        query: query.to_string(),
        response: response.to_string(),
        finish_reason: FinishReason::Stop,
        cite_data: json!({}),
        meta: json!({"live_chat": true}),
        answered: None,
        feedback: None,
        created_at: now.clone(),
        modified_at: now,
    }
}

pub async fn store_user_message(
    store: &Store,
    session: &Session,
    text: &str,
) -> ApiResult<Message> {
    let message = live_message(session, MessageKind::User, text, "");
    store.insert_message(&message).await?;
    Ok(message)
}

/// The chatbot's escalation settings (announcements), or the defaults when it has no
/// human-escalation agent.
async fn escalation_settings(
    store: &Store,
    chatbot_uuid: &str,
) -> ApiResult<HumanEscalationSettings> {
    let agents = store.list_agents(chatbot_uuid).await?;
    Ok(agents
        .into_iter()
        .find(|a| a.config.agent_type == AgentType::HumanEscalation)
        .and_then(|a| a.config.human_escalation_settings)
        .unwrap_or_default())
}

fn already(on: bool) -> ApiError {
    ApiError::Conflict(if on {
        "Live chat is already on in this session.".into()
    } else {
        "Live chat is not on in this session.".into()
    })
}

async fn switch(call: Call, on: bool) -> ApiResult<Response> {
    let mut session = owned_session(&call).await?;
    if is_active(&session) == on {
        return Err(already(on));
    }
    let settings = escalation_settings(&call.store, &session.chatbot_uuid).await?;
    let text = if on {
        settings.live_chat_start_announcement
    } else {
        settings.live_chat_end_announcement
    };
    let announcement = live_message(&session, MessageKind::Announcement, "", &text);
    // A blank announcement is the owner's way of saying none: nothing is stored or shown.
    let announced = !text.trim().is_empty();
    let started_times = session.event_times("live_chat", "started_times", &announcement.created_at);
    let mut state = session
        .meta
        .get("live_chat")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(obj) = state.as_object_mut() {
        obj.insert("active".into(), json!(on));
        // A new round has not ended: the last round's end would read as this one's.
        if on {
            obj.remove("ended_at");
            obj.insert("started_times".into(), started_times);
        }
        obj.insert(
            if on { "started_at" } else { "ended_at" }.into(),
            json!(announcement.created_at),
        );
    }
    let switched = call
        .store
        .switch_live_chat(
            &session.uuid,
            !on,
            &state,
            announced.then_some(&announcement),
            &announcement.modified_at,
        )
        .await?;
    if !switched {
        // Switched by another call since it was read (a 404 if the session is gone).
        owned_session(&call).await?;
        return Err(already(on));
    }
    session.meta.insert("live_chat".into(), state);
    session.modified_at = announcement.modified_at.clone();
    let message = announced.then(|| announcement.to_json());
    announce(&call, &session, message.clone(), on);
    if announced {
        tell_visitor(&call, &announcement);
    }
    json_response(&json!({"session": session.to_json(), "message": message}))
}

/// Sends a stored live-chat message to the session's open event streams (the visitor's chat),
/// beside the response. Whom the chatbot admits is read there too: a visitor of a chatbot
/// made private since, or on a site dropped from its allowed origins, hears nothing more
/// (its stream is closed).
fn tell_visitor(call: &Call, message: &Message) {
    let env = call.env.clone();
    let account_uuid = call.account().map(str::to_string);
    let chatbot_uuid = message.chatbot_uuid.clone();
    let session_uuid = message.session_uuid.clone();
    let json = visitor_message_json(message, false);
    call.ctx.wait_until(async move {
        let admission = async {
            let chatbot = Store::new(&env)?
                .get_chatbot(&account_uuid?, &chatbot_uuid)
                .await?;
            Ok::<_, ApiError>(chatbot.map(|c| (c.settings.visibility, c.settings.allowed_origins)))
        }
        .await
        .unwrap_or(None);
        let told = chat_session::Told {
            message: json,
            admission,
        };
        chat_session::notify(env, session_uuid, told).await
    });
}

/// Tells webhooks that live chat started or ended, after the response.
fn announce(call: &Call, session: &Session, announcement: Option<Value>, started: bool) {
    let event = if started {
        Event::LiveChatStarted
    } else {
        Event::LiveChatEnded
    };
    call.ctx.wait_until(webhooks::notify(
        call.env.clone(),
        session.chatbot_uuid.clone(),
        event,
        json!({"session_uuid": session.uuid, "message": announcement}),
    ));
}

/// `POST /session/{uuid}/live-chat/start`
pub async fn start(call: Call) -> ApiResult<Response> {
    switch(call, true).await
}

/// `POST /session/{uuid}/live-chat/end`
pub async fn end(call: Call) -> ApiResult<Response> {
    switch(call, false).await
}

/// `POST /session/{uuid}/live-chat/message {text}`: the operator writes.
pub async fn operator_message(mut call: Call) -> ApiResult<Response> {
    let session = owned_session(&call).await?;
    let body = call.json_body().await?;
    let text = Body(&body).req_str("text", MAX_QUERY_CHARS)?;
    if !is_active(&session) {
        return Err(ApiError::Conflict(
            "Live chat is not on in this session; start it first.".into(),
        ));
    }
    let message = live_message(&session, MessageKind::Operator, "", text.trim());
    call.store.insert_message(&message).await?;
    super::messages::live_message_created(&call, &message);
    tell_visitor(&call, &message);
    json_response(&message.to_json())
}
