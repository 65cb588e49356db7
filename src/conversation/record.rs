//! Storing an exchange: the message is written exactly once, when the answer has ended
//! (finished, cut off, failed midway or abandoned by its reader), and a request for a person is
//! noted on the session.

use super::relay::Outcome;
use super::Exchange;
use crate::storage::Store;
use edgechat_core::api::error::ApiResult;
use edgechat_core::chat::answered::{decide, Answerer};
use edgechat_core::chat::completion::Usage;
use edgechat_core::chat::wire::cite_data;
use edgechat_core::domain::session::{FinishReason, Message, MessageKind};
use edgechat_core::knowledge::tokens::estimate_tokens;
use edgechat_core::time;
use serde_json::json;

/// Whether the sources held an answer to the exchange's question: the one place a turn's
/// `answered` flag is decided (the rules are in `edgechat_core::chat::answered`).
pub fn answered(ex: &Exchange, outcome: &Outcome) -> bool {
    // The built-in engine says so itself, from the same evidence it answered from.
    if let Some(flag) = outcome.answered {
        return flag;
    }
    let answerer = if ex.escalation_reply.is_some() {
        Answerer::Escalation
    } else if ex.provider.is_model() {
        Answerer::Model
    } else {
        Answerer::Engine
    };
    // A tool's result (not its failure) is something found for the question, as a source's
    // passage is.
    let tool_answered = outcome.functions_called.iter().any(|call| {
        call["content"]
            .as_str()
            .is_some_and(|c| !super::tools::failed(c))
    });
    decide(
        answerer,
        &ex.query,
        (&ex.ranked, tool_answered),
        (&outcome.text, outcome.finish),
    )
}

/// The message an exchange ends as. Usage is the provider's count, else an estimate.
pub fn message(ex: &Exchange, outcome: &Outcome) -> Message {
    written(ex, outcome, Some(answered(ex, outcome)))
}

/// The message as stored, with `answered` as decided (`None` until the answer ends).
fn written(ex: &Exchange, outcome: &Outcome, answered: Option<bool>) -> Message {
    let usage = outcome.usage.unwrap_or_else(|| {
        let prompt_tokens = ex.prompt.prompt_tokens as u64;
        let completion_tokens = estimate_tokens(&outcome.text) as u64;
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
        }
    });
    Message {
        uuid: ex.message_uuid.clone(),
        kind: MessageKind::Answer,
        session_uuid: ex.session.uuid.clone(),
        chatbot_uuid: ex.chatbot.uuid.clone(),
        started_ms: ex.started_ms,
        query: ex.query.clone(),
        response: outcome.text.clone(),
        finish_reason: outcome.finish,
        cite_data: cite_data(&ex.ranked, &outcome.cited),
        meta: json!({
            "agent": {"uuid": ex.agent.uuid, "name": ex.agent.config.name},
            "model": ex.model.name,
            "provider": ex.provider.name(),
            "functions_called": outcome.functions_called,
            "usage": usage,
            "answered": answered,
        }),
        answered,
        feedback: None,
        created_at: ex.created_at.clone(),
        modified_at: time::now(),
    }
}

/// The record of an answer that has just started: no text yet, `finish_reason: streaming`.
pub fn started(ex: &Exchange) -> Message {
    let outcome = Outcome {
        text: String::new(),
        finish: FinishReason::Streaming,
        usage: None,
        error: None,
        cited: Vec::new(),
        functions_called: Vec::new(),
        answered: None,
    };
    // Whether the sources held an answer is known only at its end.
    written(ex, &outcome, None)
}

/// Stores the message (over its `started` record when `replace`), and on an escalation the
/// session's request for a person.
pub async fn store(
    store: &Store,
    ex: &Exchange,
    message: Message,
    replace: bool,
) -> ApiResult<Message> {
    if replace {
        store.complete_message(&message).await?;
    } else {
        store.insert_message(&message).await?;
    }
    if ex.escalation_reply.is_some() {
        let request = json!({
            "requested": true,
            "requested_at": message.created_at,
            "requested_times": ex.session.event_times("human_escalation", "requested_times", &message.created_at),
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
