//! One exchange, from question to stored message. Its jobs, one file each:
//!
//! - this file: the `Exchange` a question becomes once its agent is chosen (the choice itself
//!   is pure, in `edgechat_core::chat::routing`) and its sources are retrieved (`retrieval`);
//! - `relay`: the answer streamed from its provider to the client, with the tool-call loop;
//! - `record`: the message stored exactly once when the answer ends, however it ends;
//! - `tagging`: background agents judging the exchange after the stream has closed;
//! - `tools`: calling a tool function's endpoint for the model.

pub mod record;
pub mod relay;
pub mod retrieval;
pub mod tagging;
pub mod tools;

use crate::platform::log;
pub use relay::Output;

use crate::providers::{ChatProvider, ChatTurn, Grounding};
use crate::storage::SearchFound;
use edgechat_core::api::error::ApiResult;
use edgechat_core::chat::completion::{ChatMessage, CompletionRequest, ToolSpec};
use edgechat_core::chat::followup::{stands_alone, Context};
use edgechat_core::chat::models::ModelInfo;
use edgechat_core::chat::openai_compat::Sampling;
use edgechat_core::chat::prompt::{assemble, conversation_turns, Prompt, PromptInput};
use edgechat_core::chat::routing::{
    agent_model, answering_agents, escalation_for, parse_route, profile, route_messages,
    ROUTE_MAX_TOKENS,
};
use edgechat_core::config::Config;
use edgechat_core::domain::agent::Agent;
use edgechat_core::domain::chatbot::Chatbot;
use edgechat_core::domain::session::{Message, Session};
use edgechat_core::domain::tool_function::{parse_parameters, ToolFunction};
use edgechat_core::knowledge::retrieve::Ranked;
use edgechat_core::time;
use futures::future::{select, Either};
use std::time::Duration;
use worker::{Delay, Env};

/// Chunks retrieved for one question.
pub const SOURCES_PER_ANSWER: usize = 6;
/// Earlier exchanges read for the prompt's history (the budget decides how many fit).
pub const HISTORY_TURNS: usize = 20;
/// Temperature when the agent sets none.
const DEFAULT_TEMPERATURE: f64 = 0.2;

pub struct Exchange {
    pub chatbot: Chatbot,
    pub session: Session,
    pub agent: Agent,
    pub query: String,
    /// The question with the conversation's context terms: what the built-in engine
    /// composes its answer for.
    pub grounding_query: String,
    pub message_uuid: String,
    pub started_ms: i64,
    pub created_at: String,
    pub ranked: Vec<Ranked>,
    pub model: &'static ModelInfo,
    pub provider: ChatProvider,
    pub prompt: Prompt,
    /// Set when the user asked for a person: the escalation agent's reply, sent as it is.
    pub escalation_reply: Option<String>,
    /// The agent's enabled tool functions, offered to a model provider.
    pub tools: Vec<ToolFunction>,
    /// What the caller set of how the model answers (the OpenAI-compatible endpoint's
    /// `temperature` and `max_tokens`); none by default.
    pub sampling: Sampling,
}

pub struct Request {
    pub chatbot: Chatbot,
    pub session: Session,
    pub agent: Agent,
    pub escalating: bool,
    pub query: String,
    /// The session's recent messages, oldest first.
    pub history: Vec<Message>,
    /// The conversation's terms a follow-up was searched with (`retrieval::conversation_context`).
    pub context: Context,
    /// What retrieval found for the query (nothing when escalating), and the query as
    /// searched when it was misspelled.
    pub retrieved: retrieval::Retrieved,
    /// The agent's tool functions, enabled or not.
    pub tools: Vec<ToolFunction>,
}

/// The sources an agent answers `query` from; none when the message goes to a person. A
/// follow-up is searched with its `context`, or, with a model provider, as the standalone
/// question the model rewrites it to (`retrieval::standalone_question`). `searched` is what
/// `retrieval::early_search` found, when it was sent with the turn's first read.
pub async fn sources_for(
    searcher: &retrieval::Searcher<'_>,
    chatbot_uuid: &str,
    (agent, escalating): (&Agent, bool),
    (query, context, history): (&str, &Context, &[Message]),
    searched: Option<SearchFound>,
) -> ApiResult<retrieval::Retrieved> {
    if escalating {
        return Ok(retrieval::Retrieved::default());
    }
    if let Some(standalone) =
        retrieval::standalone_question(searcher.env, searcher.config, agent, query, history).await
    {
        return retrieval::retrieve(
            searcher,
            chatbot_uuid,
            Some(agent),
            (&standalone, &Context::default()),
            SOURCES_PER_ANSWER,
            None,
        )
        .await;
    }
    retrieval::retrieve(
        searcher,
        chatbot_uuid,
        Some(agent),
        (query, context),
        SOURCES_PER_ANSWER,
        searched,
    )
    .await
}

/// How long a model may take to choose the agent before the rule-based choice stands alone.
const ROUTE_TIMEOUT: Duration = Duration::from_secs(3);

