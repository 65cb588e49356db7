//! Reads over a chatbot's whole history: analytics, unanswered questions and export pages.
//! Each is bounded by chatbot and time, and runs on the indexes migration 0009 adds.

use super::sessions::{MessageRow, MESSAGES};
use super::{batch_rows, Arg, Store};
use edgechat_core::api::error::ApiResult;
use edgechat_core::domain::session::Message;
use edgechat_core::insights::Unanswered;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Bounds of a time range: an open end reads as the earliest or latest time there is, so every
/// query is a plain index range.
pub const EARLIEST: &str = "0000-01-01T00:00:00Z";
pub const LATEST: &str = "9999-12-31T23:59:59Z";

/// The most unanswered questions read for grouping (the newest).
pub const UNANSWERED_READ: usize = 5_000;

#[derive(Deserialize)]
struct DayRow {
    day: String,
    #[serde(default)]
    n: Option<i64>,
    #[serde(default)]
    answers: Option<i64>,
    #[serde(default)]
    answered: Option<i64>,
    #[serde(default)]
    unanswered: Option<i64>,
    #[serde(default)]
    up: Option<i64>,
    #[serde(default)]
    down: Option<i64>,
}

#[derive(Deserialize)]
struct CountRow {
    #[serde(default)]
    n: Option<i64>,
    #[serde(default)]
    visitors: Option<i64>,
}

#[derive(Deserialize)]
struct TagRow {
    name: Option<String>,
    n: i64,
}

#[derive(Deserialize)]
struct UnansweredRow {
    uuid: String,
    session_uuid: String,
    query: String,
    created_at: String,
}

/// Where each read stands in the analytics batch.
const MESSAGES_BY_DAY: usize = 0;
const SESSIONS_BY_DAY: usize = 1;
const FEEDBACK_BY_DAY: usize = 2;
const VISITORS: usize = 3;
const ESCALATIONS: usize = 4;
const LIVE_CHATS: usize = 5;
const TAGS: usize = 6;

#[derive(Default)]
struct Day {
    messages: i64,
    answers: i64,
    answered: i64,
    unanswered: i64,
    sessions: i64,
    feedback_up: i64,
    feedback_down: i64,
}

impl Store {
    /// Totals and a per-day series for a chatbot between `start` and `end` (inclusive).
    pub async fn analytics(&self, chatbot_uuid: &str, start: &str, end: &str) -> ApiResult<Value> {
        let args = [Arg::Text(chatbot_uuid), Arg::Text(start), Arg::Text(end)];
        let statements = vec![
            self.statement(
                "SELECT substr(created_at, 1, 10) AS day, COUNT(*) AS n, \
                 SUM(kind = 'answer') AS answers, SUM(answered = 1) AS answered, \
                 SUM(answered = 0) AS unanswered \
                 FROM messages WHERE chatbot_uuid = ?1 AND created_at BETWEEN ?2 AND ?3 \
                 GROUP BY day ORDER BY day",
                &args,
            )?,
            self.statement(
                "SELECT substr(created_at, 1, 10) AS day, COUNT(*) AS n FROM sessions \
                 WHERE chatbot_uuid = ?1 AND created_at BETWEEN ?2 AND ?3 GROUP BY day ORDER BY day",
                &args,
            )?,
            self.statement(
                "SELECT substr(modified_at, 1, 10) AS day, SUM(rating = 'up') AS up, \
                 SUM(rating = 'down') AS down FROM message_feedback \
                 WHERE chatbot_uuid = ?1 AND modified_at BETWEEN ?2 AND ?3 GROUP BY day ORDER BY day",
                &args,
            )?,
            self.statement(
                "SELECT COUNT(DISTINCT visitor_id) AS visitors FROM sessions \
                 WHERE chatbot_uuid = ?1 AND created_at BETWEEN ?2 AND ?3",
                &args,
            )?,
            // Sessions with an event of any round in the range: the list of its times
            // (`Session::event_times`), or for a session stored before the list, the latest.
            self.statement(
                "SELECT COUNT(*) AS n FROM sessions s WHERE chatbot_uuid = ?1 \
                 AND (json_extract(meta_json, '$.human_escalation.requested_at') BETWEEN ?2 AND ?3 \
                 OR EXISTS (SELECT 1 FROM json_each(s.meta_json, '$.human_escalation.requested_times') t \
                 WHERE t.value BETWEEN ?2 AND ?3))",
                &args,
            )?,
            self.statement(
                "SELECT COUNT(*) AS n FROM sessions s WHERE chatbot_uuid = ?1 \
                 AND (json_extract(meta_json, '$.live_chat.started_at') BETWEEN ?2 AND ?3 \
                 OR EXISTS (SELECT 1 FROM json_each(s.meta_json, '$.live_chat.started_times') t \
                 WHERE t.value BETWEEN ?2 AND ?3))",
                &args,
            )?,
            self.statement(
                "SELECT json_extract(t.value, '$.name') AS name, COUNT(*) AS n \
                 FROM sessions s, json_each(s.meta_json, '$.tags') t \
                 WHERE s.chatbot_uuid = ?1 AND json_type(s.meta_json, '$.tags') = 'array' \
                 AND json_extract(t.value, '$.tagged_at') BETWEEN ?2 AND ?3 \
                 GROUP BY name ORDER BY n DESC, name",
                &args,
            )?,
        ];
        let results = self.read_batch(statements).await?;
        let mut days: BTreeMap<String, Day> = BTreeMap::new();
        for r in batch_rows::<DayRow>(&results, MESSAGES_BY_DAY)? {
            let day = days.entry(r.day).or_default();
            day.messages = r.n.unwrap_or(0);
            day.answers = r.answers.unwrap_or(0);
            day.answered = r.answered.unwrap_or(0);
            day.unanswered = r.unanswered.unwrap_or(0);
        }
        for r in batch_rows::<DayRow>(&results, SESSIONS_BY_DAY)? {
            days.entry(r.day).or_default().sessions = r.n.unwrap_or(0);
        }
        for r in batch_rows::<DayRow>(&results, FEEDBACK_BY_DAY)? {
            let day = days.entry(r.day).or_default();
            day.feedback_up = r.up.unwrap_or(0);
            day.feedback_down = r.down.unwrap_or(0);
        }
        let count = |index: usize| -> ApiResult<i64> {
            Ok(batch_rows::<CountRow>(&results, index)?
                .first()
                .and_then(|r| r.n)
                .unwrap_or(0))
        };
        let visitors = batch_rows::<CountRow>(&results, VISITORS)?
            .first()
            .and_then(|r| r.visitors)
            .unwrap_or(0);
        let mut tags = Map::new();
        for r in batch_rows::<TagRow>(&results, TAGS)? {
            if let Some(name) = r.name {
                tags.insert(name, json!(r.n));
            }
        }
        let sum = |f: fn(&Day) -> i64| days.values().map(f).sum::<i64>();
        let answered = sum(|d| d.answered);
        let judged = answered + sum(|d| d.unanswered);
        let share = |answered: i64, judged: i64| {
            (judged > 0).then(|| (answered as f64 / judged as f64 * 1000.0).round() / 1000.0)
        };
        let series: Vec<Value> = days
            .iter()
            .map(|(date, d)| {
                json!({
                    "date": date,
                    "sessions": d.sessions,
                    "messages": d.messages,
                    "answers": d.answers,
                    "answered": d.answered,
                    "unanswered": d.unanswered,
                    "feedback_up": d.feedback_up,
                    "feedback_down": d.feedback_down,
                })
            })
            .collect();
        Ok(json!({
            "chatbot_uuid": chatbot_uuid,
            "totals": {
                "sessions": sum(|d| d.sessions),
                "messages": sum(|d| d.messages),
                "answers": sum(|d| d.answers),
                "visitors": visitors,
                "answered": answered,
                "unanswered": judged - answered,
                "answered_share": share(answered, judged),
                "escalations": count(ESCALATIONS)?,
                "live_chats": count(LIVE_CHATS)?,
                "feedback_up": sum(|d| d.feedback_up),
                "feedback_down": sum(|d| d.feedback_down),
                "tags": tags,
            },
            "series": series,
        }))
    }

