//! Site visitors at the Worker: the token secret, checking a visitor's token on each request,
//! and the CORS answers that let a browser on an admitted site call the visitor endpoints.
//! The rules themselves are pure, in `domain::widget`.

use crate::app::Caller;
use crate::storage::Store;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::routes::{named_by, takes_visitor_tokens, Endpoint, Named};
use edgechat_core::api::validate::canonical_uuid;
use edgechat_core::config::Config;
use edgechat_core::domain::chatbot::{Chatbot, Visibility};
use edgechat_core::domain::widget::{admits, normalize_origin, verify, TokenError, VisitorClaims};
use worker::{Env, Headers, Request, Response};

/// A site visitor, admitted by the chatbot its token names.
#[derive(Clone, Debug, PartialEq)]
pub struct Visitor {
    pub chatbot: Chatbot,
    /// The chatbot owner's account: a visitor's chat turn reads as the owner would, once the
    /// session is known to be the visitor's own.
    pub account_uuid: String,
    pub visitor_id: String,
    /// The site the token was minted for.
    pub origin: Option<String>,
    /// When the token stops admitting the visitor, in Unix seconds.
    pub expires_at: i64,
}

/// Headers a visitor's page may read on a cross-origin answer.
const EXPOSED_HEADERS: &str = "X-Message-Uuid, X-Live-Chat, Retry-After";

/// The key visitor tokens are signed with: the `WIDGET_TOKEN_SECRET` secret. Without it (or
/// with one too short to be safe, which the configuration reports) no visitor is admitted;
/// that is the operator's mistake, so it is a 500 with the cause logged.
pub fn token_secret(config: &Config) -> ApiResult<Vec<u8>> {
    let value = config.widget_token_secret.as_deref().ok_or_else(|| {
        ApiError::internal(
            "WIDGET_TOKEN_SECRET is not set (or too short), so site visitors cannot be admitted",
        )
    })?;
    Ok(value.as_bytes().to_vec())
}

/// The secret `token` is signed with: the current one, or, while it is set, the secret before
/// the last rotation when only that one's signature holds (see docs/operations.md).
pub fn signing_secret(config: &Config, token: &str, now: i64) -> ApiResult<Vec<u8>> {
    let current = token_secret(config)?;
    let forged = |secret: &[u8]| matches!(verify(token, secret, now), Err(TokenError::Invalid));
    Ok(match config.widget_token_previous_secret.as_deref() {
        Some(previous) if forged(&current) && !forged(previous.as_bytes()) => {
            previous.as_bytes().to_vec()
        }
        _ => current,
    })
}

/// Checks a visitor token against the secret it is signed with (see `signing_secret`).
pub fn verify_token(
    config: &Config,
    token: &str,
    now: i64,
) -> ApiResult<Result<VisitorClaims, TokenError>> {
    Ok(verify(token, &signing_secret(config, token, now)?, now))
}

pub fn now_secs() -> i64 {
    edgechat_core::time::now_ms().div_euclid(1000)
}

/// The Worker's own origin, as a browser writes it in `Origin`.
pub fn own_origin(req: &Request) -> ApiResult<String> {
    Ok(req.url()?.origin().ascii_serialization())
}

/// The calling page's origin when it is another site (not this Worker, not `null`).
pub fn foreign_origin(req: &Request) -> ApiResult<Option<String>> {
    let Some(header) = req.headers().get("Origin")? else {
        return Ok(None);
    };
    let header = header.trim();
    if header == "null" || header == own_origin(req)? {
        return Ok(None);
    }
    Ok(normalize_origin(header))
}

