use crate::app::http::{json_response, success_response};
use crate::app::{Call, Caller};
use crate::conversation::{self, relay, tagging, Exchange, Output, Request};
use crate::handlers::{live_chat, widget};
use crate::platform::log;
use crate::platform::rate_limit::{admit_message, names as limit_names, Decision, Limit};
use crate::providers;
use crate::storage::{Owner, Store, TurnContext};
use crate::webhooks;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::chat::followup::conversation_context;
use edgechat_core::chat::routing::{pick_agent_with, previous_agent};
use edgechat_core::chat::wire::{ui_chat_query, AnswerEvent, Encoder, WireFormat};
use edgechat_core::config::Config;
use edgechat_core::domain::agent::{Agent, AgentType};
use edgechat_core::domain::chatbot::Chatbot;
use edgechat_core::domain::data_source::uuid_list;
use edgechat_core::domain::session::{query_from_body, Message};
use edgechat_core::domain::webhook::Event;
use edgechat_core::domain::widget::visitor_message_json;
use edgechat_core::knowledge::query::phrases;

use crate::platform::stream::StreamSink;
use serde_json::json;
use worker::{Env, Headers, Response};

/// What happens to a message.
pub(crate) enum Plan {
    /// An agent answers.
    Answer(Box<Exchange>, Vec<Agent>),
    /// A person is answering in live chat: the user's message is stored as it is.
    LiveChat(Box<Message>),
}

/// Asks the chatbot's rate-limit object to admit one more message; a site visitor's message
/// must also fit the visitor's own window (`widget::admit_visitor`).
async fn admit(call: &Call, chatbot: &Chatbot) -> ApiResult<()> {
    if let Caller::Visitor(visitor) = &call.caller {
        return widget::admit_visitor(
            &call.env,
            &chatbot.settings,
            &limit_names::visitor_messages(&chatbot.uuid, &visitor.visitor_id),
            &chatbot.uuid,
        )
        .await;
    }
    let limit = Limit {
        count: chatbot.settings.rate_limit_count as u32,
        window_secs: chatbot.settings.rate_limit_window as u32,
    };
    match admit_message(&call.env, &chatbot.uuid, limit).await? {
        Decision::Admitted { .. } => Ok(()),
        Decision::Limited { retry_after_secs } => Err(ApiError::RateLimited {
            message: chatbot.settings.rate_limit_message.clone(),
            retry_after_secs,
        }),
    }
}

/// Everything up to the model call: session, question, rate limit, then either the live-chat
/// path or the agent and its prompt. Every read sits between the question and the first
/// token, so the stored state comes in one D1 batch, and the rate-limit object is asked while
/// retrieval runs.
async fn begin(call: &mut Call) -> ApiResult<Plan> {
    let session_uuid = call.uuid_param(0, "session")?;
    // Read first but judged after the session: a bad body on someone else's session (or with
    // a wrong key) is still a 404 (or 401).
    let query = call.json_body().await.and_then(|body| {
        // An AI SDK client (`useChat`) sends its conversation instead of a `query`.
        ui_chat_query(&body).unwrap_or_else(|| query_from_body(&body))
    });
    // The caller's account; for a site visitor, its own session's (see `widget`).
    let owner = widget::turn_owner(call, &session_uuid).await?;
    begin_turn(call, owner, &session_uuid, query, None).await
}

