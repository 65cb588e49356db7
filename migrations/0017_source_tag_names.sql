-- A chatbot's source tags have names of their own (compared without case): an agent kept to
-- "Policies" should not have to guess which of two. Triggers rather than a unique index, so
-- a database that already holds two tags of one name still migrates; new ones are refused.
-- The message reads as a unique violation, which the Worker answers with 409.
CREATE TRIGGER source_tags_name_insert BEFORE INSERT ON source_tags
WHEN EXISTS (SELECT 1 FROM source_tags WHERE chatbot_uuid = NEW.chatbot_uuid AND name = NEW.name COLLATE NOCASE)
BEGIN
  SELECT RAISE(ABORT, 'UNIQUE constraint failed: source_tags.name');
END;

CREATE TRIGGER source_tags_name_update BEFORE UPDATE OF name ON source_tags
WHEN EXISTS (SELECT 1 FROM source_tags WHERE chatbot_uuid = NEW.chatbot_uuid AND name = NEW.name COLLATE NOCASE AND uuid <> NEW.uuid)
BEGIN
  SELECT RAISE(ABORT, 'UNIQUE constraint failed: source_tags.name');
END;
