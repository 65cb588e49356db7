use super::table::{table, Sql};
use super::{batch_rows, object_text, Arg, Owner, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::data_source::{DataSource, SourceType, Status};
use edgechat_core::knowledge::chunk::Chunk;
use edgechat_core::knowledge::query::is_cjk;
use edgechat_core::knowledge::retrieve::ChunkHit;
use edgechat_core::knowledge::steps::{split_by_size, StagedChunk, DRAFT_STATEMENT_BYTES};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use worker::{D1PreparedStatement, D1Result};

table! {
    pub(super) struct SourceRow in DATA_SOURCES = "data_sources" {
        key uuid: String,
        fixed chatbot_uuid: String,
        fixed source_type as "type": SourceType,
        set title: String,
        fixed file_name: String,
        fixed file_size: i64,
        set tokens: i64,
        set status: Status,
        set meta_json: String,
        fixed object_key: Option<String>,
        fixed created_at: String,
        set modified_at: String,
    }
}

impl From<&DataSource> for SourceRow {
    fn from(s: &DataSource) -> Self {
        SourceRow {
            uuid: s.uuid.clone(),
            chatbot_uuid: s.chatbot_uuid.clone(),
            source_type: s.source_type,
            title: s.title.clone(),
            file_name: s.file_name.clone(),
            file_size: s.file_size,
            tokens: s.tokens,
            status: s.status,
            meta_json: object_text(&s.meta),
            object_key: s.object_key.clone(),
            created_at: s.created_at.clone(),
            modified_at: s.modified_at.clone(),
        }
    }
}

impl TryFrom<SourceRow> for DataSource {
    type Error = ApiError;

    fn try_from(r: SourceRow) -> ApiResult<DataSource> {
        let meta = match serde_json::from_str::<Value>(&r.meta_json)? {
            Value::Object(m) => m,
            _ => {
                return Err(ApiError::internal(format!(
                    "data source {} has bad meta_json",
                    r.uuid
                )))
            }
        };
        Ok(DataSource {
            uuid: r.uuid,
            chatbot_uuid: r.chatbot_uuid,
            source_type: r.source_type,
            title: r.title,
            file_name: r.file_name,
            file_size: r.file_size,
            tokens: r.tokens,
            status: r.status,
            meta,
            object_key: r.object_key,
            created_at: r.created_at,
            modified_at: r.modified_at,
        })
    }
}

table! {
    /// A chunk as it is written; reads go through the index (`search_chunks`).
    pub(super) struct ChunkRow in CHUNKS = "chunks" {
        fixed data_source_uuid: String,
        fixed chatbot_uuid: String,
        fixed position: i64,
        fixed heading: String,
        fixed text: String,
        fixed tokens: i64,
    }
}

/// `UPDATE data_sources SET` the columns given `WHERE uuid =` the source's; more conditions
/// may be appended.
pub(super) fn update_source<'a>(uuid: &'a str, set: Vec<(&'static str, Arg<'a>)>) -> Sql<'a> {
    let mut update = Sql::update_columns(&DATA_SOURCES, set);
    let uuid = update.bind(Arg::Text(uuid));
    update.push(&format!(" WHERE uuid = {uuid}"));
    update
}

/// Chunks whose CJK pairs one statement indexes (their text travels as one JSON argument).
const CJK_ROWS_PER_STATEMENT: usize = 50;

pub(super) fn duplicate_upload() -> ApiError {
    ApiError::Conflict("This chatbot already has a data source with exactly this content.".into())
}

/// Which full-text index a search reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchIndex {
    /// Words, stemmed: `chunks_fts`, headings weighing three times the text.
    Words,
    /// CJK character pairs: `chunks_cjk` (migration 0010).
    CjkPairs,
}

impl SearchIndex {
    /// The index for `query`: CJK pairs when it holds CJK characters.
    pub fn for_query(query: &str) -> Self {
        if query.chars().any(is_cjk) {
            SearchIndex::CjkPairs
        } else {
            SearchIndex::Words
        }
    }

