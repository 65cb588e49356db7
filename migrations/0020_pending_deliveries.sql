-- Webhook deliveries still waiting for an attempt, by when it is due: the scheduled handler
-- finds the ones whose queued attempt never came (a queue message lost, or a first attempt
-- cut off with the request that caused it) without reading every delivery ever made.
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(coalesce(next_retry_at, modified_at))
  WHERE status = 'pending';
