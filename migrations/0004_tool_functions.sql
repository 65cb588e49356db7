-- Tool functions: outside HTTP endpoints an agent's model may call while answering.
CREATE TABLE tool_functions (
  uuid             TEXT PRIMARY KEY,
  agent_uuid       TEXT NOT NULL REFERENCES agents(uuid) ON DELETE CASCADE,
  name             TEXT NOT NULL,
  description      TEXT NOT NULL,
  enabled          INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  external_url     TEXT NOT NULL,
  method           TEXT NOT NULL CHECK (method IN ('GET', 'POST', 'PUT', 'PATCH', 'DELETE')),
  headers_json     TEXT NOT NULL,
  meta_json        TEXT NOT NULL,
  parameters_json  TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  modified_at      TEXT NOT NULL,
  -- A model calls a function by name, so names are unique within an agent.
  UNIQUE (agent_uuid, name)
);
CREATE INDEX tool_functions_by_agent ON tool_functions(agent_uuid, created_at);
