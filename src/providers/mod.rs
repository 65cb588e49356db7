//! Where answers come from: the built-in engine, an OpenAI-compatible Chat Completions endpoint
//! (`OPENAI_API_KEY`, `OPENAI_BASE_URL`), or Workers AI (an `AI` binding). Each is read as one
//! stream of `CompletionEvent`s.

use edgechat_core::chat::prompt::Prompt;
use edgechat_core::chat::sse::{completion_events, workers_ai_events, CompletionEvent, SseParser};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::chat::models::{self, ModelFamily, ModelInfo};
use crate::platform::outbound::seconds_setting;
use futures::future::{select, Either};
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::time::Duration;
use worker::{
    AbortController, ByteStream, Delay, Env, Fetch, Headers, Method, Request, RequestInit,
};

pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The Workers AI model that serves OpenAI model names when only the `AI` binding exists.
pub const WORKERS_AI_FALLBACK: &str = "@cf/meta/llama-3.1-8b-instruct";
/// How long the first token may take, and the longest silence between two pieces after it.
/// How long the model may take to its first output, and to each next one, unless the
/// operator sets `MODEL_TIMEOUT_SECONDS`.
pub const DEFAULT_MODEL_TIMEOUT_SECS: u64 = 60;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provider {
    Builtin,
    OpenAi { base_url: String, api_key: String },
    WorkersAi { model: String },
}

impl Provider {
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Builtin => "builtin",
            Provider::OpenAi { .. } => "openai",
            Provider::WorkersAi { .. } => "workers-ai",
        }
    }
}

fn setting(env: &Env, name: &str) -> Option<String> {
    env.secret(name)
        .map(|s| s.to_string())
        .or_else(|_| env.var(name).map(|v| v.to_string()))
        .ok()
        .filter(|v| !v.trim().is_empty())
}

fn has_ai_binding(env: &Env) -> bool {
    env.ai("AI").is_ok()
}

/// Which provider serves `model` with this Worker's configuration.
pub fn provider_for(env: &Env, model: &ModelInfo) -> Provider {
    match model.family {
        ModelFamily::OpenAi => {
            if let Some(api_key) = setting(env, "OPENAI_API_KEY") {
                let base_url = setting(env, "OPENAI_BASE_URL")
                    .unwrap_or_else(|| DEFAULT_OPENAI_BASE_URL.to_string());
                Provider::OpenAi {
                    base_url: base_url.trim_end_matches('/').to_string(),
                    api_key,
                }
            } else if has_ai_binding(env) {
                Provider::WorkersAi {
                    model: WORKERS_AI_FALLBACK.to_string(),
                }
            } else {
                Provider::Builtin
            }
        }
        ModelFamily::WorkersAi if has_ai_binding(env) => Provider::WorkersAi {
            model: model.upstream.to_string(),
        },
        ModelFamily::WorkersAi => Provider::Builtin,
    }
}

/// `GET /agent/models`: every accepted name, its budget and who serves it now.
pub fn catalogue(env: &Env) -> Value {
    Value::Array(
        models::MODELS
            .iter()
            .map(|m| {
                let provider = provider_for(env, m);
                let upstream = match &provider {
                    Provider::Builtin => Value::Null,
                    Provider::OpenAi { .. } => json!(m.upstream),
                    Provider::WorkersAi { model } => json!(model),
                };
                json!({
                    "name": m.name,
                    "context_tokens": m.context_tokens,
                    "provider": provider.name(),
                    "upstream_model": upstream,
                })
            })
            .collect(),
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    ChatCompletions,
    WorkersAi,
}

/// A model's answer being read.
pub struct UpstreamAnswer {
    body: ByteStream,
    parser: SseParser,
    flavor: Flavor,
    pending: VecDeque<CompletionEvent>,
    ended: bool,
    /// Aborted when the answer is dropped, so a client that leaves stops the upstream call.
    controller: Option<AbortController>,
    /// The longest wait for the next piece of the answer.
    timeout: Duration,
}

impl Drop for UpstreamAnswer {
    fn drop(&mut self) {
        if let Some(controller) = self.controller.take() {
            controller.abort();
        }
    }
}

impl UpstreamAnswer {
    fn decode(&self, event: &edgechat_core::chat::sse::SseEvent) -> Vec<CompletionEvent> {
        match self.flavor {
            Flavor::ChatCompletions => completion_events(event),
            Flavor::WorkersAi => workers_ai_events(event),
        }
    }

    /// The next event; `Err` when the stream broke or went silent. After `Done` (or the end of
    /// the body) it returns `None`.
    pub async fn next(&mut self) -> Option<Result<CompletionEvent, String>> {
        let timeout = self.timeout;
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if self.ended {
                return None;
            }
            let read = self.body.next();
            let timer = Delay::from(timeout);
            futures::pin_mut!(read);
            match select(read, timer).await {
                Either::Right(_) => {
                    self.ended = true;
                    return Some(Err(format!(
                        "the model sent nothing for {} seconds",
                        timeout.as_secs()
                    )));
                }
                Either::Left((Some(Ok(bytes)), _)) => {
                    let events = self.parser.feed(&bytes);
                    for e in &events {
                        let decoded = self.decode(e);
                        self.pending.extend(decoded);
                    }
                }
                Either::Left((Some(Err(err)), _)) => {
                    self.ended = true;
                    return Some(Err(format!("the model's stream broke: {err}")));
                }
                Either::Left((None, _)) => {
                    self.ended = true;
                    let tail = self.parser.finish();
                    for e in &tail {
                        let decoded = self.decode(e);
                        self.pending.extend(decoded);
                    }
                    // A stream that ends without [DONE] or a finish reason was cut off.
                    let finished = self
                        .pending
                        .iter()
                        .any(|e| matches!(e, CompletionEvent::Done | CompletionEvent::Finish(_)));
                    if !finished {
                        self.pending.push_back(CompletionEvent::Error(
                            "the model's stream ended early".into(),
                        ));
                    }
                }
            }
        }
    }

    /// Reads until the first piece of text (or the end), so a failure before any output can
    /// still be reported as a 502 instead of a broken stream.
    async fn peek_first_output(&mut self) -> Result<(), String> {
        let mut seen = VecDeque::new();
        loop {
            match self.next().await {
                None => break,
                Some(Err(e)) => return Err(e),
                Some(Ok(CompletionEvent::Error(e))) => return Err(e),
                Some(Ok(event)) => {
                    let stop = matches!(
                        event,
                        CompletionEvent::Text(_)
                            | CompletionEvent::Done
                            | CompletionEvent::Finish(_)
                            | CompletionEvent::ToolCall(_)
                    );
                    seen.push_back(event);
                    if stop {
                        break;
                    }
                }
            }
        }
        seen.extend(self.pending.drain(..));
        self.pending = seen;
        Ok(())
    }
}

