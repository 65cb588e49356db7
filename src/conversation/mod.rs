//! One exchange, from question to stored message: pick the agent, retrieve, assemble the
//! prompt, run the model (or the built-in engine), stream the answer through the sink while
//! keeping it, and store the message exactly once when the answer ends, however it ends.

pub mod retrieval;
pub mod tools;

use edgechat_core::chat::engine::{compose, Composed};
use edgechat_core::chat::prompt::{assemble, Prompt, PromptInput, Turn};
use edgechat_core::chat::routing::{choose_agent, matches_criteria, wants_person, AgentProfile};
use edgechat_core::chat::sse::{CompletionEvent, Usage};
use edgechat_core::chat::tools::{follow_up_messages, ToolCallCollector};
use edgechat_core::chat::wire::{cite_data, WireFormat};
use edgechat_core::domain::agent::{Agent, AgentType, Tag};
use edgechat_core::domain::chatbot::Chatbot;
use edgechat_core::domain::session::{FinishReason, Message, MessageKind, Session};
use edgechat_core::domain::tool_function::ToolFunction;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::knowledge::retrieve::Ranked;
use edgechat_core::knowledge::tokens::estimate_tokens;
use edgechat_core::chat::models::{self, ModelInfo};
use crate::providers::{self, ModelCall, Provider, UpstreamAnswer};
use crate::conversation::retrieval::retrieve;
use crate::storage::Store;
use crate::platform::stream::StreamSink;
use edgechat_core::time;
use serde_json::{json, Value};
use worker::Env;

/// Chunks retrieved for one question.
pub const SOURCES_PER_ANSWER: usize = 6;
/// Earlier exchanges read for the prompt's history (the budget decides how many fit).
pub const HISTORY_TURNS: usize = 20;

pub struct Exchange {
    pub chatbot: Chatbot,
    pub session: Session,
    pub agent: Agent,
    pub query: String,
    pub message_uuid: String,
    pub started_ms: i64,
    pub created_at: String,
    pub ranked: Vec<Ranked>,
    pub model: &'static ModelInfo,
    pub provider: Provider,
    pub prompt: Prompt,
    /// Set when the user asked for a person: the escalation agent's reply, sent as it is.
    pub escalation_reply: Option<String>,
    /// The agent's enabled tool functions, offered to a model provider.
    pub tools: Vec<ToolFunction>,
}

/// Who handles a message: the human-escalation agent when the user asks for a person (and
/// that agent is enabled), else the enabled user-facing agent whose description fits best.
pub fn pick_agent(
    query: &str,
    agents: &[Agent],
    previous: Option<&str>,
) -> ApiResult<(Agent, bool)> {
    if let Some(escalation) = agents
        .iter()
        .find(|a| a.config.agent_type == AgentType::HumanEscalation && a.config.enabled)
    {
        let monitored = escalation
            .config
            .human_escalation_settings
            .as_ref()
            .map(|s| s.monitored_messages.clone())
            .unwrap_or_default();
        if wants_person(
            query,
            &monitored,
            escalation.config.meta.bias.unwrap_or(0.0),
        ) {
            return Ok((escalation.clone(), true));
        }
    }
    let answering: Vec<&Agent> = agents
        .iter()
        .filter(|a| a.config.agent_type == AgentType::UserFacing && a.config.enabled)
        .collect();
    let profiles: Vec<AgentProfile> = answering
        .iter()
        .map(|a| AgentProfile {
            uuid: &a.uuid,
            name: &a.config.name,
            description: &a.config.description,
            bias: a.config.meta.bias.unwrap_or(0.0),
        })
        .collect();
    let chosen = choose_agent(query, &profiles, previous).ok_or_else(|| {
        ApiError::Conflict("This chatbot has no enabled user-facing agent to answer.".into())
    })?;
    Ok((answering[chosen].clone(), false))
}

/// The agent's model, or the default when it names none (or one no longer offered).
fn agent_model(agent: &Agent) -> &'static ModelInfo {
    agent
        .config
        .meta
        .model
        .as_deref()
        .and_then(models::find)
        .unwrap_or_else(models::default_model)
}

/// The agent that answered the last exchange of `history`.
pub fn previous_agent(history: &[Message]) -> Option<String> {
    history
        .iter()
        .rev()
        .find(|m| m.kind == MessageKind::Answer)
        .and_then(|m| {
            m.meta
                .get("agent")?
                .get("uuid")?
                .as_str()
                .map(str::to_string)
        })
}

pub struct Request {
    pub chatbot: Chatbot,
    pub session: Session,
    pub agent: Agent,
    pub escalating: bool,
    pub query: String,
    /// The session's recent messages, oldest first.
    pub history: Vec<Message>,
    /// What retrieval found for the query (nothing when escalating).
    pub ranked: Vec<Ranked>,
    /// The agent's tool functions, enabled or not.
    pub tools: Vec<ToolFunction>,
}