/// With a model provider and at least two enabled user-facing agents, the uuid of the one a
/// model says should answer `query` (`chat::routing::route_messages`), asked of the model of
/// the agent that answered before, else of the general agent. `None` without a model, when the
/// user asks for a person, and when the model fails, is late or names no agent: the choice is
/// then the rule-based one alone. `pick_agent_with` weighs the answer beside bias and
/// stickiness.
pub async fn model_route(
    env: &Env,
    config: &Config,
    agents: &[Agent],
    query: &str,
    previous: Option<&str>,
) -> Option<String> {
    let answering = answering_agents(agents);
    if answering.len() < 2 || escalation_for(query, agents).is_some() {
        return None;
    }
    let previous_index = previous.and_then(|p| answering.iter().position(|a| a.uuid == p));
    let asker = previous_index
        .or_else(|| answering.iter().position(|a| a.allowed_sources().is_none()))
        .unwrap_or(0);
    let model = agent_model(answering[asker]);
    let provider = ChatProvider::for_model(config, model);
    if !provider.is_model() {
        return None;
    }
    let profiles: Vec<_> = answering.iter().map(|a| profile(a)).collect();
    let messages = route_messages(query, &profiles, previous_index);
    let ask = async {
        let text = provider
            .reply_text(env, config, model, &messages, ROUTE_MAX_TOKENS)
            .await?;
        parse_route(&text, answering.len())
    };
    futures::pin_mut!(ask);
    match select(ask, Delay::from(ROUTE_TIMEOUT)).await {
        Either::Left((Some(i), _)) => Some(answering[i].uuid.clone()),
        _ => None,
    }
}

pub fn prepare(config: &Config, req: Request) -> Exchange {
    let Request {
        chatbot,
        session,
        agent,
        escalating,
        query,
        context,
        history,
        retrieved,
        tools,
    } = req;
    let ranked = retrieved.ranked;
    // The built-in engine answers the question as searched: spelled right.
    let searched = retrieved.corrected_query.as_deref().unwrap_or(&query);
    // A follow-up that stands alone is answered for its own words (ranking measured passages
    // against them); any other question for them with the conversation's.
    let grounding_query = if stands_alone(&query, &context) {
        searched.to_string()
    } else {
        std::iter::once(searched)
            .chain(context.terms.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let started_ms = time::now_ms();
    let created_at = time::now();
    let escalation_reply = escalating.then(|| {
        agent
            .config
            .human_escalation_settings
            .clone()
            .unwrap_or_default()
            .human_requested_message
    });
    let turns = conversation_turns(history);
    let model = agent_model(&agent);
    let provider = if escalating {
        ChatProvider::Builtin
    } else {
        ChatProvider::for_model(config, model)
    };
    // Only a model can call functions; the built-in engine never does.
    let tools = if provider.is_model() {
        tools.into_iter().filter(|f| f.enabled).collect()
    } else {
        Vec::new()
    };
    let prompt = assemble(&PromptInput {
        agent_prompt: &agent.config.prompt,
        variables: &agent.config.variables,
        session_variables: session.initial_variables.as_ref(),
        sources: &ranked,
        history: &turns,
        query: &query,
        context_tokens: model.context_tokens as usize,
        show_citations: chatbot.settings.show_citations,
    });
    Exchange {
        chatbot,
        session,
        agent,
        query,
        grounding_query,
        message_uuid: crate::handlers::new_uuid(),
        started_ms,
        created_at,
        ranked,
        model,
        provider,
        prompt,
        escalation_reply,
        tools,
        sampling: Sampling::default(),
    }
}

impl Exchange {
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|function| match parse_parameters(&function.parameters) {
                Ok(_) => true,
                // Stored before schemas were checked: the provider would refuse the whole
                // request over it, so the agent answers without it until it is mended.
                Err(err) => {
                    log::background_failure("offering a tool function", &function.uuid, &err);
                    false
                }
            })
            .map(ToolFunction::tool_spec)
            .collect()
    }

    /// The call to the provider for one round, with `messages` sent as the conversation.
    pub fn turn<'a>(&'a self, messages: &'a [ChatMessage], tools: &'a [ToolSpec]) -> ChatTurn<'a> {
        ChatTurn {
            request: CompletionRequest {
                model: self.model.upstream,
                messages,
                tools,
                may_call_tools: true,
                temperature: self
                    .sampling
                    .temperature
                    .or(self.agent.config.meta.temperature)
                    .unwrap_or(DEFAULT_TEMPERATURE),
                // A caller may ask for less than the answer's budget, never more.
                max_tokens: self
                    .sampling
                    .max_tokens
                    .map_or(self.prompt.answer_tokens, |m| {
                        m.min(self.prompt.answer_tokens)
                    }),
            },
            grounding: Grounding {
                query: &self.grounding_query,
                ranked: &self.ranked,
                show_citations: self.chatbot.settings.show_citations,
            },
        }
    }
}
