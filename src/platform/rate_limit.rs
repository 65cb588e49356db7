//! The client side of rate limits: asks a rate-limit Durable Object (one per counted thing,
//! named by what it counts) to admit one more message or request.

use edgechat_core::api::error::{ApiError, ApiResult};
pub use edgechat_core::domain::rate_limit::{Decision, Limit, WindowDecision};
use serde::de::DeserializeOwned;

/// The object counting `name`, asked at `path` (`/admit`: the sliding log; `/window`: a fixed
/// window) to count one more under `limit`.
async fn ask<T: DeserializeOwned>(
    env: &worker::Env,
    name: &str,
    path: &str,
    limit: Limit,
) -> ApiResult<T> {
    use worker::{Method, Request, RequestInit};
    let stub = env
        .durable_object(edgechat_core::config::bindings::RATE_LIMITER)?
        .id_from_name(name)?
        .get_stub()?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(wasm_bindgen::JsValue::from_str(
            &serde_json::to_string(&limit)?,
        )));
    let request = Request::new_with_init(&format!("https://rate-limiter{path}"), &init)?;
    let mut response = stub.fetch_with_request(request).await?;
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

    /// New sessions of every visitor of a chatbot together.
    pub fn visitor_sessions(chatbot_uuid: &str) -> String {
        format!("{chatbot_uuid}/visitor-sessions")
    }

    /// New sessions of one visitor.
    pub fn visitor_own_sessions(chatbot_uuid: &str, visitor_id: &str) -> String {
        format!("{chatbot_uuid}/visitor-sessions/{visitor_id}")
    }
}