/// The sources an agent answers `query` from; none when the message goes to a person.
pub async fn sources_for(
    store: &Store,
    chatbot_uuid: &str,
    agent: &Agent,
    escalating: bool,
    query: &str,
    phrase_frequencies: &[i64],
) -> ApiResult<Vec<Ranked>> {
    if escalating {
        return Ok(Vec::new());
    }
    retrieve(
        store,
        chatbot_uuid,
        Some(agent),
        query,
        SOURCES_PER_ANSWER,
        phrase_frequencies,
    )
    .await
}

pub fn prepare(env: &Env, req: Request) -> Exchange {
    let Request {
        chatbot,
        session,
        agent,
        escalating,
        query,
        history,
        ranked,
        tools,
    } = req;
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
    let turns: Vec<Turn> = history
        .into_iter()
        .filter(|m| m.kind == MessageKind::Answer && !m.response.is_empty())
        .map(|m| Turn {
            query: m.query,
            response: m.response,
        })
        .collect();
    let model = agent_model(&agent);
    let provider = if escalating {
        Provider::Builtin
    } else {
        providers::provider_for(env, model)
    };
    // Only a model can call functions; the built-in engine never does.
    let tools = if provider == Provider::Builtin {
        Vec::new()
    } else {
        tools.into_iter().filter(|f| f.enabled).collect()
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
        message_uuid: crate::handlers::new_uuid(),
        started_ms,
        created_at,
        ranked,
        model,
        provider,
        prompt,
        escalation_reply,
        tools,
    }
}

/// Where the answer comes from, opened and ready to read.
pub enum AnswerSource {
    Composed(Composed),
    Upstream(UpstreamAnswer),
}

/// Opens the answer. A provider failure before any output is an `Upstream` error (502).
pub async fn open_answer(env: &Env, ex: &Exchange) -> ApiResult<AnswerSource> {
    if let Some(reply) = &ex.escalation_reply {
        return Ok(AnswerSource::Composed(Composed {
            pieces: vec![reply.clone()],
            cited: Vec::new(),
            answered: true,
        }));
    }
    match ex.provider {
        Provider::Builtin => Ok(AnswerSource::Composed(compose(
            &ex.query,
            &ex.ranked,
            ex.chatbot.settings.show_citations,
        ))),
        _ => {
            let call = ModelCall {
                prompt: &ex.prompt,
                model: ex.model,
                temperature: ex.agent.config.meta.temperature.unwrap_or(0.2),
                extra: tools_offer(&ex.tools),
                messages: None,
            };
            Ok(AnswerSource::Upstream(
                providers::open(env, &ex.provider, call).await?,
            ))
        }
    }
}

/// Where the answer goes: a client's stream, or nowhere but the stored message.
pub enum Output {
    Stream {
        sink: StreamSink,
        format: WireFormat,
    },
    Collect,
}

impl Output {
    /// `false` once the client has gone away.
    async fn send(&self, text: &str) -> bool {
        match self {
            Output::Stream { sink, .. } => sink.write_str(text).await.is_ok(),
            Output::Collect => true,
        }
    }

    async fn event(&self, name: &str, data: Value) -> bool {
        match self {
            Output::Stream { sink, format } => match format.event(name, &data) {
                Some(frame) => sink.write_str(&frame).await.is_ok(),
                None => true,
            },
            Output::Collect => true,
        }
    }

    async fn delta(&self, text: &str) -> bool {
        match self {
            Output::Stream { format, .. } => self.send(&format.delta(text)).await,
            Output::Collect => true,
        }
    }

    async fn close(&self) {
        if let Output::Stream { sink, .. } = self {
            sink.close().await;
        }
    }
}

struct Outcome {
    text: String,
    finish: FinishReason,
    usage: Option<Usage>,
    error: Option<String>,
    cited: Vec<usize>,
    functions_called: Vec<Value>,
}

/// Most rounds of tool calls in one answer; a model that keeps calling is cut off.
pub const MAX_TOOL_ROUNDS: usize = 3;

/// The `tools` offer for a Chat Completions request, when the agent has any.
fn tools_offer(tools: &[ToolFunction]) -> Option<Value> {
    (!tools.is_empty()).then(|| {
        json!({
            "tools": tools.iter().map(ToolFunction::tool_definition).collect::<Vec<_>>(),
            "tool_choice": "auto",
        })
    })
}

async fn relay_composed(composed: Composed, out: &Output) -> Outcome {
    let mut text = String::new();
    let mut finish = FinishReason::Stop;
    for piece in &composed.pieces {
        text.push_str(piece);
        if !out.delta(piece).await {
            finish = FinishReason::Aborted;
            break;
        }
    }
    Outcome {
        text,
        finish,
        usage: None,
        error: None,
        cited: composed.cited,
        functions_called: Vec::new(),
    }
}

