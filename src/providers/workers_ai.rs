//! Workers AI through the `AI` binding, streamed. The input and the stream decoder are the
//! core's (`chat::completion::workers_ai`).

use super::upstream::{AnswerStream, UpstreamBody};
use super::{upstream_error, ChatTurn};
use edgechat_core::api::error::ApiResult;
use edgechat_core::chat::completion::{workers_ai, CompletionRequest};
use edgechat_core::config::bindings;
use std::time::Duration;
use worker::Env;

pub async fn open(
    env: &Env,
    model: &str,
    turn: &ChatTurn<'_>,
    timeout: Duration,
) -> ApiResult<AnswerStream> {
    // Workers AI serves its own model names and is offered no tools.
    let input = workers_ai::request_input(&CompletionRequest {
        model,
        tools: &[],
        ..turn.request.clone()
    });
    let stream = env
        .ai(bindings::AI)?
        .run_bytes(model, &input)
        .await
        .map_err(|e| upstream_error(format!("Workers AI refused the call ({e})")))?;
    Ok(AnswerStream::upstream(UpstreamBody::new(
        stream,
        workers_ai::decode,
        None,
        timeout,
    )))
}
