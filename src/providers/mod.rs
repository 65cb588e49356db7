//! Where answers come from. One seam per kind of outside dependency, one file per provider:
//!
//! - `builtin`: the built-in engine, answering from retrieved passages with no model at all;
//! - `openai`: any OpenAI-compatible Chat Completions endpoint (`OPENAI_API_KEY`,
//!   `OPENAI_BASE_URL`);
//! - `workers_ai`: Workers AI through the `AI` binding.
//!
//! A provider is opened with a provider-neutral request (`edgechat_core::chat::completion`) and
//! read as one stream of `CompletionEvent`s, whichever it is; each provider encodes the request
//! and decodes its stream with its own codec from the core. Embeddings and reranking are other
//! capabilities of the same providers and belong beside `ChatProvider` here.

mod builtin;
mod openai;
pub mod semantic;
mod upstream;
mod workers_ai;

pub use upstream::AnswerStream;

use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::chat::completion::CompletionRequest;
use edgechat_core::chat::models::{self, ModelFamily, ModelInfo};
use edgechat_core::config::{Config, OpenAiEndpoint};
use edgechat_core::knowledge::retrieve::Ranked;
use serde_json::{json, Value};
use worker::Env;

/// The Workers AI model that serves OpenAI model names when only the `AI` binding exists.
pub const WORKERS_AI_FALLBACK: &str = "@cf/meta/llama-3.1-8b-instruct";

/// Who answers a chat turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatProvider {
    Builtin,
    OpenAi(OpenAiEndpoint),
    WorkersAi { model: String },
}

/// What the built-in engine answers from; models get the same passages inside their prompt.
pub struct Grounding<'a> {
    pub query: &'a str,
    pub ranked: &'a [Ranked],
    pub show_citations: bool,
}

/// One call to a chat provider: what a model is sent (its `model` is the catalogue's upstream
/// name; Workers AI may serve another), and what the built-in engine answers from instead.
pub struct ChatTurn<'a> {
    pub request: CompletionRequest<'a>,
    pub grounding: Grounding<'a>,
}

impl ChatProvider {
    /// Which provider serves `model` with this configuration.
    pub fn for_model(config: &Config, model: &ModelInfo) -> Self {
        match model.family {
            ModelFamily::OpenAi => match &config.openai {
                Some(endpoint) => ChatProvider::OpenAi(endpoint.clone()),
                None if config.workers_ai => ChatProvider::WorkersAi {
                    model: WORKERS_AI_FALLBACK.to_string(),
                },
                None => ChatProvider::Builtin,
            },
            ModelFamily::WorkersAi if config.workers_ai => ChatProvider::WorkersAi {
                model: model.upstream.to_string(),
            },
            ModelFamily::WorkersAi => ChatProvider::Builtin,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ChatProvider::Builtin => "builtin",
            ChatProvider::OpenAi(_) => "openai",
            ChatProvider::WorkersAi { .. } => "workers-ai",
        }
    }

    /// Whether a model answers (only a model can call tool functions or judge tags).
    pub fn is_model(&self) -> bool {
        !matches!(self, ChatProvider::Builtin)
    }

    /// The name the provider knows `model` by, when it is a model service.
    fn upstream_model(&self, model: &ModelInfo) -> Option<String> {
        match self {
            ChatProvider::Builtin => None,
            ChatProvider::OpenAi(_) => Some(model.upstream.to_string()),
            ChatProvider::WorkersAi { model } => Some(model.clone()),
        }
    }

    /// Starts the answer and waits for its first output, so a provider that fails before
    /// saying anything is a 502 (`Upstream`) rather than a broken stream.
    pub async fn open(
        &self,
        env: &Env,
        config: &Config,
        turn: &ChatTurn<'_>,
    ) -> ApiResult<AnswerStream> {
        let mut answer = match self {
            ChatProvider::Builtin => return Ok(builtin::open(&turn.grounding)),
            ChatProvider::OpenAi(endpoint) => {
                openai::open(endpoint, turn, config.model_timeout).await?
            }
            ChatProvider::WorkersAi { model } => {
                workers_ai::open(env, model, turn, config.model_timeout).await?
            }
        };
        answer.peek_first_output().await.map_err(upstream_error)?;
        Ok(answer)
    }
}

impl ChatProvider {
    /// One short, ungrounded model call whose whole reply is wanted as text (judging tags,
    /// rewriting a follow-up); `None` when the provider fails before or while answering.
    pub async fn reply_text(
        &self,
        env: &Env,
        config: &Config,
        model: &ModelInfo,
        messages: &[edgechat_core::chat::completion::ChatMessage],
        max_tokens: usize,
    ) -> Option<String> {
        let turn = ChatTurn {
            request: CompletionRequest {
                model: model.upstream,
                messages,
                tools: &[],
                may_call_tools: false,
                temperature: 0.0,
                max_tokens,
            },
            grounding: Grounding {
                query: "",
                ranked: &[],
                show_citations: false,
            },
        };
        let mut answer = self.open(env, config, &turn).await.ok()?;
        let mut text = String::new();
        while let Some(Ok(event)) = answer.next().await {
            match event {
                edgechat_core::chat::completion::CompletionEvent::Text(t) => text.push_str(&t),
                edgechat_core::chat::completion::CompletionEvent::Done => break,
                _ => {}
            }
        }
        Some(text)
    }
}

pub(crate) fn upstream_error(detail: impl Into<String>) -> ApiError {
    ApiError::Upstream(format!(
        "The model provider failed before answering: {}",
        detail.into()
    ))
}

/// `GET /agent/models`: every accepted name, its budget and who serves it now.
pub fn catalogue(config: &Config) -> Value {
    Value::Array(
        models::MODELS
            .iter()
            .map(|m| {
                let provider = ChatProvider::for_model(config, m);
                json!({
                    "name": m.name,
                    "context_tokens": m.context_tokens,
                    "provider": provider.name(),
                    "upstream_model": provider.upstream_model(m),
                })
            })
            .collect(),
    )
}
