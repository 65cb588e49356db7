//! What the ingestion steps read and write beside a source's record: its page marks (the
//! validators and text hash of a web page, its re-sync schedule, its crawl), the drafts of a
//! reading too large for one step, and the swap that puts a finished reading in place.

use super::data_sources::{duplicate_upload, SourceRow, DATA_SOURCES};
use super::table::Sql;
use super::{batch_rows, object_text, Arg, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::data_source::{DataSource, SourceType, Status};
use edgechat_core::knowledge::chunk::Chunk;
use edgechat_core::knowledge::steps::{Refresh, SliceStep, GIVEN_UP, SLICE_POSITION_BITS};
use serde::Deserialize;

/// A source's page marks and, when it is a crawl's page, where it stands in the crawl.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct PageMarks {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub page_hash: Option<String>,
    pub refresh: Option<String>,
    pub crawl_uuid: Option<String>,
    /// Link hops from the crawl's start page or a sitemap.
    pub depth: Option<i64>,
    /// The crawl's start page, `include` and `exclude` (JSON arrays) and robots rules (JSON):
    /// where a redirect of a crawled page may lead.
    pub crawl_url: Option<String>,
    pub crawl_include: Option<String>,
    pub crawl_exclude: Option<String>,
    pub crawl_robots: Option<String>,
    /// `last_checked_at` before the re-read that is under way marked the page checked.
    pub checked_before: Option<String>,
    /// Why the step reading the source last failed.
    pub step_failure: Option<String>,
}

impl PageMarks {
    pub fn refresh(&self) -> Refresh {
        self.refresh
            .as_deref()
            .and_then(Refresh::parse)
            .unwrap_or(Refresh::Never)
    }
}

/// The marks a finished reading of a web page leaves.
#[derive(Clone, Debug, Default)]
pub struct NewMarks {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub page_hash: Option<String>,
}

const MARKS_SQL: &str = "SELECT s.etag, s.last_modified, s.page_hash, s.refresh, s.crawl_uuid, \
     (SELECT p.depth FROM crawl_pages p WHERE p.crawl_uuid = s.crawl_uuid AND p.data_source_uuid = s.uuid) AS depth, \
     c.url AS crawl_url, c.include_json AS crawl_include, c.exclude_json AS crawl_exclude, \
     c.robots_json AS crawl_robots, s.checked_before, s.step_failure \
     FROM data_sources s LEFT JOIN crawls c ON c.uuid = s.crawl_uuid WHERE s.uuid = ?1";

/// The statement that stores a finished reading's marks and clears its run and failure.
const MARKS_UPDATE_SQL: &str =
    "UPDATE data_sources SET etag = ?2, last_modified = ?3, page_hash = ?4, \
     ingest_run = NULL, step_failure = NULL WHERE uuid = ?1";

/// Whether the owner set a source's title (`POST /data-source/{uuid}/update {title}`): then
/// the title a reading finds does not replace it, also when the reading began before.
const TITLE_SET: &str = "json_extract(meta_json, '$.title_set')";

impl Store {
    /// A source and its page marks for a step, in one round trip; with `claim`, a source in
    /// `await` moves to `running` first. `None` when the source is gone, or (with `claim`)
    /// when it is neither waiting nor being read (finished, or failed for good).
    pub async fn source_for_step(
        &self,
        uuid: &str,
        now: &str,
        claim: bool,
    ) -> ApiResult<Option<(DataSource, PageMarks)>> {
        let mut statements = Vec::new();
        if claim {
            statements.push(self.statement(
                "UPDATE data_sources SET status = ?2, modified_at = ?3 WHERE uuid = ?1 AND status IN (?4, ?2)",
                &[
                    Arg::Text(uuid),
                    Arg::Text(Status::Running.as_str()),
                    Arg::Text(now),
                    Arg::Text(Status::Await.as_str()),
                ],
            )?);
        }
        let first = statements.len();
        statements.push(self.statement(
            &format!(
                "SELECT {} FROM data_sources s WHERE s.uuid = ?1",
                DATA_SOURCES.select("s")
            ),
            &[Arg::Text(uuid)],
        )?);
        statements.push(self.statement(MARKS_SQL, &[Arg::Text(uuid)])?);
        let results = self
            .batch(statements, || ApiError::internal("a read conflicted"))
            .await?;
        let Some(row) = batch_rows::<SourceRow>(&results, first)?.into_iter().next() else {
            return Ok(None);
        };
        let source = DataSource::try_from(row)?;
        if claim && source.status != Status::Running {
            return Ok(None);
        }
        let marks = batch_rows::<PageMarks>(&results, first + 1)?
            .into_iter()
            .next()
            .unwrap_or_default();
        Ok(Some((source, marks)))
    }