/// `begin` once the session's owner is known. `given_history` replaces the session's stored
/// messages as the prompt's history (a caller that keeps the conversation itself).
pub(crate) async fn begin_turn(
    call: &Call,
    owner: Owner<'_>,
    session_uuid: &str,
    query: ApiResult<String>,
    given_history: Option<Vec<Message>>,
) -> ApiResult<Plan> {
    let phrases = query.as_deref().map(phrases).unwrap_or_default();
    let context = call
        .store
        .turn_context(owner, session_uuid, conversation::HISTORY_TURNS, &phrases)
        .await?;
    let Some(context) = context else {
        return Err(call.missing("session").await);
    };
    let query = query?;
    let TurnContext {
        session,
        chatbot,
        agents,
        history,
        mut tools,
        phrase_frequencies,
    } = context;
    let history = given_history.unwrap_or(history);
    if live_chat::is_active(&session) {
        admit(call, &chatbot).await?;
        let message = live_chat::store_user_message(&call.store, &session, &query).await?;
        return Ok(Plan::LiveChat(Box::new(message)));
    }
    let previous = previous_agent(&history);
    let by_model = conversation::model_route(
        &call.env,
        &call.config,
        &agents,
        &query,
        previous.as_deref(),
    )
    .await;
    let (agent, escalating) =
        pick_agent_with(&query, &agents, previous.as_deref(), by_model.as_deref())?;
    let context = conversation_context(&query, &history);
    // A limited message is refused whatever retrieval found; retrieval only reads.
    let searcher = conversation::retrieval::Searcher {
        store: &call.store,
        env: &call.env,
        config: &call.config,
    };
    let (admitted, ranked) = futures::join!(
        admit(call, &chatbot),
        conversation::sources_for(
            &searcher,
            &chatbot.uuid,
            &agent,
            escalating,
            (&query, &context, &history),
            &phrase_frequencies,
        )
    );
    admitted?;
    let tools = tools.remove(&agent.uuid).unwrap_or_default();
    let exchange = conversation::prepare(
        &call.config,
        Request {
            chatbot,
            session,
            agent,
            escalating,
            query,
            context,
            history,
            ranked: ranked?,
            tools,
        },
    );
    Ok(Plan::Answer(Box::new(exchange), agents))
}

/// After the answer: webhooks hear of the message (and of a request for a person), then
/// background agents judge the exchange. Failures are logged, not raised.
async fn after_answer(env: Env, config: Config, agents: Vec<Agent>, message: Message) {
    let chatbot_uuid = message.chatbot_uuid.clone();
    webhooks::notify(
        env.clone(),
        chatbot_uuid.clone(),
        Event::MessageCreated,
        message.to_json(),
    )
    .await;
    if let Some(request) = escalation_request(&agents, &message) {
        webhooks::notify(
            env.clone(),
            chatbot_uuid.clone(),
            Event::EscalationRequested,
            request,
        )
        .await;
    }
    let result = async {
        let store = Store::new(&env)?;
        tagging::tag_session(&env, &config, &store, &agents, &message).await
    }
    .await;
    match result {
        Ok(tags) => {
            for tag in tags {
                let data = json!({"session_uuid": message.session_uuid, "tag": tag});
                webhooks::notify(
                    env.clone(),
                    chatbot_uuid.clone(),
                    Event::SessionTagged,
                    data,
                )
                .await;
            }
        }
        Err(err) => log::background_failure("tagging a session", &message.session_uuid, &err),
    }
}

/// The `escalation.requested` event's data when `message` was the human-escalation agent's
/// reply and that agent has notifications on (`notifications_enabled` 1).
fn escalation_request(agents: &[Agent], message: &Message) -> Option<serde_json::Value> {
    let agent_uuid = message.meta.get("agent")?.get("uuid")?.as_str()?;
    let agent = agents.iter().find(|a| a.uuid == agent_uuid)?;
    if agent.config.agent_type != AgentType::HumanEscalation {
        return None;
    }
    let settings = agent
        .config
        .human_escalation_settings
        .clone()
        .unwrap_or_default();
    (settings.notifications_enabled == 1).then(|| {
        json!({
            "session_uuid": message.session_uuid,
            "message_uuid": message.uuid,
            "agent_uuid": agent.uuid,
            "query": message.query,
            "requested_at": message.created_at,
        })
    })
}

/// A live-chat message (the user's, or the operator's) is told to webhooks after the response.
pub fn live_message_created(call: &Call, message: &Message) {
    call.ctx.wait_until(webhooks::notify(
        call.env.clone(),
        message.chatbot_uuid.clone(),
        Event::MessageCreated,
        message.to_json(),
    ));
}

/// The path's message, when the caller may read it: the account's, or for a site visitor one
/// in a session the visitor created (else 404, as for any message not yours).
pub async fn readable_message(call: &Call) -> ApiResult<Message> {
    let uuid = call.uuid_param(0, "message")?;
    let found = match &call.caller {
        Caller::Visitor(visitor) => {
            call.store
                .get_visitor_message(&visitor.chatbot.uuid, &visitor.visitor_id, &uuid)
                .await?
        }
        _ => call
            .store
            .get_messages(call.account()?, std::slice::from_ref(&uuid))
            .await?
            .into_iter()
            .next(),
    };
    found.ok_or_else(|| ApiError::not_found("message"))
}

