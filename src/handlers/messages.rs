use crate::app::http::{json_response, read_json_object, success_response};
use crate::app::{Call, Caller};
use crate::conversation::{self, relay, retrieval, tagging, Exchange, Output, Request};
use crate::handlers::{live_chat, widget};
use crate::platform::chat_session::{self, Claim, Followed, Holder, Room, Told};
use crate::platform::log;
use crate::platform::rate_limit::{
    admit_message, admit_messages, names as limit_names, release_messages, Decision,
    LIVE_CHAT_VISITOR_LIMIT,
};
use crate::providers::{self, AnswerStream};
use crate::storage::{KeyOwner, Owner, SearchIn, Store, TurnContext};
use crate::webhooks;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::chat::followup::conversation_context;
use edgechat_core::chat::routing::{pick_agent_with, previous_agent, someone_answers};
use edgechat_core::chat::wire::{ui_chat_query, AnswerEvent, Encoder, WireFormat};
use edgechat_core::config::Config;
use edgechat_core::domain::agent::{Agent, AgentType};
use edgechat_core::domain::chatbot::Chatbot;
use edgechat_core::domain::data_source::uuid_list;
use edgechat_core::domain::rate_limit::Limit;
use edgechat_core::domain::session::{query_from_body, FinishReason, Message};
use edgechat_core::domain::webhook::Event;
use edgechat_core::domain::widget::{admits, visitor_message_json};
use edgechat_core::time;

use crate::platform::stream::StreamSink;
use edgechat_core::api::validate::canonical_uuid;
use futures::future::{select, Either};
use serde_json::{json, Map, Value};
use std::rc::Rc;
use worker::{Env, Headers, Response};

/// What happens to a message.
pub(crate) enum Plan {
    /// An agent answers.
    Answer(Box<Exchange>, Vec<Agent>),
    /// A person is answering in live chat: the user's message is stored as it is.
    LiveChat(Box<Message>),
    /// The chatbot's rate limit refused the message (a `RateLimited` error in the chatbot's
    /// own words), which a streamed answer tells in its own format (`stream`).
    Limited(ApiError),
}

/// Admits one more message: within the chatbot's `rate_limit`, a site visitor's also within
/// its own window (`widget::visitor_logs`), and an API key's request within the key's limit
/// (`Call::count_key`), all asked at once. A message the key's limit refuses is taken back
/// from the chatbot's logs, so a key over its limit uses up nothing of the chatbot's.
///
/// The key's refusal is an error, as on every other route; the chatbot's is `Plan::Limited`.
async fn admit(call: &Call, chatbot: &Chatbot) -> ApiResult<Option<Plan>> {
    let logs = message_logs(call, chatbot);
    let (key, messages) = futures::join!(call.count_key(), admit_messages(&call.env, &logs));
    if let Err(refused) = key {
        if let Ok(Decision::Admitted { .. }) = messages {
            release(&call.env, &logs).await;
        }
        return Err(refused);
    }
    Ok(widget::within_limits(&chatbot.settings, messages?)
        .err()
        .map(Plan::Limited))
}

/// The chatbot's logs a message counts in (`admit`), with their limits.
fn message_logs(call: &Call, chatbot: &Chatbot) -> Vec<(String, Limit)> {
    let settings = &chatbot.settings;
    match &call.caller {
        Caller::Visitor(visitor) => widget::visitor_logs(
            settings,
            &limit_names::visitor_messages(&chatbot.uuid, &visitor.visitor_id),
            &chatbot.uuid,
        ),
        _ => vec![(chatbot.uuid.clone(), widget::chatbot_limit(settings))],
    }
}

async fn release(env: &Env, logs: &[(String, Limit)]) {
    let names: Vec<&str> = logs.iter().map(|(name, _)| name.as_str()).collect();
    release_messages(env, &names).await;
}

/// `opened` as it is; when the model failed before answering, the message's admission is
/// taken back first, as a refused one's is: an outage of the provider does not use up the
/// chatbot's rate limit, and its users can ask again once it is over.
async fn or_released<T>(call: &Call, chatbot: &Chatbot, opened: ApiResult<T>) -> ApiResult<T> {
    if opened.is_err() {
        release(&call.env, &message_logs(call, chatbot)).await;
    }
    opened
}

