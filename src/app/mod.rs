//! One request's path through the service: route, authenticate, dispatch to the handler.

pub mod http;
pub mod widget;

use self::widget::Visitor;
use crate::handlers;
use crate::platform::chat_session::{self, Room};
use crate::platform::config;
use crate::platform::log::RequestLog;
use crate::platform::rate_limit::{admit_request, names as limit_names, Limit, WindowDecision};
use crate::storage::{KeyOwner, Owner, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::routes::{
    admits_visitors, is_openai_path, match_route, route_pattern, visitor_route, Access, Endpoint,
    RouteMatch,
};
use edgechat_core::api::validate::canonical_uuid;
use edgechat_core::config::Config;
use edgechat_core::domain::api_key::{
    bearer_token, constant_time_eq, hash_key, ip_allowed, missing_scope, scopes_grant, KeyPolicy,
    Scope, LAST_USED_RESOLUTION_SECS,
};
use edgechat_core::domain::widget::TOKEN_PREFIX as VISITOR_TOKEN_PREFIX;
use edgechat_core::time;
use serde_json::{Map, Value};
use std::rc::Rc;
use worker::{Context, Env, Request, Response};

/// Who is calling.
#[derive(Clone, Debug, PartialEq)]
pub enum Caller {
    Anonymous,
    /// The operator, holding `ADMIN_TOKEN`: may manage keys of every account, nothing else.
    Admin,
    /// An account key, checked: known, not expired, from an allowed address, with a scope
    /// that opens the route, within its request rate.
    Account {
        account_uuid: String,
        key_uuid: String,
        /// Its scopes, and the limits a key it makes must stay within.
        policy: KeyPolicy,
    },
    /// A site visitor with a token from `POST /widget/{uuid}/token`; only the routes in
    /// `routes::VISITOR_ENDPOINTS` admit one.
    Visitor(Box<Visitor>),
}

/// Everything a handler needs for one request.
pub struct Call {
    pub req: Request,
    pub env: Env,
    pub ctx: Context,
    /// The configuration, read once for this request.
    pub config: Config,
    pub store: Store,
    pub caller: Caller,
    pub params: Vec<String>,
    /// This request's log line; a create call names the record it made.
    pub log: Rc<RequestLog>,
    /// Set when the request runs in its session's object (`platform::chat_session`).
    pub room: Option<Rc<Room>>,
    /// A message's turn read while its caller was checked (`handlers::messages::EarlyTurn`).
    pub early_turn: Option<handlers::messages::EarlyTurn>,
    /// The caller's API key request, when a message's turn counts it (`Call::count_key`).
    key_count: Rc<std::cell::Cell<Option<KeyCount>>>,
}

impl Call {
    /// Counts the caller's API key request against its limit, when that was left to the
    /// handler: a message's turn asks it beside the chatbot's own limit, in one round trip
    /// instead of two. Whatever the handler leaves uncounted is counted before its answer
    /// goes out (`serve`).
    pub async fn count_key(&self) -> ApiResult<()> {
        match self.key_count.take() {
            Some(count) => count.count().await,
            None => Ok(()),
        }
    }

    /// The caller's account; only `Access::Key` routes reach handlers that ask.
    pub fn account(&self) -> ApiResult<&str> {
        match &self.caller {
            Caller::Account { account_uuid, .. } => Ok(account_uuid),
            _ => Err(ApiError::Unauthorized(
                "This endpoint needs an account API key.".into(),
            )),
        }
    }

    /// Whether the caller may change the configuration (`Scope::Manage` or more), so sees
    /// its credentials whole: a read-only key sees them hidden.
    pub fn may_configure(&self) -> bool {
        matches!(&self.caller, Caller::Account { policy, .. }
            if scopes_grant(&policy.scopes, Scope::Manage, "POST"))
    }

    /// Whose records the handler may read: the caller's account.
    pub fn owner(&self) -> ApiResult<Owner<'_>> {
        Ok(Owner::Account(self.account()?))
    }

    /// The error for a read through `owner` that found nothing: the `what` is missing (404),
    /// exactly as when another account owns it.
    pub async fn missing(&self, what: &str) -> ApiError {
        ApiError::not_found(what)
    }

    /// The path's uuid, canonical. A malformed one names nothing, so it is a 404 like a
    /// missing one.
    pub fn uuid_param(&self, index: usize, what: &str) -> ApiResult<String> {
        self.params
            .get(index)
            .and_then(|p| canonical_uuid(p))
            .ok_or_else(|| ApiError::not_found(what))
    }

    pub async fn json_body(&mut self) -> ApiResult<Map<String, Value>> {
        http::read_json_object(&mut self.req).await
    }
}

