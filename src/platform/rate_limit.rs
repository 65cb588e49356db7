//! The client side of the per-chatbot rate limit: asks the chatbot's Durable Object to admit a message.

pub use edgechat_core::domain::rate_limit::{Decision, Limit};

/// Asks the chatbot's rate-limit object to admit one message.
pub async fn admit_message(
    env: &worker::Env,
    chatbot_uuid: &str,
    limit: Limit,
) -> edgechat_core::api::error::ApiResult<Decision> {
    use worker::{Method, Request, RequestInit};
    let stub = env
        .durable_object(edgechat_core::config::bindings::RATE_LIMITER)?
        .id_from_name(chatbot_uuid)?
        .get_stub()?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(wasm_bindgen::JsValue::from_str(
            &serde_json::to_string(&limit)?,
        )));
    let request = Request::new_with_init("https://rate-limiter/admit", &init)?;
    let mut response = stub.fetch_with_request(request).await?;
    if response.status_code() != 200 {
        // Only a limit the object could not read gets here (it answers 400 and says why).
        return Err(edgechat_core::api::error::ApiError::internal(format!(
            "the rate-limit object answered {}: {}",
            response.status_code(),
            response.text().await.unwrap_or_default()
        )));
    }
    Ok(response.json::<Decision>().await?)
}