/// Admits one more message while a person answers (live chat). The chatbot's `rate_limit`
/// caps what its model is asked, so it does not count a conversation between people; an API
/// key's requests still count, and a site visitor has a flood guard of its own
/// (`LIVE_CHAT_VISITOR_LIMIT`), separate from its share of the chatbot's messages.
async fn admit_live(call: &Call, chatbot: &Chatbot) -> ApiResult<Option<Plan>> {
    let Caller::Visitor(visitor) = &call.caller else {
        call.count_key().await?;
        return Ok(None);
    };
    let name = limit_names::visitor_live_chat(&chatbot.uuid, &visitor.visitor_id);
    Ok(
        match admit_message(&call.env, &name, LIVE_CHAT_VISITOR_LIMIT).await? {
            Decision::Admitted { .. } => None,
            Decision::Limited { retry_after_secs } => Some(Plan::Limited(ApiError::RateLimited {
                message: "Too many messages in a short time: wait a moment before sending more."
                    .into(),
                retry_after_secs,
            })),
        },
    )
}

/// A message's turn as far as it can be read before the caller is checked: its question, and,
/// for an account key, what the turn needs from D1 (`Store::turn_context`), read with the key
/// itself for the account holding that key. The read is used only once the key has passed its
/// checks (`app::serve`); a key that fails them makes it read nothing or be dropped. `begin`
/// takes it.
pub struct EarlyTurn {
    session_uuid: Option<String>,
    query: ApiResult<String>,
    pub context: Option<Option<TurnContext>>,
}

impl EarlyTurn {
    pub async fn read_body(req: &mut worker::Request, params: &[String]) -> Self {
        EarlyTurn {
            session_uuid: params.first().and_then(|p| canonical_uuid(p)),
            query: read_json_object(req)
                .await
                .and_then(|body| turn_query(&body)),
            context: None,
        }
    }

    /// The key whose hash is `key_hash` and `Store::turn_context` for the session, as the
    /// account holding that key, in one round trip; `None` when the path names no session.
    pub async fn prefetch(
        &self,
        store: &Store,
        config: &Config,
        key_hash: &str,
    ) -> ApiResult<Option<(Option<KeyOwner>, Option<TurnContext>)>> {
        let Some(session_uuid) = &self.session_uuid else {
            return Ok(None);
        };
        let query = self.query.as_deref().ok();
        read_turn(
            store,
            config,
            Owner::KeyHolder(key_hash),
            session_uuid,
            query,
        )
        .await
        .map(Some)
    }
}

/// `Store::turn_context` for a turn asking `query`, with the question's search in the same
/// round trip when the turn will most likely want it (`retrieval::early_search`): one round
/// trip fewer before the model call.
async fn read_turn(
    store: &Store,
    config: &Config,
    owner: Owner<'_>,
    session_uuid: &str,
    query: Option<&str>,
) -> ApiResult<(Option<KeyOwner>, Option<TurnContext>)> {
    let early = query.and_then(retrieval::early_search);
    let search = early
        .as_ref()
        .map(|terms| terms.in_scope(SearchIn::SessionOf(session_uuid, owner), None, config));
    let read = (session_uuid, conversation::HISTORY_TURNS);
    store.turn_context(owner, read, search.as_ref()).await
}

/// The question a message's body asks.
fn turn_query(body: &Map<String, Value>) -> ApiResult<String> {
    // An AI SDK client (`useChat`) sends its conversation instead of a `query`.
    ui_chat_query(body).unwrap_or_else(|| query_from_body(body))
}

