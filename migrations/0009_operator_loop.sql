-- What an owner learns about a chatbot without reading every session: whether answers came
-- from the sources, feedback on answers, webhooks with their deliveries, and the indexes that
-- keep analytics and exports by chatbot and time fast.

-- 1 when the sources held an answer, 0 when they did not; NULL for live-chat traffic and
-- for messages stored before this column existed.
ALTER TABLE messages ADD COLUMN answered INTEGER CHECK (answered IN (0, 1));

-- Analytics, unanswered questions and exports read a chatbot's messages by time; the index
-- carries what the counts need, so they never touch the table.
CREATE INDEX messages_by_chatbot ON messages(chatbot_uuid, created_at, kind, answered, session_uuid);

-- Escalations and live chats are counted from the sessions' notes, by chatbot and time.
CREATE INDEX sessions_escalated ON sessions(chatbot_uuid, json_extract(meta_json, '$.human_escalation.requested_at'))
  WHERE json_extract(meta_json, '$.human_escalation.requested_at') IS NOT NULL;
CREATE INDEX sessions_live_chat ON sessions(chatbot_uuid, json_extract(meta_json, '$.live_chat.started_at'))
  WHERE json_extract(meta_json, '$.live_chat.started_at') IS NOT NULL;
CREATE INDEX sessions_tagged ON sessions(chatbot_uuid) WHERE json_type(meta_json, '$.tags') = 'array';

-- One rating per message, changed in place; by the account or by the visitor whose session
-- it is.
CREATE TABLE message_feedback (
  message_uuid  TEXT PRIMARY KEY REFERENCES messages(uuid) ON DELETE CASCADE,
  chatbot_uuid  TEXT NOT NULL,
  session_uuid  TEXT NOT NULL,
  rating        TEXT NOT NULL CHECK (rating IN ('up', 'down')),
  comment       TEXT,
  created_at    TEXT NOT NULL,
  modified_at   TEXT NOT NULL
);
CREATE INDEX message_feedback_by_chatbot ON message_feedback(chatbot_uuid, modified_at);

-- Signed HTTP calls to the owner's endpoint when something happens in a chatbot.
CREATE TABLE webhooks (
  uuid          TEXT PRIMARY KEY,
  chatbot_uuid  TEXT NOT NULL REFERENCES chatbots(uuid) ON DELETE CASCADE,
  url           TEXT NOT NULL,
  events_json   TEXT NOT NULL,
  description   TEXT NOT NULL DEFAULT '',
  enabled       INTEGER NOT NULL DEFAULT 1,
  secret        TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  modified_at   TEXT NOT NULL
);
CREATE INDEX webhooks_by_chatbot ON webhooks(chatbot_uuid, created_at);

-- One event sent to one webhook: the exact body every attempt sends, and how it went.
CREATE TABLE webhook_deliveries (
  uuid           TEXT PRIMARY KEY,
  webhook_uuid   TEXT NOT NULL REFERENCES webhooks(uuid) ON DELETE CASCADE,
  event          TEXT NOT NULL,
  body           TEXT NOT NULL,
  status         TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts       INTEGER NOT NULL DEFAULT 0,
  response_code  INTEGER,
  last_error     TEXT,
  next_retry_at  TEXT,
  created_at     TEXT NOT NULL,
  modified_at    TEXT NOT NULL
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries(webhook_uuid, created_at);
