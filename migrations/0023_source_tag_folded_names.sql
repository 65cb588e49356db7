-- Source tag names are compared without case in every script, not only ASCII: SQLite's NOCASE
-- folds A-Z alone, so "Été" and "été" were two tags. The Worker writes each name's lower-case
-- form (Unicode's) beside it, and the triggers compare those. Existing rows get SQLite's
-- lower(), which folds ASCII alone: two old names differing only in the case of other letters
-- stay as they are, and a new name is compared with them as before too.
ALTER TABLE source_tags ADD COLUMN name_folded TEXT;
UPDATE source_tags SET name_folded = lower(name);

DROP TRIGGER source_tags_name_insert;
DROP TRIGGER source_tags_name_update;

CREATE TRIGGER source_tags_name_insert BEFORE INSERT ON source_tags
WHEN EXISTS (SELECT 1 FROM source_tags WHERE chatbot_uuid = NEW.chatbot_uuid
  AND (name_folded = NEW.name_folded OR name = NEW.name COLLATE NOCASE))
BEGIN
  SELECT RAISE(ABORT, 'UNIQUE constraint failed: source_tags.name');
END;

CREATE TRIGGER source_tags_name_update BEFORE UPDATE OF name, name_folded ON source_tags
WHEN EXISTS (SELECT 1 FROM source_tags WHERE chatbot_uuid = NEW.chatbot_uuid
  AND (name_folded = NEW.name_folded OR name = NEW.name COLLATE NOCASE) AND uuid <> NEW.uuid)
BEGIN
  SELECT RAISE(ABORT, 'UNIQUE constraint failed: source_tags.name');
END;