/// Everything up to the model call: session, question, rate limit, then either the live-chat
/// path or the agent and its prompt. Every read sits between the question and the first
/// token, so the stored state (and, for most questions, their search: `read_turn`) comes in
/// one D1 batch, and the message's limits are asked at once (`admit`), before any model is.
async fn begin(call: &mut Call, busy: Option<ApiError>) -> ApiResult<Plan> {
    let session_uuid = call.uuid_param(0, "session")?;
    // Read first but judged after the session: a bad body on someone else's session (or with
    // a wrong key) is still a 404 (or 401).
    let (query, early) = match call.early_turn.take() {
        Some(turn) => (turn.query, turn.context),
        None => (
            call.json_body().await.and_then(|body| turn_query(&body)),
            None,
        ),
    };
    // The caller's account; for a site visitor, its own session's (see `widget`).
    let owner = widget::turn_owner(call, &session_uuid).await?;
    begin_turn(call, owner, &session_uuid, query, (None, early), busy).await
}

/// `begin` once the session's owner is known. `given_history` replaces the session's stored
/// messages as the prompt's history (a caller that keeps the conversation itself); `early` is
/// the turn's read when it was made while the caller was checked (`EarlyTurn`); `busy`, the
/// 409 of a session still answering (`claim`).
pub(crate) async fn begin_turn(
    call: &Call,
    owner: Owner<'_>,
    session_uuid: &str,
    query: ApiResult<String>,
    (given_history, early): (Option<Vec<Message>>, Option<Option<TurnContext>>),
    busy: Option<ApiError>,
) -> ApiResult<Plan> {
    let context = match early {
        Some(context) => context,
        None => {
            // A session still answering needs only its state read, to tell live chat from a
            // 409: nothing is searched for a message that is refused.
            let asked = query.as_deref().ok().filter(|_| busy.is_none());
            read_turn(&call.store, &call.config, owner, session_uuid, asked)
                .await?
                .1
        }
    };
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
        searched,
    } = context;
    let history = given_history.unwrap_or(history);
    if live_chat::is_active(&session) {
        if let Some(refused) = admit_live(call, &chatbot).await? {
            return Ok(refused);
        }
        let message = live_chat::store_user_message(&call.store, &session, &query).await?;
        return Ok(Plan::LiveChat(Box::new(message)));
    }
    if let Some(busy) = busy {
        return Err(busy);
    }
    someone_answers(&query, &agents)?;
    // Before any model is asked anything (a route, a rewrite, an embedding): a refused
    // message costs the chatbot's provider nothing.
    if let Some(refused) = admit(call, &chatbot).await? {
        return Ok(refused);
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
    let searcher = conversation::retrieval::Searcher {
        store: &call.store,
        env: &call.env,
        config: &call.config,
    };
    let retrieved = conversation::sources_for(
        &searcher,
        &chatbot.uuid,
        (&agent, escalating),
        (&query, &context, &history),
        searched,
    )
    .await;
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
            retrieved: retrieved?,
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
    message_response(&call, &message)
}

