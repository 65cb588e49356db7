use super::table::{table, Sql};
use super::{batch_rows, changes, Arg, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::feedback::{Feedback, Rating};
use serde_json::Value;

table! {
    pub(super) struct FeedbackRow in FEEDBACK = "message_feedback" {
        key message_uuid: String,
        fixed chatbot_uuid: String,
        fixed session_uuid: String,
        set rating: Rating,
        set comment: Option<String>,
        fixed created_at: String,
        set modified_at: String,
        computed query: Option<String> = "(SELECT m.query FROM messages m WHERE m.uuid = {t}.message_uuid)",
        computed response: Option<String> = "(SELECT m.response FROM messages m WHERE m.uuid = {t}.message_uuid)",
    }
}

impl From<&Feedback> for FeedbackRow {
    fn from(f: &Feedback) -> Self {
        FeedbackRow {
            message_uuid: f.message_uuid.clone(),
            chatbot_uuid: f.chatbot_uuid.clone(),
            session_uuid: f.session_uuid.clone(),
            rating: f.rating,
            comment: f.comment.clone(),
            created_at: f.created_at.clone(),
            modified_at: f.modified_at.clone(),
            query: None,
            response: None,
        }
    }
}

impl FeedbackRow {
    fn into_parts(self) -> (Feedback, Option<String>, Option<String>) {
        (
            Feedback {
                message_uuid: self.message_uuid,
                chatbot_uuid: self.chatbot_uuid,
                session_uuid: self.session_uuid,
                rating: self.rating,
                comment: self.comment,
                created_at: self.created_at,
                modified_at: self.modified_at,
            },
            self.query,
            self.response,
        )
    }
}

/// A rating with the exchange it is about, as listed.
pub fn listed_feedback_json(
    feedback: &Feedback,
    query: Option<&str>,
    response: Option<&str>,
) -> Value {
    let mut value = feedback.to_json();
    if let Some(fields) = value.as_object_mut() {
        fields.insert("query".into(), query.into());
        fields.insert("response".into(), response.into());
    }
    value
}

impl Store {
    /// Stores a rating, replacing the message's earlier one (its `created_at` stays, and its
    /// comment unless `comment_sent`); the rating as stored, and whether this call wrote it
    /// (false when it was the rating already stored).
    pub async fn save_feedback(
        &self,
        f: &Feedback,
        comment_sent: bool,
    ) -> ApiResult<(Feedback, bool)> {
        let row = FeedbackRow::from(f);
        let kept: &[&str] = if comment_sent { &[] } else { &["comment"] };
        let mut upsert = Sql::upsert_keeping(&row, kept);
        // The same rating again changes nothing, not even when it was given: it is no news.
        upsert.push(if comment_sent {
            " WHERE rating IS NOT excluded.rating OR comment IS NOT excluded.comment"
        } else {
            " WHERE rating IS NOT excluded.rating"
        });
        // One batch, so the record read back is the one this call wrote: a rating given at
        // the same moment cannot land between the write and the read.
        let statements = vec![
            self.statement(upsert.text(), upsert.args())?,
            self.statement(
                &format!(
                    "SELECT {} FROM message_feedback f WHERE f.message_uuid = ?1",
                    FEEDBACK.select("f")
                ),
                &[Arg::Text(&f.message_uuid)],
            )?,
        ];
        let results = self
            .batch(statements, || {
                ApiError::internal("unexpected conflict saving a rating")
            })
            .await?;
        let written = results.first().is_some_and(|r| changes(r) > 0);
        let stored = batch_rows::<FeedbackRow>(&results, 1)?.into_iter().next();
        Ok((
            stored.map_or_else(|| f.clone(), |r| r.into_parts().0),
            written,
        ))
    }

    /// A chatbot's ratings given between `start` and `end` (inclusive), newest first, each
    /// with its question and answer.
    pub async fn list_feedback(
        &self,
        chatbot_uuid: &str,
        rating: Option<Rating>,
        start: &str,
        end: &str,
    ) -> ApiResult<Vec<Value>> {
        let rows: Vec<FeedbackRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM message_feedback f WHERE f.chatbot_uuid = ?1 \
                     AND f.modified_at BETWEEN ?2 AND ?3 AND (?4 IS NULL OR f.rating = ?4) \
                     ORDER BY f.modified_at DESC, f.rowid DESC LIMIT 1000",
                    FEEDBACK.select("f")
                ),
                &[
                    Arg::Text(chatbot_uuid),
                    Arg::Text(start),
                    Arg::Text(end),
                    rating.map_or(Arg::Null, |r| Arg::Text(r.as_str())),
                ],
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let (feedback, query, response) = r.into_parts();
                listed_feedback_json(&feedback, query.as_deref(), response.as_deref())
            })
            .collect())
    }
}