    /// Replaces a source's chunks, marks it read and stores its page marks, all in one batch:
    /// a search never sees half the old text and half the new.
    pub async fn finish_reading(
        &self,
        source: &DataSource,
        chunks: Vec<Chunk>,
        marks: &NewMarks,
    ) -> ApiResult<()> {
        let meta = object_text(&source.meta);
        let mut statements = vec![self.statement(
            "DELETE FROM chunks WHERE data_source_uuid = ?1",
            &[Arg::Text(&source.uuid)],
        )?];
        statements.extend(self.insert_chunk_statements(source, chunks)?);
        // A title the owner set while the page was read is kept, and so is the mark saying so.
        let mut finished = Sql::new("");
        let status = finished.bind(Arg::Text(Status::Success.as_str()));
        let title = finished.bind(Arg::Text(&source.title));
        let tokens = finished.bind(Arg::Int(source.tokens));
        let meta = finished.bind(Arg::Text(&meta));
        let at = finished.bind(Arg::Text(&source.modified_at));
        let uuid = finished.bind(Arg::Text(&source.uuid));
        finished.push(&format!(
            "UPDATE data_sources SET status = {status}, tokens = {tokens}, modified_at = {at}, \
             title = CASE WHEN {TITLE_SET} THEN title ELSE {title} END, \
             meta_json = CASE WHEN {TITLE_SET} THEN json_set({meta}, '$.title_set', json('true')) \
             ELSE {meta} END WHERE uuid = {uuid}"
        ));
        statements.push(self.prepare(&finished)?);
        statements.push(self.marks_statement(&source.uuid, marks)?);
        statements.push(self.statement(
            "DELETE FROM chunk_drafts WHERE data_source_uuid = ?1",
            &[Arg::Text(&source.uuid)],
        )?);
        self.batch(statements, duplicate_upload).await.map(|_| ())
    }

