//! What each chatbot's vector index still has to learn (`vector_outbox`, filled by triggers on
//! `chunks`) and which model built it (`vector_indexes`). The vectors themselves live in the
//! chatbot's Durable Object (`platform::vector_index`).

use super::table::table;
use super::{batch_rows, Arg, Store};
use edgechat_core::api::error::ApiResult;
use edgechat_core::knowledge::retrieve::ChunkHit;
use serde::Deserialize;

table! {
    /// A change to one chunk that its chatbot's vector index has not applied yet, with the
    /// chunk's source, heading and text when it still exists.
    pub struct VectorWork in VECTOR_OUTBOX = "vector_outbox" {
        key seq: i64,
        fixed chunk_id: i64,
        fixed chatbot_uuid: String,
        fixed op: String,
        set attempts: i64,
        set lease: Option<String>,
        set leased_until: i64,
        computed source_uuid: Option<String> = "(SELECT c.data_source_uuid FROM chunks c WHERE c.id = {t}.chunk_id AND c.chatbot_uuid = {t}.chatbot_uuid)",
        computed heading: Option<String> = "(SELECT c.heading FROM chunks c WHERE c.id = {t}.chunk_id AND c.chatbot_uuid = {t}.chatbot_uuid)",
        computed text: Option<String> = "(SELECT c.text FROM chunks c WHERE c.id = {t}.chunk_id AND c.chatbot_uuid = {t}.chatbot_uuid)",
    }
}

table! {
    pub(super) struct VectorIndexRow in VECTOR_INDEXES = "vector_indexes" {
        key chatbot_uuid: String,
        set model: String,
        set modified_at: String,
    }
}

impl VectorWork {
    pub fn seq(&self) -> i64 {
        self.seq
    }

    pub fn source_uuid(&self) -> Option<&str> {
        self.source_uuid.as_deref()
    }

    pub fn chunk_id(&self) -> i64 {
        self.chunk_id
    }

    pub fn attempts(&self) -> i64 {
        self.attempts
    }

    pub fn chatbot_uuid(&self) -> &str {
        &self.chatbot_uuid
    }

    /// Whether the chunk is to be written (it still exists) rather than removed.
    pub fn is_upsert(&self) -> bool {
        self.op == "upsert" && self.text.is_some()
    }

    /// The text embedded for a chunk: its heading carries the context its text assumes.
    pub fn embedded_text(&self) -> Option<String> {
        let text = self.text.as_deref()?;
        Some(match self.heading.as_deref() {
            Some(h) if !h.is_empty() => format!("{h}\n{text}"),
            _ => text.to_string(),
        })
    }
}

#[derive(Deserialize)]
struct Uuid {
    uuid: String,
}

impl Store {
    /// Chatbots whose vector index was built by another model than `model`, or never.
    pub async fn chatbots_to_vectorise(&self, model: &str, limit: usize) -> ApiResult<Vec<String>> {
        let rows: Vec<Uuid> = self
            .rows(
                "SELECT c.uuid FROM chatbots c LEFT JOIN vector_indexes v ON v.chatbot_uuid = c.uuid \
                 WHERE v.model IS NULL OR v.model != ?1 LIMIT ?2",
                &[Arg::Text(model), Arg::Int(limit as i64)],
            )
            .await?;
        Ok(rows.into_iter().map(|r| r.uuid).collect())
    }

    /// Claims the (re)build of `chatbot_uuid`'s index for `model`: true for the one caller that
    /// changed the record, so concurrent runs never reset an index twice.
    pub async fn claim_vector_index(
        &self,
        chatbot_uuid: &str,
        model: &str,
        now: &str,
    ) -> ApiResult<bool> {
        let changed = self
            .execute(
                "INSERT INTO vector_indexes (chatbot_uuid, model, modified_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (chatbot_uuid) DO UPDATE SET model = excluded.model, modified_at = excluded.modified_at \
                 WHERE vector_indexes.model != excluded.model",
                &[Arg::Text(chatbot_uuid), Arg::Text(model), Arg::Text(now)],
            )
            .await?;
        Ok(changed > 0)
    }

    /// Queues every chunk of `chatbot_uuid` for its (reset) index.
    pub async fn queue_all_vectors(&self, chatbot_uuid: &str) -> ApiResult<()> {
        self.execute(
            "INSERT OR REPLACE INTO vector_outbox (chunk_id, chatbot_uuid, op) \
             SELECT id, chatbot_uuid, 'upsert' FROM chunks WHERE chatbot_uuid = ?1",
            &[Arg::Text(chatbot_uuid)],
        )
        .await
        .map(|_| ())
    }

    /// Marks every index stale (embeddings turned off) and drops queued writes nobody can
    /// embed; removals stay queued, so a deleted chunk never lingers in an index.
    pub async fn suspend_vector_indexes(&self) -> ApiResult<()> {
        let statements = vec![
            self.statement(
                "UPDATE vector_indexes SET model = '' WHERE model != ''",
                &[],
            )?,
            self.statement("DELETE FROM vector_outbox WHERE op = 'upsert'", &[])?,
        ];
        self.batch(statements, || {
            edgechat_core::api::error::ApiError::internal("suspending vector indexes conflicted")
        })
        .await
        .map(|_| ())
    }

