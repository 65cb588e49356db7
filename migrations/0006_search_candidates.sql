-- Search picks its best chunks before reading them: for every chunk the full-text index
-- matches it needs only the chunk's chatbot (and source, when an agent is limited to some).
-- This index holds just those, so the check reads a few small pages instead of each chunk's
-- row with its text.
CREATE INDEX chunks_by_id_chatbot ON chunks(id, chatbot_uuid, data_source_uuid);
