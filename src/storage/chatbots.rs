use super::{changes, flag, Arg, Owner, Store};
use edgechat_core::domain::agent::Agent;
use edgechat_core::domain::chatbot::{Chatbot, ChatbotSettings};
use edgechat_core::api::error::{ApiError, ApiResult};
use serde::Deserialize;

#[derive(Deserialize)]
pub(super) struct ChatbotRow {
    uuid: String,
    name: String,
    visibility: String,
    rate_limit_count: i64,
    rate_limit_window: i64,
    rate_limit_message: String,
    show_citations: i64,
    allowed_origins_json: String,
    created_at: String,
    modified_at: String,
}

impl From<ChatbotRow> for Chatbot {
    fn from(r: ChatbotRow) -> Self {
        // Written only by `update_chatbot`/`insert_chatbot` from validated origins.
        let allowed_origins = serde_json::from_str(&r.allowed_origins_json).unwrap_or_default();
        Chatbot {
            uuid: r.uuid,
            created_at: r.created_at,
            modified_at: r.modified_at,
            settings: ChatbotSettings {
                name: r.name,
                visibility: r.visibility,
                rate_limit_count: r.rate_limit_count,
                rate_limit_window: r.rate_limit_window,
                rate_limit_message: r.rate_limit_message,
                show_citations: r.show_citations != 0,
                allowed_origins,
            },
        }
    }
}

pub(super) const CHATBOT_COLUMNS: &str =
    "uuid, name, visibility, rate_limit_count, rate_limit_window, \
     rate_limit_message, show_citations, allowed_origins_json, created_at, modified_at";

impl Store {
    /// Creates a chatbot and its first agent together: a chatbot never exists without it.
    /// `false` when the owner is a key that names no account: then nothing is stored.
    pub async fn insert_chatbot(
        &self,
        owner: Owner<'_>,
        chatbot: &Chatbot,
        first_agent: &Agent,
    ) -> ApiResult<bool> {
        let s = &chatbot.settings;
        let account = match owner {
            Owner::Account(_) => "?2",
            Owner::KeyHash(_) => "(SELECT account_uuid FROM api_keys WHERE key_hash = ?2)",
        };
        let origins = serde_json::to_string(&s.allowed_origins)?;
        let insert_chatbot = self.statement(
            &format!(
                "INSERT INTO chatbots (uuid, account_uuid, name, visibility, rate_limit_count, rate_limit_window, \
                 rate_limit_message, show_citations, created_at, modified_at, allowed_origins_json) \
                 SELECT ?1, a, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11 FROM (SELECT {account} AS a) WHERE a IS NOT NULL"
            ),
            &[
                Arg::Text(&chatbot.uuid),
                owner.arg(),
                Arg::Text(&s.name),
                Arg::Text(&s.visibility),
                Arg::Int(s.rate_limit_count),
                Arg::Int(s.rate_limit_window),
                Arg::Text(&s.rate_limit_message),
                Arg::Int(flag(s.show_citations)),
                Arg::Text(&chatbot.created_at),
                Arg::Text(&chatbot.modified_at),
                Arg::Text(&origins),
            ],
        )?;
        let insert_agent = self.insert_agent_statement(first_agent)?;
        let results = self
            .batch(vec![insert_chatbot, insert_agent], || {
                ApiError::Conflict("A chatbot with that uuid already exists.".into())
            })
            .await?;
        Ok(results.first().is_some_and(|r| changes(r) == 1))
    }

    pub async fn get_chatbot(&self, account_uuid: &str, uuid: &str) -> ApiResult<Option<Chatbot>> {
        self.get_owned_chatbot(Owner::Account(account_uuid), uuid)
            .await
    }

    pub async fn get_owned_chatbot(
        &self,
        owner: Owner<'_>,
        uuid: &str,
    ) -> ApiResult<Option<Chatbot>> {
        let row: Option<ChatbotRow> = self
            .row(
                &format!(
                    "SELECT {CHATBOT_COLUMNS} FROM chatbots WHERE uuid = ?1 AND {}",
                    owner.test("account_uuid", 2)
                ),
                &[Arg::Text(uuid), owner.arg()],
            )
            .await?;
        Ok(row.map(Chatbot::from))
    }

    pub async fn list_chatbots(&self, account_uuid: &str) -> ApiResult<Vec<Chatbot>> {
        let rows: Vec<ChatbotRow> = self
            .rows(
                &format!("SELECT {CHATBOT_COLUMNS} FROM chatbots WHERE account_uuid = ?1 ORDER BY created_at, rowid"),
                &[Arg::Text(account_uuid)],
            )
            .await?;
        Ok(rows.into_iter().map(Chatbot::from).collect())
    }

    pub async fn update_chatbot(&self, account_uuid: &str, chatbot: &Chatbot) -> ApiResult<bool> {
        let s = &chatbot.settings;
        let origins = serde_json::to_string(&s.allowed_origins)?;
        let changed = self
            .execute(
                "UPDATE chatbots SET name = ?1, visibility = ?2, rate_limit_count = ?3, rate_limit_window = ?4, \
                 rate_limit_message = ?5, show_citations = ?6, modified_at = ?7, allowed_origins_json = ?10 \
                 WHERE uuid = ?8 AND account_uuid = ?9",
                &[
                    Arg::Text(&s.name),
                    Arg::Text(&s.visibility),
                    Arg::Int(s.rate_limit_count),
                    Arg::Int(s.rate_limit_window),
                    Arg::Text(&s.rate_limit_message),
                    Arg::Int(flag(s.show_citations)),
                    Arg::Text(&chatbot.modified_at),
                    Arg::Text(&chatbot.uuid),
                    Arg::Text(account_uuid),
                    Arg::Text(&origins),
                ],
            )
            .await?;
        Ok(changed > 0)
    }

    /// Deletes a chatbot and, through the schema's cascades, every row it owns.
    pub async fn delete_chatbot(&self, account_uuid: &str, uuid: &str) -> ApiResult<bool> {
        let changed = self
            .execute(
                "DELETE FROM chatbots WHERE uuid = ?1 AND account_uuid = ?2",
                &[Arg::Text(uuid), Arg::Text(account_uuid)],
            )
            .await?;
        Ok(changed > 0)
    }
}
