-- Scoped keys. Every key made before this migration keeps doing everything, forever, from
-- anywhere: its scopes are ["admin"], it has no expiry, no address list and the default rate.
-- `scopes_json` and `allowed_ips_json` are JSON arrays of strings; `expires_at` and
-- `last_used_at` are timestamps (`last_used_at` written at most once a minute per key);
-- `rate_limit_count`/`rate_limit_window` are NULL for the service's default rate.
ALTER TABLE api_keys ADD COLUMN scopes_json TEXT NOT NULL DEFAULT '["admin"]';
ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
ALTER TABLE api_keys ADD COLUMN allowed_ips_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE api_keys ADD COLUMN rate_limit_count INTEGER;
ALTER TABLE api_keys ADD COLUMN rate_limit_window INTEGER;
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;

-- Each site visitor's own window inside the chatbot's rate limit; NULL is the default share
-- (a quarter of the chatbot's messages over the same window).
ALTER TABLE chatbots ADD COLUMN visitor_rate_limit_count INTEGER
  CHECK (visitor_rate_limit_count IS NULL OR visitor_rate_limit_count BETWEEN 1 AND 100);
ALTER TABLE chatbots ADD COLUMN visitor_rate_limit_window INTEGER
  CHECK (visitor_rate_limit_window IS NULL OR visitor_rate_limit_window BETWEEN 1 AND 360);
