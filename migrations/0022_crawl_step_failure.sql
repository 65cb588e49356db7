-- Why a crawl's start step last failed (robots.txt answering 503, say), for the dead-letter
-- consumer to name in the crawl's `error`, as `data_sources.step_failure` does for a source.
ALTER TABLE crawls ADD COLUMN step_failure TEXT;