pub async fn handle(req: Request, env: Env, ctx: Context) -> Response {
    handle_in(req, env, ctx, None).await
}

/// A request reaching a session's object: one of its own (`/follow`, `/stop`, from the
/// Worker) or a message request the Worker handed over, served here as it would be there.
pub async fn handle_in_session(req: Request, env: Env, ctx: Context, room: Rc<Room>) -> Response {
    match req.path().as_str() {
        "/follow" | "/stop" | "/listen" | "/notify" | "/start" | "/forget" => {
            handlers::messages::in_session(req, &room)
                .await
                .unwrap_or_else(|err| http::error_response(&err))
        }
        _ => handle_in(req, env, ctx, Some(room)).await,
    }
}

async fn handle_in(req: Request, env: Env, ctx: Context, room: Option<Rc<Room>>) -> Response {
    let method = req.method().to_string();
    let path = req.path();
    let log = Rc::new(RequestLog::start(&method));
    let response = match serve(req, env, ctx, &log, &method, &path, room).await {
        Ok(response) => response,
        Err(err) => failure(&log, err, &path),
    };
    log.finish(response.status_code(), &path);
    response
}

/// The error's response, logged: in OpenAI's shape on the OpenAI-compatible paths, whose
/// clients read errors that way, else in the API's own.
fn failure(log: &RequestLog, err: ApiError, path: &str) -> Response {
    if is_openai_path(path) {
        let body = err.openai_body();
        log.fail_with_body(err, body)
    } else {
        log.fail(err)
    }
}