    fn table(self) -> &'static str {
        match self {
            SearchIndex::Words => "chunks_fts",
            SearchIndex::CjkPairs => "chunks_cjk",
        }
    }

    fn bm25(self) -> &'static str {
        match self {
            SearchIndex::Words => "bm25(chunks_fts, 3.0, 1.0)",
            SearchIndex::CjkPairs => "bm25(chunks_cjk)",
        }
    }
}

/// How many chunks, in every chatbot, match each phrase of the JSON list `?1`, in order.
const PHRASE_FREQUENCY_SQL: &str =
    "SELECT (SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH p.value) AS n \
     FROM json_each(?1) p ORDER BY p.key";

#[derive(Deserialize)]
struct PhraseFrequency {
    n: i64,
}

/// The phrase counts a batch read at `index` (see `count_phrases_in`); none when the
/// batch did not count.
pub(super) fn phrase_counts(results: &[D1Result], index: Option<usize>) -> ApiResult<Vec<i64>> {
    let Some(index) = index else {
        return Ok(Vec::new());
    };
    let counts = batch_rows::<PhraseFrequency>(results, index)?;
    Ok(counts.into_iter().map(|c| c.n).collect())
}

impl Store {
    pub(super) fn insert_source_statement(
        &self,
        s: &DataSource,
        content_hash: Option<&str>,
    ) -> ApiResult<D1PreparedStatement> {
        let row = SourceRow::from(s);
        let hash = content_hash.map_or(Arg::Null, Arg::Text);
        self.prepare(&Sql::insert(&row, vec![("content_hash", hash)]))
    }

    pub(super) fn insert_chunk_statements(
        &self,
        source: &DataSource,
        chunks: Vec<Chunk>,
    ) -> ApiResult<Vec<D1PreparedStatement>> {
        // Chunks with CJK text are indexed again as character pairs (migration 0010), found by
        // their source and position once inserted; the pairs are taken out before the chunks
        // are written, so they are not sent twice.
        let mut pairs: Vec<serde_json::Value> = Vec::new();
        let staged: Vec<StagedChunk> = chunks
            .into_iter()
            .map(|chunk| {
                let mut staged = StagedChunk::from(chunk);
                staged.index_pairs();
                if let Some(p) = staged.pairs.take() {
                    pairs.push(serde_json::json!({"position": staged.position, "pairs": p}));
                }
                staged
            })
            .collect();
        // The chunks travel as JSON arrays, one argument per statement. Bound value by value
        // (six a row, sixteen rows a statement under D1's 100 parameters), writing took 60 %
        // of the step reading a 300 KB text file, and twice as long as this.
        let parts = split_by_size(&staged, DRAFT_STATEMENT_BYTES, usize::MAX)
            .into_iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<_>, _>>()?;
        let mut statements = parts
            .iter()
            .map(|part| {
                self.prepare(&Sql::insert_json_rows::<ChunkRow>(
                    vec![
                        ("data_source_uuid", Arg::Text(&source.uuid)),
                        ("chatbot_uuid", Arg::Text(&source.chatbot_uuid)),
                    ],
                    part,
                ))
            })
            .collect::<ApiResult<Vec<_>>>()?;
        for group in pairs.chunks(CJK_ROWS_PER_STATEMENT) {
            let list = serde_json::to_string(group)?;
            statements.push(self.statement(
                "INSERT INTO chunks_cjk(rowid, pairs) \
                 SELECT c.id, json_extract(p.value, '$.pairs') FROM json_each(?2) p \
                 JOIN chunks c ON c.data_source_uuid = ?1 \
                 AND c.position = json_extract(p.value, '$.position')",
                &[Arg::Text(&source.uuid), Arg::Text(&list)],
            )?);
        }
        Ok(statements)
    }

    /// A new source, and its chunks when it is already read (Q&A). A second upload of the same
    /// bytes to one chatbot is a conflict.
    pub async fn insert_source(
        &self,
        source: &DataSource,
        content_hash: Option<&str>,
        chunks: Vec<Chunk>,
    ) -> ApiResult<()> {
        let mut statements = vec![self.insert_source_statement(source, content_hash)?];
        statements.extend(self.insert_chunk_statements(source, chunks)?);
        self.batch(statements, duplicate_upload).await.map(|_| ())
    }

