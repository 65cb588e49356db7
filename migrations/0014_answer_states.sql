-- An answer is now produced by its session's Durable Object whether or not anyone reads it, so
-- a message is stored as it starts (`streaming`) and completed when it ends, and two more
-- endings exist: `stopped` (a caller stopped it on purpose) and `interrupted` (the runtime went
-- away mid-answer; found and closed when the session's object wakes).
--
-- SQLite cannot change a CHECK in place, so the table is rebuilt. Dropping it cascades to the
-- ratings that reference it, so they are kept aside and put back.
PRAGMA defer_foreign_keys = on;

CREATE TABLE message_feedback_keep AS SELECT * FROM message_feedback;
CREATE TABLE messages_next (
  uuid            TEXT PRIMARY KEY,
  session_uuid    TEXT NOT NULL REFERENCES sessions(uuid) ON DELETE CASCADE,
  chatbot_uuid    TEXT NOT NULL,
  started_ms      INTEGER NOT NULL,
  query           TEXT NOT NULL,
  response        TEXT NOT NULL,
  finish_reason   TEXT NOT NULL CHECK (finish_reason IN ('stop', 'length', 'error', 'aborted', 'stopped', 'interrupted', 'streaming')),
  cite_data_json  TEXT NOT NULL DEFAULT '{}',
  meta_json       TEXT NOT NULL DEFAULT '{}',
  created_at      TEXT NOT NULL,
  modified_at     TEXT NOT NULL,
  kind            TEXT NOT NULL DEFAULT 'answer'
    CHECK (kind IN ('answer', 'user', 'operator', 'announcement')),
  answered        INTEGER CHECK (answered IN (0, 1))
);
INSERT INTO messages_next (uuid, session_uuid, chatbot_uuid, started_ms, query, response,
    finish_reason, cite_data_json, meta_json, created_at, modified_at, kind, answered)
  SELECT uuid, session_uuid, chatbot_uuid, started_ms, query, response,
    finish_reason, cite_data_json, meta_json, created_at, modified_at, kind, answered
  FROM messages;
DROP TABLE messages;
ALTER TABLE messages_next RENAME TO messages;
CREATE INDEX messages_by_session ON messages(session_uuid, started_ms);
CREATE INDEX messages_by_chatbot ON messages(chatbot_uuid, created_at, kind, answered, session_uuid);
-- The scheduled handler closes answers whose runtime went away before their object kept a
-- record of them (see README, "Resumable answers"): few rows, found without a scan.
CREATE INDEX messages_streaming ON messages(started_ms) WHERE finish_reason = 'streaming';
INSERT OR IGNORE INTO message_feedback SELECT * FROM message_feedback_keep;
DROP TABLE message_feedback_keep;

PRAGMA defer_foreign_keys = off;