async fn serve(
    mut req: Request,
    env: Env,
    ctx: Context,
    log: &Rc<RequestLog>,
    method: &str,
    path: &str,
    room: Option<Rc<Room>>,
) -> ApiResult<Response> {
    let config = config::read(&env);
    if method == "OPTIONS" {
        let requested = req.headers().get("Access-Control-Request-Method")?;
        if let Some((endpoint, params)) = requested.and_then(|m| visitor_route(&m, path)) {
            return widget::preflight(&req, &env, endpoint, &params).await;
        }
    }
    let (endpoint, access, params) = match match_route(method, path) {
        RouteMatch::Found {
            endpoint,
            access,
            params,
        } => (endpoint, access, params),
        RouteMatch::MethodNotAllowed(allow) => return Err(ApiError::MethodNotAllowed { allow }),
        RouteMatch::NotFound => {
            return Err(ApiError::NotFound(
                "There is no endpoint at this path.".into(),
            ))
        }
    };
    if let Some(pattern) = route_pattern(method, endpoint) {
        log.route(format!("{endpoint:?}"), pattern);
    }
    if let Some(uuid) = params.first().and_then(|p| canonical_uuid(p)) {
        log.record(&uuid);
        // A message is answered by its session's object, which runs the turn from here on
        // (authentication included) and produces the answer whether or not the caller stays.
        if room.is_none()
            && matches!(
                endpoint,
                Endpoint::MessageStream | Endpoint::MessageNonStream
            )
        {
            return chat_session::forward(&env, &uuid, req).await;
        }
    }
    // A chat completion is a turn like a message: its session's object runs it (see
    // `openai_compat::forward`).
    if room.is_none() && matches!(endpoint, Endpoint::OpenAiChatCompletions) {
        return handlers::openai_compat::forward(&env, req).await;
    }
    // A site visitor's page on another origin may read what a visitor route answers, errors
    // included, when its token was minted for that site.
    let cors = if admits_visitors(endpoint) {
        let header = req.headers().get("Authorization")?;
        widget::cors_grant(&req, &config, bearer_token(header.as_deref()))
    } else {
        None
    };
    // Set once an API key is known: its request count, sent back on every answer.
    let key_window: KeyWindow = Rc::default();
    // A message's turn counts the key itself (`Call::count_key`); what it leaves is counted
    // here, after the handler.
    let key_count = Rc::new(std::cell::Cell::new(None::<KeyCount>));
    let result = async {
        let store = Store::new(&env)?;
        // A message's turn in its session's object reads the key and what the turn needs
        // (its question's search included) in one D1 round trip, instead of one for the key
        // and more after its check.
        let mut early_turn = match (&room, endpoint) {
            (Some(_), Endpoint::MessageStream | Endpoint::MessageNonStream) => {
                Some(handlers::messages::EarlyTurn::read_body(&mut req, &params).await)
            }
            _ => None,
        };
        let key_hash = account_key_hash(&req, &config)?;
        let prefetched = match (&early_turn, &key_hash) {
            (Some(turn), Some(hash)) => turn.prefetch(&store, &config, hash).await?,
            _ => None,
        };
        let (known_key, context) = prefetched.unzip();
        let counted_by_turn = early_turn.is_some();
        let (caller, uncounted) = admit_caller(
            &req,
            (&env, &ctx),
            (&config, &store),
            log,
            (method, endpoint, access),
            (&key_window, known_key, counted_by_turn),
        )
        .await?;
        key_count.set(uncounted);
        if let (Some(turn), Some(context), Caller::Account { .. }) =
            (early_turn.as_mut(), context, &caller)
        {
            turn.context = Some(context);
        }
        let call = Call {
            req,
            env,
            ctx,
            config,
            store,
            caller,
            params,
            log: Rc::clone(log),
            room,
            early_turn,
            key_count: Rc::clone(&key_count),
        };
        let answer = dispatch(endpoint, call).await;
        match key_count.take() {
            // Only reads ran before the turn's end or failure left the key uncounted, so a
            // refused key answers as it would have before them.
            Some(count) => count.count().await.and(answer),
            None => answer,
        }
    }
    .await;
    let result = match key_window.get() {
        Some(window) => Ok(with_rate_limit_headers(
            result.unwrap_or_else(|err| failure(log, err, path)),
            window,
        )),
        None => result,
    };
    match cors {
        Some(origin) => Ok(widget::allow_origin(
            result.unwrap_or_else(|err| failure(log, err, path)),
            &origin,
        )),
        None => result,
    }
}

/// `X-RateLimit-Limit`, `-Remaining` and `-Reset` (seconds until the key's window starts over).
fn with_rate_limit_headers(mut response: Response, window: WindowDecision) -> Response {
    let headers = response.headers_mut();
    // Numbers are always valid header values.
    let _ = headers.set("X-RateLimit-Limit", &window.limit.to_string());
    let _ = headers.set("X-RateLimit-Remaining", &window.remaining.to_string());
    let _ = headers.set("X-RateLimit-Reset", &window.reset_secs.to_string());
    response
}

/// The caller, checked (`authenticate`), and an API key counted against its request rate; a
/// key's window goes to `key_window` for the response's headers. With `counted_later`, the
/// key is not counted here but returned, for the handler to count (`Call::count_key`).
async fn admit_caller(
    req: &Request,
    (env, ctx): (&Env, &Context),
    (config, store): (&Config, &Store),
    log: &RequestLog,
    (method, endpoint, access): (&str, Endpoint, Access),
    (key_window, known_key, counted_later): (&KeyWindow, Option<Option<KeyOwner>>, bool),
) -> ApiResult<(Caller, Option<KeyCount>)> {
    let (caller, key_use) =
        authenticate(req, (config, store), (method, endpoint, access), known_key).await?;
    match &caller {
        Caller::Account { account_uuid, .. } => log.account(account_uuid),
        Caller::Visitor(visitor) => log.account(&visitor.account_uuid),
        _ => {}
    }
    let Some(key_use) = key_use else {
        return Ok((caller, None));
    };
    let count = KeyCount {
        env: env.clone(),
        ctx: same_context(ctx),
        key_use,
        window: Rc::clone(key_window),
    };
    if counted_later {
        return Ok((caller, Some(count)));
    }
    count.count().await?;
    Ok((caller, None))
}

