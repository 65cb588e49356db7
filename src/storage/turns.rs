//! What one chat turn reads before its answer can start, in a single D1 round trip: every
//! read here used to be its own query, and each sat between the question and the first token.

use super::agents::{AgentRow, AGENT_COLUMNS};
use super::chatbots::{ChatbotRow, CHATBOT_COLUMNS};
use super::data_sources::{PhraseFrequency, PHRASE_FREQUENCY_SQL};
use super::sessions::{MessageRow, SessionRow, MESSAGE_COLUMNS, SESSION_COLUMNS};
use super::tool_functions::{by_agent, ToolRow, TOOL_COLUMNS};

use super::{Arg, Store};
use crate::domain::agent::Agent;
use crate::domain::chatbot::Chatbot;
use crate::domain::session::{Message, Session};
use crate::domain::tool_function::ToolFunction;
use crate::error::{ApiError, ApiResult};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use worker::D1Result;

pub struct TurnContext {
    pub session: Session,
    pub chatbot: Chatbot,
    /// Every agent of the chatbot, oldest first.
    pub agents: Vec<Agent>,
    /// The session's newest messages, oldest first.
    pub history: Vec<Message>,
    /// Tool functions of the chatbot's agents, by agent uuid.
    pub tools: HashMap<String, Vec<ToolFunction>>,
    /// Index-wide match counts of the query's phrases; empty when none were asked for.
    pub phrase_frequencies: Vec<i64>,
}

/// The chatbot of the session `?1`, when that chatbot belongs to the account `?2`. Every
/// statement of the batch is scoped by it, so another account's session reads nothing.
const OWNED_CHATBOT: &str = "(SELECT os.chatbot_uuid FROM sessions os JOIN chatbots oc \
     ON oc.uuid = os.chatbot_uuid WHERE os.uuid = ?1 AND oc.account_uuid = ?2)";

fn rows<T: DeserializeOwned>(results: &[D1Result], index: usize) -> ApiResult<Vec<T>> {
    let result = results
        .get(index)
        .ok_or_else(|| ApiError::internal("a D1 batch answered fewer results than statements"))?;
    if let Some(error) = result.error() {
        return Err(ApiError::internal(format!("D1 query failed: {error}")));
    }
    Ok(result.results::<T>()?)
}

impl Store {
    /// The session (if `account_uuid` owns it), its chatbot, the chatbot's agents and tool
    /// functions, the session's newest `history_limit` messages and, when `phrases` holds
    /// more than one phrase, how common each is in the index.
    pub async fn turn_context(
        &self,
        account_uuid: &str,
        session_uuid: &str,
        history_limit: usize,
        phrases: &[String],
    ) -> ApiResult<Option<TurnContext>> {
        let owner = [Arg::Text(session_uuid), Arg::Text(account_uuid)];
        let mut statements = vec![
            self.statement(
                &format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions s JOIN chatbots c ON c.uuid = s.chatbot_uuid \
                     WHERE s.uuid = ?1 AND c.account_uuid = ?2"
                ),
                &owner,
            )?,
            self.statement(
                &format!("SELECT {CHATBOT_COLUMNS} FROM chatbots WHERE uuid = {OWNED_CHATBOT}"),
                &owner,
            )?,
            self.statement(
                &format!(
                    "SELECT {AGENT_COLUMNS} FROM agents a WHERE a.chatbot_uuid = {OWNED_CHATBOT} \
                     ORDER BY a.created_at, a.rowid"
                ),
                &owner,
            )?,
            self.statement(
                &format!(
                    "SELECT {TOOL_COLUMNS} FROM tool_functions t JOIN agents a ON a.uuid = t.agent_uuid \
                     WHERE a.chatbot_uuid = {OWNED_CHATBOT} ORDER BY t.created_at, t.rowid"
                ),
                &owner,
            )?,
            self.statement(
                &format!(
                    "SELECT * FROM (SELECT {MESSAGE_COLUMNS}, m.rowid AS rid FROM messages m \
                     WHERE m.session_uuid = ?1 AND m.chatbot_uuid = {OWNED_CHATBOT} \
                     ORDER BY m.started_ms DESC, m.rowid DESC LIMIT ?3) ORDER BY started_ms, rid"
                ),
                &[
                    Arg::Text(session_uuid),
                    Arg::Text(account_uuid),
                    Arg::Int(history_limit as i64),
                ],
            )?,
        ];
        let count_phrases = phrases.len() > 1;
        if count_phrases {
            let list = serde_json::to_string(phrases)?;
            statements.push(self.statement(PHRASE_FREQUENCY_SQL, &[Arg::Text(&list)])?);
        }
        let results = self
            .batch(statements, || ApiError::internal("a read conflicted"))
            .await?;

        let Some(session) = rows::<SessionRow>(&results, 0)?.into_iter().next() else {
            return Ok(None);
        };
        let Some(chatbot) = rows::<ChatbotRow>(&results, 1)?.into_iter().next() else {
            return Ok(None);
        };
        let agents = rows::<AgentRow>(&results, 2)?
            .into_iter()
            .map(Agent::try_from)
            .collect::<ApiResult<Vec<_>>>()?;
        let tools = by_agent(rows::<ToolRow>(&results, 3)?)?;
        let history = rows::<MessageRow>(&results, 4)?
            .into_iter()
            .map(Message::try_from)
            .collect::<ApiResult<Vec<_>>>()?;
        let phrase_frequencies = if count_phrases {
            rows::<PhraseFrequency>(&results, 5)?
                .into_iter()
                .map(|f| f.n)
                .collect()
        } else {
            Vec::new()
        };
        Ok(Some(TurnContext {
            session: Session::try_from(session)?,
            chatbot: Chatbot::from(chatbot),
            agents,
            history,
            tools,
            phrase_frequencies,
        }))
    }
}