    /// Takes up to `limit` pending changes of chatbots that have an index, grouped by chatbot,
    /// under `lease` until `until_ms`; skips rows another run holds and failed ones whose retry
    /// is not due. Changes of chatbots without an index are dropped first: their
    /// object never held a vector.
    pub async fn take_vector_work(
        &self,
        lease: &str,
        now_ms: i64,
        until_ms: i64,
        limit: usize,
    ) -> ApiResult<Vec<VectorWork>> {
        let statements = vec![
            self.statement(
                "DELETE FROM vector_outbox WHERE chatbot_uuid NOT IN (SELECT chatbot_uuid FROM vector_indexes)",
                &[],
            )?,
            self.statement(
                "UPDATE vector_outbox SET lease = ?1, leased_until = ?2 WHERE seq IN \
                 (SELECT seq FROM vector_outbox WHERE leased_until < ?3 \
                  ORDER BY chatbot_uuid, seq LIMIT ?4)",
                &[
                    Arg::Text(lease),
                    Arg::Int(until_ms),
                    Arg::Int(now_ms),
                    Arg::Int(limit as i64),
                ],
            )?,
            self.statement(
                &format!(
                    "SELECT {} FROM vector_outbox o WHERE o.lease = ?1 ORDER BY o.chatbot_uuid, o.seq",
                    VECTOR_OUTBOX.select("o")
                ),
                &[Arg::Text(lease)],
            )?,
        ];
        let results = self
            .batch(statements, || {
                edgechat_core::api::error::ApiError::internal("taking vector work conflicted")
            })
            .await?;
        batch_rows(&results, 2)
    }

    /// Forgets changes the index has applied (by `seq`: a newer change to the same chunk stays).
    pub async fn vector_work_done(&self, seqs: &[i64]) -> ApiResult<()> {
        let list = serde_json::to_string(seqs)?;
        self.execute(
            "DELETE FROM vector_outbox WHERE seq IN (SELECT value FROM json_each(?1))",
            &[Arg::Text(&list)],
        )
        .await
        .map(|_| ())
    }

    /// Counts a failed attempt at these changes and leaves them until `retry_at_ms`.
    pub async fn vector_work_failed(&self, seqs: &[i64], retry_at_ms: i64) -> ApiResult<()> {
        let list = serde_json::to_string(seqs)?;
        self.execute(
            "UPDATE vector_outbox SET attempts = attempts + 1, lease = NULL, leased_until = ?2 \
             WHERE seq IN (SELECT value FROM json_each(?1))",
            &[Arg::Text(&list), Arg::Int(retry_at_ms)],
        )
        .await
        .map(|_| ())
    }

    /// Indexes of chatbots that no longer exist, whose objects must be emptied.
    pub async fn vanished_vector_indexes(&self, limit: usize) -> ApiResult<Vec<String>> {
        let rows: Vec<VectorIndexRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM vector_indexes v \
                     WHERE NOT EXISTS (SELECT 1 FROM chatbots c WHERE c.uuid = v.chatbot_uuid) LIMIT ?1",
                    VECTOR_INDEXES.select("v")
                ),
                &[Arg::Int(limit as i64)],
            )
            .await?;
        Ok(rows.into_iter().map(|r| r.chatbot_uuid).collect())
    }

    /// Forgets an emptied index and anything still queued for it.
    pub async fn forget_vector_index(&self, chatbot_uuid: &str) -> ApiResult<()> {
        let statements = vec![
            self.statement(
                "DELETE FROM vector_indexes WHERE chatbot_uuid = ?1",
                &[Arg::Text(chatbot_uuid)],
            )?,
            self.statement(
                "DELETE FROM vector_outbox WHERE chatbot_uuid = ?1",
                &[Arg::Text(chatbot_uuid)],
            )?,
        ];
        self.batch(statements, || {
            edgechat_core::api::error::ApiError::internal("forgetting a vector index conflicted")
        })
        .await
        .map(|_| ())
    }

    /// How many changes wait, in all chatbots (for the maintenance report).
    pub async fn vector_backlog(&self) -> ApiResult<i64> {
        #[derive(Deserialize)]
        struct Count {
            n: i64,
        }
        Ok(self
            .row::<Count>("SELECT COUNT(*) AS n FROM vector_outbox", &[])
            .await?
            .map_or(0, |c| c.n))
    }

    /// Chunks of one chatbot by id, as search candidates (the vector path finds ids only),
    /// optionally only from `allowed_sources`.
    pub async fn chunks_by_id(
        &self,
        chatbot_uuid: &str,
        ids: &[i64],
        allowed_sources: Option<&[String]>,
    ) -> ApiResult<Vec<ChunkHit>> {
        let id_list = serde_json::to_string(ids)?;
        let source_filter = allowed_sources.map(serde_json::to_string).transpose()?;
        let sql = format!(
            "SELECT c.id, c.data_source_uuid, c.position, c.heading, c.text, c.tokens, \
             s.type AS source_type, s.title, s.file_name, s.meta_json, 0.0 AS rank \
             FROM chunks c JOIN data_sources s ON s.uuid = c.data_source_uuid \
             WHERE c.id IN (SELECT value FROM json_each(?1)) AND c.chatbot_uuid = ?2 {}",
            if source_filter.is_some() {
                "AND c.data_source_uuid IN (SELECT value FROM json_each(?3))"
            } else {
                ""
            }
        );
        let mut args = vec![Arg::Text(&id_list), Arg::Text(chatbot_uuid)];
        if let Some(list) = source_filter.as_deref() {
            args.push(Arg::Text(list));
        }
        self.rows(&sql, &args).await
    }
}