/// A second handle on the request's context (the type offers no `Clone`), for work that
/// outlives the borrow of the first.
fn same_context(ctx: &Context) -> Context {
    use wasm_bindgen::JsCast;
    let raw: &wasm_bindgen::JsValue = AsRef::<worker::worker_sys::Context>::as_ref(ctx).as_ref();
    Context::new(raw.clone().unchecked_into())
}

/// Where a key's count is kept for the response's `X-RateLimit-*` headers, once it is made.
type KeyWindow = Rc<std::cell::Cell<Option<WindowDecision>>>;

/// One request made with an API key, to be counted against the key's limit.
struct KeyCount {
    env: Env,
    ctx: Context,
    key_use: KeyUse,
    window: KeyWindow,
}

impl KeyCount {
    /// Counts the request: a `RateLimited` error when the key made all its requests of the
    /// window, else the key is marked used (in the background) when its mark is stale.
    async fn count(self) -> ApiResult<()> {
        let KeyCount {
            env,
            ctx,
            key_use,
            window: key_window,
        } = self;
        let window = admit_request(
            &env,
            &limit_names::api_key(&key_use.key_uuid),
            key_use.limit,
        )
        .await?;
        key_window.set(Some(window));
        if !window.admitted {
            return Err(ApiError::RateLimited {
                message: format!(
                "This API key made its {} requests allowed in {} seconds; try again in {} seconds.",
                key_use.limit.count, key_use.limit.window_secs, window.reset_secs
            ),
                retry_after_secs: window.reset_secs,
            });
        }
        if key_use.touch {
            let touch_env = env.clone();
            ctx.wait_until(async move {
                let now = time::now();
                let stale_before = time::seconds_ago(LAST_USED_RESOLUTION_SECS);
                let result = async {
                    Store::new(&touch_env)?
                        .touch_key(&key_use.key_uuid, &now, &stale_before)
                        .await
                }
                .await;
                if let Err(err) = result {
                    crate::platform::log::background_failure(
                        "marking a key used",
                        &key_use.key_uuid,
                        &err,
                    );
                }
            });
        }
        Ok(())
    }
}

/// The hash of the account API key the request holds, if it holds one: not a visitor's token,
/// not the admin token (`authenticate` tells them apart the same way).
fn account_key_hash(req: &Request, config: &Config) -> ApiResult<Option<String>> {
    let header = req.headers().get("Authorization")?;
    let Some(token) = bearer_token(header.as_deref()) else {
        return Ok(None);
    };
    let admin = config
        .admin_token
        .as_deref()
        .is_some_and(|admin| constant_time_eq(admin.as_bytes(), token.as_bytes()));
    Ok((!admin && !token.starts_with(VISITOR_TOKEN_PREFIX)).then(|| hash_key(token)))
}

/// What the request does with the key it holds: count against this limit, and mark the key
/// used when `touch` (its `last_used_at` is older than `LAST_USED_RESOLUTION_SECS`).
struct KeyUse {
    key_uuid: String,
    limit: Limit,
    touch: bool,
}