    /// A source, if its chatbot belongs to `account_uuid`.
    /// Whether the source still exists (a step reading it may race its deletion).
    pub async fn source_exists(&self, uuid: &str) -> ApiResult<bool> {
        self.exists(
            "SELECT 1 AS found FROM data_sources WHERE uuid = ?1",
            &[Arg::Text(uuid)],
        )
        .await
    }

    pub async fn get_source(
        &self,
        account_uuid: &str,
        uuid: &str,
    ) -> ApiResult<Option<DataSource>> {
        let row: Option<SourceRow> = self
            .row(
                &format!(
                    "SELECT {} FROM data_sources s JOIN chatbots c ON c.uuid = s.chatbot_uuid \
                     WHERE s.uuid = ?1 AND c.account_uuid = ?2",
                    DATA_SOURCES.select("s")
                ),
                &[Arg::Text(uuid), Arg::Text(account_uuid)],
            )
            .await?;
        row.map(DataSource::try_from).transpose()
    }

    /// The caller's sources among `uuids` (others and missing ones are simply absent).
    pub async fn get_sources(
        &self,
        account_uuid: &str,
        uuids: &[String],
    ) -> ApiResult<Vec<DataSource>> {
        let list = serde_json::to_string(uuids)?;
        let rows: Vec<SourceRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM data_sources s JOIN chatbots c ON c.uuid = s.chatbot_uuid \
                     WHERE s.uuid IN (SELECT value FROM json_each(?1)) AND c.account_uuid = ?2 \
                     ORDER BY s.created_at, s.rowid",
                    DATA_SOURCES.select("s")
                ),
                &[Arg::Text(&list), Arg::Text(account_uuid)],
            )
            .await?;
        rows.into_iter().map(DataSource::try_from).collect()
    }

    pub async fn list_sources(&self, chatbot_uuid: &str) -> ApiResult<Vec<DataSource>> {
        let rows: Vec<SourceRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM data_sources s WHERE s.chatbot_uuid = ?1 ORDER BY s.created_at, s.rowid",
                    DATA_SOURCES.select("s")
                ),
                &[Arg::Text(chatbot_uuid)],
            )
            .await?;
        rows.into_iter().map(DataSource::try_from).collect()
    }

    /// Which of `uuids` are sources of `chatbot_uuid`.
    pub async fn existing_source_uuids(
        &self,
        chatbot_uuid: &str,
        uuids: &[String],
    ) -> ApiResult<Vec<String>> {
        #[derive(Deserialize)]
        struct Found {
            uuid: String,
        }
        let list = serde_json::to_string(uuids)?;
        let rows: Vec<Found> = self
            .rows(
                "SELECT uuid FROM data_sources WHERE chatbot_uuid = ?1 AND uuid IN (SELECT value FROM json_each(?2))",
                &[Arg::Text(chatbot_uuid), Arg::Text(&list)],
            )
            .await?;
        Ok(rows.into_iter().map(|r| r.uuid).collect())
    }

    /// Moves a source to `running` if it is not already being read; false when another reader
    /// holds it (a re-scrape racing the first fetch).
    pub async fn claim_source(&self, uuid: &str, now: &str) -> ApiResult<bool> {
        self.move_unless_running(uuid, Status::Running, now).await
    }

    /// Sets a source back to `await` before it is read again.
    pub async fn queue_source(&self, uuid: &str, now: &str) -> ApiResult<bool> {
        self.move_unless_running(uuid, Status::Await, now).await
    }

    /// Moves a source to `status` unless it is `running`; whether it moved.
    async fn move_unless_running(&self, uuid: &str, status: Status, now: &str) -> ApiResult<bool> {
        let mut update = update_source(
            uuid,
            vec![
                ("status", Arg::Text(status.as_str())),
                ("modified_at", Arg::Text(now)),
            ],
        );
        let running = update.bind(Arg::Text(Status::Running.as_str()));
        update.push(&format!(" AND status != {running}"));
        let changed = self.execute(update.text(), update.args()).await?;
        Ok(changed > 0)
    }

    /// Marks a source failed, keeping its earlier chunks (a failed re-scrape keeps the old text).
    pub async fn fail_source(
        &self,
        uuid: &str,
        meta: &Map<String, Value>,
        now: &str,
    ) -> ApiResult<()> {
        let meta = object_text(meta);
        let failed = update_source(
            uuid,
            vec![
                ("status", Arg::Text(Status::Error.as_str())),
                ("meta_json", Arg::Text(&meta)),
                ("modified_at", Arg::Text(now)),
            ],
        );
        self.execute(failed.text(), failed.args()).await.map(|_| ())
    }

    pub async fn retitle_source(&self, uuid: &str, title: &str, now: &str) -> ApiResult<()> {
        self.execute(
            "UPDATE data_sources SET title = ?2, modified_at = ?3, \
             meta_json = json_set(meta_json, '$.title_set', json('true')) WHERE uuid = ?1",
            &[Arg::Text(uuid), Arg::Text(title), Arg::Text(now)],
        )
        .await
        .map(|_| ())
    }

    /// Deletes sources (their chunks, index rows and tag links cascade) and drops them from
    /// the agents that named them, in one batch.
    pub async fn delete_sources(&self, uuids: &[String]) -> ApiResult<()> {
        let list = serde_json::to_string(uuids)?;
        let prune_agents = self.statement(
            "UPDATE agents SET data_source_uuids_json = \
             (SELECT json_group_array(value) FROM json_each(agents.data_source_uuids_json) \
              WHERE value NOT IN (SELECT value FROM json_each(?1))) \
             WHERE EXISTS (SELECT 1 FROM json_each(agents.data_source_uuids_json) \
              WHERE value IN (SELECT value FROM json_each(?1)))",
            &[Arg::Text(&list)],
        )?;
        let delete = self.statement(
            "DELETE FROM data_sources WHERE uuid IN (SELECT value FROM json_each(?1))",
            &[Arg::Text(&list)],
        )?;
        self.batch(vec![prune_agents, delete], || {
            ApiError::internal("unexpected conflict deleting sources")
        })
        .await
        .map(|_| ())
    }

    /// Sources stuck in `await` or `running` since before `cutoff`: their reader was cut off.
    pub async fn fail_stale_sources(&self, cutoff: &str, now: &str) -> ApiResult<usize> {
        self.execute(
            "UPDATE data_sources SET status = ?3, modified_at = ?2, \
             meta_json = json_set(meta_json, '$.error', 'Reading this source was interrupted; re-scrape or upload it again.') \
             WHERE status IN (?4, ?5) AND modified_at < ?1",
            &[
                Arg::Text(cutoff),
                Arg::Text(now),
                Arg::Text(Status::Error.as_str()),
                Arg::Text(Status::Await.as_str()),
                Arg::Text(Status::Running.as_str()),
            ],
        )
        .await
    }

    /// Which of `keys` some data source still points at.
    pub async fn known_object_keys(&self, keys: &[String]) -> ApiResult<Vec<String>> {
        #[derive(Deserialize)]
        struct Known {
            object_key: String,
        }
        let list = serde_json::to_string(keys)?;
        let rows: Vec<Known> = self
            .rows(
                "SELECT object_key FROM data_sources WHERE object_key IN (SELECT value FROM json_each(?1))",
                &[Arg::Text(&list)],
            )
            .await?;
        Ok(rows.into_iter().map(|r| r.object_key).collect())
    }

    /// Tag uuids per source, for the sources given.
    pub async fn tags_of_sources(
        &self,
        source_uuids: &[String],
    ) -> ApiResult<HashMap<String, Vec<String>>> {
        #[derive(Deserialize)]
        struct Link {
            data_source_uuid: String,
            source_tag_uuid: String,
        }
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        if source_uuids.is_empty() {
            return Ok(out);
        }
        let list = serde_json::to_string(source_uuids)?;
        let rows: Vec<Link> = self
            .rows(
                "SELECT l.data_source_uuid, l.source_tag_uuid FROM data_source_tags l JOIN source_tags t ON t.uuid = l.source_tag_uuid \
                 WHERE l.data_source_uuid IN (SELECT value FROM json_each(?1)) ORDER BY t.created_at, t.rowid",
                &[Arg::Text(&list)],
            )
            .await?;
        for r in rows {
            out.entry(r.data_source_uuid)
                .or_default()
                .push(r.source_tag_uuid);
        }
        Ok(out)
    }

    /// Adds to a batch the statement counting each phrase in the index, when there are
    /// enough phrases for the counts to matter (one phrase is never gated); its position, for
    /// `phrase_counts`.
    pub(super) fn count_phrases_in(
        &self,
        statements: &mut Vec<D1PreparedStatement>,
        phrases: &[String],
    ) -> ApiResult<Option<usize>> {
        if phrases.len() < 2 {
            return Ok(None);
        }
        let list = serde_json::to_string(phrases)?;
        statements.push(self.statement(PHRASE_FREQUENCY_SQL, &[Arg::Text(&list)])?);
        Ok(Some(statements.len() - 1))
    }

    /// Whether the owner holds the chatbot and, when `phrases` holds more than one phrase,
    /// how common each is in the index, in one round trip: `None` when it is not the owner's.
    pub async fn owned_phrase_frequencies(
        &self,
        owner: Owner<'_>,
        chatbot_uuid: &str,
        phrases: &[String],
    ) -> ApiResult<Option<Vec<i64>>> {
        let mut statements = vec![self.statement(
            &format!(
                "SELECT uuid FROM chatbots WHERE uuid = ?1 AND {}",
                owner.test("account_uuid", 2)
            ),
            &[Arg::Text(chatbot_uuid), owner.arg()],
        )?];
        let count_index = self.count_phrases_in(&mut statements, phrases)?;
        let results = self.read_batch(statements).await?;
        if batch_rows::<serde_json::Value>(&results, 0)?.is_empty() {
            return Ok(None);
        }
        Ok(Some(phrase_counts(&results, count_index)?))
    }

    /// The chunks that best match an FTS5 expression in one chatbot, best first, optionally
    /// only from `allowed_sources`. The best `limit` are chosen from the index and the
    /// `chunks_by_id_chatbot` index alone; only those rows are then read in full.
    pub async fn search_chunks(
        &self,
        index: SearchIndex,
        chatbot_uuid: &str,
        fts_expression: &str,
        allowed_sources: Option<&[String]>,
        limit: usize,
    ) -> ApiResult<Vec<ChunkHit>> {
        let source_filter = allowed_sources.map(serde_json::to_string).transpose()?;
        let sql = format!(
            "SELECT c.id, c.data_source_uuid, c.position, c.heading, c.text, c.tokens, \
             s.type AS source_type, s.title, s.file_name, s.meta_json, best.rank \
             FROM (SELECT {index}.rowid AS id, {bm25} AS rank \
                   FROM {index} JOIN chunks k INDEXED BY chunks_by_id_chatbot ON k.id = {index}.rowid \
                   WHERE {index} MATCH ?1 AND k.chatbot_uuid = ?2 {filter} ORDER BY rank LIMIT ?3) best \
             JOIN chunks c ON c.id = best.id JOIN data_sources s ON s.uuid = c.data_source_uuid \
             ORDER BY best.rank",
            index = index.table(),
            bm25 = index.bm25(),
            filter = if source_filter.is_some() { "AND k.data_source_uuid IN (SELECT value FROM json_each(?4))" } else { "" }
        );
        let limit = limit as i64;
        let mut args = vec![
            Arg::Text(fts_expression),
            Arg::Text(chatbot_uuid),
            Arg::Int(limit),
        ];
        if let Some(list) = source_filter.as_deref() {
            args.push(Arg::Text(list));
        }
        self.rows(&sql, &args).await
    }
}
