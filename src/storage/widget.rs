//! What site visitors reach: a chatbot by uuid alone (a visitor knows no account), and the
//! sessions a visitor created, bound to the visitor's id.

use super::chatbots::{ChatbotRow, CHATBOTS};
use super::sessions::{SessionRow, SESSIONS};
use super::{Arg, Store};
use edgechat_core::api::error::ApiResult;
use edgechat_core::domain::chatbot::Chatbot;
use edgechat_core::domain::session::Session;

impl Store {
    /// A chatbot of any account, and that account. Only for visitor traffic, where the
    /// chatbot's visibility decides; account traffic goes through `get_chatbot`.
    pub async fn chatbot_for_visitors(&self, uuid: &str) -> ApiResult<Option<(Chatbot, String)>> {
        let row: Option<ChatbotRow> = self
            .row(
                &format!(
                    "SELECT {} FROM chatbots WHERE uuid = ?1",
                    CHATBOTS.select("")
                ),
                &[Arg::Text(uuid)],
            )
            .await?;
        Ok(row.map(|row| {
            let account = row.account_uuid.clone();
            (Chatbot::from(row), account)
        }))
    }

    /// The chatbot a session belongs to (a CORS preflight names only the session).
    pub async fn chatbot_of_session(&self, session_uuid: &str) -> ApiResult<Option<Chatbot>> {
        let row: Option<ChatbotRow> = self
            .row(
                &format!(
                    "SELECT {} FROM chatbots WHERE uuid = \
                     (SELECT chatbot_uuid FROM sessions WHERE uuid = ?1)",
                    CHATBOTS.select("")
                ),
                &[Arg::Text(session_uuid)],
            )
            .await?;
        Ok(row.map(Chatbot::from))
    }

    /// The chatbot a message belongs to, whoever owns it (for CORS preflights).
    pub async fn chatbot_of_message(&self, message_uuid: &str) -> ApiResult<Option<Chatbot>> {
        let row: Option<ChatbotRow> = self
            .row(
                &format!(
                    "SELECT {} FROM chatbots WHERE uuid = \
                     (SELECT chatbot_uuid FROM messages WHERE uuid = ?1)",
                    CHATBOTS.select("")
                ),
                &[Arg::Text(message_uuid)],
            )
            .await?;
        Ok(row.map(Chatbot::from))
    }

    /// A session, if `visitor_id` created it on `chatbot_uuid`.
    pub async fn get_visitor_session(
        &self,
        chatbot_uuid: &str,
        visitor_id: &str,
        uuid: &str,
    ) -> ApiResult<Option<Session>> {
        let row: Option<SessionRow> = self
            .row(
                &format!(
                    "SELECT {} FROM sessions s \
                     WHERE s.uuid = ?1 AND s.chatbot_uuid = ?2 AND s.visitor_id = ?3",
                    SESSIONS.select("s")
                ),
                &[
                    Arg::Text(uuid),
                    Arg::Text(chatbot_uuid),
                    Arg::Text(visitor_id),
                ],
            )
            .await?;
        row.map(Session::try_from).transpose()
    }
}