/// The caller the request's credentials name. `known_key` is the key's row when it was read
/// already (beside a turn's reads, `handlers::messages::EarlyTurn`), found or not.
async fn authenticate(
    req: &Request,
    (config, store): (&Config, &Store),
    (method, endpoint, access): (&str, Endpoint, Access),
    known_key: Option<Option<KeyOwner>>,
) -> ApiResult<(Caller, Option<KeyUse>)> {
    let Access::Key(needed) = access else {
        return Ok((Caller::Anonymous, None));
    };
    let header = req.headers().get("Authorization")?;
    let token = bearer_token(header.as_deref()).ok_or_else(|| {
        ApiError::Unauthorized("Send an API key as `Authorization: Bearer <key>`.".into())
    })?;
    if token.starts_with(VISITOR_TOKEN_PREFIX) {
        let visitor = widget::authenticate(req, config, store, token, endpoint).await?;
        return Ok((visitor, None));
    }
    if config
        .admin_token
        .as_deref()
        .is_some_and(|admin| constant_time_eq(admin.as_bytes(), token.as_bytes()))
    {
        return match needed {
            Scope::Admin => Ok((Caller::Admin, None)),
            // A valid credential that this endpoint does not take: forbidden, not unknown.
            _ => Err(ApiError::Forbidden(
                "The admin token only manages API keys; use an account API key for this endpoint."
                    .into(),
            )),
        };
    }
    let hash = hash_key(token);
    let found = match known_key {
        Some(found) => found,
        None => store.key_owner(&hash).await?,
    };
    let owner = match found {
        // The lookup is by hash; comparing again in constant time keeps the check itself
        // independent of how the index behaves.
        Some(owner) if constant_time_eq(owner.key_hash.as_bytes(), hash.as_bytes()) => owner,
        _ => return Err(invalid_key()),
    };
    let key = owner.key;
    let now = time::now();
    if key.policy.expired(&now) {
        return Err(ApiError::Unauthorized(
            "This API key has expired; create a new one.".into(),
        ));
    }
    let client = req.headers().get("CF-Connecting-IP")?;
    if !ip_allowed(&key.policy.allowed_ips, client.as_deref()) {
        return Err(ApiError::Forbidden(
            "This API key may not be used from this address.".into(),
        ));
    }
    if !scopes_grant(&key.policy.scopes, needed, method) {
        return Err(missing_scope(&key.policy.scopes, needed, method));
    }
    let limit = match key.policy.rate_limit {
        // Validated into `KEY_RATE_LIMIT_*_RANGE` when the key was created.
        Some((count, window)) => Limit {
            count: count.clamp(0, i64::from(u32::MAX)) as u32,
            window_secs: window.clamp(0, i64::from(u32::MAX)) as u32,
        },
        None => config.api_key_rate_limit,
    };
    let stale_before = time::seconds_ago(LAST_USED_RESOLUTION_SECS);
    let touch = key
        .last_used_at
        .as_deref()
        .is_none_or(|at| at < stale_before.as_str());
    let key_use = KeyUse {
        key_uuid: key.uuid.clone(),
        limit,
        touch,
    };
    Ok((
        Caller::Account {
            account_uuid: key.account_uuid,
            key_uuid: key.uuid,
            policy: key.policy,
        },
        Some(key_use),
    ))
}

pub(crate) fn invalid_key() -> ApiError {
    ApiError::Unauthorized("The API key is not valid (it may have been deleted).".into())
}

