//! Site crawls, the URLs each has met (`crawl_pages`) and the `link` sources its pages became.

use super::data_sources::SourceRow;
use super::table::{table, Sql};
use super::{batch_rows, Arg, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::data_source::{DataSource, SourceType, Status};
use edgechat_core::knowledge::steps::Refresh;
use serde::Deserialize;
use serde_json::{json, Value};

table! {
    pub(super) struct CrawlRow in CRAWLS = "crawls" {
        key uuid: String,
        fixed chatbot_uuid: String,
        fixed url: String,
        fixed max_pages: i64,
        fixed max_depth: i64,
        fixed include_json: String,
        fixed exclude_json: String,
        set refresh: Refresh,
        set robots_json: String,
        set error: Option<String>,
        set next_sync_at: Option<String>,
        set last_synced_at: Option<String>,
        fixed created_at: String,
        set modified_at: String,
    }
}

/// A crawl as the Worker keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Crawl {
    pub uuid: String,
    pub chatbot_uuid: String,
    pub url: String,
    pub max_pages: i64,
    pub max_depth: i64,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub refresh: Refresh,
    pub robots_json: String,
    pub error: Option<String>,
    pub next_sync_at: Option<String>,
    pub last_synced_at: Option<String>,
    pub created_at: String,
    pub modified_at: String,
}

impl From<&Crawl> for CrawlRow {
    fn from(c: &Crawl) -> Self {
        CrawlRow {
            uuid: c.uuid.clone(),
            chatbot_uuid: c.chatbot_uuid.clone(),
            url: c.url.clone(),
            max_pages: c.max_pages,
            max_depth: c.max_depth,
            include_json: json!(c.include).to_string(),
            exclude_json: json!(c.exclude).to_string(),
            refresh: c.refresh,
            robots_json: c.robots_json.clone(),
            error: c.error.clone(),
            next_sync_at: c.next_sync_at.clone(),
            last_synced_at: c.last_synced_at.clone(),
            created_at: c.created_at.clone(),
            modified_at: c.modified_at.clone(),
        }
    }
}

impl TryFrom<CrawlRow> for Crawl {
    type Error = ApiError;

    fn try_from(r: CrawlRow) -> ApiResult<Crawl> {
        Ok(Crawl {
            uuid: r.uuid,
            chatbot_uuid: r.chatbot_uuid,
            url: r.url,
            max_pages: r.max_pages,
            max_depth: r.max_depth,
            include: serde_json::from_str(&r.include_json)?,
            exclude: serde_json::from_str(&r.exclude_json)?,
            refresh: r.refresh,
            robots_json: r.robots_json,
            error: r.error,
            next_sync_at: r.next_sync_at,
            last_synced_at: r.last_synced_at,
            created_at: r.created_at,
            modified_at: r.modified_at,
        })
    }
}

/// How far a crawl has come.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Progress {
    pub found: i64,
    pub read: i64,
    pub failed: i64,
    pub pending: i64,
    pub skipped_robots: i64,
    pub sitemaps_pending: i64,
}

impl Crawl {
    /// `running` while pages or sitemaps wait to be read (or before the first step ran),
    /// then `error` or `done`.
    pub fn status(&self, progress: &Progress) -> &'static str {
        if self.last_synced_at.is_none() && self.error.is_none()
            || progress.pending > 0
            || progress.sitemaps_pending > 0
        {
            "running"
        } else if self.error.is_some() {
            "error"
        } else {
            "done"
        }
    }

    pub fn to_json(&self, progress: &Progress) -> Value {
        let status = self.status(progress);
        json!({
            "uuid": self.uuid,
            "chatbot_uuid": self.chatbot_uuid,
            "url": self.url,
            "max_pages": self.max_pages,
            "max_depth": self.max_depth,
            "include": self.include,
            "exclude": self.exclude,
            "refresh": self.refresh.as_str(),
            "status": status,
            "error": self.error,
            "pages": {
                "found": progress.found,
                "read": progress.read,
                "failed": progress.failed,
                "pending": progress.pending,
                "skipped_by_robots": progress.skipped_robots,
            },
            "last_synced_at": self.last_synced_at,
            "next_sync_at": self.next_sync_at,
            "created_at": self.created_at,
            "modified_at": self.modified_at,
        })
    }
}

