use super::table::{table, Sql};
use super::{changes, flag, Arg, Owner, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::agent::Agent;
use edgechat_core::domain::chatbot::{Chatbot, ChatbotSettings, Visibility};

table! {
    pub(super) struct ChatbotRow in CHATBOTS = "chatbots" {
        key uuid: String,
        fixed account_uuid: String,
        set name: String,
        set visibility: Visibility,
        set rate_limit_count: i64,
        set rate_limit_window: i64,
        set rate_limit_message: String,
        set show_citations: i64,
        fixed created_at: String,
        set modified_at: String,
        set allowed_origins_json: String,
        set visitor_rate_limit_count: Option<i64>,
        set visitor_rate_limit_window: Option<i64>,
    }
}

impl ChatbotRow {
    /// The row for `chatbot`, owned by `account_uuid` (on insert: whatever the owner binds).
    fn new(chatbot: &Chatbot, account_uuid: &str) -> ApiResult<Self> {
        let s = &chatbot.settings;
        Ok(ChatbotRow {
            uuid: chatbot.uuid.clone(),
            account_uuid: account_uuid.to_string(),
            name: s.name.clone(),
            visibility: s.visibility,
            rate_limit_count: s.rate_limit_count,
            rate_limit_window: s.rate_limit_window,
            rate_limit_message: s.rate_limit_message.clone(),
            show_citations: flag(s.show_citations),
            created_at: chatbot.created_at.clone(),
            modified_at: chatbot.modified_at.clone(),
            allowed_origins_json: serde_json::to_string(&s.allowed_origins)?,
            visitor_rate_limit_count: s.visitor_rate_limit.map(|(count, _)| count),
            visitor_rate_limit_window: s.visitor_rate_limit.map(|(_, window)| window),
        })
    }
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
                visitor_rate_limit: r.visitor_rate_limit_count.zip(r.visitor_rate_limit_window),
            },
        }
    }
}

impl Store {
    /// Creates a chatbot and its first agent together: a chatbot never exists without it.
    /// `false` when the owner is a key that names no account: then nothing is stored.
    pub async fn insert_chatbot(
        &self,
        owner: Owner<'_>,
        chatbot: &Chatbot,
        first_agent: &Agent,
    ) -> ApiResult<bool> {
        // The owner's value goes where the account does; the statement turns a key into its
        // account and inserts nothing when there is none.
        let row = ChatbotRow::new(chatbot, owner.value())?;
        let mut insert = Sql::insert_select(&row, &[("account_uuid", "a")]);
        let account = owner.account(&insert.param("account_uuid"));
        insert.push(&format!(
            " FROM (SELECT {account} AS a) WHERE a IS NOT NULL"
        ));
        let insert_chatbot = self.prepare(&insert)?;
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
                    "SELECT {} FROM chatbots WHERE uuid = ?1 AND {}",
                    CHATBOTS.select(""),
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
                &format!(
                    "SELECT {} FROM chatbots WHERE account_uuid = ?1 ORDER BY created_at, rowid",
                    CHATBOTS.select("")
                ),
                &[Arg::Text(account_uuid)],
            )
            .await?;
        Ok(rows.into_iter().map(Chatbot::from).collect())
    }

    /// Writes what `after` changed of `before` (`Sql::update_changed`).
    pub async fn update_chatbot(
        &self,
        account_uuid: &str,
        before: &Chatbot,
        after: &Chatbot,
    ) -> ApiResult<bool> {
        let was = ChatbotRow::new(before, account_uuid)?;
        let row = ChatbotRow::new(after, account_uuid)?;
        let patches = Sql::json_patches(&was, &row);
        let mut update = Sql::update_changed(&was, &row, &patches);
        let account = update.bind(Arg::Text(account_uuid));
        update.push(&format!(" AND account_uuid = {account}"));
        let changed = self.execute(update.text(), update.args()).await?;
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