pub struct ModelCall<'a> {
    pub prompt: &'a Prompt,
    pub model: &'a ModelInfo,
    pub temperature: f64,
    /// Extra Chat Completions fields (tools), merged into the request body.
    pub extra: Option<Value>,
    /// Messages to send instead of the prompt's own (a tool-call round adds to them).
    pub messages: Option<Vec<Value>>,
}

fn upstream_error(detail: impl Into<String>) -> ApiError {
    ApiError::Upstream(format!(
        "The model provider failed before answering: {}",
        detail.into()
    ))
}

/// Starts the model call and waits for its first output.
pub async fn open(
    env: &Env,
    provider: &Provider,
    call: ModelCall<'_>,
) -> ApiResult<UpstreamAnswer> {
    let messages = call
        .messages
        .clone()
        .unwrap_or_else(|| call.prompt.messages());
    let timeout = seconds_setting(env, "MODEL_TIMEOUT_SECONDS", DEFAULT_MODEL_TIMEOUT_SECS);
    let (body, flavor, controller) = match provider {
        Provider::Builtin => return Err(ApiError::internal("the built-in engine has no upstream")),
        Provider::OpenAi { base_url, api_key } => {
            let mut payload = json!({
                "model": call.model.upstream,
                "messages": messages,
                "stream": true,
                "stream_options": {"include_usage": true},
                "temperature": call.temperature,
                "max_tokens": call.prompt.answer_tokens,
            });
            if let (Some(Value::Object(extra)), Some(obj)) = (call.extra, payload.as_object_mut()) {
                obj.extend(extra);
            }
            let headers = Headers::new();
            headers.set("Authorization", &format!("Bearer {api_key}"))?;
            headers.set("Content-Type", "application/json")?;
            headers.set("Accept", "text/event-stream")?;
            let mut init = RequestInit::new();
            init.with_method(Method::Post)
                .with_headers(headers)
                .with_body(Some(wasm_bindgen::JsValue::from_str(&payload.to_string())));
            let request = Request::new_with_init(&format!("{base_url}/chat/completions"), &init)?;
            let controller = AbortController::default();
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
                    controller.abort();
                    return Err(upstream_error(format!(
                        "it did not answer within {} seconds",
                        timeout.as_secs()
                    )));
                }
            };
            let status = response.status_code();
            if !(200..300).contains(&status) {
                let text = response.text().await.unwrap_or_default();
                worker::console_error!(
                    "model provider answered {status}: {}",
                    edgechat_core::chat::sse::truncate(&text, 500)
                );
                return Err(upstream_error(format!("it answered HTTP {status}")));
            }
            (
                response.stream()?,
                Flavor::ChatCompletions,
                Some(controller),
            )
        }
        Provider::WorkersAi { model } => {
            let ai = env.ai("AI")?;
            let input = json!({
                "messages": messages,
                "stream": true,
                "max_tokens": call.prompt.answer_tokens,
                "temperature": call.temperature,
            });
            let stream = ai
                .run_bytes(model, &input)
                .await
                .map_err(|e| upstream_error(format!("Workers AI refused the call ({e})")))?;
            (stream, Flavor::WorkersAi, None)
        }
    };
    let mut answer = UpstreamAnswer {
        body,
        parser: SseParser::new(),
        flavor,
        pending: VecDeque::new(),
        ended: false,
        controller,
        timeout,
    };
    answer.peek_first_output().await.map_err(upstream_error)?;
    Ok(answer)
}