const PROGRESS_SQL: &str = "SELECT \
     (SELECT COUNT(*) FROM crawl_pages WHERE crawl_uuid = ?1 AND state = 'page') AS found, \
     (SELECT COUNT(*) FROM data_sources WHERE crawl_uuid = ?1 AND status = 'success') AS read, \
     (SELECT COUNT(*) FROM data_sources WHERE crawl_uuid = ?1 AND status = 'error') AS failed, \
     (SELECT COUNT(*) FROM data_sources WHERE crawl_uuid = ?1 AND status IN ('await', 'running')) AS pending, \
     (SELECT COUNT(*) FROM crawl_pages WHERE crawl_uuid = ?1 AND state = 'robots') AS skipped_robots, \
     (SELECT COUNT(*) FROM crawl_pages WHERE crawl_uuid = ?1 AND state = 'sitemap') AS sitemaps_pending";

/// A page a crawl step found: its normalised URL, the source it would become, its depth.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FoundPage {
    pub url: String,
    pub source: String,
    pub depth: i64,
    /// `urls::page_identity`: the source's content hash.
    pub identity: String,
}

/// Why a page left its crawl.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PageLeft {
    /// It answers 404 or 410, or redirects out of the crawl, or to a page held already.
    Gone,
    /// robots.txt forbids it now: counted in `skipped_by_robots`.
    Forbidden,
}

impl Store {
    pub async fn insert_crawl(&self, crawl: &Crawl) -> ApiResult<()> {
        let row = CrawlRow::from(crawl);
        let sql = Sql::insert(&row, Vec::new());
        self.execute(sql.text(), sql.args()).await.map(|_| ())
    }

    /// A crawl, if its chatbot belongs to `account_uuid`.
    pub async fn get_crawl(&self, account_uuid: &str, uuid: &str) -> ApiResult<Option<Crawl>> {
        let row: Option<CrawlRow> = self
            .row(
                &format!(
                    "SELECT {} FROM crawls k JOIN chatbots c ON c.uuid = k.chatbot_uuid \
                     WHERE k.uuid = ?1 AND c.account_uuid = ?2",
                    CRAWLS.select("k")
                ),
                &[Arg::Text(uuid), Arg::Text(account_uuid)],
            )
            .await?;
        row.map(Crawl::try_from).transpose()
    }

    /// A crawl for its own steps, whoever owns it.
    pub async fn crawl_for_step(&self, uuid: &str) -> ApiResult<Option<Crawl>> {
        let row: Option<CrawlRow> = self
            .row(
                &format!(
                    "SELECT {} FROM crawls k WHERE k.uuid = ?1",
                    CRAWLS.select("k")
                ),
                &[Arg::Text(uuid)],
            )
            .await?;
        row.map(Crawl::try_from).transpose()
    }

