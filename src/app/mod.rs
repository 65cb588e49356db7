//! One request's path through the service: route, authenticate, dispatch to the handler.

pub mod http;
pub mod widget;

use self::widget::Visitor;
use crate::handlers;
use crate::platform::config;
use crate::platform::log::RequestLog;
use crate::storage::{Owner, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::routes::{
    admits_visitors, match_route, route_pattern, visitor_route, Access, Endpoint, RouteMatch,
};
use edgechat_core::api::validate::canonical_uuid;
use edgechat_core::config::Config;
use edgechat_core::domain::api_key::{bearer_token, constant_time_eq, hash_key};
use edgechat_core::domain::widget::TOKEN_PREFIX as VISITOR_TOKEN_PREFIX;
use serde_json::{Map, Value};
use std::rc::Rc;
use worker::{Context, Env, Request, Response};

/// Who is calling.
#[derive(Clone, Debug, PartialEq)]
pub enum Caller {
    Anonymous,
    /// The operator, holding `ADMIN_TOKEN`: may manage keys of every account, nothing else.
    Admin,
    Account {
        account_uuid: String,
        key_uuid: String,
    },
    /// An account key not yet looked up (`Access::AccountInRead`): the handler's first read
    /// checks it.
    UncheckedKey {
        key_hash: String,
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
}

impl Call {
    /// The caller's account; only `Access::Account` routes reach handlers that ask.
    pub fn account(&self) -> ApiResult<&str> {
        match &self.caller {
            Caller::Account { account_uuid, .. } => Ok(account_uuid),
            _ => Err(ApiError::Unauthorized(
                "This endpoint needs an account API key.".into(),
            )),
        }
    }

    /// The path's uuid, canonical. A malformed one names nothing, so it is a 404 like a
    /// missing one.
    /// Whose records the handler may read: the account, or the key that names it.
    pub fn owner(&self) -> ApiResult<Owner<'_>> {
        match &self.caller {
            Caller::Account { account_uuid, .. } => Ok(Owner::Account(account_uuid)),
            Caller::UncheckedKey { key_hash } => Ok(Owner::KeyHash(key_hash)),
            _ => Err(ApiError::Unauthorized(
                "This endpoint needs an account API key.".into(),
            )),
        }
    }

    /// The error for a read through `owner` that found nothing: with a key that names no
    /// account it is the key that is wrong (401), else the `what` is missing (404).
    pub async fn missing(&self, what: &str) -> ApiError {
        if let Caller::UncheckedKey { key_hash } = &self.caller {
            match self.store.key_owner(key_hash).await {
                Ok(Some(_)) => {}
                Ok(None) => return invalid_key(),
                Err(err) => return err,
            }
        }
        ApiError::not_found(what)
    }

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
    let method = req.method().to_string();
    let path = req.path();
    let log = Rc::new(RequestLog::start(&method));
    let response = match serve(req, env, ctx, &log, &method, &path).await {
        Ok(response) => response,
        Err(err) => log.fail(err),
    };
    log.finish(response.status_code(), &path);
    response
}

async fn serve(
    req: Request,
    env: Env,
    ctx: Context,
    log: &Rc<RequestLog>,
    method: &str,
    path: &str,
) -> ApiResult<Response> {
    let config = config::read(&env);
    if method == "OPTIONS" {
        let requested = req.headers().get("Access-Control-Request-Method")?;
        if let Some((endpoint, params)) = requested.and_then(|m| visitor_route(&m, &path)) {
            return widget::preflight(&req, &env, endpoint, &params).await;
        }
    }
    let (endpoint, access, params) = match match_route(&method, &path) {
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
    if let Some(pattern) = route_pattern(&method, endpoint) {
        log.route(format!("{endpoint:?}"), pattern);
    }
    if let Some(uuid) = params.first().and_then(|p| canonical_uuid(p)) {
        log.record(&uuid);
    }
    // A site visitor's page on another origin may read what a visitor route answers, errors
    // included, when its token was minted for that site.
    let cors = if admits_visitors(endpoint) {
        let header = req.headers().get("Authorization")?;
        widget::cors_grant(&req, &config, bearer_token(header.as_deref()))
    } else {
        None
    };
    let result = async {
        let store = Store::new(&env)?;
        let caller = authenticate(&req, &config, &store, endpoint, access).await?;
        match &caller {
            Caller::Account { account_uuid, .. } => log.account(account_uuid),
            Caller::Visitor(visitor) => log.account(&visitor.account_uuid),
            _ => {}
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
        };
        dispatch(endpoint, call).await
    }
    .await;
    match cors {
        Some(origin) => Ok(widget::allow_origin(
            result.unwrap_or_else(|err| log.fail(err)),
            &origin,
        )),
        None => result,
    }
}

async fn authenticate(
    req: &Request,
    config: &Config,
    store: &Store,
    endpoint: Endpoint,
    access: Access,
) -> ApiResult<Caller> {
    if access == Access::Public {
        return Ok(Caller::Anonymous);
    }
    let header = req.headers().get("Authorization")?;
    let token = bearer_token(header.as_deref()).ok_or_else(|| {
        ApiError::Unauthorized("Send an API key as `Authorization: Bearer <key>`.".into())
    })?;
    if token.starts_with(VISITOR_TOKEN_PREFIX) {
        return widget::authenticate(req, config, store, token, endpoint).await;
    }
    if config
        .admin_token
        .as_deref()
        .is_some_and(|admin| constant_time_eq(admin.as_bytes(), token.as_bytes()))
    {
        return match access {
            Access::AdminOrAccount => Ok(Caller::Admin),
            _ => Err(ApiError::Unauthorized(
                "The admin token only manages API keys; use an account API key for this endpoint."
                    .into(),
            )),
        };
    }
    let hash = hash_key(token);
    if access == Access::AccountInRead {
        return Ok(Caller::UncheckedKey { key_hash: hash });
    }
    match store.key_owner(&hash).await? {
        // The lookup is by hash; comparing again in constant time keeps the check itself
        // independent of how the index behaves.
        Some(owner) if constant_time_eq(owner.key_hash.as_bytes(), hash.as_bytes()) => {
            Ok(Caller::Account {
                account_uuid: owner.account_uuid,
                key_uuid: owner.key_uuid,
            })
        }
        _ => Err(invalid_key()),
    }
}

fn invalid_key() -> ApiError {
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
    }
}

fn is_visitor(call: &Call) -> bool {
    matches!(call.caller, Caller::Visitor(_))
}