    /// The newest questions the sources could not answer, between `start` and `end`.
    pub async fn unanswered_questions(
        &self,
        chatbot_uuid: &str,
        start: &str,
        end: &str,
    ) -> ApiResult<Vec<Unanswered>> {
        let rows: Vec<UnansweredRow> = self
            .rows(
                "SELECT uuid, session_uuid, query, created_at FROM messages \
                 WHERE chatbot_uuid = ?1 AND created_at BETWEEN ?2 AND ?3 AND answered = 0 \
                 ORDER BY created_at DESC, started_ms DESC LIMIT ?4",
                &[
                    Arg::Text(chatbot_uuid),
                    Arg::Text(start),
                    Arg::Text(end),
                    Arg::Int(UNANSWERED_READ as i64),
                ],
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| Unanswered {
                message_uuid: r.uuid,
                session_uuid: r.session_uuid,
                query: r.query,
                created_at: r.created_at,
            })
            .collect())
    }

    /// One page of a chatbot's messages between `start` and `end`, oldest first, after the
    /// message `after` names (its created_at, started_ms and uuid). `created_at` counts whole
    /// seconds, so messages of one second keep the order they were sent in by `started_ms`.
    pub async fn export_page(
        &self,
        chatbot_uuid: &str,
        start: &str,
        end: &str,
        after: Option<(&str, i64, &str)>,
        limit: usize,
    ) -> ApiResult<Vec<Message>> {
        let (after_at, after_ms, after_uuid) = after.unwrap_or((start, i64::MIN, ""));
        let rows: Vec<MessageRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM messages m WHERE m.chatbot_uuid = ?1 \
                     AND m.created_at BETWEEN ?2 AND ?3 \
                     AND (m.created_at, m.started_ms, m.uuid) > (?4, ?5, ?6) \
                     ORDER BY m.created_at, m.started_ms, m.uuid LIMIT ?7",
                    MESSAGES.select("m")
                ),
                &[
                    Arg::Text(chatbot_uuid),
                    Arg::Text(start),
                    Arg::Text(end),
                    Arg::Text(after_at),
                    Arg::Int(after_ms),
                    Arg::Text(after_uuid),
                    Arg::Int(limit as i64),
                ],
            )
            .await?;
        rows.into_iter().map(Message::try_from).collect()
    }
}
