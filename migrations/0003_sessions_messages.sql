-- Chat sessions and their messages.

CREATE TABLE sessions (
  uuid                    TEXT PRIMARY KEY,
  chatbot_uuid            TEXT NOT NULL REFERENCES chatbots(uuid) ON DELETE CASCADE,
  -- NULL when the session was created without initial variables.
  initial_variables_json  TEXT,
  meta_json               TEXT NOT NULL DEFAULT '{}',
  created_at              TEXT NOT NULL,
  modified_at             TEXT NOT NULL
);
CREATE INDEX sessions_by_chatbot ON sessions(chatbot_uuid, created_at);

-- A message is one exchange: the user's query and the answer. It is written once, when the
-- answer ends. `started_ms` is when the query arrived and orders a session's messages.
CREATE TABLE messages (
  uuid            TEXT PRIMARY KEY,
  session_uuid    TEXT NOT NULL REFERENCES sessions(uuid) ON DELETE CASCADE,
  chatbot_uuid    TEXT NOT NULL,
  started_ms      INTEGER NOT NULL,
  query           TEXT NOT NULL,
  response        TEXT NOT NULL,
  finish_reason   TEXT NOT NULL CHECK (finish_reason IN ('stop', 'length', 'error', 'aborted')),
  cite_data_json  TEXT NOT NULL DEFAULT '{}',
  meta_json       TEXT NOT NULL DEFAULT '{}',
  created_at      TEXT NOT NULL,
  modified_at     TEXT NOT NULL
);
CREATE INDEX messages_by_session ON messages(session_uuid, started_ms);