async fn dispatch(endpoint: Endpoint, call: Call) -> ApiResult<Response> {
    use handlers::*;
    match endpoint {
        Endpoint::Health => health::get(call).await,
        Endpoint::OpenApi => openapi::get(call).await,
        Endpoint::ApiKeyCreate => api_keys::create(call).await,
        Endpoint::ApiKeyList => api_keys::list(call).await,
        Endpoint::ApiKeyDelete => api_keys::delete(call).await,
        Endpoint::ApiKeyCurrent => api_keys::current(call).await,
        Endpoint::ChatbotCreate => chatbots::create(call).await,
        Endpoint::ChatbotList => chatbots::list(call).await,
        Endpoint::ChatbotGet => chatbots::get(call).await,
        Endpoint::ChatbotUpdate => chatbots::update(call).await,
        Endpoint::ChatbotDelete => chatbots::delete(call).await,
        Endpoint::AgentList => agents::list(call).await,
        Endpoint::AgentCreate => agents::create(call).await,
        Endpoint::AgentUpdate => agents::update(call).await,
        Endpoint::AgentDelete => agents::delete(call).await,
        Endpoint::SourceCreateQa => data_sources::create_qa(call).await,
        Endpoint::SourceCreateUrl => data_sources::create_url(call).await,
        Endpoint::SourceUpload => data_sources::upload(call).await,
        Endpoint::SourceList => data_sources::list(call).await,
        Endpoint::SourceGet => data_sources::get(call).await,
        Endpoint::SourceRetitle => data_sources::retitle(call).await,
        Endpoint::SourceDelete => data_sources::delete(call).await,
        Endpoint::SourceDeleteMany => data_sources::delete_many(call).await,
        Endpoint::SourceRescrape => data_sources::rescrape(call).await,
        Endpoint::CrawlCreate => crawls::create(call).await,
        Endpoint::CrawlList => crawls::list(call).await,
        Endpoint::CrawlGet => crawls::get(call).await,
        Endpoint::CrawlSync => crawls::sync(call).await,
        Endpoint::CrawlUpdate => crawls::update(call).await,
        Endpoint::CrawlDelete => crawls::delete(call).await,
        Endpoint::SourceTagCreate => source_tags::create(call).await,
        Endpoint::SourceTagList => source_tags::list(call).await,
        Endpoint::SourceTagUpdate => source_tags::update(call).await,
        Endpoint::SourceTagDelete => source_tags::delete(call).await,
        Endpoint::Search => search::search(call).await,
        Endpoint::SessionCreate if is_visitor(&call) => {
            handlers::widget::create_session(call).await
        }
        Endpoint::SessionCreate => sessions::create(call).await,
        Endpoint::SessionGet => sessions::get(call).await,
        Endpoint::SessionList => sessions::list(call).await,
        Endpoint::SessionDelete => sessions::delete(call).await,
        Endpoint::SessionMessages if is_visitor(&call) => {
            handlers::widget::session_messages(call).await
        }
        Endpoint::SessionMessages => sessions::messages(call).await,
        Endpoint::MessageStream => messages::stream(call).await,
        Endpoint::MessageNonStream => messages::non_stream(call).await,
        Endpoint::MessageDelete => messages::delete(call).await,
        Endpoint::MessageDeleteMany => messages::delete_many(call).await,
        Endpoint::ModelList => messages::models(call).await,
        Endpoint::ToolFunctionCreate => tool_functions::create(call).await,
        Endpoint::ToolFunctionList => tool_functions::list(call).await,
        Endpoint::ToolFunctionUpdate => tool_functions::update(call).await,
        Endpoint::ToolFunctionDelete => tool_functions::delete(call).await,
        Endpoint::LiveChatStart => live_chat::start(call).await,
        Endpoint::LiveChatMessage => live_chat::operator_message(call).await,
        Endpoint::LiveChatEnd => live_chat::end(call).await,
        Endpoint::WidgetToken => handlers::widget::token(call).await,
        Endpoint::MessageGet => messages::get(call).await,
        Endpoint::MessageFollow => messages::follow(call).await,
        Endpoint::MessageStop => messages::stop(call).await,
        Endpoint::SessionEvents => messages::session_events(call).await,
        Endpoint::FeedbackCreate => feedback::create(call).await,
        Endpoint::FeedbackList => feedback::list(call).await,
        Endpoint::SessionTranscript => insights::transcript_text(call).await,
        Endpoint::WebhookCreate => webhooks::create(call).await,
        Endpoint::WebhookList => webhooks::list(call).await,
        Endpoint::WebhookUpdate => webhooks::update(call).await,
        Endpoint::WebhookRotateSecret => webhooks::rotate_secret(call).await,
        Endpoint::WebhookDelete => webhooks::delete(call).await,
        Endpoint::WebhookDeliveries => webhooks::deliveries(call).await,
        Endpoint::WebhookTest => webhooks::test(call).await,
        Endpoint::UnansweredQuestions => insights::unanswered(call).await,
        Endpoint::Analytics => insights::analytics(call).await,
        Endpoint::Export => insights::export(call).await,
        Endpoint::OpenAiChatCompletions => openai_compat::chat_completions(call).await,
        Endpoint::OpenAiModels => openai_compat::models(call).await,
        Endpoint::OpenAiModel => openai_compat::model(call).await,
    }
}

fn is_visitor(call: &Call) -> bool {
    matches!(call.caller, Caller::Visitor(_))
}
