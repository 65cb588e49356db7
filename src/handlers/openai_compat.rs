//! OpenAI's Chat Completions over the chat (`/api/v1/openai/...`), so a client configured
//! with base URL `{worker}/api/v1/openai` and an edgechat key (or a visitor token) works
//! unchanged. `model` is a chatbot's uuid; each call is one chat turn in a session of that
//! chatbot, new unless `metadata.session_uuid` names one. Like a message, the turn runs in
//! its session's object (`forward`): one answer at a time per session, produced to its end
//! and readable again through `/message/{uuid}/stream`. The request is read in
//! `edgechat_core::chat::openai_compat`; errors take OpenAI's shape (`app::handle`).

use super::messages::{
    begin_turn, claim, collect_answer, forget_session, stream_answer, stream_headers, Plan,
};
use super::new_uuid;
use crate::app::http::json_response;
use crate::app::{Call, Caller};
use crate::platform::chat_session;
use crate::storage::Owner;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::validate::{canonical_uuid, parse_object};
use edgechat_core::chat::openai_compat::{completion, model_entry, parse_call, CompletionCall};
use edgechat_core::chat::wire::{Encoder, WireFormat};
use edgechat_core::domain::session::{FinishReason, Message, MessageKind, Session};
use edgechat_core::time;
use serde_json::{json, Map, Value};
use worker::{Env, Request, Response};

/// In the Worker: hands the call to the object of the session it names, or, naming none, to
/// the object of a new session's uuid, which the turn then creates (`session_for`). Which
/// session it is comes from a first look at the body; the object reads it again, whole, and
/// answers a body that is not a chat completion with the usual error.
pub async fn forward(env: &Env, mut req: Request) -> ApiResult<Response> {
    let body = chat_session::read_json_body(&mut req).await?;
    let named = parse_object(&body).ok().and_then(|v| {
        v.get("metadata")?
            .get("session_uuid")
            .and_then(Value::as_str)
            .and_then(canonical_uuid)
    });
    match named {
        Some(uuid) => chat_session::forward_read(env, &uuid, &req, &body, None).await,
        None => {
            let uuid = new_uuid();
            chat_session::forward_read(env, &uuid, &req, &body, Some(&uuid)).await
        }
    }
}

/// Whose chatbot may answer: an account's own, or a visitor's one chatbot.
struct Asker {
    account_uuid: String,
    visitor_id: Option<String>,
}

fn asker(call: &Call, chatbot_uuid: &str) -> ApiResult<Asker> {
    match &call.caller {
        Caller::Account { account_uuid, .. } => Ok(Asker {
            account_uuid: account_uuid.clone(),
            visitor_id: None,
        }),
        Caller::Visitor(visitor) if visitor.chatbot.uuid == chatbot_uuid => Ok(Asker {
            account_uuid: visitor.account_uuid.clone(),
            visitor_id: Some(visitor.visitor_id.clone()),
        }),
        Caller::Visitor(_) => Err(ApiError::Forbidden(
            "This visitor token is for another chatbot.".into(),
        )),
        _ => Err(ApiError::Unauthorized(
            "Send an API key as `Authorization: Bearer <key>`.".into(),
        )),
    }
}

/// The session the turn goes into: the one named, when it is the asker's and the model's;
/// else a new one.
async fn session_for(call: &Call, asker: &Asker, req: &CompletionCall) -> ApiResult<String> {
    if let Some(uuid) = &req.session_uuid {
        let found = match &asker.visitor_id {
            Some(visitor_id) => {
                call.store
                    .get_visitor_session(&req.chatbot_uuid, visitor_id, uuid)
                    .await?
            }
            None => call.store.get_session(&asker.account_uuid, uuid).await?,
        };
        return match found {
            Some(session) if session.chatbot_uuid == req.chatbot_uuid => Ok(session.uuid),
            _ => Err(ApiError::not_found("session")),
        };
    }
    match &call.caller {
        // A visitor's new session counts as one opened through `session/create` does.
        Caller::Visitor(visitor) => super::widget::admit_session(call, visitor).await?,
        _ => {
            call.store
                .get_chatbot(&asker.account_uuid, &req.chatbot_uuid)
                .await?
                .ok_or_else(|| model_not_found(&req.chatbot_uuid))?;
        }
    }
    let now = time::now();
    let session = Session {
        // In a session's object, the uuid the object is named by (see `forward`).
        uuid: chat_session::new_session_uuid(&call.req).unwrap_or_else(new_uuid),
        chatbot_uuid: req.chatbot_uuid.clone(),
        initial_variables: None,
        meta: Map::new(),
        created_at: now.clone(),
        modified_at: now,
    };
    call.store
        .insert_session(&session, asker.visitor_id.as_deref())
        .await?;
    call.log.record(&session.uuid);
    Ok(session.uuid)
}

fn model_not_found(uuid: &str) -> ApiError {
    ApiError::NotFound(format!(
        "The model `{uuid}` does not exist: `model` is the uuid of one of your chatbots."
    ))
}

/// The request's earlier exchanges as the prompt's history of a new session.
fn given_history(req: &CompletionCall, session_uuid: &str) -> Vec<Message> {
    let now = time::now();
    req.history
        .iter()
        .enumerate()
        .map(|(i, (query, response))| Message {
            uuid: String::new(),
            kind: MessageKind::Answer,
            session_uuid: session_uuid.to_string(),
            chatbot_uuid: req.chatbot_uuid.clone(),
            started_ms: i as i64,
            query: query.clone(),
            response: response.clone(),
            finish_reason: FinishReason::Stop,
            cite_data: json!({}),
            meta: json!({}),
            answered: None,
            feedback: None,
            created_at: now.clone(),
            modified_at: now.clone(),
        })
        .collect()
}