/// Checks a visitor token for `endpoint`. A genuine token on an endpoint that visitors may
/// not use is 403: the caller is known, the endpoint is not theirs.
pub async fn authenticate(
    req: &Request,
    config: &Config,
    store: &Store,
    token: &str,
    endpoint: Endpoint,
) -> ApiResult<Caller> {
    let claims = verify_token(config, token, now_secs())??;
    if !takes_visitor_tokens(endpoint) {
        return Err(ApiError::Forbidden(
            "A visitor token only opens its chatbot's chat (new sessions, and messages in the \
             visitor's own sessions); this endpoint needs an account API key."
                .into(),
        ));
    }
    let (chatbot, account_uuid) = store
        .chatbot_for_visitors(&claims.chatbot_uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("chatbot"))?;
    // Checked on every request, so making a chatbot private or dropping a site shuts its
    // visitors out at once rather than when their tokens expire.
    let settings = &chatbot.settings;
    admits(
        &settings.visibility,
        &settings.allowed_origins,
        claims.origin.as_deref(),
    )?;
    if settings.visibility == Visibility::Hybrid {
        if let Some(calling) = foreign_origin(req)? {
            if claims.origin.as_deref() != Some(calling.as_str()) {
                return Err(ApiError::Forbidden(format!(
                    "This visitor token was issued for another site, not {calling}."
                )));
            }
        }
    }
    Ok(Caller::Visitor(Box::new(Visitor {
        chatbot,
        account_uuid,
        visitor_id: claims.visitor_id,
        origin: claims.origin,
        expires_at: claims.expires_at,
    })))
}

/// The origin a visitor route's answer may be read from: the calling site, when the request
/// carries a genuine visitor token minted for that site. Expired tokens count, so the page
/// can read the 401 and renew.
pub fn cors_grant(req: &Request, config: &Config, token: Option<&str>) -> Option<String> {
    let origin = foreign_origin(req).ok().flatten()?;
    let claims = match verify_token(config, token?, now_secs()).ok()? {
        Ok(claims) | Err(TokenError::Expired(claims)) => claims,
        Err(TokenError::Invalid) => return None,
    };
    (claims.origin.as_deref() == Some(origin.as_str())).then_some(origin)
}

/// Lets a page on `origin` read `response`.
pub fn allow_origin(mut response: Response, origin: &str) -> Response {
    let headers = response.headers_mut();
    // `origin` went through `normalize_origin`, so it is a valid header value.
    let _ = headers.set("Access-Control-Allow-Origin", origin);
    let _ = headers.set("Access-Control-Expose-Headers", EXPOSED_HEADERS);
    let _ = headers.append("Vary", "Origin");
    response
}

/// Answers a CORS preflight for a visitor route: allowed when the chatbot behind it takes
/// visitors from the calling site (public: any site; hybrid: the listed ones; private: none,
/// and it answers as if missing).
pub async fn preflight(
    req: &Request,
    env: &Env,
    endpoint: Endpoint,
    params: &[String],
) -> ApiResult<Response> {
    let origin = foreign_origin(req)?.ok_or_else(|| {
        ApiError::Forbidden("A CORS preflight must come from another site's page.".into())
    })?;
    let store = Store::new(env)?;
    let uuid = params
        .first()
        .and_then(|p| canonical_uuid(p))
        .ok_or_else(|| ApiError::NotFound("No resource with that uuid exists.".into()))?;
    let chatbot = match named_by(endpoint) {
        Named::Chatbot => store
            .chatbot_for_visitors(&uuid)
            .await?
            .map(|(chatbot, _)| chatbot),
        Named::Message => store.chatbot_of_message(&uuid).await?,
        Named::Session => store.chatbot_of_session(&uuid).await?,
        Named::Other => None,
    }
    .ok_or_else(|| ApiError::NotFound("No resource with that uuid exists.".into()))?;
    let settings = &chatbot.settings;
    admits(
        &settings.visibility,
        &settings.allowed_origins,
        Some(&origin),
    )?;
    let headers = Headers::new();
    headers.set("Access-Control-Allow-Methods", "GET, POST")?;
    headers.set(
        "Access-Control-Allow-Headers",
        "Authorization, Content-Type, Accept",
    )?;
    headers.set("Access-Control-Max-Age", "600")?;
    let response = Response::builder()
        .with_status(204)
        .with_headers(headers)
        .empty();
    Ok(allow_origin(response, &origin))
}