/// `GET /message/{uuid}`: one stored message (a visitor's view for a site visitor).
pub async fn get(call: Call) -> ApiResult<Response> {
    let message = readable_message(&call).await?;
    match &call.caller {
        Caller::Visitor(visitor) => json_response(&visitor_message_json(
            &message,
            visitor.chatbot.settings.show_citations,
        )),
        _ => json_response(&message.to_json()),
    }
}

/// While a person answers, a message gets `202 Accepted` at once: no answer follows in this
/// response (the operator's reply appears in the session's messages). Plain mode has an empty
/// body; the event formats send `start` and `end` (with `live_chat: true` in event-stream
/// mode).
fn live_chat_accepted(format: WireFormat, message: &Message) -> ApiResult<Response> {
    let body = match format {
        WireFormat::EventStream => [
            format!("event: start\ndata: {}\n\n", json!({"message_uuid": message.uuid, "session_uuid": message.session_uuid, "agent_uuid": null, "live_chat": true})),
            format!("event: end\ndata: {}\n\n", json!({"message_uuid": message.uuid, "finish_reason": "stop", "live_chat": true})),
        ]
        .concat(),
        _ => format.encode_all(
            "",
            0,
            &[
                AnswerEvent::Start {
                    message_uuid: message.uuid.clone(),
                    session_uuid: message.session_uuid.clone(),
                    agent_uuid: None,
                },
                AnswerEvent::End {
                    message_uuid: message.uuid.clone(),
                    finish_reason: "stop".into(),
                    usage: serde_json::Value::Null,
                    answered: None,
                },
            ],
        ),
    };
    let headers = stream_headers(format)?;
    headers.set("X-Message-Uuid", &message.uuid)?;
    headers.set("X-Live-Chat", "active")?;
    Ok(Response::builder()
        .with_status(202)
        .with_headers(headers)
        .fixed(body.into_bytes()))
}

/// A rate-limited stream call answers in the stream's own format: the chatbot's message as
/// plain text, or an `error` event.
fn rate_limited(format: WireFormat, message: &str, retry_after_secs: u64) -> ApiResult<Response> {
    let body = match format {
        WireFormat::Plain => message.to_string(),
        _ => Encoder::new(format, "", 0).encode(&AnswerEvent::Error {
            code: "rate_limited".into(),
            message: message.to_string(),
        }),
    };
    let headers = stream_headers(format)?;
    headers.set("Retry-After", &retry_after_secs.to_string())?;
    Ok(Response::builder()
        .with_status(429)
        .with_headers(headers)
        .fixed(body.into_bytes()))
}

fn stream_headers(format: WireFormat) -> ApiResult<Headers> {
    let headers = Headers::new();
    headers.set("Content-Type", format.content_type())?;
    headers.set("Cache-Control", "no-cache")?;
    for (name, value) in format.extra_headers() {
        headers.set(name, value)?;
    }
    Ok(headers)
}

/// The stream format a call asks for (`?format=`, else `Accept`).
fn requested_format(call: &Call) -> ApiResult<WireFormat> {
    let url = call.req.url()?;
    let param = url
        .query_pairs()
        .find(|(k, _)| k == "format")
        .map(|(_, v)| v.into_owned());
    WireFormat::requested(
        param.as_deref(),
        call.req.headers().get("Accept")?.as_deref(),
    )
    .ok_or_else(|| {
        ApiError::invalid(
            "format",
            "`format` must be plain, event-stream or ui-message-stream.",
        )
    })
}

