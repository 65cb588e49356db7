//! What one chat turn reads before its answer can start, in a single D1 round trip: every
//! read here used to be its own query, and each sat between the question and the first token.

use super::agents::{AgentRow, AGENT_COLUMNS};
use super::chatbots::{ChatbotRow, CHATBOT_COLUMNS};
use super::data_sources::phrase_counts;
use super::sessions::{MessageRow, SessionRow, MESSAGE_COLUMNS, SESSION_COLUMNS};
use super::tool_functions::{by_agent, ToolRow, TOOL_COLUMNS};

use super::{batch_rows, Arg, Owner, Store};
use crate::domain::agent::Agent;
use crate::domain::chatbot::Chatbot;
use crate::domain::session::{Message, Session};
use crate::domain::tool_function::ToolFunction;
use crate::error::{ApiError, ApiResult};
use std::collections::HashMap;

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

/// The chatbot of the session `?1`, when that chatbot belongs to the owner bound as `?2`.
/// Every statement of the batch is scoped by it, so another account's session reads nothing.
fn owned_chatbot(owner: Owner) -> String {
    format!(
        "(SELECT os.chatbot_uuid FROM sessions os JOIN chatbots oc ON oc.uuid = os.chatbot_uuid \
         WHERE os.uuid = ?1 AND {})",
        owner.test("oc.account_uuid", 2)
    )
}

impl Store {
    /// The session (if `owner` owns it), its chatbot, the chatbot's agents and tool
    /// functions, the session's newest `history_limit` messages and, when `phrases` holds
    /// more than one phrase, how common each is in the index.
    pub async fn turn_context(
        &self,
        owner: Owner<'_>,
        session_uuid: &str,
        history_limit: usize,
        phrases: &[String],
    ) -> ApiResult<Option<TurnContext>> {
        let chatbot_of_session = owned_chatbot(owner);
        let args = [Arg::Text(session_uuid), owner.arg()];
        let mut statements = vec![
            self.statement(
                &format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions s JOIN chatbots c ON c.uuid = s.chatbot_uuid \
                     WHERE s.uuid = ?1 AND {}",
                    owner.test("c.account_uuid", 2)
                ),
                &args,
            )?,
            self.statement(
                &format!("SELECT {CHATBOT_COLUMNS} FROM chatbots WHERE uuid = {chatbot_of_session}"),
                &args,
            )?,
            self.statement(
                &format!(
                    "SELECT {AGENT_COLUMNS} FROM agents a WHERE a.chatbot_uuid = {chatbot_of_session} \
                     ORDER BY a.created_at, a.rowid"
                ),
                &args,
            )?,
            self.statement(
                &format!(
                    "SELECT {TOOL_COLUMNS} FROM tool_functions t JOIN agents a ON a.uuid = t.agent_uuid \
                     WHERE a.chatbot_uuid = {chatbot_of_session} ORDER BY t.created_at, t.rowid"
                ),
                &args,
            )?,
            self.statement(
                &format!(
                    "SELECT * FROM (SELECT {MESSAGE_COLUMNS}, m.rowid AS rid FROM messages m \
                     WHERE m.session_uuid = ?1 AND m.chatbot_uuid = {chatbot_of_session} \
                     ORDER BY m.started_ms DESC, m.rowid DESC LIMIT ?3) ORDER BY started_ms, rid"
                ),
                &[
                    Arg::Text(session_uuid),
                    owner.arg(),
                    Arg::Int(history_limit as i64),
                ],
            )?,
        ];
        let counting = self.phrase_count_statement(phrases)?;
        let count_index = counting.is_some().then_some(statements.len());
        statements.extend(counting);
        let results = self
            .batch(statements, || ApiError::internal("a read conflicted"))
            .await?;

        let Some(session) = batch_rows::<SessionRow>(&results, 0)?.into_iter().next() else {
            return Ok(None);
        };
        let Some(chatbot) = batch_rows::<ChatbotRow>(&results, 1)?.into_iter().next() else {
            return Ok(None);
        };
        let agents = batch_rows::<AgentRow>(&results, 2)?
            .into_iter()
            .map(Agent::try_from)
            .collect::<ApiResult<Vec<_>>>()?;
        let tools = by_agent(batch_rows::<ToolRow>(&results, 3)?)?;
        let history = batch_rows::<MessageRow>(&results, 4)?
            .into_iter()
            .map(Message::try_from)
            .collect::<ApiResult<Vec<_>>>()?;
        let phrase_frequencies = phrase_counts(&results, count_index)?;
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