/// `POST /openai/chat/completions`.
pub async fn chat_completions(mut call: Call) -> ApiResult<Response> {
    let body = call.json_body().await?;
    let req = parse_call(&body)?;
    let asker = asker(&call, &req.chatbot_uuid)?;
    // In the session's object: the session answers one turn at a time (409 while busy).
    let (claim, busy) = claim(&call);
    let session_uuid = session_for(&call, &asker, &req).await?;
    // The conversation the client sends is the history, as with any Chat Completions API; a
    // call that sends only its question and names a session goes on from the stored one.
    let history = (req.session_uuid.is_none() || !req.history.is_empty())
        .then(|| given_history(&req, &session_uuid));
    let owner = Owner::Account(&asker.account_uuid);
    let created = time::now_ms().div_euclid(1000);
    let plan = begin_turn(
        &call,
        owner,
        &session_uuid,
        Ok(req.query.clone()),
        (history, None),
        busy,
    )
    .await;
    let (mut exchange, agents) = match plan {
        Ok(Plan::Answer(ex, agents)) => (*ex, agents),
        // A person answers in live chat: the question is stored, and no answer follows here.
        Ok(Plan::LiveChat(message)) => {
            super::messages::live_message_created(&call, &message);
            if req.stream {
                let mut encoder = openai_encoder(&req, created);
                let body = encoder.openai_live_chat(&message.uuid, &message.session_uuid);
                let headers = stream_headers(WireFormat::OpenAiChunks)?;
                headers.set("X-Live-Chat", "active")?;
                return Ok(Response::builder()
                    .with_headers(headers)
                    .fixed(body.into_bytes()));
            }
            let mut answer = completion(&message, &req.chatbot_uuid, created, false);
            answer["live_chat"] = json!(true);
            return json_response(&answer);
        }
        Ok(Plan::Limited(refusal)) | Err(refusal) => {
            return Err(forget_new_session(&call, &req, &session_uuid, refusal).await);
        }
    };
    exchange.sampling = req.sampling;
    if req.stream {
        let encoder = openai_encoder(&req, created);
        let forget = req.session_uuid.is_none().then(|| session_uuid.clone());
        let answered = stream_answer(&call, exchange, agents, encoder, (claim, forget));
        return match answered.await {
            Ok(response) => Ok(response),
            Err(err) => Err(forget_new_session(&call, &req, &session_uuid, err).await),
        };
    }
    let show_citations = exchange.chatbot.settings.show_citations;
    let message = match collect_answer(&call, exchange, agents, claim).await {
        Ok(message) => message,
        Err(err) => return Err(forget_new_session(&call, &req, &session_uuid, err).await),
    };
    // What the model said before it failed is stored; the caller hears of the failure, as a
    // Chat Completions client would, rather than a cut answer that looks whole.
    if message.finish_reason == FinishReason::Error {
        return Err(ApiError::Upstream(format!(
            "The model failed while answering; what it said is stored as message {}.",
            message.uuid
        )));
    }
    json_response(&completion(
        &message,
        &req.chatbot_uuid,
        created,
        show_citations,
    ))
}

/// The chunks' encoder for a streamed call, with a usage chunk of its own when asked.
fn openai_encoder(req: &CompletionCall, created: i64) -> Encoder {
    let encoder = Encoder::new(WireFormat::OpenAiChunks, &req.chatbot_uuid, created);
    if req.include_usage {
        encoder.with_usage_chunk()
    } else {
        encoder
    }
}

/// A call that ends before any answer was stored leaves nothing behind, not even the session
/// it was to open; returns the call's error.
async fn forget_new_session(
    call: &Call,
    req: &CompletionCall,
    session_uuid: &str,
    err: ApiError,
) -> ApiError {
    if req.session_uuid.is_none() {
        forget_session(&call.store, session_uuid).await;
    }
    err
}

/// `GET /openai/models`: the caller's chatbots (a visitor's: its one chatbot), as models.
pub async fn models(call: Call) -> ApiResult<Response> {
    let chatbots = match &call.caller {
        Caller::Visitor(visitor) => vec![visitor.chatbot.clone()],
        _ => call.store.list_chatbots(call.account()?).await?,
    };
    let data: Vec<Value> = chatbots.iter().map(model_entry).collect();
    json_response(&json!({"object": "list", "data": data}))
}

/// `GET /openai/models/{model}`: one of the caller's chatbots (a visitor's: its own) as a
/// model; any other, or a name that is no uuid, is a model that does not exist.
pub async fn model(call: Call) -> ApiResult<Response> {
    let named = call.params.first().cloned().unwrap_or_default();
    let uuid = canonical_uuid(&named).ok_or_else(|| model_not_found(&named))?;
    let chatbot = match &call.caller {
        Caller::Visitor(visitor) => (visitor.chatbot.uuid == uuid).then(|| visitor.chatbot.clone()),
        _ => call.store.get_chatbot(call.account()?, &uuid).await?,
    }
    .ok_or_else(|| model_not_found(&named))?;
    json_response(&model_entry(&chatbot))
}
