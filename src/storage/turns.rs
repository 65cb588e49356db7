//! What one chat turn reads before its answer can start, in a single D1 round trip: every
//! read here used to be its own query, and each sat between the question and the first token.

use super::agents::agents_and_tools;
use super::api_keys::{KeyOwner, KeyOwnerRow};
use super::chatbots::{ChatbotRow, CHATBOTS};
use super::sessions::{MessageRow, SessionRow, MESSAGES, SESSIONS};

use super::{batch_rows, Arg, ChunkSearch, Owner, SearchFound, Store, ToolsByAgent};
use edgechat_core::api::error::ApiResult;
use edgechat_core::domain::agent::Agent;
use edgechat_core::domain::chatbot::Chatbot;
use edgechat_core::domain::session::{Message, Session};

pub struct TurnContext {
    pub session: Session,
    pub chatbot: Chatbot,
    /// Every agent of the chatbot, oldest first.
    pub agents: Vec<Agent>,
    /// The session's newest messages, oldest first.
    pub history: Vec<Message>,
    /// Tool functions of the chatbot's agents, by agent uuid.
    pub tools: ToolsByAgent,
    /// What the search sent with the batch found, when one was.
    pub searched: Option<SearchFound>,
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

/// Where each read stands in the batch `turn_context` sends.
const SESSION: usize = 0;
const CHATBOT: usize = 1;
const HISTORY: usize = 2;
/// The agents, then their tool functions.
const AGENTS: usize = 3;

impl Store {
    /// The session (if `owner` owns it), its chatbot, the chatbot's agents and tool
    /// functions and the session's newest `history_limit` messages; with `search` (scoped
    /// `SearchIn::SessionOf` this session and owner), what it finds, in the same round trip.
    /// For `Owner::KeyHolder`, that key's row (`key_owner`) comes in the round trip too, so
    /// the key is checked without a read of its own; the context is then only to be used once
    /// the key has passed its checks.
    pub async fn turn_context(
        &self,
        owner: Owner<'_>,
        (session_uuid, history_limit): (&str, usize),
        search: Option<&ChunkSearch<'_>>,
    ) -> ApiResult<(Option<KeyOwner>, Option<TurnContext>)> {
        let chatbot_of_session = owned_chatbot(owner);
        let args = [Arg::Text(session_uuid), owner.arg()];
        let mut statements = vec![
            self.statement(
                &format!(
                    "SELECT {} FROM sessions s JOIN chatbots c ON c.uuid = s.chatbot_uuid \
                     WHERE s.uuid = ?1 AND {}",
                    SESSIONS.select("s"),
                    owner.test("c.account_uuid", 2)
                ),
                &args,
            )?,
            self.statement(
                &format!(
                    "SELECT {} FROM chatbots WHERE uuid = {chatbot_of_session}",
                    CHATBOTS.select("")
                ),
                &args,
            )?,
            self.statement(
                &format!(
                    "SELECT * FROM (SELECT {}, m.rowid AS rid FROM messages m \
                     WHERE m.session_uuid = ?1 AND m.chatbot_uuid = {chatbot_of_session} \
                     ORDER BY m.started_ms DESC, m.rowid DESC LIMIT ?3) ORDER BY started_ms, rid",
                    MESSAGES.select("m")
                ),
                &[
                    Arg::Text(session_uuid),
                    owner.arg(),
                    Arg::Int(history_limit as i64),
                ],
            )?,
        ];
        statements.extend(self.agents_and_tools_statements(&chatbot_of_session, &args)?);
        let search_at = statements.len();
        let searching = match search {
            Some(search) => self.search_statement_for_batch(search)?,
            None => None,
        };
        let searched = searching.is_some();
        statements.extend(searching);
        let key_at = statements.len();
        if let Owner::KeyHolder(hash) = owner {
            statements.push(self.key_owner_statement(hash)?);
        }
        let results = self.read_batch(statements).await?;
        let key = match owner {
            Owner::KeyHolder(_) => batch_rows::<KeyOwnerRow>(&results, key_at)?
                .into_iter()
                .next()
                .map(KeyOwner::from),
            Owner::Account(_) => None,
        };

        let Some(session) = batch_rows::<SessionRow>(&results, SESSION)?
            .into_iter()
            .next()
        else {
            return Ok((key, None));
        };
        let Some(chatbot) = batch_rows::<ChatbotRow>(&results, CHATBOT)?
            .into_iter()
            .next()
        else {
            return Ok((key, None));
        };
        let (agents, tools) = agents_and_tools(&results, AGENTS)?;
        let history = batch_rows::<MessageRow>(&results, HISTORY)?
            .into_iter()
            .map(Message::try_from)
            .collect::<ApiResult<Vec<_>>>()?;
        Ok((
            key,
            Some(TurnContext {
                session: Session::try_from(session)?,
                chatbot: Chatbot::from(chatbot),
                agents,
                history,
                tools,
                searched: match search {
                    Some(_) if !searched => Some(SearchFound::default()),
                    Some(_) => Some(SearchFound::from_results(&results, search_at)?),
                    None => None,
                },
            }),
        ))
    }
}
