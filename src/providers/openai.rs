//! An OpenAI-compatible Chat Completions endpoint: `POST {base}/chat/completions`, streamed.
//! The request body and the stream decoder are the core's (`chat::completion::openai`).

use super::upstream::{AnswerStream, UpstreamBody};
use super::{upstream_error, ChatTurn};
use crate::platform::outbound::AbortOnDrop;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::chat::completion::openai;
use edgechat_core::chat::sse::truncate;
use edgechat_core::config::OpenAiEndpoint;
use futures::future::{select, Either};
use std::time::Duration;
use worker::{Delay, Fetch, Headers, Method, Request, RequestInit};

pub async fn open(
    endpoint: &OpenAiEndpoint,
    turn: &ChatTurn<'_>,
    timeout: Duration,
) -> ApiResult<AnswerStream> {
    let body = openai::request_body(&turn.request);
    let headers = Headers::new();
    headers.set("Authorization", &format!("Bearer {}", endpoint.api_key))?;
    headers.set("Content-Type", "application/json")?;
    headers.set("Accept", "text/event-stream")?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(wasm_bindgen::JsValue::from_str(&body.to_string())));
    let request =
        Request::new_with_init(&format!("{}/chat/completions", endpoint.base_url), &init)?;
    // Dropped with the call (a stop while the model has not answered yet), or with the
    // answer's stream once it has, it aborts the request.
    let controller = AbortOnDrop::new();
    let signal = controller.signal();
    let fetch = Fetch::Request(request);
    let send = fetch.send_with_signal(&signal);
    let timer = Delay::from(timeout);
    futures::pin_mut!(send);
    let mut response = match select(send, timer).await {
        Either::Left((Ok(r), _)) => r,
        Either::Left((Err(e), _)) => {
            return Err(upstream_error(format!("could not reach it ({e})")))
        }
        Either::Right(_) => {
            drop(controller);
            return Err(upstream_error(format!(
                "it did not answer within {} seconds",
                timeout.as_secs()
            )));
        }
    };
    let status = response.status_code();
    if !(200..300).contains(&status) {
        // A provider asking for time is passed on, so a client waits as long as it asked.
        let retry_after_secs = (status == 429)
            .then(|| response.headers().get("Retry-After").ok().flatten())
            .flatten()
            .and_then(|v| v.trim().parse::<u64>().ok());
        // The provider's own words may hold details the client must not see: logged only.
        let text = response.text().await.unwrap_or_default();
        crate::platform::log::upstream_failure(
            "opening a model's answer",
            &endpoint.base_url,
            &format!("HTTP {status}: {}", truncate(text.trim(), 500)),
        );
        let err = upstream_error(format!("it answered HTTP {status}"));
        return Err(match retry_after_secs {
            Some(retry_after_secs) => ApiError::UpstreamBusy {
                message: err.public_message(),
                retry_after_secs,
            },
            None => err,
        });
    }
    Ok(AnswerStream::upstream(UpstreamBody::new(
        response.stream()?,
        openai::decode,
        Some(controller),
        timeout,
    )))
}