async fn relay_upstream(env: &Env, ex: &Exchange, first: UpstreamAnswer, out: &Output) -> Outcome {
    let mut text = String::new();
    let mut finish = None;
    let mut usage: Option<Usage> = None;
    let mut error = None;
    let mut functions_called = Vec::new();
    let mut messages = ex.prompt.messages();
    let mut answer = first;
    for round in 0..=MAX_TOOL_ROUNDS {
        let mut calls = ToolCallCollector::default();
        let mut round_text = String::new();
        while let Some(event) = answer.next().await {
            match event {
                Ok(CompletionEvent::Text(piece)) => {
                    text.push_str(&piece);
                    round_text.push_str(&piece);
                    if !out.delta(&piece).await {
                        finish = Some(FinishReason::Aborted);
                        break;
                    }
                }
                Ok(CompletionEvent::Finish(reason)) => {
                    finish = Some(FinishReason::from_provider(&reason))
                }
                Ok(CompletionEvent::Usage(u)) => {
                    let total = usage.get_or_insert_with(Usage::default);
                    total.prompt_tokens += u.prompt_tokens;
                    total.completion_tokens += u.completion_tokens;
                    total.total_tokens += u.total_tokens;
                }
                Ok(CompletionEvent::Done) => break,
                Ok(CompletionEvent::ToolCall(delta)) => calls.add(delta),
                Ok(CompletionEvent::Error(e)) | Err(e) => {
                    error = Some(e);
                    finish = Some(FinishReason::Error);
                    break;
                }
            }
        }
        drop(answer);
        if calls.is_empty() || matches!(finish, Some(FinishReason::Aborted | FinishReason::Error)) {
            break;
        }
        let calls = calls.take();
        if round == MAX_TOOL_ROUNDS {
            error = Some(format!(
                "the model asked for tools more than {MAX_TOOL_ROUNDS} times"
            ));
            finish = Some(FinishReason::Error);
            break;
        }
        let mut results = Vec::with_capacity(calls.len());
        for call in &calls {
            let result = tools::run(env, &ex.tools, call).await;
            functions_called
                .push(json!({"name": call.name, "arguments": call.arguments, "content": result}));
            results.push(result);
        }
        messages.extend(follow_up_messages(&round_text, &calls, &results));
        let call = ModelCall {
            prompt: &ex.prompt,
            model: ex.model,
            temperature: ex.agent.config.meta.temperature.unwrap_or(0.2),
            extra: tools_offer(&ex.tools),
            messages: Some(messages.clone()),
        };
        finish = None;
        answer = match providers::open(env, &ex.provider, call).await {
            Ok(next) => next,
            Err(err) => {
                error = Some(err.to_string());
                finish = Some(FinishReason::Error);
                break;
            }
        };
    }
    Outcome {
        text,
        finish: finish.unwrap_or(FinishReason::Stop),
        usage,
        error,
        cited: (0..ex.prompt.sources_used).collect(),
        functions_called,
    }
}

/// Streams the answer to `out`, then stores the message. Returns the stored message.
pub async fn deliver(
    store: &Store,
    env: &Env,
    ex: Exchange,
    source: AnswerSource,
    out: Output,
) -> ApiResult<Message> {
    let citations_on = ex.chatbot.settings.show_citations;
    out.event(
        "start",
        json!({"message_uuid": ex.message_uuid, "session_uuid": ex.session.uuid, "agent_uuid": ex.agent.uuid}),
    )
    .await;
    let outcome = match source {
        AnswerSource::Composed(c) => relay_composed(c, &out).await,
        AnswerSource::Upstream(u) => relay_upstream(env, &ex, u, &out).await,
    };
    let cite = cite_data(&ex.ranked, &outcome.cited);
    let usage = outcome.usage.unwrap_or_else(|| {
        let prompt_tokens = ex.prompt.prompt_tokens as u64;
        let completion_tokens = estimate_tokens(&outcome.text) as u64;
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
        }
    });
    if outcome.finish != FinishReason::Aborted {
        if let Some(error) = &outcome.error {
            worker::console_error!("model stream failed midway: {error}");
            out.event(
                "error",
                json!({"code": "upstream_error", "message": "The model stopped answering midway."}),
            )
            .await;
        }
        if citations_on && outcome.finish != FinishReason::Error {
            out.event("citations", cite.clone()).await;
        }
        out.event(
            "end",
            json!({"message_uuid": ex.message_uuid, "finish_reason": outcome.finish.as_str(), "usage": usage}),
        )
        .await;
    }
    out.close().await;

    let now = time::now();
    let message = Message {
        uuid: ex.message_uuid.clone(),
        kind: MessageKind::Answer,
        session_uuid: ex.session.uuid.clone(),
        chatbot_uuid: ex.chatbot.uuid.clone(),
        started_ms: ex.started_ms,
        query: ex.query.clone(),
        response: outcome.text,
        finish_reason: outcome.finish,
        cite_data: cite,
        meta: json!({
            "agent": {"uuid": ex.agent.uuid, "name": ex.agent.config.name},
            "model": ex.model.name,
            "provider": ex.provider.name(),
            "functions_called": outcome.functions_called,
            "usage": usage,
        }),
        created_at: ex.created_at.clone(),
        modified_at: now,
    };
    store.insert_message(&message).await?;
    if ex.escalation_reply.is_some() {
        let request = json!({
            "requested": true,
            "requested_at": message.created_at,
            "message_uuid": message.uuid,
            "agent_uuid": ex.agent.uuid,
        });
        store
            .set_session_meta(
                &ex.session.uuid,
                "human_escalation",
                &request,
                &message.modified_at,
            )
            .await?;
    }
    Ok(message)
}

