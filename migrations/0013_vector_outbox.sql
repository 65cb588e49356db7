-- Search by meaning: each chatbot's vectors live in its own Durable Object (VECTOR_INDEX).
-- D1 says what that object must still learn. Triggers on `chunks` queue every change, so no
-- write path (create, re-read, delete, a cascade from a deleted source or chatbot) can forget
-- one. A later change to the same chunk replaces its row with a new `seq`, so a sync that
-- read the older row deletes only what it applied.
CREATE TABLE vector_outbox (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  chunk_id      INTEGER NOT NULL UNIQUE,
  chatbot_uuid  TEXT NOT NULL,
  op            TEXT NOT NULL CHECK (op IN ('upsert', 'remove')),
  -- Failed embedding attempts: each doubles the wait before the next (see `leased_until`).
  attempts      INTEGER NOT NULL DEFAULT 0,
  -- A sync takes rows by writing its own token and a deadline (ms since the epoch), so two
  -- syncs never embed the same chunk, and rows of a sync that was cut off come free again.
  lease         TEXT,
  leased_until  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX vector_outbox_by_chatbot ON vector_outbox(chatbot_uuid, seq);

-- Only chatbots with an index are followed: without search by meaning nothing is written here,
-- and an index being built queues all its chunks itself (`queue_all_vectors`).
CREATE TRIGGER chunks_vector_ai AFTER INSERT ON chunks
WHEN EXISTS (SELECT 1 FROM vector_indexes WHERE chatbot_uuid = new.chatbot_uuid) BEGIN
  INSERT OR REPLACE INTO vector_outbox(chunk_id, chatbot_uuid, op)
    VALUES (new.id, new.chatbot_uuid, 'upsert');
END;
CREATE TRIGGER chunks_vector_ad AFTER DELETE ON chunks
WHEN EXISTS (SELECT 1 FROM vector_indexes WHERE chatbot_uuid = old.chatbot_uuid) BEGIN
  INSERT OR REPLACE INTO vector_outbox(chunk_id, chatbot_uuid, op)
    VALUES (old.id, old.chatbot_uuid, 'remove');
END;
CREATE TRIGGER chunks_vector_au AFTER UPDATE OF heading, text ON chunks
WHEN EXISTS (SELECT 1 FROM vector_indexes WHERE chatbot_uuid = new.chatbot_uuid) BEGIN
  INSERT OR REPLACE INTO vector_outbox(chunk_id, chatbot_uuid, op)
    VALUES (new.id, new.chatbot_uuid, 'upsert');
END;

-- The model each chatbot's vectors were built with. A chatbot without a row, or with another
-- model than the configured one, is (re)built from its chunks. No foreign key: the row must
-- outlive a deleted chatbot until its object has been emptied.
CREATE TABLE vector_indexes (
  chatbot_uuid  TEXT PRIMARY KEY,
  model         TEXT NOT NULL,
  modified_at   TEXT NOT NULL
);