    fn marks_statement(
        &self,
        uuid: &str,
        marks: &NewMarks,
    ) -> ApiResult<worker::D1PreparedStatement> {
        fn opt(v: &Option<String>) -> Arg<'_> {
            v.as_deref().map_or(Arg::Null, Arg::Text)
        }
        self.statement(
            MARKS_UPDATE_SQL,
            &[
                Arg::Text(uuid),
                opt(&marks.etag),
                opt(&marks.last_modified),
                opt(&marks.page_hash),
            ],
        )
    }

    /// Names `run` the source's current reading and drops drafts of any earlier one: only
    /// slices of this run may be written and swapped in from now on.
    pub async fn begin_run(&self, uuid: &str, run: &str) -> ApiResult<()> {
        let statements = vec![
            self.statement(
                "UPDATE data_sources SET ingest_run = ?2 WHERE uuid = ?1",
                &[Arg::Text(uuid), Arg::Text(run)],
            )?,
            self.statement(
                "DELETE FROM chunk_drafts WHERE data_source_uuid = ?1 AND run != ?2",
                &[Arg::Text(uuid), Arg::Text(run)],
            )?,
        ];
        self.batch(statements, || {
            ApiError::internal("unexpected conflict starting a run")
        })
        .await
        .map(|_| ())
    }

    /// Writes one slice's chunks as drafts (each part a JSON array of staged chunks) and marks
    /// the slice written, unless the run is no longer the source's current one; how many of
    /// the run's slices are written now. Drafts are keyed by position, so writing a slice again
    /// replaces it. The mark is a draft of its own (tokens -1, past the slice's chunks), so a
    /// slice with no chunk is counted too.
    pub async fn write_slice(&self, step: &SliceStep, parts: &[String]) -> ApiResult<i64> {
        #[derive(Deserialize)]
        struct Count {
            n: i64,
        }
        let current =
            "WHERE EXISTS (SELECT 1 FROM data_sources WHERE uuid = ?1 AND ingest_run = ?2)";
        let mut statements = Vec::with_capacity(parts.len() + 2);
        for part in parts {
            statements.push(self.statement(
                &format!("INSERT OR REPLACE INTO chunk_drafts (data_source_uuid, run, position, heading, text, tokens, pairs) \
                 SELECT ?1, ?2, json_extract(j.value, '$.position'), json_extract(j.value, '$.heading'), \
                 json_extract(j.value, '$.text'), json_extract(j.value, '$.tokens'), json_extract(j.value, '$.pairs') FROM json_each(?3) j \
                 {current}"),
                &[Arg::Text(&step.source), Arg::Text(&step.run), Arg::Text(part)],
            )?);
        }
        let mark = (i64::from(step.slice) + 1) << SLICE_POSITION_BITS;
        statements.push(self.statement(
            &format!(
                "INSERT OR REPLACE INTO chunk_drafts (data_source_uuid, run, position, heading, text, tokens) \
                 SELECT ?1, ?2, ?3 - 1, '', '', -1 {current}"
            ),
            &[Arg::Text(&step.source), Arg::Text(&step.run), Arg::Int(mark)],
        )?);
        statements.push(self.statement(
            "SELECT COUNT(*) AS n FROM chunk_drafts WHERE data_source_uuid = ?1 AND run = ?2 AND tokens < 0",
            &[Arg::Text(&step.source), Arg::Text(&step.run)],
        )?);
        let last = statements.len() - 1;
        let results = self
            .batch(statements, || {
                ApiError::internal("unexpected conflict writing drafts")
            })
            .await?;
        Ok(batch_rows::<Count>(&results, last)?
            .first()
            .map_or(0, |c| c.n))
    }

    /// Puts a complete run's drafts in place of the source's chunks and marks it read, in one
    /// batch. Each statement checks that the run is still current and the last one ends it,
    /// so a second swap of the same run (a retried step) does nothing.
    pub async fn swap_run(&self, step: &SliceStep, now: &str) -> ApiResult<()> {
        let current = "EXISTS (SELECT 1 FROM data_sources WHERE uuid = ?1 AND ingest_run = ?2)";
        let source = Arg::Text(&step.source);
        let run = Arg::Text(&step.run);
        let statements = vec![
            self.statement(
                &format!("DELETE FROM chunks WHERE data_source_uuid = ?1 AND {current}"),
                &[source, run],
            )?,
            self.statement(
                &format!(
                    "INSERT INTO chunks (data_source_uuid, chatbot_uuid, position, heading, text, tokens) \
                     SELECT d.data_source_uuid, s.chatbot_uuid, ROW_NUMBER() OVER (ORDER BY d.position) - 1, d.heading, d.text, d.tokens \
                     FROM chunk_drafts d JOIN data_sources s ON s.uuid = d.data_source_uuid \
                     WHERE d.data_source_uuid = ?1 AND d.run = ?2 AND d.tokens >= 0 AND {current} ORDER BY d.position"
                ),
                &[source, run],
            )?,
            // CJK text is indexed again as character pairs (migration 0010), under the ids the
            // chunks were just given. CROSS JOIN keeps the drafts the outer loop, each chunk
            // found by its source and position (the other order scans the drafts per chunk).
            self.statement(
                &format!(
                    "INSERT INTO chunks_cjk(rowid, pairs) \
                     SELECT c.id, d.pairs FROM (SELECT pairs, ROW_NUMBER() OVER (ORDER BY position) - 1 AS n \
                       FROM chunk_drafts WHERE data_source_uuid = ?1 AND run = ?2 AND tokens >= 0) d \
                     CROSS JOIN chunks c \
                     WHERE d.pairs IS NOT NULL AND c.data_source_uuid = ?1 AND c.position = d.n AND {current}"
                ),
                &[source, run],
            )?,
            self.statement(
                "DELETE FROM chunk_drafts WHERE data_source_uuid = ?1",
                &[source],
            )?,
            self.statement(
                // A page's meta says when it was checked and changed and how often it is
                // refreshed, as a page read in one step says (`ingestion::read`); a file's not.
                &format!("UPDATE data_sources SET status = ?3, tokens = ?4, \
                 title = CASE WHEN {TITLE_SET} THEN title ELSE COALESCE(?5, title) END, \
                 meta_json = json_remove(CASE WHEN type = 'link' THEN json_set(meta_json, '$.last_checked_at', ?6, '$.last_changed_at', \
                   COALESCE(CASE WHEN page_hash = ?7 THEN json_extract(meta_json, '$.last_changed_at') END, ?6), \
                   '$.refresh', COALESCE(refresh, 'never')) ELSE meta_json END, '$.error', '$.resumed'), \
                 modified_at = ?6, page_hash = ?7, etag = NULL, last_modified = NULL, ingest_run = NULL, step_failure = NULL \
                 WHERE uuid = ?1 AND ingest_run = ?2"),
                &[
                    source,
                    run,
                    Arg::Text(Status::Success.as_str()),
                    Arg::Int(step.tokens),
                    step.title.as_deref().map_or(Arg::Null, Arg::Text),
                    Arg::Text(now),
                    step.page_hash.as_deref().map_or(Arg::Null, Arg::Text),
                ],
            )?,
        ];
        self.batch(statements, || {
            ApiError::internal("unexpected conflict swapping a reading")
        })
        .await
        .map(|_| ())
    }

    /// Why the step reading a source last failed; the dead-letter consumer reports it.
    pub async fn record_step_failure(&self, uuid: &str, reason: &str) -> ApiResult<()> {
        self.execute(
            "UPDATE data_sources SET step_failure = ?2 WHERE uuid = ?1",
            &[Arg::Text(uuid), Arg::Text(reason)],
        )
        .await
        .map(|_| ())
    }

    /// A source whose step was given up on: `error`, with the last failure's reason, unless it
    /// finished after all. A page's re-read given up on is `fail_recheck`'s.
    pub async fn fail_dead_source(&self, uuid: &str, now: &str) -> ApiResult<()> {
        self.execute(
            "UPDATE data_sources SET status = ?3, modified_at = ?2, ingest_run = NULL, \
             meta_json = json_set(meta_json, '$.error', COALESCE(step_failure, ?6)) \
             WHERE uuid = ?1 AND status IN (?4, ?5)",
            &[
                Arg::Text(uuid),
                Arg::Text(now),
                Arg::Text(Status::Error.as_str()),
                Arg::Text(Status::Await.as_str()),
                Arg::Text(Status::Running.as_str()),
                Arg::Text(GIVEN_UP),
            ],
        )
        .await
        .map(|_| ())
    }

    /// A page whose re-read was given up on ends in `error` with `meta` (its reason, its last
    /// real check), its text kept: unless a reading took it up meanwhile (`await`,
    /// `running`), which decides for itself. Whether it was written.
    pub async fn fail_recheck(
        &self,
        uuid: &str,
        meta: &serde_json::Map<String, serde_json::Value>,
        now: &str,
    ) -> ApiResult<bool> {
        let meta = object_text(meta);
        let changed = self
            .execute(
                "UPDATE data_sources SET status = ?2, meta_json = ?3, modified_at = ?4 \
                 WHERE uuid = ?1 AND status IN (?2, ?5)",
                &[
                    Arg::Text(uuid),
                    Arg::Text(Status::Error.as_str()),
                    Arg::Text(&meta),
                    Arg::Text(now),
                    Arg::Text(Status::Success.as_str()),
                ],
            )
            .await?;
        Ok(changed > 0)
    }

    /// A new web-page source that re-syncs on `refresh`. `page_identity` (a hash of the page's
    /// one spelling) is kept as its content hash, so a page added twice to a chatbot is a 409.
    pub async fn insert_page_source(
        &self,
        source: &DataSource,
        page_identity: &str,
        refresh: Refresh,
        next_check_at: Option<&str>,
    ) -> ApiResult<()> {
        let row = SourceRow::from(source);
        let sql = super::table::Sql::insert(
            &row,
            vec![
                ("content_hash", Arg::Text(page_identity)),
                ("refresh", Arg::Text(refresh.as_str())),
                ("next_check_at", next_check_at.map_or(Arg::Null, Arg::Text)),
            ],
        );
        let already = || {
            ApiError::Conflict(
                "This chatbot already reads this page; refresh that source to read it again."
                    .into(),
            )
        };
        match self.batch(vec![self.prepare(&sql)?], already).await {
            Err(ApiError::Conflict(_)) => Err(
                match self.holder(&source.chatbot_uuid, Some(page_identity)).await {
                    Some((uuid, status)) => ApiError::Conflict(format!(
                        "This chatbot already reads this page as {uuid} (status {status}); \
                         refresh that source to read it again."
                    )),
                    None => already(),
                },
            ),
            done => done.map(|_| ()),
        }
    }

    /// Single web pages (not a crawl's) whose re-sync is due: their uuids. Each is moved to
    /// its next time and its `last_checked_at` set now (the one before kept in
    /// `checked_before`, for a re-read that fails to put back), in the same statement, so a
    /// page is queued once per period whatever happens next.
    pub async fn take_due_pages(&self, now: &str, limit: i64) -> ApiResult<Vec<String>> {
        #[derive(Deserialize)]
        struct Due {
            uuid: String,
        }
        let rows: Vec<Due> = self
            .rows(
                "UPDATE data_sources SET \
                 next_check_at = strftime('%Y-%m-%dT%H:%M:%SZ', ?1, CASE refresh WHEN 'daily' THEN '+1 day' WHEN 'weekly' THEN '+7 days' ELSE '+30 days' END), \
                 checked_before = json_extract(meta_json, '$.last_checked_at'), \
                 meta_json = json_set(meta_json, '$.last_checked_at', ?1) \
                 WHERE uuid IN (SELECT uuid FROM data_sources WHERE next_check_at IS NOT NULL AND next_check_at <= ?1 \
                   AND crawl_uuid IS NULL AND type = ?3 AND status IN (?4, ?5) LIMIT ?2) \
                 RETURNING uuid",
                &[
                    Arg::Text(now),
                    Arg::Int(limit),
                    Arg::Text(SourceType::Link.as_str()),
                    Arg::Text(Status::Success.as_str()),
                    Arg::Text(Status::Error.as_str()),
                ],
            )
            .await?;
        Ok(rows.into_iter().map(|r| r.uuid).collect())
    }

    /// Web pages and files whose reading stalled (its queue message was lost, say, when a
    /// local Worker restarted) and that were not resumed before: marked resumed and returned,
    /// to be queued again. Q&A pairs have nothing to resume.
    pub async fn take_stalled_sources(
        &self,
        cutoff: &str,
        now: &str,
    ) -> ApiResult<Vec<(String, SourceType)>> {
        #[derive(Deserialize)]
        struct Stalled {
            uuid: String,
            #[serde(rename = "type")]
            source_type: SourceType,
        }
        let rows: Vec<Stalled> = self
            .rows(
                "UPDATE data_sources SET status = ?3, modified_at = ?2, ingest_run = NULL, \
                 meta_json = json_set(meta_json, '$.resumed', json('true')) \
                 WHERE status IN (?3, ?4) AND modified_at < ?1 AND type != ?5 \
                 AND json_extract(meta_json, '$.resumed') IS NULL \
                 RETURNING uuid, type",
                &[
                    Arg::Text(cutoff),
                    Arg::Text(now),
                    Arg::Text(Status::Await.as_str()),
                    Arg::Text(Status::Running.as_str()),
                    Arg::Text(SourceType::Qa.as_str()),
                ],
            )
            .await?;
        Ok(rows.into_iter().map(|r| (r.uuid, r.source_type)).collect())
    }
}
