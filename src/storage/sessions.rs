use super::table::{table, Sql};
use super::{changes, json_object as object, object_text, Arg, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::session::{
    FinishReason, Message, MessageKind, Session, SessionCursor, SessionPage,
};
use edgechat_core::knowledge::tokens::estimate_tokens;
use serde_json::Value;

table! {
    pub(super) struct SessionRow in SESSIONS = "sessions" {
        key uuid: String,
        fixed chatbot_uuid: String,
        fixed initial_variables_json: Option<String>,
        set meta_json: String,
        fixed created_at: String,
        set modified_at: String,
        computed seq: i64 = "{t}.rowid",
    }
}

impl From<&Session> for SessionRow {
    fn from(s: &Session) -> Self {
        SessionRow {
            // Read only: where the database stored it (`list_sessions`' cursor).
            seq: 0,
            uuid: s.uuid.clone(),
            chatbot_uuid: s.chatbot_uuid.clone(),
            initial_variables_json: s.initial_variables.as_ref().map(object_text),
            meta_json: object_text(&s.meta),
            created_at: s.created_at.clone(),
            modified_at: s.modified_at.clone(),
        }
    }
}

impl TryFrom<SessionRow> for Session {
    type Error = ApiError;

    fn try_from(r: SessionRow) -> ApiResult<Session> {
        Ok(Session {
            initial_variables: r
                .initial_variables_json
                .as_deref()
                .map(object)
                .transpose()?,
            meta: object(&r.meta_json)?,
            uuid: r.uuid,
            chatbot_uuid: r.chatbot_uuid,
            created_at: r.created_at,
            modified_at: r.modified_at,
        })
    }
}

table! {
    pub(super) struct MessageRow in MESSAGES = "messages" {
        key uuid: String,
        fixed kind: MessageKind,
        fixed session_uuid: String,
        fixed chatbot_uuid: String,
        fixed started_ms: i64,
        fixed query: String,
        fixed response: String,
        fixed finish_reason: FinishReason,
        fixed cite_data_json: String,
        fixed meta_json: String,
        fixed answered: Option<i64>,
        computed feedback_json: Option<String> = "(SELECT json_object('rating', f.rating, 'comment', f.comment, 'created_at', f.created_at, 'modified_at', f.modified_at) FROM message_feedback f WHERE f.message_uuid = {t}.uuid)",
        fixed created_at: String,
        fixed modified_at: String,
    }
}

impl From<&Message> for MessageRow {
    fn from(m: &Message) -> Self {
        MessageRow {
            uuid: m.uuid.clone(),
            kind: m.kind,
            session_uuid: m.session_uuid.clone(),
            chatbot_uuid: m.chatbot_uuid.clone(),
            started_ms: m.started_ms,
            query: m.query.clone(),
            response: m.response.clone(),
            finish_reason: m.finish_reason,
            cite_data_json: m.cite_data.to_string(),
            meta_json: m.meta.to_string(),
            answered: m.answered.map(i64::from),
            feedback_json: None,
            created_at: m.created_at.clone(),
            modified_at: m.modified_at.clone(),
        }
    }
}

impl TryFrom<MessageRow> for Message {
    type Error = ApiError;

    fn try_from(r: MessageRow) -> ApiResult<Message> {
        Ok(Message {
            kind: r.kind,
            cite_data: serde_json::from_str(&r.cite_data_json)?,
            meta: serde_json::from_str(&r.meta_json)?,
            answered: r.answered.map(|a| a != 0),
            feedback: r
                .feedback_json
                .as_deref()
                .map(serde_json::from_str)
                .transpose()?,
            uuid: r.uuid,
            session_uuid: r.session_uuid,
            chatbot_uuid: r.chatbot_uuid,
            started_ms: r.started_ms,
            query: r.query,
            response: r.response,
            finish_reason: r.finish_reason,
            created_at: r.created_at,
            modified_at: r.modified_at,
        })
    }
}

impl Store {
    /// Stores a session; `visitor_id` names the site visitor who opened it through the widget.
    pub async fn insert_session(&self, s: &Session, visitor_id: Option<&str>) -> ApiResult<()> {
        let row = SessionRow::from(s);
        let visitor = visitor_id.map_or(Arg::Null, Arg::Text);
        let insert = Sql::insert(&row, vec![("visitor_id", visitor)]);
        self.execute(insert.text(), insert.args()).await.map(|_| ())
    }

    /// A session, if its chatbot belongs to `account_uuid`.
    pub async fn get_session(&self, account_uuid: &str, uuid: &str) -> ApiResult<Option<Session>> {
        let row: Option<SessionRow> = self
            .row(
                &format!(
                    "SELECT {} FROM sessions s JOIN chatbots c ON c.uuid = s.chatbot_uuid \
                     WHERE s.uuid = ?1 AND c.account_uuid = ?2",
                    SESSIONS.select("s")
                ),
                &[Arg::Text(uuid), Arg::Text(account_uuid)],
            )
            .await?;
        row.map(Session::try_from).transpose()
    }

    /// Sessions of a chatbot created between `start` and `end` inclusive (either may be open),
    /// by creation time, then as stored: the `page`'s, and one more when there are more. Each
    /// comes with the cursor of the page after it: its creation time and its place in the
    /// stored order (`seq`), which stays meaningful when the session itself is deleted.
    pub async fn list_sessions(
        &self,
        chatbot_uuid: &str,
        (start, end): (Option<&str>, Option<&str>),
        page: &SessionPage,
    ) -> ApiResult<Vec<(Session, SessionCursor)>> {
        let after = page.after.as_ref();
        let rows: Vec<SessionRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM sessions s WHERE s.chatbot_uuid = ?1 \
                     AND (?2 IS NULL OR s.created_at >= ?2) AND (?3 IS NULL OR s.created_at <= ?3) \
                     AND (?4 IS NULL OR s.created_at > ?4 OR (s.created_at = ?4 AND s.rowid > ?5)) \
                     ORDER BY s.created_at, s.rowid LIMIT ?6",
                    SESSIONS.select("s")
                ),
                &[
                    Arg::Text(chatbot_uuid),
                    start.map_or(Arg::Null, Arg::Text),
                    end.map_or(Arg::Null, Arg::Text),
                    after.map_or(Arg::Null, |a| Arg::Text(&a.created_at)),
                    after.map_or(Arg::Null, |a| Arg::Int(a.seq)),
                    Arg::Int(page.limit as i64 + 1),
                ],
            )
            .await?;
        rows.into_iter()
            .map(|row| {
                let seq = row.seq;
                let session = Session::try_from(row)?;
                let cursor = SessionCursor {
                    created_at: session.created_at.clone(),
                    seq,
                };
                Ok((session, cursor))
            })
            .collect()
    }

    /// Deletes a session; its messages cascade.
    pub async fn delete_session(&self, uuid: &str) -> ApiResult<bool> {
        Ok(self
            .execute("DELETE FROM sessions WHERE uuid = ?1", &[Arg::Text(uuid)])
            .await?
            > 0)
    }

    /// Stores a finished message and touches its session, together.
    pub async fn insert_message(&self, m: &Message) -> ApiResult<()> {
        self.write_message(m, false).await
    }

    /// Stores the ended answer over the `streaming` record it started as (or anew when that
    /// record never landed), touching its session.
    pub async fn complete_message(&self, m: &Message) -> ApiResult<()> {
        self.write_message(m, true).await
    }

    /// Closes an answer left `streaming` by a runtime that went away: what was said is kept,
    /// with `finish_reason: interrupted`, its completion tokens counted and `answered: false`
    /// (nothing judged it answered). Returns the stored usage and `answered`, or `None` when
    /// the answer had ended meanwhile (nothing changes).
    pub async fn interrupt_message(
        &self,
        uuid: &str,
        response: &str,
        now: &str,
    ) -> ApiResult<Option<(Value, Option<bool>)>> {
        #[derive(serde::Deserialize)]
        struct Closed {
            usage: Option<String>,
            answered: Option<i64>,
        }
        let completion_tokens = estimate_tokens(response) as i64;
        let closed: Option<Closed> = self
            .row(
                // A bound number reaches D1 as a JavaScript number, which it stores as REAL:
                // cast, so the counts stay whole numbers in the JSON as everywhere else.
                "UPDATE messages SET response = ?2, finish_reason = 'interrupted', modified_at = ?3, \
                 answered = 0, meta_json = json_set(meta_json, \
                   '$.usage.completion_tokens', CAST(?4 AS INTEGER), \
                   '$.usage.total_tokens', \
                   coalesce(json_extract(meta_json, '$.usage.prompt_tokens'), 0) + CAST(?4 AS INTEGER), \
                   '$.answered', json('false')) \
                 WHERE uuid = ?1 AND finish_reason = 'streaming' \
                 RETURNING json_extract(meta_json, '$.usage') AS usage, answered",
                &[
                    Arg::Text(uuid),
                    Arg::Text(response),
                    Arg::Text(now),
                    Arg::Int(completion_tokens),
                ],
            )
            .await?;
        Ok(closed.map(|c| {
            let usage = c
                .usage
                .and_then(|u| serde_json::from_str(&u).ok())
                .unwrap_or(Value::Null);
            (usage, c.answered.map(|a| a != 0))
        }))
    }

    /// Closes every answer still `streaming` that started before `before_ms`: its runtime
    /// went away before the session's object kept a record of it, so no object will close it.
    /// As `interrupt_message` does, it is stored `answered: false`.
    /// Returns how many were closed.
    pub async fn interrupt_stale_answers(&self, before_ms: i64, now: &str) -> ApiResult<usize> {
        self.execute(
            "UPDATE messages SET finish_reason = 'interrupted', modified_at = ?2, answered = 0, \
             meta_json = json_set(meta_json, '$.answered', json('false')) \
             WHERE finish_reason = 'streaming' AND started_ms < ?1",
            &[Arg::Int(before_ms), Arg::Text(now)],
        )
        .await
    }

    async fn write_message(&self, m: &Message, replace: bool) -> ApiResult<()> {
        let row = MessageRow::from(m);
        // Over the `streaming` record, which a rating given meanwhile refers to.
        let insert = if replace {
            Sql::overwrite(&row)
        } else {
            Sql::insert(&row, Vec::new())
        };
        let insert = self.prepare(&insert)?;
        let mut touch =
            Sql::update_columns(&SESSIONS, vec![("modified_at", Arg::Text(&m.modified_at))]);
        let session = touch.bind(Arg::Text(&m.session_uuid));
        touch.push(&format!(" WHERE uuid = {session}"));
        let touch = self.prepare(&touch)?;
        self.batch_referring(
            vec![insert, touch],
            || ApiError::Conflict("That message was already stored.".into()),
            || ApiError::not_found("session"),
        )
        .await
        .map(|_| ())
    }

    /// A session's messages, oldest first.
    pub async fn list_messages(&self, session_uuid: &str) -> ApiResult<Vec<Message>> {
        let rows: Vec<MessageRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM messages m WHERE m.session_uuid = ?1 ORDER BY m.started_ms, m.rowid",
                    MESSAGES.select("m")
                ),
                &[Arg::Text(session_uuid)],
            )
            .await?;
        rows.into_iter().map(Message::try_from).collect()
    }

    /// The newest `limit` exchanges of a session, oldest first (the prompt's history).
    pub async fn recent_messages(
        &self,
        session_uuid: &str,
        limit: usize,
    ) -> ApiResult<Vec<Message>> {
        let rows: Vec<MessageRow> = self
            .rows(
                &format!(
                    "SELECT * FROM (SELECT {}, m.rowid AS rid FROM messages m WHERE m.session_uuid = ?1 \
                     ORDER BY m.started_ms DESC, m.rowid DESC LIMIT ?2) ORDER BY started_ms, rid",
                    MESSAGES.select("m")
                ),
                &[Arg::Text(session_uuid), Arg::Int(limit as i64)],
            )
            .await?;
        rows.into_iter().map(Message::try_from).collect()
    }

    /// The caller's messages among `uuids`.
    pub async fn get_messages(
        &self,
        account_uuid: &str,
        uuids: &[String],
    ) -> ApiResult<Vec<Message>> {
        let list = serde_json::to_string(uuids)?;
        let rows: Vec<MessageRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM messages m JOIN chatbots c ON c.uuid = m.chatbot_uuid \
                     WHERE m.uuid IN (SELECT value FROM json_each(?1)) AND c.account_uuid = ?2",
                    MESSAGES.select("m")
                ),
                &[Arg::Text(&list), Arg::Text(account_uuid)],
            )
            .await?;
        rows.into_iter().map(Message::try_from).collect()
    }

    /// A message in a session that `visitor_id` created on `chatbot_uuid`.
    pub async fn get_visitor_message(
        &self,
        chatbot_uuid: &str,
        visitor_id: &str,
        uuid: &str,
    ) -> ApiResult<Option<Message>> {
        let row: Option<MessageRow> = self
            .row(
                &format!(
                    "SELECT {} FROM messages m JOIN sessions s ON s.uuid = m.session_uuid \
                     WHERE m.uuid = ?1 AND s.chatbot_uuid = ?2 AND s.visitor_id = ?3",
                    MESSAGES.select("m")
                ),
                &[
                    Arg::Text(uuid),
                    Arg::Text(chatbot_uuid),
                    Arg::Text(visitor_id),
                ],
            )
            .await?;
        row.map(Message::try_from).transpose()
    }

    /// Sets one top-level key of a session's meta, leaving the others as they are.
    pub async fn set_session_meta(
        &self,
        session_uuid: &str,
        key: &str,
        value: &Value,
        now: &str,
    ) -> ApiResult<()> {
        self.execute(
            "UPDATE sessions SET meta_json = json_set(meta_json, '$.' || ?2, json(?3)), modified_at = ?4 WHERE uuid = ?1",
            &[Arg::Text(session_uuid), Arg::Text(key), Arg::Text(&value.to_string()), Arg::Text(now)],
        )
        .await
        .map(|_| ())
    }

    /// Turns live chat on or off (`state` is the session's new `meta.live_chat`) and stores the
    /// announcement saying so, together, only if live chat is still as it was read (`was_on`):
    /// two operators switching at once store one announcement, not two. False when it was not.
    pub async fn switch_live_chat(
        &self,
        session_uuid: &str,
        was_on: bool,
        state: &Value,
        announcement: Option<&Message>,
        now: &str,
    ) -> ApiResult<bool> {
        const STILL_AS_READ: &str = "coalesce(json_extract(meta_json, '$.live_chat.active'), 0) =";
        let mut statements = Vec::new();
        let row = announcement.map(MessageRow::from);
        if let Some(row) = &row {
            let mut insert = Sql::insert_select(row, &[]);
            let session = insert.param("session_uuid");
            let was = insert.bind(Arg::Int(i64::from(was_on)));
            insert.push(&format!(
                " WHERE EXISTS (SELECT 1 FROM sessions WHERE uuid = {session} AND {STILL_AS_READ} {was})"
            ));
            statements.push(self.prepare(&insert)?);
        }
        let state = state.to_string();
        statements.push(self.statement(
            &format!(
                "UPDATE sessions SET meta_json = json_set(meta_json, '$.live_chat', json(?2)), \
                 modified_at = ?3 WHERE uuid = ?1 AND {STILL_AS_READ} ?4"
            ),
            &[
                Arg::Text(session_uuid),
                Arg::Text(&state),
                Arg::Text(now),
                Arg::Int(i64::from(was_on)),
            ],
        )?);
        let results = self
            .batch(statements, || {
                ApiError::Conflict("That message was already stored.".into())
            })
            .await?;
        Ok(results.last().map(changes) == Some(1))
    }

    /// Appends a tag to a session's `meta.tags` unless one of that name is there already;
    /// false when it was.
    pub async fn add_session_tag(
        &self,
        session_uuid: &str,
        tag: &Value,
        now: &str,
    ) -> ApiResult<bool> {
        let name = tag.get("name").and_then(Value::as_str).unwrap_or_default();
        let changed = self
            .execute(
                "UPDATE sessions SET meta_json = json_insert(\
                   CASE WHEN json_type(meta_json, '$.tags') = 'array' THEN meta_json ELSE json_set(meta_json, '$.tags', json('[]')) END, \
                   '$.tags[#]', json(?2)), modified_at = ?4 \
                 WHERE uuid = ?1 AND NOT EXISTS (SELECT 1 FROM json_each(sessions.meta_json, '$.tags') t \
                   WHERE json_extract(t.value, '$.name') = ?3)",
                &[Arg::Text(session_uuid), Arg::Text(&tag.to_string()), Arg::Text(name), Arg::Text(now)],
            )
            .await?;
        Ok(changed > 0)
    }

    /// Deletes all of `uuids` or, when one is gone already (a delete at the same moment),
    /// none: `NotFound`.
    pub async fn delete_messages(&self, uuids: &[String]) -> ApiResult<usize> {
        let list = serde_json::to_string(uuids)?;
        let deleted = self
            .execute(
                &format!(
                    "DELETE FROM messages WHERE uuid IN (SELECT value FROM json_each(?1)) AND {}",
                    super::all_still_there("messages")
                ),
                &[Arg::Text(&list)],
            )
            .await?;
        if deleted == 0 {
            return Err(super::gone_meanwhile());
        }
        Ok(deleted)
    }
}
