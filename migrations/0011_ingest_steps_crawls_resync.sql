-- Ingestion in bounded steps on a queue, site crawls, and scheduled re-sync of web pages.

-- A site crawl: where it starts, its limits and filters, how often it is read again, and the
-- robots.txt rules read at its start.
CREATE TABLE crawls (
  uuid             TEXT PRIMARY KEY,
  chatbot_uuid     TEXT NOT NULL REFERENCES chatbots(uuid) ON DELETE CASCADE,
  url              TEXT NOT NULL,
  max_pages        INTEGER NOT NULL,
  max_depth        INTEGER NOT NULL,
  include_json     TEXT NOT NULL DEFAULT '[]',
  exclude_json     TEXT NOT NULL DEFAULT '[]',
  refresh          TEXT NOT NULL CHECK (refresh IN ('never', 'daily', 'weekly', 'monthly')),
  robots_json      TEXT NOT NULL DEFAULT '{}',
  error            TEXT,
  next_sync_at     TEXT,
  last_synced_at   TEXT,
  created_at       TEXT NOT NULL,
  modified_at      TEXT NOT NULL
);
CREATE INDEX crawls_by_chatbot ON crawls(chatbot_uuid, created_at);
CREATE INDEX crawls_due ON crawls(next_sync_at) WHERE next_sync_at IS NOT NULL;

-- Every URL a crawl has met, normalised, so no page is read twice: a page it reads (with its
-- data source), one robots.txt forbids (only counted), one that went away (404 or 410), and its
-- sitemaps, pending or read in this sync.
CREATE TABLE crawl_pages (
  crawl_uuid        TEXT NOT NULL REFERENCES crawls(uuid) ON DELETE CASCADE,
  url               TEXT NOT NULL,
  depth             INTEGER NOT NULL,
  state             TEXT NOT NULL CHECK (state IN ('page', 'robots', 'gone', 'sitemap', 'sitemap_read')),
  data_source_uuid  TEXT,
  PRIMARY KEY (crawl_uuid, url)
);

-- A web page's re-sync: how often, when next, and what makes a re-read cheap (its validators
-- and the hash of the text last indexed). `ingest_run` names the reading whose staged chunks
-- may be swapped in; `step_failure` is why its last step failed, for the dead-letter consumer.
ALTER TABLE data_sources ADD COLUMN crawl_uuid TEXT REFERENCES crawls(uuid) ON DELETE CASCADE;
ALTER TABLE data_sources ADD COLUMN refresh TEXT NOT NULL DEFAULT 'never'
  CHECK (refresh IN ('never', 'daily', 'weekly', 'monthly'));
ALTER TABLE data_sources ADD COLUMN next_check_at TEXT;
ALTER TABLE data_sources ADD COLUMN etag TEXT;
ALTER TABLE data_sources ADD COLUMN last_modified TEXT;
ALTER TABLE data_sources ADD COLUMN page_hash TEXT;
ALTER TABLE data_sources ADD COLUMN ingest_run TEXT;
ALTER TABLE data_sources ADD COLUMN step_failure TEXT;
CREATE INDEX data_sources_by_crawl ON data_sources(crawl_uuid) WHERE crawl_uuid IS NOT NULL;
CREATE INDEX data_sources_due ON data_sources(next_check_at) WHERE next_check_at IS NOT NULL;

-- Chunks of a reading too large for one step, written slice by slice and swapped into
-- `chunks` in one batch when the last slice lands: searches never see half a document.
-- Keyed by position, so a slice written twice (a retried step) replaces itself.
CREATE TABLE chunk_drafts (
  data_source_uuid  TEXT NOT NULL REFERENCES data_sources(uuid) ON DELETE CASCADE,
  run               TEXT NOT NULL,
  position          INTEGER NOT NULL,
  heading           TEXT NOT NULL,
  text              TEXT NOT NULL,
  tokens            INTEGER NOT NULL,
  PRIMARY KEY (data_source_uuid, run, position)
);