    pub async fn list_crawls(&self, chatbot_uuid: &str) -> ApiResult<Vec<(Crawl, Progress)>> {
        let rows: Vec<CrawlRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM crawls k WHERE k.chatbot_uuid = ?1 ORDER BY k.created_at, k.rowid",
                    CRAWLS.select("k")
                ),
                &[Arg::Text(chatbot_uuid)],
            )
            .await?;
        let crawls: Vec<Crawl> = rows
            .into_iter()
            .map(Crawl::try_from)
            .collect::<ApiResult<_>>()?;
        if crawls.is_empty() {
            return Ok(Vec::new());
        }
        let statements = crawls
            .iter()
            .map(|c| self.statement(PROGRESS_SQL, &[Arg::Text(&c.uuid)]))
            .collect::<ApiResult<Vec<_>>>()?;
        let results = self.read_batch(statements).await?;
        crawls
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let progress = batch_rows::<Progress>(&results, i)?
                    .into_iter()
                    .next()
                    .unwrap_or_default();
                Ok((c, progress))
            })
            .collect()
    }

    pub async fn crawl_progress(&self, uuid: &str) -> ApiResult<Progress> {
        let row: Option<Progress> = self.row(PROGRESS_SQL, &[Arg::Text(uuid)]).await?;
        Ok(row.unwrap_or_default())
    }

    /// The uuids of a crawl's page sources.
    pub async fn crawl_source_uuids(&self, crawl_uuid: &str) -> ApiResult<Vec<String>> {
        self.uuids(
            "SELECT uuid FROM data_sources WHERE crawl_uuid = ?1 ORDER BY created_at, rowid",
            &[Arg::Text(crawl_uuid)],
        )
        .await
    }

    /// Deletes a crawl, its pages' sources (their chunks and tags cascade; agents stop naming
    /// them) and what it knew of its URLs, in one batch.
    pub async fn delete_crawl(&self, uuid: &str) -> ApiResult<()> {
        let prune_agents = self.statement(
            "UPDATE agents SET data_source_uuids_json = \
             (SELECT json_group_array(value) FROM json_each(agents.data_source_uuids_json) \
              WHERE value NOT IN (SELECT uuid FROM data_sources WHERE crawl_uuid = ?1)) \
             WHERE EXISTS (SELECT 1 FROM json_each(agents.data_source_uuids_json) \
              WHERE value IN (SELECT uuid FROM data_sources WHERE crawl_uuid = ?1))",
            &[Arg::Text(uuid)],
        )?;
        let sources = self.statement(
            "DELETE FROM data_sources WHERE crawl_uuid = ?1",
            &[Arg::Text(uuid)],
        )?;
        let crawl = self.statement("DELETE FROM crawls WHERE uuid = ?1", &[Arg::Text(uuid)])?;
        self.batch(vec![prune_agents, sources, crawl], || {
            ApiError::internal("unexpected conflict deleting a crawl")
        })
        .await
        .map(|_| ())
    }

    /// Records what robots.txt said and that the crawl's start step ran.
    pub async fn crawl_started(&self, uuid: &str, robots_json: &str, now: &str) -> ApiResult<()> {
        self.execute(
            "UPDATE crawls SET robots_json = ?2, last_synced_at = ?3, modified_at = ?3, error = NULL, \
             step_failure = NULL WHERE uuid = ?1",
            &[Arg::Text(uuid), Arg::Text(robots_json), Arg::Text(now)],
        )
        .await
        .map(|_| ())
    }

    pub async fn fail_crawl(&self, uuid: &str, reason: &str, now: &str) -> ApiResult<()> {
        self.execute(
            "UPDATE crawls SET error = ?2, modified_at = ?3, last_synced_at = COALESCE(last_synced_at, ?3) WHERE uuid = ?1",
            &[Arg::Text(uuid), Arg::Text(reason), Arg::Text(now)],
        )
        .await
        .map(|_| ())
    }

    /// Why the crawl's start step last failed; the dead-letter consumer names it.
    pub async fn record_crawl_step_failure(&self, uuid: &str, reason: &str) -> ApiResult<()> {
        self.execute(
            "UPDATE crawls SET step_failure = ?2 WHERE uuid = ?1",
            &[Arg::Text(uuid), Arg::Text(reason)],
        )
        .await
        .map(|_| ())
    }

    /// A crawl whose start step was given up on: `error`, with the last failure's reason
    /// (`fallback` when none was recorded).
    pub async fn fail_crawl_start(&self, uuid: &str, fallback: &str, now: &str) -> ApiResult<()> {
        self.execute(
            "UPDATE crawls SET error = COALESCE(step_failure, ?2), step_failure = NULL, modified_at = ?3, \
             last_synced_at = COALESCE(last_synced_at, ?3) WHERE uuid = ?1",
            &[Arg::Text(uuid), Arg::Text(fallback), Arg::Text(now)],
        )
        .await
        .map(|_| ())
    }

    /// Sitemaps a crawl should read, each once per sync: those not yet known (or read in an
    /// earlier sync) are marked pending and returned; none for a crawl deleted meanwhile.
    pub async fn claim_sitemaps(
        &self,
        crawl_uuid: &str,
        urls: &[String],
    ) -> ApiResult<Vec<String>> {
        #[derive(Deserialize)]
        struct Claimed {
            url: String,
        }
        if urls.is_empty() {
            return Ok(Vec::new());
        }
        let list = serde_json::to_string(urls)?;
        let rows: Vec<Claimed> = self
            .rows(
                "INSERT INTO crawl_pages (crawl_uuid, url, depth, state) \
                 SELECT ?1, j.value, 0, 'sitemap' FROM json_each(?2) j \
                 WHERE EXISTS (SELECT 1 FROM crawls WHERE uuid = ?1) \
                 ON CONFLICT (crawl_uuid, url) DO UPDATE SET state = 'sitemap' WHERE state = 'sitemap_read' \
                 RETURNING url",
                &[Arg::Text(crawl_uuid), Arg::Text(&list)],
            )
            .await?;
        Ok(rows.into_iter().map(|r| r.url).collect())
    }

    pub async fn sitemap_read(&self, crawl_uuid: &str, url: &str, now: &str) -> ApiResult<()> {
        let statements = vec![
            self.statement(
                "UPDATE crawl_pages SET state = 'sitemap_read' WHERE crawl_uuid = ?1 AND url = ?2",
                &[Arg::Text(crawl_uuid), Arg::Text(url)],
            )?,
            self.statement(
                "UPDATE crawls SET modified_at = ?2 WHERE uuid = ?1",
                &[Arg::Text(crawl_uuid), Arg::Text(now)],
            )?,
        ];
        self.batch(statements, || {
            ApiError::internal("unexpected conflict marking a sitemap")
        })
        .await
        .map(|_| ())
    }

    /// Adds pages to a crawl, up to its page limit, and makes each new one a `link` source in
    /// `await`; URLs the crawl already knows are left as they are. `blocked` are URLs robots.txt
    /// forbids, only counted. The new pages' source uuids, to queue. A crawl deleted while its
    /// step ran gets none, rather than failing on its foreign key.
    pub async fn add_crawl_pages(
        &self,
        crawl: &Crawl,
        pages: &[FoundPage],
        blocked: &[String],
        now: &str,
    ) -> ApiResult<Vec<String>> {
        #[derive(Deserialize)]
        struct Added {
            data_source_uuid: String,
        }
        let mut statements = Vec::new();
        let list = serde_json::to_string(pages)?;
        if !blocked.is_empty() {
            let blocked = serde_json::to_string(blocked)?;
            statements.push(self.statement(
                "INSERT OR IGNORE INTO crawl_pages (crawl_uuid, url, depth, state) \
                 SELECT ?1, j.value, 0, 'robots' FROM json_each(?2) j \
                 WHERE EXISTS (SELECT 1 FROM crawls WHERE uuid = ?1)",
                &[Arg::Text(&crawl.uuid), Arg::Text(&blocked)],
            )?);
        }
        let added_at = statements.len();
        statements.push(self.statement(
            "INSERT OR IGNORE INTO crawl_pages (crawl_uuid, url, depth, state, data_source_uuid) \
             SELECT ?1, json_extract(j.value, '$.url'), json_extract(j.value, '$.depth'), 'page', json_extract(j.value, '$.source') \
             FROM json_each(?2) j \
             WHERE EXISTS (SELECT 1 FROM crawls WHERE uuid = ?1) \
             AND NOT EXISTS (SELECT 1 FROM crawl_pages p WHERE p.crawl_uuid = ?1 AND p.url = json_extract(j.value, '$.url')) \
             AND NOT EXISTS (SELECT 1 FROM data_sources s WHERE s.chatbot_uuid = ?4 AND s.content_hash = json_extract(j.value, '$.identity')) \
             ORDER BY j.key \
             LIMIT max(0, ?3 - (SELECT COUNT(*) FROM crawl_pages WHERE crawl_uuid = ?1 AND state = 'page')) \
             RETURNING data_source_uuid",
            &[
                Arg::Text(&crawl.uuid),
                Arg::Text(&list),
                Arg::Int(crawl.max_pages),
                Arg::Text(&crawl.chatbot_uuid),
            ],
        )?);
        let meta_of = |url: &str| json!({ "url": url, "crawl_uuid": crawl.uuid }).to_string();
        let metas: Vec<String> = pages.iter().map(|p| meta_of(&p.url)).collect();
        let rows: Vec<SourceRow> = pages
            .iter()
            .zip(&metas)
            .map(|(p, meta)| {
                SourceRow::from(&DataSource {
                    uuid: p.source.clone(),
                    chatbot_uuid: crawl.chatbot_uuid.clone(),
                    source_type: SourceType::Link,
                    title: p.url.clone(),
                    file_name: String::new(),
                    file_size: 0,
                    tokens: 0,
                    status: Status::Await,
                    meta: serde_json::from_str(meta).unwrap_or_default(),
                    object_key: None,
                    created_at: now.to_string(),
                    modified_at: now.to_string(),
                })
            })
            .collect();
        for (row, page) in rows.iter().zip(pages) {
            let mut insert = Sql::insert_select(row, &[]);
            let crawl_uuid = insert.bind(Arg::Text(&crawl.uuid));
            let refresh = insert.bind(Arg::Text(crawl.refresh.as_str()));
            let identity = insert.bind(Arg::Text(&page.identity));
            let source = insert.param("uuid");
            // The crawl's uuid, refresh and the page's identity are columns beside the record.
            let text = insert.text().replacen(
                ") SELECT ",
                ", crawl_uuid, refresh, content_hash) SELECT ",
                1,
            );
            let full = format!(
                "{text}, {crawl_uuid}, {refresh}, {identity} WHERE EXISTS (SELECT 1 FROM crawl_pages WHERE crawl_uuid = {crawl_uuid} AND data_source_uuid = {source})"
            );
            statements.push(self.statement(&full, insert.args())?);
        }
        let results = self
            .batch(statements, || {
                ApiError::internal("unexpected conflict adding crawl pages")
            })
            .await?;
        Ok(batch_rows::<Added>(&results, added_at)?
            .into_iter()
            .map(|a| a.data_source_uuid)
            .collect())
    }

    /// A page that leaves its crawl: its source goes (agents stop naming it) and the URL is
    /// remembered as `left` it, so links to it do not bring it back.
    pub async fn remove_crawl_page(
        &self,
        crawl_uuid: &str,
        source_uuid: &str,
        left: PageLeft,
    ) -> ApiResult<()> {
        let state = match left {
            PageLeft::Gone => "gone",
            PageLeft::Forbidden => "robots",
        };
        let statements = vec![
            self.statement(
                "UPDATE crawl_pages SET state = ?3, data_source_uuid = NULL WHERE crawl_uuid = ?1 AND data_source_uuid = ?2",
                &[Arg::Text(crawl_uuid), Arg::Text(source_uuid), Arg::Text(state)],
            )?,
            self.statement(
                "UPDATE agents SET data_source_uuids_json = \
                 (SELECT json_group_array(value) FROM json_each(agents.data_source_uuids_json) WHERE value != ?1) \
                 WHERE EXISTS (SELECT 1 FROM json_each(agents.data_source_uuids_json) WHERE value = ?1)",
                &[Arg::Text(source_uuid)],
            )?,
            self.statement("DELETE FROM data_sources WHERE uuid = ?1", &[Arg::Text(source_uuid)])?,
        ];
        self.batch(statements, || {
            ApiError::internal("unexpected conflict removing a page")
        })
        .await
        .map(|_| ())
    }

    /// Whether the crawl holds any page (read, waiting or failed) as a source.
    pub async fn crawl_holds_pages(&self, crawl_uuid: &str) -> ApiResult<bool> {
        self.exists(
            "SELECT 1 FROM crawl_pages WHERE crawl_uuid = ?1 AND state = 'page'",
            &[Arg::Text(crawl_uuid)],
        )
        .await
    }

    /// Whether the chatbot holds the page of `identity` (`page_identity`) other than as a page
    /// of crawl `crawl_uuid`: as a page added alone, or by another crawl.
    pub async fn holds_page_outside(
        &self,
        chatbot_uuid: &str,
        crawl_uuid: &str,
        identity: &str,
    ) -> ApiResult<bool> {
        self.exists(
            "SELECT 1 FROM data_sources WHERE chatbot_uuid = ?1 AND content_hash = ?2 \
             AND (crawl_uuid IS NULL OR crawl_uuid != ?3)",
            &[
                Arg::Text(chatbot_uuid),
                Arg::Text(identity),
                Arg::Text(crawl_uuid),
            ],
        )
        .await
    }

    /// A crawl's `refresh` and its next sync, as `crawl` holds them; its pages say the same.
    pub async fn set_crawl_refresh(&self, crawl: &Crawl) -> ApiResult<()> {
        let refresh = crawl.refresh.as_str();
        let statements = vec![
            self.statement(
                "UPDATE crawls SET refresh = ?2, next_sync_at = ?3, modified_at = ?4 WHERE uuid = ?1",
                &[
                    Arg::Text(&crawl.uuid),
                    Arg::Text(refresh),
                    crawl.next_sync_at.as_deref().map_or(Arg::Null, Arg::Text),
                    Arg::Text(&crawl.modified_at),
                ],
            )?,
            self.statement(
                "UPDATE data_sources SET refresh = ?2, \
                 meta_json = CASE WHEN json_type(meta_json, '$.refresh') IS NULL THEN meta_json \
                   ELSE json_set(meta_json, '$.refresh', ?2) END \
                 WHERE crawl_uuid = ?1",
                &[Arg::Text(&crawl.uuid), Arg::Text(refresh)],
            )?,
        ];
        self.batch(statements, || {
            ApiError::internal("unexpected conflict setting a crawl's refresh")
        })
        .await
        .map(|_| ())
    }

    /// A crawled page that redirects takes the address it lands on (and that page's identity):
    /// `false`, and nothing changed, when the chatbot holds that page already.
    pub async fn move_crawl_page(
        &self,
        source_uuid: &str,
        url: &str,
        identity: &str,
    ) -> ApiResult<bool> {
        let statements = vec![self.statement(
            "UPDATE data_sources SET content_hash = ?2, meta_json = json_set(meta_json, '$.url', ?3) \
             WHERE uuid = ?1",
            &[Arg::Text(source_uuid), Arg::Text(identity), Arg::Text(url)],
        )?];
        match self
            .batch(statements, || ApiError::Conflict(String::new()))
            .await
        {
            Ok(_) => Ok(true),
            Err(ApiError::Conflict(_)) => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Crawls whose re-sync is due, moved to their next time in the same statement.
    pub async fn take_due_crawls(&self, now: &str, limit: i64) -> ApiResult<Vec<String>> {
        self.uuids(
            "UPDATE crawls SET next_sync_at = strftime('%Y-%m-%dT%H:%M:%SZ', ?1, \
             CASE refresh WHEN 'daily' THEN '+1 day' WHEN 'weekly' THEN '+7 days' ELSE '+30 days' END) \
             WHERE uuid IN (SELECT uuid FROM crawls WHERE next_sync_at IS NOT NULL AND next_sync_at <= ?1 LIMIT ?2) \
             RETURNING uuid",
            &[Arg::Text(now), Arg::Int(limit)],
        )
        .await
    }

    /// A re-sync begins: every page of the crawl is marked checked now (it is about to be
    /// asked for; the mark before is kept in `checked_before`, for a re-read that fails to put
    /// back), and the pages that had gone (404, 410) or that robots.txt forbade are
    /// forgotten and returned (URL and depth), for the sync to offer again beside what it
    /// finds: a page that is back, or allowed again, comes back even when the pages linking
    /// to it answer 304 and so show no links. At most 100 a sync, those left longest first: one
    /// still gone is stored again behind the rest, so a site that dropped many pages is asked
    /// for a bounded number each sync, all of them in turn.
    pub async fn begin_resync(&self, crawl_uuid: &str, now: &str) -> ApiResult<Vec<(String, i64)>> {
        #[derive(Deserialize)]
        struct Left {
            url: String,
            depth: i64,
        }
        let statements = vec![
            self.statement(
                "UPDATE data_sources SET checked_before = json_extract(meta_json, '$.last_checked_at'), \
                 meta_json = json_set(meta_json, '$.last_checked_at', ?2) \
                 WHERE crawl_uuid = ?1 AND status IN ('success', 'error')",
                &[Arg::Text(crawl_uuid), Arg::Text(now)],
            )?,
            self.statement(
                "DELETE FROM crawl_pages WHERE rowid IN (SELECT rowid FROM crawl_pages \
                 WHERE crawl_uuid = ?1 AND state IN ('gone', 'robots') ORDER BY rowid LIMIT 100) \
                 RETURNING url, depth",
                &[Arg::Text(crawl_uuid)],
            )?,
        ];
        let results = self
            .batch(statements, || {
                ApiError::internal("unexpected conflict starting a re-sync")
            })
            .await?;
        Ok(batch_rows::<Left>(&results, 1)?
            .into_iter()
            .map(|left| (left.url, left.depth))
            .collect())
    }

    /// Crawls whose own steps stalled (never started, or sitemaps left pending) since before
    /// `cutoff`: what to queue again, as (crawl, sitemap URLs pending).
    pub async fn stalled_crawls(
        &self,
        cutoff: &str,
        now: &str,
    ) -> ApiResult<Vec<(String, Option<String>)>> {
        #[derive(Deserialize)]
        struct Stalled {
            uuid: String,
            sitemap: Option<String>,
        }
        let rows: Vec<Stalled> = self
            .rows(
                "SELECT k.uuid, NULL AS sitemap FROM crawls k WHERE k.last_synced_at IS NULL AND k.error IS NULL AND k.modified_at < ?1 \
                 UNION ALL \
                 SELECT k.uuid, p.url AS sitemap FROM crawls k JOIN crawl_pages p ON p.crawl_uuid = k.uuid \
                 WHERE p.state = 'sitemap' AND k.modified_at < ?1",
                &[Arg::Text(cutoff)],
            )
            .await?;
        if !rows.is_empty() {
            self.execute(
                "UPDATE crawls SET modified_at = ?2 WHERE modified_at < ?1 AND (last_synced_at IS NULL \
                 OR EXISTS (SELECT 1 FROM crawl_pages p WHERE p.crawl_uuid = crawls.uuid AND p.state = 'sitemap'))",
                &[Arg::Text(cutoff), Arg::Text(now)],
            )
            .await?;
        }
        Ok(rows.into_iter().map(|r| (r.uuid, r.sitemap)).collect())
    }
}