/// What a model is asked when it judges tags: one call per background agent.
fn judging_messages(tags: &[Tag], user_message: &str, answer: &str) -> Vec<Value> {
    let list: String = tags
        .iter()
        .map(|t| format!("- {}: {}\n", t.name, t.criteria))
        .collect();
    vec![
        json!({"role": "system", "content": "You label support conversations. Reply with JSON only: {\"tags\": [names]}, listing the tags whose criteria the conversation meets, or an empty list."}),
        json!({"role": "user", "content": format!("Tags and their criteria:\n{list}\nConversation:\nUser: {user_message}\nAssistant: {answer}")}),
    ]
}

/// Tag names out of a model's reply, which should be `{"tags": [...]}` but may be wrapped in
/// prose or a code fence.
pub fn parse_judged_tags(reply: &str) -> Option<Vec<String>> {
    let start = reply.find('{')?;
    let end = reply.rfind('}')?;
    let value: Value = serde_json::from_str(reply.get(start..=end)?).ok()?;
    Some(
        value
            .get("tags")?
            .as_array()?
            .iter()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect(),
    )
}

async fn judge_with_model(
    env: &Env,
    provider: &Provider,
    model: &'static ModelInfo,
    tags: &[Tag],
    message: &Message,
) -> Option<Vec<String>> {
    let prompt = Prompt {
        system: String::new(),
        history: Vec::new(),
        query: String::new(),
        sources_used: 0,
        prompt_tokens: 0,
        answer_tokens: 200,
    };
    let call = ModelCall {
        prompt: &prompt,
        model,
        temperature: 0.0,
        extra: None,
        messages: Some(judging_messages(tags, &message.query, &message.response)),
    };
    let mut answer = providers::open(env, provider, call).await.ok()?;
    let mut text = String::new();
    while let Some(Ok(event)) = answer.next().await {
        match event {
            CompletionEvent::Text(t) => text.push_str(&t),
            CompletionEvent::Done => break,
            _ => {}
        }
    }
    parse_judged_tags(&text)
}

/// After an answer: every enabled background agent judges the exchange against its tags and
/// the matches are recorded on the session (`meta.tags`, each with the message that earned it).
pub async fn tag_session(
    env: &Env,
    store: &Store,
    agents: &[Agent],
    message: &Message,
) -> ApiResult<usize> {
    let mut added = 0;
    for agent in agents
        .iter()
        .filter(|a| a.config.agent_type == AgentType::Background && a.config.enabled)
    {
        let tags = agent.config.meta.tags.clone().unwrap_or_default();
        if tags.is_empty() {
            continue;
        }
        let model = agent_model(agent);
        let provider = providers::provider_for(env, model);
        let judged = match &provider {
            Provider::Builtin => None,
            p => judge_with_model(env, p, model, &tags, message).await,
        };
        // Without a provider, or when its reply cannot be read, text similarity decides.
        let matched: Vec<&Tag> = match judged {
            Some(names) => tags
                .iter()
                .filter(|t| names.iter().any(|n| n.eq_ignore_ascii_case(&t.name)))
                .collect(),
            None => tags
                .iter()
                .filter(|t| matches_criteria(&t.criteria, &message.query, &message.response))
                .collect(),
        };
        for tag in matched {
            let now = time::now();
            let record = json!({
                "name": tag.name,
                "color": tag.color,
                "agent_uuid": agent.uuid,
                "message_uuid": message.uuid,
                "tagged_at": now,
            });
            if store
                .add_session_tag(&message.session_uuid, &record, &now)
                .await?
            {
                added += 1;
            }
        }
    }
    Ok(added)
}
