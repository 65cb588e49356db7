//! The client side of rate limits: asks a rate-limit Durable Object (one per counted thing,
//! named by what it counts) to admit one more message or request.

use edgechat_core::api::error::{ApiError, ApiResult};
pub use edgechat_core::domain::rate_limit::{
    Decision, Limit, WindowDecision, LIVE_CHAT_VISITOR_LIMIT,
};
use serde::de::DeserializeOwned;

/// The object counting `name`.
fn stub(env: &worker::Env, name: &str) -> ApiResult<worker::Stub> {
    Ok(env
        .durable_object(edgechat_core::config::bindings::RATE_LIMITER)?
        .id_from_name(name)?
        .get_stub()?)
}

/// The object counting `name`, asked at `path` (`/admit`: the sliding log; `/window`: a fixed
/// window) to count one more under `limit`.
async fn ask<T: DeserializeOwned>(
    env: &worker::Env,
    name: &str,
    path: &str,
    limit: Limit,
) -> ApiResult<T> {
    use worker::{Method, Request, RequestInit};
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(wasm_bindgen::JsValue::from_str(
            &serde_json::to_string(&limit)?,
        )));
    let request = Request::new_with_init(&format!("https://rate-limiter{path}"), &init)?;
    let mut response = stub(env, name)?.fetch_with_request(request).await?;
    if response.status_code() != 200 {
        // Only a limit the object could not read gets here (it answers 400 and says why).
        return Err(ApiError::internal(format!(
            "the rate-limit object answered {}: {}",
            response.status_code(),
            response.text().await.unwrap_or_default()
        )));
    }
    Ok(response.json::<T>().await?)
}

/// Asks the log named `name` (a chatbot's uuid, or a name derived from it) to admit one
/// message: exact, for the small counts of chat limits.
pub async fn admit_message(env: &worker::Env, name: &str, limit: Limit) -> ApiResult<Decision> {
    ask(env, name, "/admit", limit).await
}

/// Takes back the newest admission of the log named `name` (`rate_limit::release`): the
/// message it admitted was refused by another limit asked at the same time.
async fn release_message(env: &worker::Env, name: &str) -> ApiResult<()> {
    let mut response = stub(env, name)?
        .fetch_with_str("https://rate-limiter/release")
        .await?;
    match response.status_code() {
        200..=299 => Ok(()),
        status => Err(ApiError::internal(format!(
            "the rate-limit object answered {status} to a release: {}",
            response.text().await.unwrap_or_default()
        ))),
    }
}

/// Asks every log of `logs` (a name and its limit) to admit one message, all at once: the
/// message is admitted when every log admits it. When any refuses (or cannot be asked), the
/// logs that admitted it take it back (`release_messages`), so one limit's refusal never uses
/// up another's share; the answer is then the longest wait of those refusing.
pub async fn admit_messages(env: &worker::Env, logs: &[(String, Limit)]) -> ApiResult<Decision> {
    // A message meets one log or two (a visitor's own and the chatbot's); `join_all` would
    // cost the bundle more than this does.
    let decisions = match logs {
        [(one, one_limit), (other, other_limit)] => {
            let (one, other) = futures::join!(
                admit_message(env, one, *one_limit),
                admit_message(env, other, *other_limit)
            );
            vec![one, other]
        }
        _ => {
            let mut decisions = Vec::with_capacity(logs.len());
            for (name, limit) in logs {
                decisions.push(admit_message(env, name, *limit).await);
            }
            decisions
        }
    };
    let mut admitted = Vec::new();
    let mut remaining = u32::MAX;
    let mut wait = None::<u64>;
    let mut failure = None;
    for ((name, _), decision) in logs.iter().zip(decisions) {
        match decision {
            Ok(Decision::Admitted { remaining: left }) => {
                admitted.push(name.as_str());
                remaining = remaining.min(left);
            }
            Ok(Decision::Limited { retry_after_secs }) => {
                wait = Some(wait.unwrap_or(0).max(retry_after_secs));
            }
            Err(err) => failure = Some(err),
        }
    }
    let refusal = match (failure, wait) {
        (None, None) => return Ok(Decision::Admitted { remaining }),
        (Some(err), _) => Err(err),
        (None, Some(retry_after_secs)) => Ok(Decision::Limited { retry_after_secs }),
    };
    release_messages(env, &admitted).await;
    refusal
}

/// Takes back one admission from each log named in `names` (a refusal's path, so one after
/// the other). A release that fails is logged: its log holds one admission too many until
/// the window passes it.
pub async fn release_messages(env: &worker::Env, names: &[&str]) {
    for name in names {
        if let Err(err) = release_message(env, name).await {
            crate::platform::log::background_failure(
                "releasing a rate-limit admission",
                name,
                &err,
            );
        }
    }
}

/// Counts one request against the fixed window named `name` (an API key, a client address).
pub async fn admit_request(
    env: &worker::Env,
    name: &str,
    limit: Limit,
) -> ApiResult<WindowDecision> {
    ask(env, name, "/window", limit).await
}

/// Object names: each limit counts in objects of its own, so no two can share a count.
pub mod names {
    /// Every request made with one API key.
    pub fn api_key(key_uuid: &str) -> String {
        format!("key/{key_uuid}")
    }

    /// Visitor tokens minted for one client address.
    pub fn token_minting(client_address: &str) -> String {
        format!("visitor-tokens/{client_address}")
    }

    /// One site visitor's messages on one chatbot.
    pub fn visitor_messages(chatbot_uuid: &str, visitor_id: &str) -> String {
        format!("{chatbot_uuid}/visitor/{visitor_id}")
    }

    /// One site visitor's messages on one chatbot while a person answers (live chat).
    pub fn visitor_live_chat(chatbot_uuid: &str, visitor_id: &str) -> String {
        format!("{chatbot_uuid}/visitor-live-chat/{visitor_id}")
    }

    /// New sessions of every visitor of a chatbot together.
    pub fn visitor_sessions(chatbot_uuid: &str) -> String {
        format!("{chatbot_uuid}/visitor-sessions")
    }

    /// New sessions of one visitor.
    pub fn visitor_own_sessions(chatbot_uuid: &str, visitor_id: &str) -> String {
        format!("{chatbot_uuid}/visitor-sessions/{visitor_id}")
    }
}
