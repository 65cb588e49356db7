-- A chunk's id is given to a new chunk once the chunk is deleted, possibly in another
-- chatbot. Kept unique by chunk id alone, the new chunk's queued write replaced the deleted
-- one's queued removal, and the first chatbot's index kept the deleted chunk's vector for good.
-- Unique by chatbot and chunk, both stay queued; within one chatbot the later change still
-- replaces the earlier (a write replaces the vector the id held, a failed write drops it).
DROP TRIGGER chunks_vector_ai;
DROP TRIGGER chunks_vector_ad;
DROP TRIGGER chunks_vector_au;

CREATE TABLE vector_outbox_next (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  chunk_id      INTEGER NOT NULL,
  chatbot_uuid  TEXT NOT NULL,
  op            TEXT NOT NULL CHECK (op IN ('upsert', 'remove')),
  attempts      INTEGER NOT NULL DEFAULT 0,
  lease         TEXT,
  leased_until  INTEGER NOT NULL DEFAULT 0,
  UNIQUE (chatbot_uuid, chunk_id)
);
INSERT INTO vector_outbox_next (seq, chunk_id, chatbot_uuid, op, attempts, lease, leased_until)
  SELECT seq, chunk_id, chatbot_uuid, op, attempts, lease, leased_until FROM vector_outbox;
DROP TABLE vector_outbox;
ALTER TABLE vector_outbox_next RENAME TO vector_outbox;
CREATE INDEX vector_outbox_by_chatbot ON vector_outbox(chatbot_uuid, seq);

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