fn message_response(call: &Call, message: &Message) -> ApiResult<Response> {
    match &call.caller {
        Caller::Visitor(visitor) => json_response(&visitor_message_json(
            message,
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
fn rate_limited(format: WireFormat, refusal: &ApiError) -> ApiResult<Response> {
    let message = refusal.public_message();
    let format = format.for_refusal();
    let body = match format {
        WireFormat::Plain => message,
        _ => Encoder::new(format, "", 0).encode(&AnswerEvent::Error {
            code: refusal.code().into(),
            message,
        }),
    };
    let headers = stream_headers(format)?;
    for (name, value) in refusal.headers() {
        headers.set(name, &value)?;
    }
    Ok(Response::builder()
        .with_status(refusal.status())
        .with_headers(headers)
        .fixed(body.into_bytes()))
}

pub(crate) fn stream_headers(format: WireFormat) -> ApiResult<Headers> {
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

/// The session held for this turn, when the call runs in the session's object; or, when the
/// session is still answering another message, that 409 (`busy`): a message a person answers
/// (live chat) is stored all the same, any other is refused with it (`begin_turn`).
pub(crate) fn claim(call: &Call) -> (Option<Claim>, Option<ApiError>) {
    match call.room.as_ref().map(|room| room.claim()).transpose() {
        Ok(claim) => (claim, None),
        Err(busy) => (None, Some(busy)),
    }
}

/// Opens the answer and returns the response its pieces stream into as they are produced.
/// With the session's `claim` the answer is kept by the session's object: produced to its
/// end whoever reads, and readable again (`follow`); when its model is slow to answer (a
/// reasoning model), the response goes out as soon as the answer is listed, with its `start`,
/// and a model that then cannot be reached is told in the stream (in every format but plain
/// text, which waits for the model). `forget` is a session opened for this call alone,
/// deleted when the call fails before any answer (`forget_session`).
pub(crate) async fn stream_answer(
    call: &Call,
    exchange: Exchange,
    agents: Vec<Agent>,
    encoder: Encoder,
    (claim, forget): (Option<Claim>, Option<String>),
) -> ApiResult<Response> {
    call.log.record(&exchange.message_uuid);
    let store = Store::new(&call.env)?;
    let live = claim
        .as_ref()
        .map(|claim| claim.start(&exchange.message_uuid))
        .transpose()?;
    let (sink, readable) = StreamSink::new().map_err(ApiError::internal)?;
    let headers = stream_headers(encoder.format())?;
    // Sent as-is: the platform's automatic compression buffers a streamed body, which would
    // hold pieces of the answer back.
    headers.set("Content-Encoding", "identity")?;
    headers.set("X-Accel-Buffering", "no")?;
    headers.set("X-Message-Uuid", &exchange.message_uuid)?;
    let response = Response::builder()
        .with_status(200)
        .with_headers(headers)
        .stream(readable);
    let env = call.env.clone();
    let config = call.config.clone();
    let Some(live) = live else {
        let opened = relay::open(&env, &config, &exchange).await;
        let answer = or_released(call, &exchange.chatbot, opened).await?;
        let output = Output::stream(sink, encoder);
        let producing = produce(
            (store, env, config),
            exchange,
            agents,
            (answer, output),
            claim,
        );
        call.ctx.wait_until(producing);
        return Ok(response);
    };
    let released = message_logs(call, &exchange.chatbot);
    let mut opening = Box::pin({
        let live = Rc::clone(&live);
        async move {
            let opened = relay::open_kept(&store, &env, &config, &exchange, &live).await;
            (opened, (store, env, config), exchange)
        }
    });
    // Plain text waits for the model: a failure is then told by the status, as it has no
    // other place for one.
    let first = if encoder.format().tells_errors() {
        select(opening.as_mut(), live.on_listed()).await
    } else {
        Either::Left((opening.as_mut().await, live.on_listed()))
    };
    let Either::Left(((opened, services, exchange), _)) = first else {
        // The model is slow: the asker has the answer's start now, and the rest as it comes.
        live.read(sink, encoder);
        call.ctx.wait_until(async move {
            let (opened, (store, env, config), exchange) = opening.await;
            match opened {
                Ok(answer) => {
                    let output = Output::Live(live);
                    produce(
                        (store, env, config),
                        exchange,
                        agents,
                        (answer, output),
                        claim,
                    )
                    .await
                }
                // Its readers heard why (`open_kept`); the admission is taken back, as when
                // the model fails before the response.
                Err(_) => {
                    release(&env, &released).await;
                    if let Some(session) = forget {
                        forget_session(&store, &session).await;
                    }
                }
            }
        });
        return Ok(response);
    };
    let answer = or_released(call, &exchange.chatbot, opened).await?;
    live.read(sink, encoder);
    let output = Output::Live(live);
    call.ctx
        .wait_until(produce(services, exchange, agents, (answer, output), claim));
    Ok(response)
}

/// Deletes a session opened for one call that failed before any answer was stored, so the
/// call leaves nothing behind; a failure is logged.
pub(crate) async fn forget_session(store: &Store, session_uuid: &str) {
    if let Err(err) = store.delete_session(session_uuid).await {
        log::background_failure("removing a failed call's session", session_uuid, &err);
    }
}

/// Runs the opened answer to its end past the response: it must finish (and store the
/// message) even when the client leaves midway; background agents judge only after the
/// stream has closed.
async fn produce(
    (store, env, config): (Store, Env, Config),
    exchange: Exchange,
    agents: Vec<Agent>,
    (answer, output): (AnswerStream, Output),
    claim: Option<Claim>,
) {
    let message_uuid = exchange.message_uuid.clone();
    let delivered = run_to_end(&store, (&env, &config), exchange, (answer, output), claim);
    match delivered.await {
        Ok(message) => after_answer(env, config, agents, message).await,
        // The session (or its chatbot) was deleted while it answered: nothing to keep.
        Err(ApiError::NotFound(_)) => {}
        Err(err) => log::background_failure("storing a streamed message", &message_uuid, &err),
    }
}

/// A complete answer, stored: what the non-stream endpoints return. With the session's
/// `claim` it is kept like a streamed one (readable while it is produced, and stoppable).
pub(crate) async fn collect_answer(
    call: &Call,
    exchange: Exchange,
    agents: Vec<Agent>,
    claim: Option<Claim>,
) -> ApiResult<Message> {
    call.log.record(&exchange.message_uuid);
    let (opened, output) = match &claim {
        Some(claim) => {
            let live = claim.start(&exchange.message_uuid)?;
            let opened =
                relay::open_kept(&call.store, &call.env, &call.config, &exchange, &live).await;
            (opened, Output::Live(live))
        }
        None => (
            relay::open(&call.env, &call.config, &exchange).await,
            Output::Collect,
        ),
    };
    let answer = or_released(call, &exchange.chatbot, opened).await?;
    let message = run_to_end(
        &call.store,
        (&call.env, &call.config),
        exchange,
        (answer, output),
        claim,
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

/// Produces the opened `answer` to its end into `output` and stores the message. Held by the
/// session's `claim`, the answer is watched meanwhile (a stop, the runtime going away), its
/// readers learn how it settled, and the session is let go only then.
async fn run_to_end(
    store: &Store,
    (env, config): (&Env, &Config),
    exchange: Exchange,
    (answer, output): (AnswerStream, Output),
    claim: Option<Claim>,
) -> ApiResult<Message> {
    let live = output.kept();
    let delivered = relay::deliver(store, env, config, exchange, answer, output);
    let delivered = match &claim {
        Some(claim) => futures::join!(claim.watch(), delivered).1,
        None => delivered.await,
    };
    if let Some(live) = live {
        live.settle(delivered.is_ok());
    }
    drop(claim);
    delivered
}

/// `POST /session/{uuid}/message/stream`: the answer streamed as it is produced.
pub async fn stream(mut call: Call) -> ApiResult<Response> {
    let format = requested_format(&call)?;
    let (claim, busy) = claim(&call);
    let (exchange, agents) = match begin(&mut call, busy).await {
        Ok(Plan::Answer(ex, agents)) => (*ex, agents),
        Ok(Plan::LiveChat(message)) => {
            live_message_created(&call, &message);
            return live_chat_accepted(format, &message);
        }
        Ok(Plan::Limited(refusal)) => return rate_limited(format, &refusal),
        Err(err) => return Err(err),
    };
    let encoder = Encoder::new(format, "", 0);
    stream_answer(&call, exchange, agents, encoder, (claim, None)).await
}

/// `POST /session/{uuid}/message/non-stream`: the stored message once the answer is complete
/// (during live chat, the stored user message, with status 202).
pub async fn non_stream(mut call: Call) -> ApiResult<Response> {
    let (claim, busy) = claim(&call);
    let (exchange, agents) = match begin(&mut call, busy).await? {
        Plan::Answer(ex, agents) => (*ex, agents),
        Plan::LiveChat(message) => {
            live_message_created(&call, &message);
            return Ok(json_response(&message.to_json())?.with_status(202));
        }
        Plan::Limited(refusal) => return Err(refusal),
    };
    let message = collect_answer(&call, exchange, agents, claim).await?;
    json_response(&message.to_json())
}

/// A number in the query or a header: absent is `None`, anything but a count is a 400.
fn count(value: Option<String>, field: &str) -> ApiResult<Option<usize>> {
    value
        .map(|v| {
            let v = v.trim();
            if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ApiError::invalid(
                    field,
                    format!("`{field}` must be a whole number of 0 or more."),
                ));
            }
            // A count past what this platform's numbers hold is past any answer's end.
            Ok(v.parse::<usize>().unwrap_or(usize::MAX))
        })
        .transpose()
}

/// `GET /message/{uuid}/stream`: the answer from the start (or from where the reader left
/// it: after the event `Last-Event-ID` names in event-stream mode, after `offset` characters
/// of text in plain mode), then live until it ends. Any number of readers may follow one
/// answer. An answer the session's object no longer keeps is sent from its stored message.
pub async fn follow(call: Call) -> ApiResult<Response> {
    let format = requested_format(&call)?;
    let message = readable_message(&call).await?;
    let url = call.req.url()?;
    let query = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let offset = count(query("offset"), "offset")?.unwrap_or(0);
    let after = match call.req.headers().get("Last-Event-ID")? {
        Some(id) if !id.trim().is_empty() => count(Some(id), "Last-Event-ID")?,
        _ => count(query("last_event_id"), "last_event_id")?,
    };
    // Only the event-stream mode numbers its events; the others are sent from the start.
    let after = after.filter(|_| format == WireFormat::EventStream);
    let headers = stream_headers(format)?;
    headers.set("Content-Encoding", "identity")?;
    headers.set("X-Accel-Buffering", "no")?;
    headers.set("X-Message-Uuid", &message.uuid)?;
    // A visitor sees sources only while the chatbot shows them, also in what was kept.
    let citations = match &call.caller {
        Caller::Visitor(visitor) => visitor.chatbot.settings.show_citations,
        _ => true,
    };
    let path = format!(
        "/follow?message={}&format={}&after={}&offset={offset}&citations={}",
        message.uuid,
        format.name(),
        after.map(|a| a.to_string()).unwrap_or_default(),
        u8::from(citations),
    );
    let answer = chat_session::ask(&call.env, &message.session_uuid, &path).await?;
    let message = match answer.status_code() {
        404 => close_orphan(&call, message).await?,
        _ => message,
    };
    match answer.status_code() {
        200 => {
            let (_, body) = answer.into_parts();
            return Ok(Response::builder()
                .with_status(200)
                .with_headers(headers)
                .body(body));
        }
        // The reader has the ended answer's last event: a 204 tells an EventSource, which
        // reconnects after any stream that ends, that there is nothing more to come.
        204 => return Ok(Response::builder().with_status(204).empty()),
        _ => {}
    }
    // Replayed from the stored message, the text is one piece and the events are numbered
    // anew: an event id from the answer as it streamed cannot be resumed from exactly, and a
    // gap or a repeat would pass for the answer.
    if let Some(seen) = after.filter(|&a| a > 0) {
        return Err(ApiError::Conflict(format!(
            "Message {} ended a while ago and its events are no longer kept, so it cannot go \
             on after event {seen}; read it whole (without Last-Event-ID) or with \
             GET /api/v1/message/{}.",
            message.uuid, message.uuid
        )));
    }
    let mut encoder = Encoder::new(format, "", 0);
    let events = stored_answer_events(&call, &message);
    let mut skip = if format == WireFormat::Plain {
        offset
    } else {
        0
    };
    let first = after.map_or(0, |a| a + 1);
    let mut body = String::new();
    for (seq, event) in events.iter().enumerate().skip(first) {
        let text = encoder.encode_at(seq, event);
        let n = text.chars().count();
        if skip > 0 && matches!(event, AnswerEvent::Delta(_)) {
            body.extend(text.chars().skip(skip));
            skip = skip.saturating_sub(n);
        } else {
            body += &text;
        }
    }
    Ok(Response::builder()
        .with_status(200)
        .with_headers(headers)
        .fixed(body.into_bytes()))
}

/// `GET /session/{uuid}/events`: the session's event stream, through its object. `message`
/// (a stored message, in the visitor's view) for each live-chat message as it is stored (an
/// operator's reply, the announcements of live chat starting and ending), `answer
/// {message_uuid}` when an answer starts (follow it with `GET /message/{uuid}/stream`). It
/// stays open while the reader does; a reader that reconnects reads the session's messages to
/// catch up.
pub async fn session_events(call: Call) -> ApiResult<Response> {
    let session_uuid = call.uuid_param(0, "session")?;
    let found = match &call.caller {
        Caller::Visitor(visitor) => call
            .store
            .get_visitor_session(&visitor.chatbot.uuid, &visitor.visitor_id, &session_uuid)
            .await?
            .is_some(),
        _ => call
            .store
            .get_session(call.account()?, &session_uuid)
            .await?
            .is_some(),
    };
    if !found {
        return Err(ApiError::not_found("session"));
    }
    // The stream ends by the time the caller must show itself again: the configured lifetime,
    // or a visitor's token expiring sooner. The reader reconnects and is checked anew.
    // A key's stream ends when the key expires; one deleted meanwhile, or a visitor no longer
    // admitted, is closed at the next message (`Room::announce_message`).
    let lifetime_ms = call.config.session_events_lifetime.as_millis() as i64;
    let until_ms = time::now_ms().saturating_add(lifetime_ms);
    let (until_ms, holder) = match &call.caller {
        Caller::Visitor(v) => (
            until_ms.min(v.expires_at.saturating_mul(1000)),
            Holder::Visitor(v.origin.clone()),
        ),
        Caller::Account {
            key_uuid, policy, ..
        } => (
            policy
                .expires_at
                .as_deref()
                .and_then(time::seconds_of)
                .map_or(until_ms, |secs| until_ms.min(secs.saturating_mul(1000))),
            Holder::Key(key_uuid.clone()),
        ),
        _ => (until_ms, Holder::Other),
    };
    let path = format!("/listen?until={until_ms}&{}", holder.query());
    let answer = chat_session::ask(&call.env, &session_uuid, &path).await?;
    let headers = stream_headers(WireFormat::EventStream)?;
    headers.set("Content-Encoding", "identity")?;
    headers.set("X-Accel-Buffering", "no")?;
    let (_, body) = answer.into_parts();
    Ok(Response::builder()
        .with_status(200)
        .with_headers(headers)
        .body(body))
}

/// A stored message as the events its answer was sent as.
fn stored_answer_events(call: &Call, message: &Message) -> Vec<AnswerEvent> {
    let agent_uuid = message.meta["agent"]["uuid"].as_str().map(str::to_string);
    let show_citations = match &call.caller {
        Caller::Visitor(visitor) => visitor.chatbot.settings.show_citations,
        _ => true,
    };
    let mut events = vec![AnswerEvent::Start {
        message_uuid: message.uuid.clone(),
        session_uuid: message.session_uuid.clone(),
        agent_uuid,
    }];
    if !message.response.is_empty() {
        events.push(AnswerEvent::Delta(message.response.clone()));
    }
    // As the answer went live: a failure midway says so, and shows no sources.
    if message.finish_reason == FinishReason::Error {
        events.push(relay::failed_midway());
    } else if show_citations && message.cite_data.as_object().is_some_and(|c| !c.is_empty()) {
        events.push(AnswerEvent::Citations(message.cite_data.clone()));
    }
    events.push(AnswerEvent::End {
        message_uuid: message.uuid.clone(),
        finish_reason: message.finish_reason.as_str().to_string(),
        usage: message.meta["usage"].clone(),
        answered: message.answered,
    });
    events
}

/// `POST /message/{uuid}/stop`: ends an answer being produced, on purpose. It is stored with
/// what was said so far and `finish_reason: stopped`; the stored message is returned. 409 when
/// the answer is not being produced (it ended already).
pub async fn stop(call: Call) -> ApiResult<Response> {
    let message = readable_message(&call).await?;
    let refused = |m: &Message| {
        ApiError::Conflict(format!(
            "This answer is not being produced; it ended with finish_reason `{}`.",
            m.finish_reason.as_str()
        ))
    };
    if message.finish_reason != FinishReason::Streaming {
        return Err(refused(&message));
    }
    let path = format!("/stop?message={}", message.uuid);
    let answer = chat_session::ask(&call.env, &message.session_uuid, &path).await?;
    let message = match answer.status_code() {
        200 => return message_response(&call, &readable_message(&call).await?),
        404 => close_orphan(&call, message).await?,
        _ => readable_message(&call).await?,
    };
    Err(refused(&message))
}

/// A message still `streaming` that its session's object neither produces nor keeps: the
/// runtime producing it went away before its first piece (a restart, an eviction), so no
/// object will end it. It is closed as `interrupted` now rather than by the scheduled
/// handler's sweep, so that reading, stopping and deleting it agree.
async fn close_orphan(call: &Call, message: Message) -> ApiResult<Message> {
    if message.finish_reason != FinishReason::Streaming {
        return Ok(message);
    }
    call.store
        .interrupt_message(&message.uuid, &message.response, &time::now())
        .await?;
    readable_message(call).await
}

/// The session object's own requests from the Worker: `/follow` and `/stop` (see `follow`
/// and `stop`).
pub async fn in_session(mut req: worker::Request, room: &std::rc::Rc<Room>) -> ApiResult<Response> {
    let url = req.url()?;
    let query = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    match req.path().as_str() {
        "/listen" => {
            let until_ms = query("until")
                .parse::<i64>()
                .map_err(|_| ApiError::internal("a session event stream without its end"))?;
            let holder = Holder::from_query(query);
            let headers = stream_headers(WireFormat::EventStream)?;
            return Ok(Response::builder()
                .with_status(200)
                .with_headers(headers)
                .stream(room.listen(until_ms, holder)?));
        }
        // `chat_session::start_ahead`: the object is running, and that was the point.
        "/start" => return Ok(Response::builder().with_status(204).empty()),
        "/notify" => {
            let told: Told = req.json().await?;
            room.announce_message(&told.message, |origin| {
                told.admission
                    .as_ref()
                    .is_some_and(|(visibility, allowed)| {
                        admits(visibility, allowed, origin).is_ok()
                    })
            })
            .await;
            return Ok(Response::builder().with_status(204).empty());
        }
        "/forget" => {
            room.forget()?;
            return Ok(Response::builder().with_status(204).empty());
        }
        _ => {}
    }
    let message = query("message");
    if req.path() == "/stop" {
        let status = match room.stop(&message).await {
            Some(true) => 200,
            Some(false) => 409,
            None => 404,
        };
        return Ok(Response::builder().with_status(status).empty());
    }
    let format = WireFormat::requested(Some(&query("format")), None).unwrap_or(WireFormat::Plain);
    let after = query("after").parse().ok();
    let offset = query("offset").parse().unwrap_or(0);
    let citations = query("citations") != "0";
    match room.follow(
        &message,
        Encoder::new(format, "", 0),
        after,
        offset,
        citations,
    )? {
        Some(Followed::Stream(readable)) => {
            Ok(Response::builder().with_status(200).stream(readable))
        }
        Some(Followed::Over) => Ok(Response::builder().with_status(204).empty()),
        None => Ok(Response::builder().with_status(404).empty()),
    }
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
    not_answering(&found)?;
    call.store.delete_messages(&[uuid]).await?;
    success_response()
}

/// A message whose answer is still being written cannot be deleted: the answer's end would
/// store it again. It is stopped first (`POST /message/{uuid}/stop`), or waited for.
fn not_answering(messages: &[Message]) -> ApiResult<()> {
    match messages
        .iter()
        .find(|m| m.finish_reason == FinishReason::Streaming)
    {
        Some(m) => Err(ApiError::Conflict(format!(
            "Message {} is still being answered; stop it (POST /message/{}/stop) or wait for its end before deleting it.",
            m.uuid, m.uuid
        ))),
        None => Ok(()),
    }
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
    not_answering(&found)?;
    call.store.delete_messages(&uuids).await?;
    success_response()
}

pub async fn models(call: Call) -> ApiResult<Response> {
    json_response(&providers::catalogue(&call.config))
}