/// Opens the answer and returns the response its pieces stream into as they are produced.
pub(crate) async fn stream_answer(
    call: Call,
    exchange: Exchange,
    agents: Vec<Agent>,
    encoder: Encoder,
) -> ApiResult<Response> {
    call.log.record(&exchange.message_uuid);
    let answer = relay::open(&call.env, &call.config, &exchange).await?;
    let (sink, readable) = StreamSink::new().map_err(ApiError::internal)?;
    let headers = stream_headers(encoder.format())?;
    // Sent as-is: the platform's automatic compression buffers a streamed body, which would
    // hold pieces of the answer back.
    headers.set("Content-Encoding", "identity")?;
    headers.set("X-Accel-Buffering", "no")?;
    headers.set("X-Message-Uuid", &exchange.message_uuid)?;
    let store = Store::new(&call.env)?;
    let env = call.env.clone();
    let config = call.config.clone();
    // The producer runs past the response: it must finish (and store the message) even when
    // the client leaves midway; background agents judge only after the stream has closed.
    call.ctx.wait_until(async move {
        let message_uuid = exchange.message_uuid.clone();
        match relay::deliver(
            &store,
            &env,
            &config,
            exchange,
            answer,
            Output::stream(sink, encoder),
        )
        .await
        {
            Ok(message) => after_answer(env, config, agents, message).await,
            Err(err) => log::background_failure("storing a streamed message", &message_uuid, &err),
        }
    });
    Ok(Response::builder()
        .with_status(200)
        .with_headers(headers)
        .stream(readable))
}

/// A complete answer, stored: what the non-stream endpoints return.
pub(crate) async fn collect_answer(
    call: &Call,
    exchange: Exchange,
    agents: Vec<Agent>,
) -> ApiResult<Message> {
    call.log.record(&exchange.message_uuid);
    let answer = relay::open(&call.env, &call.config, &exchange).await?;
    let message = relay::deliver(
        &call.store,
        &call.env,
        &call.config,
        exchange,
        answer,
        Output::Collect,
    )
    .await?;
    call.ctx.wait_until(after_answer(
        call.env.clone(),
        call.config.clone(),
        agents,
        message.clone(),
    ));
    Ok(message)
}

/// `POST /session/{uuid}/message/stream`: the answer streamed as it is produced.
pub async fn stream(mut call: Call) -> ApiResult<Response> {
    let format = requested_format(&call)?;
    let (exchange, agents) = match begin(&mut call).await {
        Ok(Plan::Answer(ex, agents)) => (*ex, agents),
        Ok(Plan::LiveChat(message)) => {
            live_message_created(&call, &message);
            return live_chat_accepted(format, &message);
        }
        Err(ApiError::RateLimited {
            message,
            retry_after_secs,
        }) => return rate_limited(format, &message, retry_after_secs),
        Err(err) => return Err(err),
    };
    stream_answer(call, exchange, agents, Encoder::new(format, "", 0)).await
}

/// `POST /session/{uuid}/message/non-stream`: the stored message once the answer is complete
/// (during live chat, the stored user message, with status 202).
pub async fn non_stream(mut call: Call) -> ApiResult<Response> {
    let (exchange, agents) = match begin(&mut call).await? {
        Plan::Answer(ex, agents) => (*ex, agents),
        Plan::LiveChat(message) => {
            live_message_created(&call, &message);
            return Ok(json_response(&message.to_json())?.with_status(202));
        }
    };
    let message = collect_answer(&call, exchange, agents).await?;
    json_response(&message.to_json())
}

pub async fn delete(call: Call) -> ApiResult<Response> {
    let uuid = call.uuid_param(0, "message")?;
    let found = call
        .store
        .get_messages(call.account()?, std::slice::from_ref(&uuid))
        .await?;
    if found.is_empty() {
        return Err(ApiError::not_found("message"));
    }
    call.store.delete_messages(&[uuid]).await?;
    success_response()
}

/// All or nothing: a missing or foreign uuid makes the call 404 and deletes none.
pub async fn delete_many(mut call: Call) -> ApiResult<Response> {
    let body = call.json_body().await?;
    let uuids = uuid_list(&body, "uuids")?;
    let found = call.store.get_messages(call.account()?, &uuids).await?;
    if let Some(missing) = uuids.iter().find(|u| !found.iter().any(|m| &m.uuid == *u)) {
        return Err(ApiError::NotFound(format!(
            "No message with uuid {missing} exists."
        )));
    }
    call.store.delete_messages(&uuids).await?;
    success_response()
}

pub async fn models(call: Call) -> ApiResult<Response> {
    json_response(&providers::catalogue(&call.config))
}
