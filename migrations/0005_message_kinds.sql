-- A conversation also holds live-chat traffic: operator messages, announcements, and what the
-- user wrote while a person was answering. `answer` is an exchange with an agent.
ALTER TABLE messages ADD COLUMN kind TEXT NOT NULL DEFAULT 'answer'
  CHECK (kind IN ('answer', 'user', 'operator', 'announcement'));
