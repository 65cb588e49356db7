-- Accounts, their API keys, chatbots and agents.
-- Every chatbot belongs to one account; everything a chatbot owns cascades from it, so deleting
-- a chatbot leaves no orphan rows.

CREATE TABLE accounts (
  uuid        TEXT PRIMARY KEY,
  created_at  TEXT NOT NULL
);

-- Only the SHA-256 of a key is stored; `prefix` lets a person tell keys apart.
CREATE TABLE api_keys (
  uuid          TEXT PRIMARY KEY,
  account_uuid  TEXT NOT NULL REFERENCES accounts(uuid) ON DELETE CASCADE,
  name          TEXT NOT NULL,
  key_hash      TEXT NOT NULL UNIQUE,
  prefix        TEXT NOT NULL,
  created_at    TEXT NOT NULL
);
CREATE INDEX api_keys_by_account ON api_keys(account_uuid, created_at);

CREATE TABLE chatbots (
  uuid                TEXT PRIMARY KEY,
  account_uuid        TEXT NOT NULL REFERENCES accounts(uuid) ON DELETE CASCADE,
  name                TEXT NOT NULL,
  visibility          TEXT NOT NULL CHECK (visibility IN ('private', 'public', 'hybrid')),
  rate_limit_count    INTEGER NOT NULL CHECK (rate_limit_count BETWEEN 1 AND 100),
  rate_limit_window   INTEGER NOT NULL CHECK (rate_limit_window BETWEEN 1 AND 360),
  rate_limit_message  TEXT NOT NULL,
  show_citations      INTEGER NOT NULL CHECK (show_citations IN (0, 1)),
  created_at          TEXT NOT NULL,
  modified_at         TEXT NOT NULL
);
CREATE INDEX chatbots_by_account ON chatbots(account_uuid, created_at);

-- Type-specific settings live in meta_json (model, temperature, use_all_sources, tags, bias).
CREATE TABLE agents (
  uuid                            TEXT PRIMARY KEY,
  chatbot_uuid                    TEXT NOT NULL REFERENCES chatbots(uuid) ON DELETE CASCADE,
  type                            TEXT NOT NULL CHECK (type IN ('user-facing', 'human-escalation', 'background')),
  name                            TEXT NOT NULL,
  prompt                          TEXT NOT NULL,
  description                     TEXT NOT NULL,
  enabled                         INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  meta_json                       TEXT NOT NULL,
  data_source_uuids_json          TEXT NOT NULL,
  human_escalation_settings_json  TEXT,
  variables_json                  TEXT NOT NULL,
  created_at                      TEXT NOT NULL,
  modified_at                     TEXT NOT NULL
);
CREATE INDEX agents_by_chatbot ON agents(chatbot_uuid, created_at);
-- At most one human-escalation agent per chatbot, enforced even under concurrent creates.
CREATE UNIQUE INDEX agents_one_human_escalation ON agents(chatbot_uuid) WHERE type = 'human-escalation';
