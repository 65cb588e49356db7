-- Where the scheduled handler's sweeps stopped, so each run goes on from there: the sweep of
-- stored files for objects no record names lists a bounded part of the bucket per run, not the
-- whole bucket every ten minutes.
CREATE TABLE maintenance_positions (
  task         TEXT PRIMARY KEY,
  position     TEXT NOT NULL,
  modified_at  TEXT NOT NULL
);
