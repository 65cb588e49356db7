-- A web page's `last_checked_at` before a re-read marked it checked. The mark is set as a
-- re-sync begins (or a page's own re-read is queued), so a page that answers unchanged costs
-- no write; a re-read that fails puts the old value back, so a page never claims a check that
-- did not happen.
ALTER TABLE data_sources ADD COLUMN checked_before TEXT;
