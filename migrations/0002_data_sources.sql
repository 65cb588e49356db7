-- Data sources, their chunks and full-text index, and source tags.

CREATE TABLE data_sources (
  uuid           TEXT PRIMARY KEY,
  chatbot_uuid   TEXT NOT NULL REFERENCES chatbots(uuid) ON DELETE CASCADE,
  type           TEXT NOT NULL CHECK (type IN ('qa', 'link', 'file')),
  title          TEXT NOT NULL,
  file_name      TEXT NOT NULL DEFAULT '',
  file_size      INTEGER NOT NULL DEFAULT 0,
  tokens         INTEGER NOT NULL DEFAULT 0,
  status         TEXT NOT NULL CHECK (status IN ('await', 'running', 'success', 'error')),
  meta_json      TEXT NOT NULL DEFAULT '{}',
  -- SHA-256 of an upload's bytes: the same content twice in one chatbot is refused.
  content_hash   TEXT,
  -- Where the original lives in R2 (uploads only).
  object_key     TEXT,
  created_at     TEXT NOT NULL,
  modified_at    TEXT NOT NULL
);
CREATE INDEX data_sources_by_chatbot ON data_sources(chatbot_uuid, created_at);
CREATE INDEX data_sources_by_status ON data_sources(status, modified_at);
CREATE UNIQUE INDEX data_sources_one_per_content ON data_sources(chatbot_uuid, content_hash)
  WHERE content_hash IS NOT NULL;

-- Retrieval units. `chatbot_uuid` is copied from the source so a search filters without a join.
CREATE TABLE chunks (
  id                INTEGER PRIMARY KEY,
  data_source_uuid  TEXT NOT NULL REFERENCES data_sources(uuid) ON DELETE CASCADE,
  chatbot_uuid      TEXT NOT NULL,
  position          INTEGER NOT NULL,
  heading           TEXT NOT NULL,
  text              TEXT NOT NULL,
  tokens            INTEGER NOT NULL
);
CREATE INDEX chunks_by_source ON chunks(data_source_uuid, position);
CREATE INDEX chunks_by_chatbot ON chunks(chatbot_uuid);

-- English stemming (porter) over unicode61, accents folded. The index stores no copy of the
-- text (external content) and is kept in step with `chunks` by the triggers below; cascaded
-- deletes fire them too.
CREATE VIRTUAL TABLE chunks_fts USING fts5(
  heading, text,
  content = 'chunks', content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
  INSERT INTO chunks_fts(rowid, heading, text) VALUES (new.id, new.heading, new.text);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
  INSERT INTO chunks_fts(chunks_fts, rowid, heading, text) VALUES ('delete', old.id, old.heading, old.text);
END;
CREATE TRIGGER chunks_au AFTER UPDATE ON chunks BEGIN
  INSERT INTO chunks_fts(chunks_fts, rowid, heading, text) VALUES ('delete', old.id, old.heading, old.text);
  INSERT INTO chunks_fts(rowid, heading, text) VALUES (new.id, new.heading, new.text);
END;

CREATE TABLE source_tags (
  uuid          TEXT PRIMARY KEY,
  chatbot_uuid  TEXT NOT NULL REFERENCES chatbots(uuid) ON DELETE CASCADE,
  name          TEXT NOT NULL,
  color         TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  modified_at   TEXT NOT NULL
);
CREATE INDEX source_tags_by_chatbot ON source_tags(chatbot_uuid, created_at);

CREATE TABLE data_source_tags (
  source_tag_uuid   TEXT NOT NULL REFERENCES source_tags(uuid) ON DELETE CASCADE,
  data_source_uuid  TEXT NOT NULL REFERENCES data_sources(uuid) ON DELETE CASCADE,
  PRIMARY KEY (source_tag_uuid, data_source_uuid)
);
CREATE INDEX data_source_tags_by_source ON data_source_tags(data_source_uuid);
