-- Site visitors chat through the widget with a short-lived token instead of an API key.
-- A hybrid chatbot lists the sites (origins) whose visitors it takes, as a JSON array of
-- strings such as "https://www.example.com"; existing chatbots list none.
ALTER TABLE chatbots ADD COLUMN allowed_origins_json TEXT NOT NULL DEFAULT '[]';

-- A session a visitor created carries the visitor's id (from the token), so only that
-- visitor can read and continue it. NULL for sessions created with an API key.
ALTER TABLE sessions ADD COLUMN visitor_id TEXT;
